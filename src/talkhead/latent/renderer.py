"""``generate --renderer latent``: frames from the latent face engine, pasted back into the photo.

The engine draws a 128 px face crop per frame (framed as its training crops were); the crop is
scaled to where that framing sits in the output frame and blended in with a feathered mask, so the
rest of the frame keeps the photo's own sharpness. Every frame starts from the same noise (seeded):
a deterministic sampler then maps similar motion to similar faces, which is what keeps the frames
steady. With a cadence stride K only every K-th frame (and each batch's last) is sampled; the
latents between are SLERPed from their two keyframes, and every frame is still decoded.

E2 (TempoSyncDiff's deferred decoding): ``output="latents"`` yields each frame's latent instead of
its image; ``LatentVideo`` files hold them with the audio and the background, for ``talkhead decode``.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch.nn import functional as F

from talkhead.config import FPS, VIDEO_SIZE
from talkhead.errors import InputError
from talkhead.latent.engine import LatentEngine, load_engine
from talkhead.latent.net import slerp
from talkhead.util import atomic_write, npz_headers

DEFAULT_ENGINE = "latent-student-4"  # best of the students on held-out faces, 2.9 ms a frame
CROP_FRAMING = 1.9  # as the training crops (FacesConfig.framing)
MIN_FACE_PX = 64  # a face window smaller than this would be blown up more than 2x into the 128 px crop


def feather_mask(h: int, w: int, ramp: float = 0.14) -> torch.Tensor:
    """[h, w] weights: 1 inside, a smoothstep down to 0 over ``ramp`` of each side at the edges."""
    def axis(n: int) -> torch.Tensor:
        d = torch.minimum(torch.arange(n) + 0.5, n - 0.5 - torch.arange(n)) / max(1.0, ramp * n)
        d = d.clamp(0, 1)
        return d * d * (3 - 2 * d)
    return axis(h)[:, None] * axis(w)[None, :]


class LatentRenderer:
    """Photo + motion [T, 58] -> frames uint8 [T, H, W, 3] (or latents) drawn by a latent engine."""

    def __init__(self, photo: np.ndarray, size: int | tuple[int, int] = VIDEO_SIZE, device: str = "cpu",
                 name: str = "photo", engine: str | Path | LatentEngine = DEFAULT_ENGINE, stride: int = 1,
                 seed: int = 0, output: str = "frames", framing: float = 4.0) -> None:
        from talkhead.face.detect import as_rgb, detect_face
        from talkhead.warp.renderer import frame_photo, frame_size, photo_window

        if stride < 1:
            raise InputError("--cadence-stride must be >= 1")
        if output not in ("frames", "latents"):
            raise ValueError(f"output is 'frames' or 'latents', not {output!r}")
        photo = as_rgb(photo, name)
        self.size, self.stride, self.output = frame_size(size), stride, output
        self.engine = engine if isinstance(engine, LatentEngine) else load_engine(engine)
        # What a latents file names for `talkhead decode`: the shipped name or the path it was loaded from.
        self.engine_name = engine.meta.get("name", "") if isinstance(engine, LatentEngine) else str(engine)
        face = detect_face(photo, name, cache=True)
        crop_size = self.engine.vae.cfg.size
        win = photo_window(photo.shape, face, (crop_size, crop_size), CROP_FRAMING)
        if min(win[2:]) < MIN_FACE_PX:
            raise InputError(f"the face in {name} is too small for the latent engine: its crop is {min(win[2:])} px "
                             f"of photo, at least {MIN_FACE_PX} needed (use a larger photo)")
        self.background = frame_photo(photo, face, self.size, framing)[0]
        self.reference_crop = frame_photo(photo, face, (crop_size, crop_size), CROP_FRAMING)[0]
        self.box = _box_in_frame(photo_window(photo.shape, face, self.size, framing), win, self.size)
        self.anchor = self.engine.anchor(self.reference_crop)
        self.reference = self.anchor["latent"]
        gen = torch.Generator().manual_seed(seed)
        self.noise = torch.randn(self.reference.shape, generator=gen)
        self._index = 0  # frames drawn so far: keyframes sit at global multiples of the stride
        self._last: tuple[int, torch.Tensor] | None = None  # the last keyframe: (global index, flat latent [1, D])
        self.recorded: list[np.ndarray] | None = None  # set to a list to keep each frame's latent (E2)

    @property
    def frame_shape(self) -> tuple[int, int, int]:
        return self.background.shape

    def latents(self, motion: np.ndarray) -> torch.Tensor:
        """Latents [T, L, h, w] for motion rows [T, 58]: keyframes sampled, the rest SLERPed."""
        m = torch.from_numpy(np.asarray(motion, np.float32))
        n = len(m)
        keys = [i for i in range(n) if (self._index + i) % self.stride == 0]
        if not keys or keys[-1] != n - 1:
            keys.append(n - 1)  # a batch ends on a keyframe: no frame waits for the next batch
        z_keys = self.engine.sample(self.reference, m[keys], self.noise.expand(len(keys), -1, -1, -1),
                                    geometry=self.engine.maps(self.anchor, m[keys]))
        pos, z = torch.tensor(keys, dtype=torch.float32), z_keys.flatten(1)
        if self._last is not None and keys[0] > 0:  # the frames before this batch's first keyframe
            pos, z = torch.cat([torch.tensor([float(self._last[0] - self._index)]), pos]), torch.cat([self._last[1], z])
        self._index += n
        self._last = (self._index - 1, z[-1:])
        if len(keys) == n:
            return z_keys
        p = torch.arange(n, dtype=torch.float32)
        right = torch.searchsorted(pos, p)  # the first keyframe at or after each frame
        left = (right - 1).clamp(min=0)
        w = (p - pos[left]) / (pos[right] - pos[left]).clamp_min(1.0)
        return slerp(z[left], z[right], torch.where(right == left, torch.ones(n), w)).reshape(n, *z_keys.shape[1:])

    def paste(self, crops: np.ndarray) -> np.ndarray:
        """Engine crops uint8 [B, S, S, 3] -> whole frames [B, H, W, 3], feathered into the background."""
        return paste_back(crops, self.background, self.box)

    def frames(self, motion: np.ndarray, batch: int = 32) -> Iterator[np.ndarray]:
        for i in range(0, len(motion), batch):
            z = self.latents(motion[i:i + batch])
            if self.recorded is not None:
                self.recorded.extend(z.half().numpy())
            if self.output == "latents":
                yield from z.numpy()
            else:
                yield from self.paste(self.engine.decode(z))


def _box_in_frame(frame_win: tuple[int, int, int, int], crop_win: tuple[int, int, int, int],
                  size: tuple[int, int]) -> tuple[float, float, float, float]:
    """The crop's window in output-frame pixels: (x0, y0, x1, y1), possibly past the frame's edges."""
    fx, fy, fw, fh = frame_win
    cx, cy, cw, ch = crop_win
    k = size[0] / fw
    return ((cx - fx) * k, (cy - fy) * k, (cx - fx + cw) * k, (cy - fy + ch) * k)


def paste_back(crops: np.ndarray, background: np.ndarray, box: tuple[float, float, float, float]) -> np.ndarray:
    """Crops scaled to ``box`` and blended into copies of ``background`` with a feathered edge."""
    h, w = background.shape[:2]
    x0, y0, x1, y1 = (int(round(v)) for v in box)
    bw, bh = x1 - x0, y1 - y0
    t = torch.from_numpy(np.ascontiguousarray(crops)).permute(0, 3, 1, 2).float()
    t = F.interpolate(t, size=(bh, bw), mode="bilinear", align_corners=False, antialias=bh < t.shape[2])
    mask = feather_mask(bh, bw)
    # The part of the box inside the frame.
    sx0, sy0, sx1, sy1 = max(0, -x0), max(0, -y0), bw - max(0, x1 - w), bh - max(0, y1 - h)
    out = np.repeat(background[None], len(crops), axis=0)
    region = torch.from_numpy(out[:, y0 + sy0:y0 + sy1, x0 + sx0:x0 + sx1]).permute(0, 3, 1, 2).float()
    m = mask[sy0:sy1, sx0:sx1]
    blend = region + m * (t[:, :, sy0:sy1, sx0:sx1] - region)
    out[:, y0 + sy0:y0 + sy1, x0 + sx0:x0 + sx1] = blend.round().clamp(0, 255).to(torch.uint8).permute(0, 2, 3, 1).numpy()
    return out


@dataclass
class LatentVideo:
    """E2's file: frame latents (float16), the engine that decodes them, the frame to paste into, the audio."""

    latents: np.ndarray  # float16 [T, L, h, w]
    engine: str  # a shipped engine name or a path
    background: np.ndarray  # uint8 [H, W, 3]
    box: tuple[float, float, float, float]
    audio: np.ndarray  # float32 [N], 16 kHz mono

    def save(self, path: str | Path) -> None:
        buf = io.BytesIO()
        np.savez_compressed(buf, latents=self.latents.astype(np.float16), engine=np.array(self.engine),
                            background=self.background, box=np.array(self.box, np.float64),
                            audio=np.round(np.clip(self.audio, -1, 1) * 32767).astype(np.int16), fps=np.array(25))
        atomic_write(path, buf.getvalue())

    @classmethod
    def load(cls, path: str | Path) -> LatentVideo:
        """Read a latents file; its arrays' shapes are checked from their headers before any is decompressed
        (``MAX_SECONDS`` of frames, a background of at most 8,192 px a side), and its latents must be finite."""
        what = f"{path} is not a latents file from `talkhead generate --latents-out`"
        try:
            heads = npz_headers(path)
            _check_heads(heads)
            z = np.load(path, allow_pickle=False)
            video = cls(z["latents"], str(z["engine"]), z["background"], tuple(z["box"].tolist()),
                        z["audio"].astype(np.float32) / 32767)
        except (OSError, KeyError, ValueError, TypeError) as e:
            raise InputError(f"{what} ({str(e)[:160]})") from None
        if not np.isfinite(video.latents).all() or not np.isfinite(video.box).all():
            raise InputError(f"{path}: its latents hold NaN or infinite values")
        return video


