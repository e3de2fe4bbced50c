#!/usr/bin/env bash
# Real lips (docs/lips.md): people filmed talking -> a corpus with their captured lips; one fine-tuned model per
# fold of recipes/lips_folds.json (scored on the fold's people, never learnt from) and one on every trainable
# person (the model that ships); then the benchmark. Each step resumes after a kill (run the script again).
# Usage: bash recipes/real_lips.sh [INIT [NAME]]   (default student-4-whisper student-4-whisper-lips)
# ITERS sets the optimiser steps (default 400); EXTRA names a folder of more held-out clips (docs/lips.md).
set -euo pipefail
init=${1:-student-4-whisper}
name=${2:-student-4-whisper-lips}
source "$(dirname "$0")/_talking.sh"
each_fold runs/lips "$name" talkhead distill lips --init "$init" --real corpus/talking --data corpus/synth \
    --iters "${ITERS:-400}" --threads 2 --quiet
talkhead models --export "runs/lips/all/$name.safetensors" --name "$name"
talkhead bench lips --videos "${videos[@]}" --corpus corpus/talking --people "$people" --folds recipes/lips_folds.json \
    --fold-names "$name" --models "$init,$name" --out docs/bench/lips
