"""Corpus clips in memory and random training windows drawn from them."""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from talkhead.audio.features import FeatureConfig, log_mel
from talkhead.data.corpus import load_manifest
from talkhead.errors import InputError
from talkhead.motion.model import Normalizer
from talkhead.util import atomic_write


@dataclass
class Clips:
    """Per-clip raw audio features [T, A], target motion [T, 58], manifest rows and (optionally) audio."""

    audio: list[Tensor]
    motion: list[Tensor]
    rows: list[dict]
    wavs: list[np.ndarray] | None = None


def _feature_cache(corpus: Path, features: FeatureConfig) -> Path:
    key = hashlib.sha1(json.dumps(asdict(features), sort_keys=True).encode()).hexdigest()[:10]
    return corpus / "cache" / f"features-{key}.npz"


def load_clips(corpus: str | Path, split: str | None, features: FeatureConfig = FeatureConfig(),
               limit: int | None = None, keep_wav: bool = False) -> Clips:
    """Load a corpus split ("train", "heldout" or None for all); features are cached beside it."""
    corpus = Path(corpus)
    rows = load_manifest(corpus)
    cache_path = _feature_cache(corpus, features)
    cache = dict(np.load(cache_path)) if cache_path.exists() else {}
    fresh: dict[str, np.ndarray] = {}
    picked = [r for r in rows if split is None or r["split"] == split][:limit]
    if not picked:
        raise InputError(f"{corpus} has no {split or ''} clips")
    out = Clips([], [], picked, [] if keep_wav else None)
    shards: dict[str, np.lib.npyio.NpzFile] = {}
    for r in picked:
        z = shards.setdefault(r["shard"], np.load(corpus / r["shard"]))
        motion = z[f"{r['id']}/motion"]
        feats = cache.get(r["id"])
        if feats is None or keep_wav:
            wav = z[f"{r['id']}/audio"].astype(np.float32) / 32767.0
            if feats is None:
                feats = fresh[r["id"]] = log_mel(wav, features).numpy()
            if keep_wav:
                out.wavs.append(wav)
        n = min(len(feats), len(motion))
        out.audio.append(torch.from_numpy(np.ascontiguousarray(feats[:n])))
        out.motion.append(torch.from_numpy(np.ascontiguousarray(motion[:n])))
    if fresh:
        cache_path.parent.mkdir(exist_ok=True)
        buf = io.BytesIO()
        np.savez(buf, **{**cache, **fresh})
        atomic_write(cache_path, buf.getvalue())
    return out


def fit_normalizer(clips: Clips, min_std: float = 1e-3) -> Normalizer:
    """Per-channel mean/std; channels that never move (std ~ 0) pass through unscaled."""
    m = torch.cat(clips.motion)
    a = torch.cat(clips.audio)
    mm, ms = m.mean(0), m.std(0)
    still = ms < min_std
    mm, ms = torch.where(still, torch.zeros_like(mm), mm), torch.where(still, torch.ones_like(ms), ms)
    return Normalizer(mm, ms, a.mean(0), a.std(0).clamp_min(1e-3))


class WindowSampler:
    """Random normalised training windows: motion x0, audio, reference, tail."""

    def __init__(self, clips: Clips, norm: Normalizer, window: int = 80, tail: int = 10,
                 tail_prob: float = 0.7, tail_noise: float = 0.05) -> None:
        self.window, self.tail, self.tail_prob, self.tail_noise = window, tail, tail_prob, tail_noise
        self.motion = [(m - norm.motion_mean) / norm.motion_std for m in clips.motion]
        self.audio = [(a - norm.audio_mean) / norm.audio_std for a in clips.audio]
        silence = (log_mel(np.zeros(640, np.float32)) - norm.audio_mean) / norm.audio_std
        self.silence_audio = silence[0]
        self.silence_motion = (torch.zeros(norm.motion_mean.shape) - norm.motion_mean) / norm.motion_std
        lengths = torch.tensor([len(m) for m in self.motion], dtype=torch.float64)
        self.weights = lengths / lengths.sum()

    def _window(self, k: int, start: int) -> tuple[Tensor, Tensor]:
        m, a, w = self.motion[k], self.audio[k], self.window
        mw, aw = m[start : start + w], a[start : start + w]
        pad = w - len(mw)
        if pad > 0:  # past the clip's end: silence, closed mouth, head held where it was
            hold = self.silence_motion.clone().expand(pad, -1).clone()
            pose = slice(52, 58)
            hold[:, pose] = mw[-1, pose]
            mw = torch.cat([mw, hold])
            aw = torch.cat([aw, self.silence_audio.expand(pad, -1)])
        return mw, aw

    def sample(self, batch: int, generator: torch.Generator) -> dict[str, Tensor]:
        """A batch of windows: x0 [B,W,D], audio [B,W,A], ref [B,D], tail [B,L,D], has_tail [B]."""
        ks = torch.multinomial(self.weights, batch, replacement=True, generator=generator).tolist()
        xs, auds, refs = [], [], []
        for k in ks:
            hi = max(len(self.motion[k]) - self.window // 2, 1)
            start = int(torch.randint(0, hi, (1,), generator=generator))
            mw, aw = self._window(k, start)
            xs.append(mw)
            auds.append(aw)
            refs.append(self.motion[k][0])
        x0 = torch.stack(xs)
        tail = x0[:, : self.tail] + self.tail_noise * torch.randn(batch, self.tail, x0.shape[-1], generator=generator)
        has_tail = torch.rand(batch, generator=generator) < self.tail_prob
        return {"x0": x0, "audio": torch.stack(auds), "ref": torch.stack(refs), "tail": tail, "has_tail": has_tail}


def warp_audio(audio: Tensor, norm: Normalizer, features: FeatureConfig, max_warp: float,
               generator: torch.Generator) -> Tensor:
    """Stretch each window's mel axis by a random factor in 1 +- ``max_warp``: normalised [B,W,A] -> same.

    A longer or shorter vocal tract moves every formant by about one factor; stretching the mel bins
    so imitates voices the corpus does not have. A student that only has to match its teacher can
    learn from them, since the teacher hears the same warped audio.
    """
    b, w, _ = audio.shape
    n = features.n_mels
    mel = (audio * norm.audio_std + norm.audio_mean).reshape(b, w, -1, n)
    alpha = 1 + (2 * torch.rand(b, generator=generator) - 1) * max_warp
    src = (torch.arange(n, dtype=torch.float32)[None] / alpha[:, None]).clamp(0, n - 1)  # [B, n]
    lo = src.floor().long()
    frac = (src - lo)[:, None, None]
    pick = lambda idx: torch.gather(mel, -1, idx[:, None, None].expand(mel.shape))
    out = pick(lo) * (1 - frac) + pick((lo + 1).clamp_max(n - 1)) * frac
    return (out.reshape(b, w, -1) - norm.audio_mean) / norm.audio_std
