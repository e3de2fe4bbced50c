# Sourced by the real-lips recipes: the people filmed talking as a corpus (corpus/talking) and the synthetic
# corpus beside it (corpus/synth). Sets videos (the folders of clips) and people (who is who).
talking=${TALKING:-../shared/data/talking}
extra=${EXTRA:-corpus/extra}
extra2=${EXTRA2:-corpus/extra2}
extra4=${EXTRA4:-}  # corpus/extra4: learnt from only when named (docs/lips.md, "Fourteen more people to learn from")
videos=("$talking")
for d in "$extra" "$extra2" "$extra4"; do [ -n "$d" ] && [ -d "$d" ] && videos+=("$d"); done
people=recipes/talking_people.json
# The lag taken as in sync stays the median of the clips before corpus/extra4 (0), whose lags would move it to 1
# and with it every earlier clip's audio (docs/lips.md, "Fourteen more people to learn from").
# Each clip keeps the lag found when the shipped nets learnt from it (recipes/talking_lags.json): the search that
# finds it uses the shipped model and lip net, so a later search could move a clip's audio by a frame.
talkhead data talking "${videos[@]}" --out corpus/talking --people "$people" --sync-lag 0 --lags recipes/talking_lags.json
[ -f corpus/synth/manifest.jsonl ] || talkhead data synth --minutes 20 --out corpus/synth --seed 7 --voices wide

resumable() {  # resumable OUT CMD...: CMD --out OUT, resumed if it was stopped, skipped if it finished
    local out=$1; shift
    [ -f "${out%.safetensors}.log.jsonl" ] && return 0
    local resume=(); [ -f "${out%.safetensors}.state.pt" ] && resume=(--resume)
    "$@" --out "$out" "${resume[@]}"
}

folds_only() {  # folds_only DIR NAME CMD...: a run per fold of recipes/lips_folds.json (its people held out; "{fold}"
    # in CMD becomes the fold's folder name, foldK)
    local dir=$1 name=$2; shift 2
    local folds k hold
    folds=$(python3 -c "import json; print(len(json.load(open('recipes/lips_folds.json'))['folds']))")
    for k in $(seq 0 $((folds - 1))); do
        hold=$(python3 -c "import json; print(','.join(json.load(open('recipes/lips_folds.json'))['folds'][$k]))")
        resumable "$dir/fold$k/$name.safetensors" "${@//\{fold\}/fold$k}" --hold-out "$hold"
    done
}

each_fold() {  # each_fold DIR NAME CMD...: the fold runs, then one on all ("{fold}" in CMD: all)
    folds_only "$@"
    local dir=$1 name=$2; shift 2
    resumable "$dir/all/$name.safetensors" "${@//\{fold\}/all}"
}
