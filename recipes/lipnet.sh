#!/usr/bin/env bash
# The lip net (docs/lips.md): one net per fold of recipes/lips_folds.json (scored on the fold's people, never
# learnt from), one on every trainable person (the net that ships), then the benchmark of the shipped motion
# models wearing them. Needs the corpus of recipes/real_lips.sh (talkhead data talking). Each run resumes.
# Usage: bash recipes/lipnet.sh [OUT]   (default runs/lipnet); ITERS sets the optimiser steps (default 1500; each net
# an ensemble of 3 trained side by side);
# SHIP=1 copies the final offline net into the package (src/talkhead/models/lips/), SHIP_LIVE=1 the live one; BENCH
# names the benchmark folder (default docs/bench/lipnet, and -live beside it). EXTRA4=corpus/extra4 learns from its
# 14 people too. What ships (docs/lips.md): the offline net of `EXTRA4=corpus/extra4 SHIP=1 bash recipes/lipnet.sh
# runs/lipnet-s01` (a tenth of each batch synthetic since 2026-12-06, evening), the live net of
# `EXTRA4=corpus/extra4 SHIP_LIVE=1 bash recipes/lipnet.sh runs/lipnet-t` (the live net taught by lips-whisper-real
# since 2026-12-06; opt-in since that night); lips-whisper-live-a2 (reading two frames ahead, what the live student
# wears since 2026-12-06, late) by the live half of the same recipe with `--ahead 2` in runs/lipnet-a2 (2026-12-06,
# night; there named lips-whisper-live).
set -euo pipefail
out=${1:-runs/lipnet}
source "$(dirname "$0")/_talking.sh"
lips() {  # lips OUT FLAGS...: talkhead bench lips over every clip, the fold people scored by their fold's net
    local dest=$1; shift
    talkhead bench lips --videos "${videos[@]}" --corpus corpus/talking --people "$people" --folds recipes/lips_folds.json \
        --out "$dest" "$@"
}
# Each kind: its fold nets; how far the lips they draw swing on the fold people, against the captured lips
# (bench lips's spread; the net on everyone widens its opening by the inverse, so lips open about as far as a
# person's); then the net on everyone.
nets() {  # nets NAME VIEW MODEL FLAGS...
    local name=$1 view=$2 model=$3; shift 3
    local cmd=(talkhead distill lipnet --real corpus/talking --synthetic corpus/synth --iters "${ITERS:-1500}" --members 3
               --threads 2 --quiet --view "$view" "$@")
    folds_only "$out" "$name" "${cmd[@]}"
    [ -f "$out/folds-$name/lips.json" ] ||  # done in a run that was stopped later
        lips "$out/folds-$name" --fold-names "$name" --fold-model "$model+$out/fold{fold}/{name}.safetensors" --models ""
    resumable "$out/all/$name.safetensors" "${cmd[@]//\{fold\}/all}" \
        --spread "$(python recipes/lipnet_spread.py "$out/folds-$name/lips.json" "$name")"
}
# It reads the encoder's second layer beside its output (docs/lips.md, "Inner layers of the speech encoder"); a tenth
# of each batch is synthetic speech, enough to keep the lips of speech the project synthesises, where half followed
# filmed people less well (docs/lips.md, "How much synthetic speech the offline net hears").
nets lips-whisper offline student-4-whisper --taps 2 --synthetic-share 0.1
# The live student's net: trained on the audio as a live session hears it (one-frame Whisper blocks, one frame ahead).
# Its synthetic half's target is the opening an offline net reads from each whole clip, a net that learnt from the
# real clips alone and so never heard those clips (docs/lips.md, "The live net taught by the offline net"); a fold's
# live net is taught by the same fold's, which never heard the fold's people either.
each_fold "$out" lips-whisper-real talkhead distill lipnet --real corpus/talking --iters "${ITERS:-1500}" --members 3 \
    --threads 2 --quiet --taps 2
nets lips-whisper-live live student-1-whisper-live --ahead 1 --teacher "$out/{fold}/lips-whisper-real.safetensors"
# The same reading two frames ahead (the live student's default): a live window waits 40 ms more for them (docs/lips.md,
# "How far ahead the live net reads" and "A live frame sent as soon as it is drawn").
nets lips-whisper-live-a2 live student-1-whisper-live --ahead 2 --teacher "$out/{fold}/lips-whisper-real.safetensors"
[ "${SHIP:-0}" = 1 ] && cp "$out"/all/lips-whisper.safetensors src/talkhead/models/lips/
[ "${SHIP_LIVE:-0}" = 1 ] && cp "$out"/all/lips-whisper-live{,-a2}.safetensors src/talkhead/models/lips/
lips "${BENCH:-docs/bench/lipnet}" --fold-names lips-whisper \
    --fold-model "student-4-whisper+$out/fold{fold}/{name}.safetensors" \
    --models "student-4-whisper+none,student-4-whisper-lips+none,student-4-whisper+$out/all/lips-whisper.safetensors"
lips "${BENCH:-docs/bench/lipnet}-live" --fold-names lips-whisper,lips-whisper-live \
    --fold-model "student-1-whisper-live+$out/fold{fold}/{name}.safetensors" \
    --models "student-1-whisper-live+none,student-1-whisper-live+$out/all/lips-whisper-live.safetensors"
lips "${BENCH:-docs/bench/lipnet}-live-a2" --fold-names lips-whisper,lips-whisper-live-a2 \
    --fold-model "student-1-whisper-live+$out/fold{fold}/{name}.safetensors" \
    --models "student-1-whisper-live+none,student-1-whisper-live+$out/all/lips-whisper-live-a2.safetensors"
# The 12 people of corpus/extra3 (docs/lips.md): a corpus of their own, so that their clips' lags never move the
# median lag, and with it the trainable clips' audio; bench lips searches the lag on the audio as filmed.
if [ -d corpus/extra3 ]; then
    talkhead data talking corpus/extra3 --out corpus/talking-x3 --people "$people"
    talkhead bench lips --videos corpus/extra3 --corpus corpus/talking-x3 --people "$people" \
        --out "${BENCH:-docs/bench/lipnet}-extra3" --models "student-4-whisper+none,student-4-whisper+$out/all/lips-whisper.safetensors,student-1-whisper-live+$out/all/lips-whisper-live.safetensors"
    talkhead bench lips --videos corpus/extra3 --corpus corpus/talking-x3 --people "$people" \
        --out "${BENCH:-docs/bench/lipnet}-extra3-live-a2" --models "student-1-whisper-live+$out/all/lips-whisper-live-a2.safetensors"
fi
# The three people of corpus/extra5 (docs/lips.md; python recipes/talking_clips.py makes it): a French and an English
# address of 50 and 71 s and a man of unknown language, measured only, in a corpus of their own as extra3's.
if [ -d corpus/extra5 ]; then
    talkhead data talking corpus/extra5 --out corpus/talking-x5 --people "$people"
    talkhead bench lips --videos corpus/extra5 --corpus corpus/talking-x5 --people "$people" \
        --out "${BENCH:-docs/bench/lipnet}-extra5" --models "student-4-whisper+none,student-4-whisper+$out/all/lips-whisper.safetensors,student-1-whisper-live+$out/all/lips-whisper-live-a2.safetensors"
fi
