#!/usr/bin/env bash
# The lip net (docs/lips.md): one net per fold of recipes/lips_folds.json (scored on the fold's people, never
# learnt from), one on every trainable person (the net that ships), then the benchmark of the shipped motion
# models wearing them. Needs the corpus of recipes/real_lips.sh (talkhead data talking). Each run resumes.
# Usage: bash recipes/lipnet.sh [OUT]   (default runs/lipnet); ITERS sets the optimiser steps (default 1500);
# SHIP=1 copies the final net into the package (src/talkhead/models/lips-whisper.safetensors).
set -euo pipefail
out=${1:-runs/lipnet}
talking=${TALKING:-../shared/data/talking}
extra=${EXTRA:-corpus/extra}
videos=("$talking"); [ -d "$extra" ] && videos+=("$extra")
people=recipes/talking_people.json
talkhead data talking "${videos[@]}" --out corpus/talking --people "$people"
[ -f corpus/synth/manifest.jsonl ] || talkhead data synth --minutes 20 --out corpus/synth --seed 7 --voices wide
run() {  # run OUT [flags]: a training run, resumed if it was stopped, skipped if it finished
    local net=$1; shift
    [ -f "${net%.safetensors}.log.jsonl" ] && return 0
    local resume=(); [ -f "${net%.safetensors}.state.pt" ] && resume=(--resume)
    talkhead distill lipnet --real corpus/talking --synthetic corpus/synth --iters "${ITERS:-1500}" --threads 2 --quiet --out "$net" "$@" "${resume[@]}"
}
folds=$(python3 -c "import json; print(len(json.load(open('recipes/lips_folds.json'))['folds']))")
for k in $(seq 0 $((folds - 1))); do
    hold=$(python3 -c "import json,sys; print(','.join(json.load(open('recipes/lips_folds.json'))['folds'][$k]))")
    run "$out/fold$k/lips-whisper.safetensors" --hold-out "$hold"
done
run "$out/all/lips-whisper.safetensors"
[ "${SHIP:-0}" = 1 ] && cp "$out/all/lips-whisper.safetensors" src/talkhead/models/lips-whisper.safetensors  # ships it
talkhead bench lips --videos "${videos[@]}" --corpus corpus/talking --people "$people" --folds recipes/lips_folds.json \
    --fold-names lips-whisper --fold-model "student-4-whisper+$out/fold{fold}/{name}.safetensors" \
    --models "student-4-whisper+none,student-4-whisper-lips+none,student-4-whisper+$out/all/lips-whisper.safetensors" \
    --out "$out/bench"