def _check_heads(heads: dict) -> None:
    """A latents file's arrays as ``LatentVideo.save`` writes them, of sizes a video can have (ValueError)."""
    from talkhead.video import MAX_SECONDS

    want = {"latents": (4, "f"), "engine": (0, "U"), "background": (3, "u"), "box": (1, "f"), "audio": (1, "i")}
    for name, (ndim, kind) in want.items():
        shape, dtype = heads[name]  # a missing array: KeyError
        if len(shape) != ndim or dtype.kind != kind:
            raise ValueError(f"{name} is {dtype} {list(shape)}")
    t, ch, h, w = heads["latents"][0]
    bh, bw, c = heads["background"][0]
    if not (t <= MAX_SECONDS * FPS and ch <= 64 and max(h, w) <= 256 and max(bh, bw) <= 8192 and c == 3
            and heads["box"][0] == (4,) and heads["audio"][0][0] <= MAX_SECONDS * 16_000
            and heads["engine"][1].itemsize <= 4096):
        raise ValueError("its arrays are larger than a video's")


def decode_video(video: LatentVideo, out: str | Path, engine: str | Path | None = None, batch: int = 32,
                 progress: bool = True) -> int:
    """E2's second half: decode a latents file into an mp4 (with its audio); returns the frame count."""
    from tqdm import tqdm

    from talkhead.video import write_mp4

    eng = load_engine(engine or video.engine)
    bar = tqdm(total=len(video.latents), unit="frame", desc="decode", disable=not progress)

    def frames() -> Iterator[np.ndarray]:
        for i in range(0, len(video.latents), batch):
            z = torch.from_numpy(video.latents[i:i + batch].astype(np.float32))
            yield from paste_back(eng.decode(z), video.background, video.box)
            bar.update(len(z))

    write_mp4(out, frames(), video.audio, 16_000)
    bar.close()
    return len(video.latents)
