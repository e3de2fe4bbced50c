#!/usr/bin/env bash
# Students of the Whisper-front-end teacher, with the stages that paid off for the log-mel ones
# (model card, stages 2-11): direct multi-step distillation on the teacher's uneven 32-step grid,
# one network per step, weights averaged along each run; augmented audio takes the place of the
# mel warp, which has no mel axis to stretch here. Each run resumes after a kill (round by round).
# Usage: bash recipes/students.sh [TEACHER] [CORPUS]   (default teacher-whisper corpus/w2)
# ITERS4, ITERS2, ITERS1, ITERSC set each run's optimiser steps (default 900, 1500, 1800, 400). The
# shipped student-4/2/1/consistency-whisper are its four runs at these defaults (29.6, 21.7, 38.8 and
# 5.3 min on 2 cores; the first three with the pre-issue-22 `talkhead distill --teacher ...` syntax).
set -euo pipefail
teacher=${1:-teacher-whisper}
data=${2:-corpus/w2}
runs=${RUNS:-runs}
[ -f "$data/manifest.jsonl" ] || talkhead data synth --minutes 360 --out "$data" --seed 2 --voices wide
common=(--augment 2 --average 0.995 --lr 1e-4 --data "$data" --threads 2)
# student-4: 8,12,8,4 teacher steps per student step (timesteps 999, 749, 374, 124), a network each
talkhead distill progressive --teacher "$teacher" --segments 8,12,8,4 --experts --start-steps 32 --to 4 \
    --iters "${ITERS4:-900}" --seed 41 --out "$runs/w-4" "${common[@]}"
# student-2 and student-1: two and four of student-4's steps in one, starting from the teacher's weights
talkhead distill progressive --teacher "$runs/w-4/student-4.safetensors" --factor 2 --start-steps 4 --to 2 --init "$teacher" \
    --iters "${ITERS2:-1500}" --seed 42 --out "$runs/w-2" "${common[@]}"
talkhead distill progressive --teacher "$runs/w-4/student-4.safetensors" --factor 4 --start-steps 4 --to 1 --velocity 1 \
    --init "$teacher" --iters "${ITERS1:-1800}" --seed 43 --out "$runs/w-1" "${common[@]}"
# student-consistency: one step by consistency distillation from the teacher's 32-step grid, its own weights
talkhead distill consistency --teacher "$teacher" --start-steps 32 --iters "${ITERSC:-400}" --seed 44 \
    --out "$runs/w-c" --augment 2 --data "$data" --threads 2
echo "students in $runs/w-4, $runs/w-2, $runs/w-1, $runs/w-c; compare with: talkhead bench compare ... --teacher $teacher"
