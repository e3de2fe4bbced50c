"""Lip-net training settings, each trained once per fold of recipes/lips_folds.json and scored by the net alone
(docs/lips.md, "Speed perturbation, regularisation, finer time"): 3 members, no synthetic half, seed 0, reading the
encoder's output and layer 2 as shipped, on the real clips; scored on the fold people's own clips, each by the fold
net that never heard them (z-scored gap, best lag within +-8 frames). The choice is made on these people only.
Needs corpus/talking (recipes/lipnet.sh makes it).

    python recipes/lipnet_sweep.py none speeds=0.9,1.1 dropout=0.5 members=6 pool=stack  # 6-15 min each, 2 cores

A setting is "none" (the settings above) or FIELD=VALUE of ``LipNetTrainConfig`` (several joined by "+");
``speeds`` adds sped copies of each clip (``speed_clips``); "pool=stack": the front end's two 50 Hz rows of a frame
side by side, not averaged; "aux=W" first: a multi-task net, whose last layer also gives the clip's captured mouth
channels (their share of the loss W; ``AuxObjective``); "teacher=PATH+synthetic_share=0.5": a synthetic half
(corpus/synth) labelled by the offline net PATH ("{fold}" in it: foldK, the fold's net; ``taught``).
Results: runs/lipnet-sweep/results.jsonl.
"""

import sys
from dataclasses import fields, replace
from pathlib import Path

import numpy as np
import torch
from lipnet_encoder import CFG, FOLDS, fold_result, person_r, run_settings, train

from talkhead.audio.features import FeatureConfig
from talkhead.motion.train.lipnet import _by_length, _fit, gap_clips, synthetic_gap_clips, taught

ROOT = Path("runs/lipnet-sweep")


def settings(spec: str):
    """"none" or "FIELD=VALUE+FIELD=VALUE" -> (the config, values parsed as the field's default is typed; the
    front end)."""
    cfg, pool = CFG, "mean"
    types = {f.name: type(getattr(CFG, f.name)) for f in fields(CFG)}
    for part in [] if spec == "none" else spec.split("+"):
        name, value = part.split("=")
        if name == "pool":
            pool = value
            continue
        parse = (lambda v: tuple(float(x) for x in v.split(","))) if types[name] is tuple else types[name]
        cfg = replace(cfg, **{name: parse(value)})
    return cfg, FeatureConfig(kind="whisper", pool=pool, taps=(2,))


def mouth_targets(data) -> list[torch.Tensor]:
    """Each clip's captured mouth channels [T, K] (``avatar.mouths.MOUTH``: jaw, mouth, cheeks), z-scored over its
    seen frames (a channel that does not move there: 0)."""
    from talkhead.avatar.mouths import MOUTH
    from talkhead.motion.data.talking import clip_arrays

    out = []
    for row, seen in zip(data.rows, data.seen):
        m = clip_arrays("corpus/talking", row)["motion"][: len(seen), MOUTH].astype(np.float64)
        s = seen.numpy()
        mu, sd = m[s].mean(0), m[s].std(0)
        out.append(torch.from_numpy(np.where(sd > 1e-3, (m - mu) / np.maximum(sd, 1e-3), 0.0).astype(np.float32)))
    return out


