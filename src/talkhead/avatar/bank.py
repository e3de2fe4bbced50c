"""What an avatar file keeps of its video: the base (the steadiest seconds, frames over a size made smaller)
and the mouth bank (each kept training frame's latent, motion and detail, whole seconds within a budget),
and the JPEG packing both use (one byte tensor and its offsets)."""

from __future__ import annotations

import io

import numpy as np
import torch
from PIL import Image

from talkhead.avatar.data import AvatarData
from talkhead.config import FPS
from talkhead.errors import InputError
from talkhead.latent.engine import LatentEngine

DETAIL_QUALITY = 90  # JPEG quality of the bank's detail (at 90 it measures as the raw detail does)


def steadiest(clips: list[dict], length: int) -> tuple[int, int, int]:
    """(clip, start, end) of the stretch of ``length`` frames where the head moves least (crop maps' drift)."""
    best = (np.inf, 0, 0, 0)
    for ci, c in enumerate(clips):
        a = c["affine"]
        n = min(length, len(a))
        scale = np.sqrt(np.abs(np.linalg.det(a[:, :, :2])))
        speed = np.concatenate([[0.0], np.linalg.norm(np.diff(a[:, :, 2], axis=0), axis=1) / scale[1:]
                                + np.abs(np.diff(scale)) / scale[1:] * 100])
        csum = np.concatenate([[0.0], np.cumsum(speed)])
        means = (csum[n:] - csum[:-n]) / n
        i = int(np.argmin(means))
        if means[i] < best[0]:
            best = (means[i], ci, i, i + n)
    return best[1], best[2], best[3]


def scaled_base(frames: np.ndarray, affine: np.ndarray, side: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Frames [B, H, W, 3] with their crop maps [B, 2, 3] (crop pixels -> frame pixels), made smaller (even sides)
    if their longer side is over ``side``: the maps are scaled with them, so each crop is the same face."""
    h, w = frames.shape[1:3]
    if side is None or max(h, w) <= side:
        return frames, affine
    s = side / max(h, w)
    size = (max(2, 2 * round(w * s / 2)), max(2, 2 * round(h * s / 2)))
    small = np.stack([np.asarray(Image.fromarray(f).resize(size, Image.LANCZOS)) for f in frames])
    return small, affine * np.array([size[0] / w, size[1] / h])[:, None]


def _jpeg_bytes(images: list[np.ndarray], quality: int) -> list[np.ndarray]:
    out = []
    for im in images:
        buf = io.BytesIO()
        Image.fromarray(im).save(buf, "JPEG", quality=quality)
        out.append(np.frombuffer(buf.getvalue(), np.uint8))
    return out


def _pack(encoded: list[np.ndarray]) -> dict[str, torch.Tensor]:
    return {"jpeg": torch.from_numpy(np.concatenate(encoded)),
            "offsets": torch.tensor(np.cumsum([0] + [len(j) for j in encoded]), dtype=torch.int64)}


def jpegs(images: list[np.ndarray], quality: int) -> dict[str, torch.Tensor]:
    """Images as one byte tensor of JPEGs and their offsets (``unjpeg`` reads one back)."""
    return _pack(_jpeg_bytes(images, quality))


def check_jpegs(raw: np.ndarray, offsets: np.ndarray, most: int, max_side: int, what: str) -> tuple[int, int]:
    """(How many JPEGs, how many pixels they decode to) packed in ``raw`` by ``offsets`` (as ``jpegs`` packs them), after checking that the
    offsets walk through the bytes, there are at most ``most`` and each one's header says at most ``max_side``
    a side: only headers are read, so a crafted file's giant pictures are refused before any is decoded."""
    from talkhead.errors import InputError

    off = np.asarray(offsets)
    if off.ndim != 1 or len(off) < 2 or off[0] != 0 or off[-1] != len(raw) or np.any(np.diff(off) <= 0):
        raise InputError(f"{what}: its pictures are not packed as talkhead packs them")
    if len(off) - 1 > most:
        raise InputError(f"{what}: {len(off) - 1} pictures, more than {most}")
    pixels = 0
    for i in range(len(off) - 1):
        try:
            with Image.open(io.BytesIO(raw[off[i]:off[i + 1]].tobytes())) as im:
                size, kind = im.size, im.format
        except Image.DecompressionBombError:
            raise InputError(f"{what}: picture {i} is too large to decode (its header says so)") from None
        except (OSError, ValueError):
            raise InputError(f"{what}: picture {i} is not a readable JPEG") from None
        if kind != "JPEG" or max(size) > max_side:
            raise InputError(f"{what}: picture {i} is {kind} {size[0]}x{size[1]} (JPEG of at most {max_side} px a side)")
        pixels += size[0] * size[1]
    return len(off) - 1, pixels


def unjpeg(raw: np.ndarray, offsets: np.ndarray, i: int) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(raw[offsets[i]:offsets[i + 1]].tobytes())).convert("RGB"))


