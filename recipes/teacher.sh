#!/usr/bin/env bash
# The teacher: Whisper tiny.en front end, 2 augmented copies of every clip's audio, corpus/main.
# Two phases of one run (README "Real speech"; model card "teacher"): 1,000 steps of plain x0 MSE, then
# truncated-SNR weighting and the frame-difference term to step 2,600. Run it again after a kill: it resumes.
# Usage: bash recipes/teacher.sh [RUN_DIR [CORPUS ...]]   (default runs/teacher-whisper corpus/main); then
#   talkhead models --export RUN_DIR/last.safetensors --name teacher
set -euo pipefail
run=${1:-runs/teacher-whisper}
shift || true
corpora=("${@:-corpus/main}")
[ -f corpus/main/manifest.jsonl ] || talkhead data synth --minutes 120 --out corpus/main --seed 0
[ -f corpus/w2/manifest.jsonl ] || [[ " ${corpora[*]} " != *" corpus/w2 "* ]] || \
    talkhead data synth --minutes 360 --out corpus/w2 --seed 2 --voices wide
common=(--data "${corpora[@]}" --out "$run" --features whisper --augment 2 --steps 2600 --batch 64 --threads 2)
step=$(python3 -c "import json,sys; r=[json.loads(l) for l in open(sys.argv[1])]; print(max([x.get('step',0) for x in r if 'loss' in x] or [0]))" "$run/metrics.jsonl" 2>/dev/null || echo 0)
resume=(); [ -f "$run/state.pt" ] && resume=(--resume)
if [ "$step" -lt 1000 ]; then
    talkhead train "${common[@]}" --snr-min 0 --velocity 0 --stop-at 1000 "${resume[@]}"
    resume=(--resume)
fi
talkhead train "${common[@]}" --snr-min 1 --snr-max 5 --velocity 1 "${resume[@]}"
