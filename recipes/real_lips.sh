#!/usr/bin/env bash
# Real lips (docs/lips.md): people filmed talking -> a corpus with their captured lips; one fine-tuned model per
# fold of recipes/lips_folds.json (scored on the fold's people, never learnt from) and one on every trainable
# person (the model that ships); then the benchmark. Each step resumes after a kill (run the script again).
# Usage: bash recipes/real_lips.sh [INIT [NAME]]   (default student-4-whisper student-4-whisper-lips)
# ITERS sets the optimiser steps (default 400); EXTRA names a folder of more held-out clips (docs/lips.md).
set -euo pipefail
init=${1:-student-4-whisper}
name=${2:-student-4-whisper-lips}
talking=${TALKING:-../shared/data/talking}
extra=${EXTRA:-corpus/extra}
videos=("$talking"); [ -d "$extra" ] && videos+=("$extra")
people=recipes/talking_people.json
talkhead data talking "${videos[@]}" --out corpus/talking --people "$people"
[ -f corpus/synth/manifest.jsonl ] || talkhead data synth --minutes 20 --out corpus/synth --seed 7 --voices wide
common=(--init "$init" --real corpus/talking --data corpus/synth --iters "${ITERS:-400}" --threads 2 --quiet)
run() {  # run OUT [flags]: a fine-tuning run, resumed if it was stopped, skipped if it finished
    local out=$1; shift
    [ -f "${out%.safetensors}.log.jsonl" ] && return 0
    local resume=(); [ -f "${out%.safetensors}.state.pt" ] && resume=(--resume)
    talkhead distill lips "${common[@]}" --out "$out" "$@" "${resume[@]}"
}
folds=$(python3 -c "import json; print(len(json.load(open('recipes/lips_folds.json'))['folds']))")
for k in $(seq 0 $((folds - 1))); do
    hold=$(python3 -c "import json,sys; print(','.join(json.load(open('recipes/lips_folds.json'))['folds'][$k]))")
    run "runs/lips/fold$k/$name.safetensors" --hold-out "$hold"
done
run "runs/lips/all/$name.safetensors"
talkhead models --export "runs/lips/all/$name.safetensors" --name "$name"
talkhead bench lips --videos "${videos[@]}" --corpus corpus/talking --people "$people" --folds recipes/lips_folds.json \
    --fold-names "$name" --models "$init,$name" --out docs/bench/lips
