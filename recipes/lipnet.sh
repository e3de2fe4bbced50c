#!/usr/bin/env bash
# The lip net (docs/lips.md): one net per fold of recipes/lips_folds.json (scored on the fold's people, never
# learnt from), one on every trainable person (the net that ships), then the benchmark of the shipped motion
# models wearing them. Needs the corpus of recipes/real_lips.sh (talkhead data talking). Each run resumes.
# Usage: bash recipes/lipnet.sh [OUT]   (default runs/lipnet); ITERS sets the optimiser steps (default 1500; each net
# an ensemble of 3 trained side by side);
# SHIP=1 copies the final nets into the package (src/talkhead/models/lips/); BENCH names the benchmark folder
# (default docs/bench/lipnet, and -live beside it).
set -euo pipefail
out=${1:-runs/lipnet}
source "$(dirname "$0")/_talking.sh"
each_fold "$out" lips-whisper talkhead distill lipnet --real corpus/talking --synthetic corpus/synth \
    --iters "${ITERS:-1500}" --members 3 --threads 2 --quiet
# The live student's net: trained on the audio as a live session hears it (one-frame Whisper blocks, one frame ahead).
each_fold "$out" lips-whisper-live talkhead distill lipnet --real corpus/talking --synthetic corpus/synth \
    --iters "${ITERS:-1500}" --members 3 --threads 2 --quiet --view live --ahead 1
[ "${SHIP:-0}" = 1 ] && cp "$out"/all/lips-whisper{,-live}.safetensors src/talkhead/models/lips/  # ships them
talkhead bench lips --videos "${videos[@]}" --corpus corpus/talking --people "$people" --folds recipes/lips_folds.json \
    --fold-names lips-whisper --fold-model "student-4-whisper+$out/fold{fold}/{name}.safetensors" \
    --models "student-4-whisper+none,student-4-whisper-lips+none,student-4-whisper+$out/all/lips-whisper.safetensors" \
    --out "${BENCH:-docs/bench/lipnet}"
talkhead bench lips --videos "${videos[@]}" --corpus corpus/talking --people "$people" --folds recipes/lips_folds.json \
    --fold-names lips-whisper,lips-whisper-live --fold-model "student-1-whisper-live+$out/fold{fold}/{name}.safetensors" \
    --models "student-1-whisper-live+none,student-1-whisper-live+$out/all/lips-whisper-live.safetensors" --out "${BENCH:-docs/bench/lipnet}-live"
