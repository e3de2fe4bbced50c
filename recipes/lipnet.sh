#!/usr/bin/env bash
# The lip net (docs/lips.md): one net per fold of recipes/lips_folds.json (scored on the fold's people, never
# learnt from), one on every trainable person (the net that ships), then the benchmark of the shipped motion
# models wearing them. Needs the corpus of recipes/real_lips.sh (talkhead data talking). Each run resumes.
# Usage: bash recipes/lipnet.sh [OUT]   (default runs/lipnet); ITERS sets the optimiser steps (default 1500);
# SHIP=1 copies the final net into the package (src/talkhead/models/lips/lips-whisper.safetensors).
set -euo pipefail
out=${1:-runs/lipnet}
source "$(dirname "$0")/_talking.sh"
each_fold "$out" lips-whisper talkhead distill lipnet --real corpus/talking --synthetic corpus/synth \
    --iters "${ITERS:-1500}" --threads 2 --quiet
[ "${SHIP:-0}" = 1 ] && cp "$out/all/lips-whisper.safetensors" src/talkhead/models/lips/  # ships it
talkhead bench lips --videos "${videos[@]}" --corpus corpus/talking --people "$people" --folds recipes/lips_folds.json \
    --fold-names lips-whisper --fold-model "student-4-whisper+$out/fold{fold}/{name}.safetensors" \
    --models "student-4-whisper+none,student-4-whisper-lips+none,student-4-whisper+$out/all/lips-whisper.safetensors" \
    --out "$out/bench"
