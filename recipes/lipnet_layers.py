"""Which layer of the Whisper tiny.en encoder the lip net reads (docs/lips.md, "Inner layers of the speech encoder"):
the lip net trained once per fold of recipes/lips_folds.json (3 members, no synthetic half, seed 0) on the encoder's
output (what the motion models read), on the states after one of its inner layers (``audio.whisper_taps``), or on
both side by side (what ships since 2026-12-05: the output and layer 2), and scored by the net alone on the fold
people, each by the fold net that never heard them (z-scored gap, best lag within +-8 frames). Needs corpus/talking
(recipes/lipnet.sh makes it).

    python recipes/lipnet_layers.py out 2 3 out+2 1 out+1+2     # about 10 min a setting on 2 cores

Results: runs/lipnet-layers/results.jsonl.
"""

import sys
from pathlib import Path

from lipnet_encoder import FOLDS, fold_result, person_r, run_settings, train

from talkhead.motion.train.lipnet import gap_clips, hearing

ROOT = Path("runs/lipnet-layers")


def clips(spec: str):
    """The trainable clips read as ``spec`` says: "out" (the encoder's output), "K" (layer K alone), "out+K", "out+J+K"."""
    taps = () if spec == "out" else tuple(int(t) for t in spec.split("+") if t != "out")
    data, _ = gap_clips("corpus/talking", (), 0, "offline", hearing(taps))
    if taps and not spec.startswith("out+"):
        data.feats = [[f[0][:, 384:]] for f in data.feats]  # the layer's columns only
    return data


def folds(spec: str) -> dict:
    data = clips(spec)
    r: dict[str, float] = {}
    for hold in FOLDS:
        net = train(data, tuple(hold))
        r.update(person_r([net], [data], lambda p, h=hold: p in h))
    return fold_result("layers", spec, r)


if __name__ == "__main__":
    run_settings(ROOT, folds, sys.argv[1:])
