#!/usr/bin/env bash
# The live student (issue 28, item 1): student-1-whisper fine-tuned on the view of speech that live client audio
# gives it (Whisper rows over 1-frame blocks with 1 s of context before and 1 frame after, one new frame per
# window, one frame of look-ahead), to reproduce its own offline motion of the same clips (talkhead.motion.train.live).
# Data: a 20-minute synthetic corpus of the wide voice set, 60 % of its clips through telephone/room/noise.
# The shipped src/talkhead/models/student-1-whisper-live.safetensors is this script at its defaults
# (wall time in the file's metadata, live_train.wall_s). Reruns resume (pairs and optimiser state beside --out).
# Usage: bash recipes/live_student.sh [CORPUS] [OUT]
set -euo pipefail
data=${1:-corpus/live}
out=${2:-src/talkhead/models/student-1-whisper-live.safetensors}
[ -f "$data/manifest.jsonl" ] || talkhead data synth --minutes 20 --out "$data" --seed 7 --voices wide
talkhead distill live --base student-1-whisper --data "$data" --out "$out" --threads 1 --resume
# Then: talkhead bench serve --out docs/bench/serve   (client audio -> first frame, lips against offline motion)
