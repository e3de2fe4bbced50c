"""Does log-mel beside the Whisper states help the lip net? (2026-12-05, docs/lips.md "Log-mel"; not adopted)

Each fold of recipes/lips_folds.json trains a lip net (no synthetic half, one member, seed 0) on the other folds'
people and is scored by the net alone on the fold's people, as recipes/lipnet_variants.py scores its settings.
The features are swapped where the trainer loads them (``gap_clips``): the Whisper states, log-mel (80 bands x 4
hops per frame, the offset-corrected audio) or both side by side. Needs corpus/talking (recipes/real_lips.sh).

    python recipes/lipnet_logmel.py both|logmel|whisper

Results are appended to runs/lipnet-logmel/results.jsonl; finished fold runs are reused.
"""

import json
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

import talkhead.motion.train.lipnet as trainer
from talkhead.audio.features import FeatureConfig
from talkhead.motion.data.talking import lagged_r
from talkhead.motion.data.windows import load_clips
from talkhead.motion.lipnet import load_head

CORPUS = "corpus/talking"
FOLDS = json.load(open("recipes/lips_folds.json"))["folds"]
ROOT = Path("runs/lipnet-logmel")
MODE = sys.argv[1] if len(sys.argv) > 1 else "both"
assert MODE in ("both", "logmel", "whisper"), MODE
LOGMEL = {r["id"]: a for r, a in zip(*(lambda c: (c.rows, c.audio))(load_clips(CORPUS, "train", FeatureConfig(kind="logmel"))))}
whisper_clips = trainer.gap_clips


def swapped(corpus, hold_out, augmented, view="offline"):
    """The trainer's clips with their features swapped for MODE's (log-mel cut or padded to the Whisper rows)."""
    data, units = whisper_clips(corpus, hold_out, augmented, view)
    for fs, row in zip(data.feats, data.rows):
        w, m = fs[0], LOGMEL[row["id"]]
        m = m[:len(w)] if len(m) >= len(w) else torch.cat([m, m[-1:].expand(len(w) - len(m), -1)])
        fs[:] = [{"whisper": w, "logmel": m, "both": torch.cat([w, m], 1)}[MODE]]
    return data, units


if __name__ == "__main__":
    torch.set_num_threads(2)
    trainer.gap_clips = swapped
    cfg = replace(trainer.LipNetTrainConfig(), synthetic_share=0.0)
    data, _ = swapped(CORPUS, (), 0)
    people, t0 = {}, time.time()
    for k, hold in enumerate(FOLDS):
        out = ROOT / MODE / f"fold{k}.safetensors"
        if not out.with_suffix(".log.jsonl").exists():
            for f in out.parent.glob(f"fold{k}.*"):
                f.unlink()
            trainer.train_lipnet(CORPUS, out, replace(cfg, hold_out=tuple(hold)), progress=False)
        head = load_head(out)
        for i, row in enumerate(data.rows):
            if row["person"] in hold:
                z = head.opening(data.feats[i][0][None])[0].detach().numpy()
                people.setdefault(row["person"], []).append(lagged_r(data.gap[i].numpy(), z, data.seen[i].numpy(), 8)[1])
    r = {p: float(np.mean(v)) for p, v in sorted(people.items())}
    result = {"mode": MODE, "mean": round(float(np.mean(list(r.values()))), 4), "min": round(min(r.values()), 4),
              "people": {p: round(v, 3) for p, v in r.items()}, "seconds": round(time.time() - t0)}
    print(json.dumps(result))
    with open(ROOT / "results.jsonl", "a") as f:
        f.write(json.dumps(result) + "\n")