def bank_tensors(engine: LatentEngine, data: AvatarData, budget_mb: float | None = None) -> dict[str, torch.Tensor]:
    """Every training frame's latent (float16) and motion, in filmed order, with where each stretch ends, and its
    detail: the real crop minus the decoded latent, offset by 128, as JPEG (``DETAIL_QUALITY``). Over
    ``budget_mb`` (MB), whole seconds are kept evenly through the video (``keep_seconds``) until it fits."""
    clips = [c["frames"] for c in data.clips]  # clip by clip: a copy of all of them is 0.6 GB for a phone's 2 min
    latent = torch.cat([engine.encode_many(f) for f in clips]).half()
    ends = np.zeros(len(latent), np.uint8)
    ends[np.cumsum([len(f) for f in clips]) - 1] = 1
    motion = np.concatenate([c["motion"] for c in data.clips]).astype(np.float32)
    # Decoded from the stored float16 latent (what drawing will decode), 2 M pixels at a time as encode_many
    # does: the decoder's last layers hold full-size maps (64 crops of 256 px at once held over 1 GB).
    step, encoded, norms, at = max(1, (1 << 21) // (data.side * data.side)), [], [], 0
    for f in clips:
        for i in range(0, len(f), step):
            j = min(i + step, len(f))  # never into the next clip's latents
            z = latent[at + i:at + j].float()
            rec = engine.decode(z).astype(np.float32)
            detail = np.clip(np.round(f[i:j] - rec + 128), 0, 255).astype(np.uint8)
            encoded += _jpeg_bytes(list(detail), DETAIL_QUALITY)  # as it goes: 5 minutes of raw detail is gigabytes
            norms.append(engine.norm_stats(z))
        at += len(f)
    norms = torch.cat(norms)
    fixed = latent[0].numel() * 2 + motion[0].nbytes + norms[0].numel() * 4 + 1  # bytes of every frame but its JPEG
    per_frame = np.array([len(j) for j in encoded]) + fixed
    keep = np.arange(len(latent)) if budget_mb is None else keep_seconds(per_frame, ends.astype(bool), budget_mb * 1e6)
    keep_t = torch.from_numpy(keep)
    kept_ends = ends[keep].astype(bool) | np.append(np.diff(keep) != 1, True)  # a stretch ends where a gap starts
    detail = _pack([encoded[i] for i in keep])
    return {"bank.latent": latent[keep_t], "bank.motion": torch.from_numpy(motion[keep]),
            "bank.ends": torch.from_numpy(kept_ends.astype(np.uint8)), "bank.detail_jpeg": detail["jpeg"],
            "bank.detail_offsets": detail["offsets"], "bank.norms": norms[keep_t]}


def keep_seconds(nbytes: np.ndarray, ends: np.ndarray, budget: float, second: int = FPS) -> np.ndarray:
    """Indices of the frames kept so that their ``nbytes`` [N] sum to at most ``budget``: all of them if they fit,
    else whole seconds (runs of ``second`` frames, never across a stretch's end ``ends`` [N]) spread evenly
    through the video, so that the bank keeps mouths from all of it, each played forward as filmed."""
    if nbytes.sum() <= budget:
        return np.arange(len(nbytes))
    starts = np.flatnonzero(np.concatenate([[True], ends[:-1]]))  # each stretch cut into seconds
    chunks = [np.arange(a, b)[i:i + second] for a, b in zip(starts, np.append(starts[1:], len(nbytes)))
              for i in range(0, b - a, second)]
    share = budget / nbytes.sum()
    while share > 0:
        picked = [c for k, c in enumerate(chunks) if np.floor(k * share) > np.floor((k - 1) * share)]  # from 0
        keep = np.concatenate(picked) if picked else np.zeros(0, np.int64)
        if len(keep) and nbytes[keep].sum() <= budget:
            return keep
        share -= 0.02
    raise InputError(f"the avatar's mouth bank does not fit in {budget / 1e6:.1f} MB: raise --bank-mb")
