#!/usr/bin/env bash
# Lip sync of the shipped models on the aligned real recordings (needs recipes/real_speech.sh first) (the commands behind the README's table).
set -euo pipefail
talkhead bench real teacher student-4 student-1 teacher-whisper@50:ddim teacher-whisper --out docs/bench/real
talkhead bench real student-4-whisper --out docs/bench/real-student-4-whisper
talkhead bench real student-2-whisper --out docs/bench/real-student-2-whisper
talkhead bench real student-1-whisper --out docs/bench/real-student-1-whisper
talkhead bench real student-consistency-whisper --out docs/bench/real-student-consistency-whisper
talkhead bench real student-4-whisper-lips student-4-whisper --data corpus/synth --out docs/bench/real-student-4-whisper-lips  # corpus/synth: recipes/real_lips.sh
