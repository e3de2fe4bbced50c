"""Training ``avatar.refiner``'s net on an avatar's own training frames (``avatar train --refine-steps``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from talkhead.avatar.refiner import Refiner, as_tensor
from talkhead.util import atomic_write


class _Given:
    """A mouth bank that returns given frames, in turn: the engine drawn from training's references."""

    def __init__(self, idx: np.ndarray) -> None:
        self.idx, self.k = idx, 0

    def choose(self, keys: np.ndarray) -> np.ndarray:
        self.k += len(keys)
        return self.idx[self.k - len(keys):self.k]


def training_pairs(avatar, d, exclude: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What the refiner learns from, for the avatar's training frames that its mouth bank kept (all, unless the bank
    was cut to its budget by whole seconds; ``d``: its ``AvatarData``): the engine's crops of them (colour matched, no
    bank detail), each drawn from its nearest bank frame at least ``exclude`` frames away (training's references), the
    guides (that frame's real crop moved to this frame's mouth), and the real crops. Each uint8 [N, S, S, 3]: a phone's
    2 min at 256 px is 0.6 GB each, four times that as float."""
    from talkhead.avatar.flow import MouthFlow
    from talkhead.avatar.mouths import mouth_keys, neighbours
    from talkhead.avatar.renderer import AvatarRenderer

    motion = np.concatenate([c["motion"] for c in d.clips])
    row = {m.tobytes(): i for i, m in enumerate(motion)}  # the kept frames, found by their motion rows
    keep = np.array([row[m.tobytes()] for m in avatar.bank["motion"]])
    crops = np.concatenate([c["frames"] for c in d.clips])[keep]
    points = np.concatenate([c["points"] for c in d.clips])[keep]
    clip_of = np.repeat(np.arange(len(d.clips)), [len(c["motion"]) for c in d.clips])[keep]
    motion = motion[keep]
    refs = neighbours(mouth_keys(d.crop_points, motion, d.side), 1, exclude, clip_of, keep)[:, 0]
    identity = np.repeat(np.array([[[1.0, 0, 0], [0, 1.0, 0]]]), len(crops), 0)  # the frames are the crops
    r = AvatarRenderer(avatar, seed, frames=crops, affines=identity, motion=motion, points=points, detail=None,
                       refine=False)
    r.bank = _Given(refs)
    drawn = np.stack(list(r.frames(motion)))
    flow = MouthFlow(avatar.crop_points, avatar.side)
    at = flow.points(motion)
    guides = np.concatenate([flow.warp(torch.from_numpy(crops[refs[i:i + 32]]).float(), at[refs[i:i + 32]],
                                       at[i:i + 32]).clamp(0, 255).round().to(torch.uint8).numpy()
                             for i in range(0, len(crops), 32)])
    return drawn, guides, crops


def train_refiner(drawn: np.ndarray, guides: np.ndarray, real: np.ndarray, mask: np.ndarray, steps: int,
                  work: Path, seed: int = 0, width: int = 32, progress: bool = False) -> Refiner:
    """L1 to the real crops on the lower face (``mask`` [S, S], weights), learnt from random square patches of it
    (up to 96 px), 16 a batch, AdamW 1e-3. Its state is kept in ``work/refiner.state.pt`` every 200 steps, and a
    run resumes from it."""
    from tqdm import tqdm

    rows, cols = np.where(mask > 0.3)
    r0, r1, c0, c1 = rows.min(), rows.max() + 1, cols.min(), cols.max() + 1
    p = max(8, min(96, r1 - r0, c1 - c0) // 8 * 8)
    torch.manual_seed(seed)
    net, weight = Refiner(width), torch.from_numpy(mask.astype(np.float32))
    opt = torch.optim.AdamW(net.parameters(), 1e-3, weight_decay=1e-4)
    state, step, rng = work / "refiner.state.pt", 0, np.random.default_rng(seed)
    if state.exists():
        s = torch.load(state, weights_only=False)
        net.load_state_dict(s["net"])
        opt.load_state_dict(s["opt"])
        step, rng.bit_generator.state = s["step"], s["rng"]
    for step in tqdm(range(step, steps), initial=step, total=steps, desc="refiner", disable=not progress):
        b = rng.integers(0, len(real), 16)
        y, x = rng.integers(r0, max(r0, r1 - p) + 1), rng.integers(c0, max(c0, c1 - p) + 1)
        cut = (b, slice(y, y + p), slice(x, x + p))
        w = weight[y:y + p, x:x + p]
        err = (net(as_tensor(drawn[cut]), as_tensor(guides[cut])) - as_tensor(real[cut])).abs().mean(1)
        opt.zero_grad()
        ((err * w).sum() / (w.sum() * len(b) + 1e-6)).backward()
        opt.step()
        if (step + 1) % 200 == 0 and step + 1 < steps:
            _keep(state, net, opt, step + 1, rng)
    return net.eval()


def _keep(path: Path, net: Refiner, opt: torch.optim.Optimizer, step: int, rng: np.random.Generator) -> None:
    import io

    buf = io.BytesIO()
    torch.save({"net": net.state_dict(), "opt": opt.state_dict(), "step": step, "rng": rng.bit_generator.state}, buf)
    atomic_write(path, buf.getvalue())
