"""Where the lips' r is lost (docs/lips.md, "Speed perturbation, finer time, regularisation, mouth channels"): per
clip of a `bench lips` run of recipes/lipnet.sh, the lip net's own opening against the filmed lip gap (z-units, best
lag within +-8 frames, on the audio as filmed) beside the r of the lips the benchmark drew from it. The fold people
are read by their fold's net, the people no net learnt from by the net on everyone. Trains nothing.

    python recipes/lipnet_alone.py runs/lipnet-x4b        # about 1 min; writes RUN/alone.json
"""

import json
import sys
from pathlib import Path

import numpy as np
import torch

from talkhead.audio.features import extract
from talkhead.motion.data.talking import clip_arrays, lagged_r
from talkhead.motion.lipnet import load_head

run = Path(sys.argv[1])
folds = json.load(open("recipes/lips_folds.json"))["folds"]
bench = json.load(open(run / "bench" / "lips.json"))
heads = {k: load_head(run / f"fold{k}" / "lips-whisper.safetensors") for k in range(len(folds))}
heads["all"] = load_head(run / "all" / "lips-whisper.safetensors")
shipped = f"student-4-whisper+{run}/all/lips-whisper.safetensors"
rows = {r["id"]: r for r in map(json.loads, open("corpus/talking/manifest.jsonl"))}
out = []
with torch.no_grad():
    for c in bench["clips"]:
        r = rows.get(c["id"])
        k = None if r is None else next((i for i, f in enumerate(folds) if r["person"] in f), None)
        drawn = c.get("lips-whisper (folds)") if k is not None else c.get(shipped)
        if r is None or drawn is None or (k is None and r["split"] == "train"):
            continue
        head, a = heads["all" if k is None else k], clip_arrays("corpus/talking", r)
        f = extract(a["audio_filmed"].astype(np.float32) / 32767, head.features)
        n = min(len(f), len(a["gap"]))
        alone = lagged_r(a["gap"][:n], head.opening(f[None, :n])[0].numpy(), a["valid"][:n].astype(bool), 8)[1]
        out.append({"id": c["id"], "person": r["person"], "set": "fold" if k is not None else "never",
                    "alone": round(float(alone), 4), "drawn": drawn["r"]})
for s in ("fold", "never"):
    people: dict[str, list] = {}
    for c in out:
        if c["set"] == s:
            people.setdefault(c["person"], []).append((c["alone"], c["drawn"]))
    means = np.array([np.mean(v, 0) for v in people.values()])
    print(f"{s}: {len(people)} people, alone {means[:, 0].mean():.3f}, drawn {means[:, 1].mean():.3f}")
(run / "alone.json").write_text(json.dumps(out, indent=1))
