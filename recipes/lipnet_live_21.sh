#!/usr/bin/env bash
# The taught live net (recipes/lipnet.sh's live half: lips-whisper-real teaching lips-whisper-live) learning from
# the 21 earlier people only, the 14 of corpus/extra4 held out of every net (docs/lips.md, "The live net taught by
# the offline net": measured, not shipped). Needs corpus/talking with corpus/extra4 in it (EXTRA4=corpus/extra4
# bash recipes/lipnet.sh makes it) and corpus/synth. About 45 min on 2 cores.
# Usage: bash recipes/lipnet_live_21.sh [OUT]
set -euo pipefail
out=${1:-runs/lipnet-t23}
x4=grid-pa,grid-pb,grid-pc,grid-pd,grid-pe,grid-s1,grid-s2,vox-athlete,vox-awardshost,vox-bald-actor
x4=$x4,vox-bearded-man,vox-chef,vox-model-woman,vox-singer
people=recipes/talking_people.json
videos=(../shared/data/talking corpus/extra corpus/extra2 corpus/extra4)
lips() {  # lips OUT FLAGS...: bench lips over every clip, the fold people scored by their fold's net
    local dest=$1; shift
    talkhead bench lips --videos "${videos[@]}" --corpus corpus/talking --people $people \
        --folds recipes/lips_folds.json --out "$dest" "$@"
}
for k in 0 1 2 3 all; do  # each fold's teacher and live net; then, their bench giving its spread, the net on all
    if [ $k = all ]; then hold=$x4; dir=all; else dir=fold$k
        hold=$(python3 -c "import json; print(','.join(json.load(open('recipes/lips_folds.json'))['folds'][$k]))")
        hold=$hold,$x4; fi
    [ -f $out/$dir/lips-whisper-real.log.jsonl ] || talkhead distill lipnet --real corpus/talking --iters 1500 \
        --members 3 --threads 2 --quiet --taps 2 --hold-out "$hold" --out $out/$dir/lips-whisper-real.safetensors
    spread=1
    [ $k = all ] && spread=$(python3 recipes/lipnet_spread.py $out/folds-lips-whisper-live/lips.json lips-whisper-live)
    [ -f $out/$dir/lips-whisper-live.log.jsonl ] || talkhead distill lipnet --real corpus/talking \
        --synthetic corpus/synth \
        --iters 1500 --members 3 --threads 2 --quiet --view live --ahead 1 --hold-out "$hold" --spread $spread \
        --teacher $out/$dir/lips-whisper-real.safetensors --out $out/$dir/lips-whisper-live.safetensors
    if [ $k = 3 ] && [ ! -f $out/folds-lips-whisper-live/lips.json ]; then
        lips $out/folds-lips-whisper-live --fold-names lips-whisper-live --models "" \
            --fold-model "student-1-whisper-live+$out/fold{fold}/{name}.safetensors"
    fi
done
lips $out/bench-live --models "student-1-whisper-live+$out/all/lips-whisper-live.safetensors"
talkhead bench lips --videos corpus/extra3 --corpus corpus/talking-x3 --people $people --out $out/bench-extra3 \
    --models "student-1-whisper-live+$out/all/lips-whisper-live.safetensors"
