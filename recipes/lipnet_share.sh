#!/usr/bin/env bash
# How much synthetic speech the offline lip net hears (docs/lips.md, "How much synthetic speech the offline net
# hears"): the recipe's fold nets with 0, 0.1, 0.25 and 0.5 of each batch from corpus/synth, drawn on the 35 fold
# people (each by the fold's net that never heard them), and fold 0's net on real and synthetic speech against the
# phones (bench real). About 40 min on 2 cores. Needs the corpora of recipes/lipnet.sh (EXTRA4=corpus/extra4).
# Usage: EXTRA4=corpus/extra4 bash recipes/lipnet_share.sh [OUT]   (default runs/lipnet-share)
set -euo pipefail
out=${1:-runs/lipnet-share}
source "$(dirname "$0")/_talking.sh"
shares=(0 0.1 0.25 0.5)
for share in "${shares[@]}"; do
    folds_only "$out" "lips-s$share" talkhead distill lipnet --real corpus/talking --synthetic corpus/synth \
        --synthetic-share "$share" --iters 1500 --members 3 --threads 2 --quiet --taps 2
    talkhead bench real "student-4-whisper+$out/fold0/lips-s$share.safetensors" --data corpus/synth \
        --out "$out/real-s$share"
done
names=$(printf 'lips-s%s,' "${shares[@]}")
talkhead bench lips --videos "${videos[@]}" --corpus corpus/talking --people "$people" --folds recipes/lips_folds.json \
    --out "$out/folds" --fold-names "${names%,}" --fold-model "student-4-whisper+$out/fold{fold}/{name}.safetensors" \
    --models ""
