"""Corpus clips in memory (features cached per front end) and random training windows drawn from them."""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor
from tqdm import tqdm

from talkhead.audio.augment import augment
from talkhead.audio.features import FeatureConfig, extract, silence_row
from talkhead.errors import InputError
from talkhead.motion.data.corpus import load_manifest
from talkhead.motion.data.normalize import Normalizer
from talkhead.util import atomic_write


@dataclass
class Clips:
    """Per-clip raw audio features [T, A], target motion [T, 58], manifest rows and (optionally) audio."""

    audio: list[Tensor]
    motion: list[Tensor]
    rows: list[dict]
    wavs: list[np.ndarray] | None = None
    features: FeatureConfig = FeatureConfig()
    variants: list[list[Tensor]] | None = None  # per clip, features of augmented copies of its audio

    def __add__(self, other: "Clips") -> "Clips":
        if other.features != self.features:
            raise InputError("clips with different audio front ends cannot be pooled")
        cat = lambda a, b: None if a is None or b is None else a + b
        return Clips(self.audio + other.audio, self.motion + other.motion, self.rows + other.rows,
                     cat(self.wavs, other.wavs), self.features, cat(self.variants, other.variants))


def _feature_cache(corpus: Path, features: FeatureConfig, variant: int = 0) -> Path:
    key = hashlib.sha1(json.dumps(features.key(), sort_keys=True).encode()).hexdigest()[:10]
    return corpus / "cache" / (f"features-{key}.npz" if variant == 0 else f"features-{key}-aug{variant}.npz")


def _variant_wav(wav: np.ndarray, cid: str, variant: int) -> np.ndarray:
    """Copy ``variant`` of a clip's audio: 0 is the clip itself, k > 0 an augmentation seeded by (id, k)."""
    if variant == 0:
        return wav
    seed = int(hashlib.sha1(cid.encode()).hexdigest()[:8], 16)
    return augment(wav, np.random.default_rng([seed, variant]))


def _cached_features(corpus: Path, picked: list[dict], features: FeatureConfig, variant: int,
                     wav_of) -> list[np.ndarray]:
    """Features of every picked clip's copy ``variant``, from the corpus' cache or computed and added to it."""
    path = _feature_cache(corpus, features, variant)
    cache = dict(np.load(path)) if path.exists() else {}
    todo = [r for r in picked if r["id"] not in cache]
    desc = f"{features.kind} features" + (f", copy {variant}" if variant else "") + f" ({corpus.name})"
    # Whisper on a 120-minute corpus takes minutes: say so (small test corpora stay quiet).
    fresh = {r["id"]: extract(_variant_wav(wav_of(r), r["id"], variant), features).numpy()
             for r in tqdm(todo, desc=desc, unit="clip", disable=len(todo) < 100)}
    if fresh:
        path.parent.mkdir(exist_ok=True)
        buf = io.BytesIO()
        np.savez(buf, **{**cache, **fresh})
        atomic_write(path, buf.getvalue())
    return [fresh.get(r["id"], cache.get(r["id"])) for r in picked]


def load_clips(corpus: str | Path, split: str | None, features: FeatureConfig = FeatureConfig(),
               limit: int | None = None, keep_wav: bool = False, augmented: int = 0) -> Clips:
    """Load a corpus split ("train", "heldout" or None for all); features are cached beside it.

    ``augmented`` > 0 also loads that many augmented copies of every clip's audio (``Clips.variants``).
    """
    corpus = Path(corpus)
    rows = load_manifest(corpus)
    picked = [r for r in rows if split is None or r["split"] == split][:limit]
    if not picked:
        raise InputError(f"{corpus} has no {split or ''} clips")
    shards: dict[str, np.lib.npyio.NpzFile] = {}
    npz = lambda r: shards.setdefault(r["shard"], np.load(corpus / r["shard"]))
    wav_of = lambda r: npz(r)[f"{r['id']}/audio"].astype(np.float32) / 32767.0
    feats = _cached_features(corpus, picked, features, 0, wav_of)
    copies = [_cached_features(corpus, picked, features, k, wav_of) for k in range(1, augmented + 1)]
    out = Clips([], [], picked, [wav_of(r) for r in picked] if keep_wav else None, features,
                [] if augmented else None)
    for i, r in enumerate(picked):
        motion = npz(r)[f"{r['id']}/motion"]
        n = min(len(feats[i]), len(motion))
        out.audio.append(torch.from_numpy(np.ascontiguousarray(feats[i][:n])))
        out.motion.append(torch.from_numpy(np.ascontiguousarray(motion[:n])))
        if augmented:
            out.variants.append([torch.from_numpy(np.ascontiguousarray(c[i][:n])) for c in copies])
    return out


