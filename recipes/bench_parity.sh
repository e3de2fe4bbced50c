#!/usr/bin/env bash
# Parity of the Whisper models with teacher-whisper's DDIM S = 50 over 16 noise seeds (the commands behind the README's table).
set -euo pipefail
talkhead bench compare teacher-whisper student-4-whisper --teacher teacher-whisper --seeds 16 --out docs/bench/compare-student-4-whisper
talkhead bench compare teacher-whisper@4:unipc teacher-whisper@8:unipc teacher-whisper@10:dpmpp teacher-whisper@4:ddim --teacher teacher-whisper --seeds 16 --out docs/bench/compare-teacher-whisper
talkhead bench compare student-4-whisper runs/try-2/student-2.safetensors --teacher teacher-whisper --seeds 16 --out docs/bench/compare-student-2-whisper
talkhead bench compare student-4-whisper student-1-whisper --teacher teacher-whisper --seeds 16 --out docs/bench/compare-student-1-whisper
talkhead bench compare student-1-whisper student-consistency-whisper --teacher teacher-whisper --seeds 16 --out docs/bench/compare-student-consistency-whisper
# (the last command is read back from its JSON's entries; runs/try-2 is student-2-whisper before export)
