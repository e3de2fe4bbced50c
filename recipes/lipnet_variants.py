"""The lip-net settings tried on 2026-12-05 (docs/lips.md, "Ensembles"): each setting trained once per fold of
recipes/lips_folds.json and scored by the net alone (its opening against each held-out person's filmed lip gap,
z-scored, best lag within +-8 frames, mean over a person's clips, then over the 13 fold people). No setting
was scored on the measure-only people. Needs corpus/talking and corpus/synth (recipes/lipnet.sh makes them).

    python recipes/lipnet_variants.py base seed1 ens3 k3 k7 k9 h32 it800 syn0 j3 extra extra-ens3

Results are appended to runs/lipnet-variants/results.jsonl; finished runs are reused.
"""

import json
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from talkhead.motion.data.talking import lagged_r
from talkhead.motion.lipnet import load_head
from talkhead.motion.train.lipnet import LipNetTrainConfig, gap_clips, train_lipnet

ROOT = Path("runs/lipnet-variants")
FOLDS = json.load(open("recipes/lips_folds.json"))["folds"]
BASE = LipNetTrainConfig()
# name: (config, seeds averaged, corpus trained on)
VARIANTS = {
    "base": (BASE, (0,), "corpus/talking"), "seed1": (BASE, (1,), "corpus/talking"),
    "ens3": (BASE, (0, 1, 2), "corpus/talking"),  # three runs, their openings averaged
    "k3": (replace(BASE, kernel=3), (0,), "corpus/talking"), "k7": (replace(BASE, kernel=7), (0,), "corpus/talking"),
    "k9": (replace(BASE, kernel=9), (0,), "corpus/talking"), "h32": (replace(BASE, hidden=32), (0,), "corpus/talking"),
    "it800": (replace(BASE, iters=800), (0,), "corpus/talking"),
    "syn0": (replace(BASE, synthetic_share=0.0), (0,), "corpus/talking"),
    "j3": (replace(BASE, members=3), (0,), "corpus/talking"),  # one run of three members (what ships)
    "corr1": (replace(BASE, members=3, corr_weight=1.0), (0,), "corpus/talking"),
    "corr3": (replace(BASE, members=3, corr_weight=3.0), (0,), "corpus/talking"),
    # the 10 measure-only people of corpus/extra learnt from too (not adopted: they are the people no net saw)
    "extra": (BASE, (0,), "corpus/talking-x"), "extra-ens3": (BASE, (0, 1, 2), "corpus/talking-x"),
}

SHARED = {"seed1": "base", "ens3": "base", "extra-ens3": "extra"}  # the same runs, other seeds


def with_extra_people() -> None:
    """corpus/talking-x: corpus/talking with the corpus/extra clips made trainable (not V-Express or psychopy)."""
    out = Path("corpus/talking-x")
    if (out / "manifest.jsonl").exists():
        return
    out.mkdir(parents=True)
    (out / "shards").symlink_to(Path("../talking/shards"))
    rows = [json.loads(line) for line in open("corpus/talking/manifest.jsonl")]
    for r in rows:
        if r["split"] == "measure" and r["person"] not in ("jwp", "radio-host", "aoc"):
            r["split"] = "train"
    (out / "manifest.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def score(name: str) -> dict:
    cfg, seeds, corpus = VARIANTS[name]
    folder = ROOT / SHARED.get(name, name)
    data, _ = gap_clips("corpus/talking", (), 0)
    people: dict[str, list[float]] = {}
    for k, hold in enumerate(FOLDS):
        heads = []
        for s in seeds:
            out = folder / f"fold{k}" / f"s{s}.safetensors"
            if not out.with_suffix(".log.jsonl").exists():
                for f in out.parent.glob(f"s{s}.*"):
                    f.unlink()
                train_lipnet(corpus, out, replace(cfg, hold_out=tuple(hold), seed=s), progress=False,
                             synthetic="corpus/synth")
            heads.append(load_head(out))
        for i, row in enumerate(data.rows):
            if row["person"] in hold:
                z = torch.stack([h.opening(data.feats[i][0][None])[0] for h in heads]).mean(0).numpy()
                people.setdefault(row["person"], []).append(lagged_r(data.gap[i].numpy(), z,
                                                                     data.seen[i].numpy(), 8)[1])
    r = {p: float(np.mean(v)) for p, v in sorted(people.items())}
    return {"name": name, "mean": round(float(np.mean(list(r.values()))), 4), "min": round(min(r.values()), 4),
            "people": {p: round(v, 3) for p, v in r.items()}}


if __name__ == "__main__":
    torch.set_num_threads(2)
    with_extra_people()
    ROOT.mkdir(parents=True, exist_ok=True)
    for name in sys.argv[1:] or VARIANTS:
        t0 = time.time()
        result = {**score(name), "seconds": round(time.time() - t0)}
        print(json.dumps(result), flush=True)
        with open(ROOT / "results.jsonl", "a") as f:
            f.write(json.dumps(result) + "\n")