def load_corpora(corpora: list[str | Path], split: str | None, features: FeatureConfig = FeatureConfig(),
                 **kw) -> Clips:
    """``load_clips`` over several corpora, pooled in order."""
    clips = [load_clips(c, split, features, **kw) for c in corpora]
    out = clips[0]
    for c in clips[1:]:
        out = out + c
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
                 tail_prob: float = 0.7, tail_noise: float = 0.05, masks: list[Tensor] | None = None) -> None:
        self.window, self.tail, self.tail_prob, self.tail_noise = window, tail, tail_prob, tail_noise
        # Optional per-frame weights [T] of each clip (real video: 0 where the lips are not seen): then each
        # batch has "mask" [B, W] too, 0 past a clip's end, and "clip" [B], which clip each window is from.
        self.masks = masks
        self.motion = [norm.motion(m) for m in clips.motion]
        # Each clip's audio as heard clean or through one of its augmented channels, picked per window.
        self.audio = [[norm.audio(a) for a in [clean, *extra]]
                      for clean, extra in zip(clips.audio, clips.variants or [[]] * len(clips.audio))]
        self.silence_audio = norm.audio(silence_row(clips.features))
        self.silence_motion = norm.motion(torch.zeros(norm.motion_mean.shape))
        lengths = torch.tensor([len(m) for m in self.motion], dtype=torch.float64)
        self.weights = lengths / lengths.sum()

    def _window(self, k: int, start: int, variant: int = 0) -> tuple[Tensor, Tensor]:
        m, a, w = self.motion[k], self.audio[k][variant], self.window
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
        xs, auds, refs, masks = [], [], [], []
        for k in ks:
            hi = max(len(self.motion[k]) - self.window // 2, 1)
            start = int(torch.randint(0, hi, (1,), generator=generator))
            variant = int(torch.randint(0, len(self.audio[k]), (1,), generator=generator)) if len(self.audio[k]) > 1 else 0
            mw, aw = self._window(k, start, variant)
            xs.append(mw)
            auds.append(aw)
            refs.append(self.motion[k][0])
            if self.masks is not None:
                mk = self.masks[k][start : start + self.window].float()
                masks.append(torch.cat([mk, torch.zeros(self.window - len(mk))]))
        x0 = torch.stack(xs)
        tail = x0[:, : self.tail] + self.tail_noise * torch.randn(batch, self.tail, x0.shape[-1], generator=generator)
        has_tail = torch.rand(batch, generator=generator) < self.tail_prob
        out = {"x0": x0, "audio": torch.stack(auds), "ref": torch.stack(refs), "tail": tail, "has_tail": has_tail}
        if self.masks is not None:
            out["mask"], out["clip"] = torch.stack(masks), torch.tensor(ks)
        return out


def warp_audio(audio: Tensor, norm: Normalizer, features: FeatureConfig, max_warp: float,
               generator: torch.Generator) -> Tensor:
    """Stretch each window's mel axis by a random factor in 1 +- ``max_warp``: normalised [B,W,A] -> same.

    A longer or shorter vocal tract moves every formant by about one factor; stretching the mel bins
    so imitates voices the corpus does not have. A student that only has to match its teacher can
    learn from them, since the teacher hears the same warped audio.
    """
    if features.kind != "logmel":
        raise InputError(f"--warp stretches mel bands; the {features.kind} front end has none")
    b, w, _ = audio.shape
    n = features.n_mels
    mel = norm.audio_inverse(audio).reshape(b, w, -1, n)
    alpha = 1 + (2 * torch.rand(b, generator=generator) - 1) * max_warp
    src = (torch.arange(n, dtype=torch.float32)[None] / alpha[:, None]).clamp(0, n - 1)  # [B, n]
    lo = src.floor().long()
    frac = (src - lo)[:, None, None]
    pick = lambda idx: torch.gather(mel, -1, idx[:, None, None].expand(mel.shape))
    out = pick(lo) * (1 - frac) + pick((lo + 1).clamp_max(n - 1)) * frac
    return norm.audio(out.reshape(b, w, -1))