class AuxObjective:
    """The gap's squared error on seen frames of random windows (as ``GapObjective``), plus ``weight`` times the
    same error on the clip's captured mouth channels, read from extra outputs of each member's last layer: a
    multi-task net, the gap alone scored."""

    def __init__(self, data, aux, mean, std, cfg, weight: float) -> None:

        self.data, self.aux, self.mean, self.std, self.cfg, self.weight = data, aux, mean, std, cfg, weight
        self.by_length = _by_length(data)

    def __call__(self, net, gen, step):
        n, xs, ys, ms = self.cfg.frames, [], [], []
        for c in torch.multinomial(self.by_length, self.cfg.batch, replacement=True, generator=gen).tolist():
            f = self.data.feats[c][0]
            t0 = int(torch.randint(max(1, len(f) - n + 1), (1,), generator=gen))
            xs.append(_fit(f[t0:t0 + n], n))
            ys.append(_fit(torch.cat([self.data.gap[c][t0:t0 + n, None], self.aux[c][t0:t0 + n]], 1), n))
            ms.append(_fit(self.data.seen[c][t0:t0 + n, None].float(), n)[:, 0])
        x, y, m = torch.stack(xs), torch.stack(ys).transpose(1, 2), torch.stack(ms)
        with torch.random.fork_rng():
            torch.manual_seed(int(torch.randint(2**62, (1,), generator=gen)))
            xt = ((x - self.mean) / self.std).transpose(1, 2)
            pred = torch.stack([body(xt) for body in net.bodies])  # [members, B, 1 + K, T]
        err = ((pred - y) ** 2) * m[:, None]
        w = torch.ones(y.shape[1])
        w[1:] = self.weight / (y.shape[1] - 1)
        return (err * w[:, None]).sum() / (len(pred) * m.sum().clamp_min(1.0))


def train_aux(data, aux, hold, cfg, weight: float):
    """``lipnet_encoder.train`` with the multi-task objective (``AuxObjective``)."""
    from talkhead.motion.lipnet import LipNet, LipNetConfig
    from talkhead.motion.train.lipnet import GapClips
    from talkhead.train.loop import FitConfig, fit

    keep = [i for i, r in enumerate(data.rows) if r["person"] not in hold]
    sub = GapClips(*([x[i] for i in keep] for x in (data.feats, data.gap, data.seen, data.rows)))
    allf = torch.cat([f[0] for f in sub.feats])
    mean, std = allf.mean(0), allf.std(0).clamp_min(1e-3)
    torch.manual_seed(0)
    net = LipNet(LipNetConfig(dim=allf.shape[1], hidden=cfg.hidden, kernel=cfg.kernel, dropout=cfg.dropout,
                              members=cfg.members))
    for body in net.bodies:  # the last layer gives the gap and the mouth channels; the net's opening is the first
        body[-1] = torch.nn.Conv1d(cfg.hidden, 1 + aux[0].shape[1], 1)
    fit_cfg = FitConfig(steps=cfg.iters, lr=cfg.lr, weight_decay=cfg.weight_decay, ema=cfg.ema, ema_warmup=True, seed=0)
    result = fit(net, AuxObjective(sub, [aux[i] for i in keep], mean, std, cfg, weight), fit_cfg, progress=False)
    return result.module.eval(), mean, std


def folds(spec: str) -> dict:
    weight = 0.0
    if spec.startswith("aux="):  # the multi-task net, the mouth channels' share of the loss this weight
        weight, spec = float(spec.split("+")[0][4:]), "+".join(spec.split("+")[1:]) or "none"
    cfg, features = settings(spec)
    data, _ = gap_clips("corpus/talking", (), 0, "offline", features, cfg.speeds)
    own = [i for i, r in enumerate(data.rows) if "speed" not in r]
    scored = type(data)(*([x[i] for i in own] for x in (data.feats, data.gap, data.seen, data.rows)))
    syn = synthetic_gap_clips("corpus/synth", "offline", features) if cfg.teacher else None
    r: dict[str, float] = {}
    for k, hold in enumerate(FOLDS):
        labelled = taught(syn, "corpus/synth", cfg.teacher.replace("{fold}", f"fold{k}")) if syn else None
        net = (train_aux(data, mouth_targets(data), tuple(hold), cfg, weight) if weight else
               train(data, tuple(hold), cfg.seed, cfg, labelled))  # a held-out person's sped copies are held out too
        r.update(person_r([net], [scored], lambda p, h=hold: p in h))
    return fold_result("setting", f"aux={weight:g}+{spec}" if weight else spec, r)


if __name__ == "__main__":
    run_settings(ROOT, folds, sys.argv[1:])
