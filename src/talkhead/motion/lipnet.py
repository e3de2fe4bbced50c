"""The lip net: how far the lips are open, read from speech, learnt from people filmed talking.

The motion models learnt the mouth from synthetic speech and a viseme rig; fine-tuning them on captured
real video moved held-out people's lips little (docs/lips.md). A small convolutional net over the same
Whisper states, trained by plain regression on the real inner-lip gap of people filmed talking (each
clip's gap in its own z-units, so a wide mouth and a small one teach the same timing), follows unseen
people's lips far better. It does not replace the motion model: it sets only how open the mouth is.
``LipHead.apply`` sets each frame's opening (the jaw, or the lips sealing) until the lip gap the rig draws
on the face the motion is for (``motion.model.on_face``; a standard face when it is not known) is the net's,
and leaves the mouth's shape (rounding, smile, stretch) and everything else to the motion model.

The head rides on a motion model (``MotionModel.lips``): every window the sampler makes is corrected
before it is crossfaded or continued, so offline, streamed and live motion stay one path.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from talkhead.audio.features import FeatureConfig
from talkhead.checkpoint import (
    dataclass_from,
    described,
    load_checkpoint,
    resolve_named,
    save_checkpoint,
    with_weights,
)
from talkhead.config import MODELS_DIR
from talkhead.rig.spec import SPEC

LIPS_DIR = MODELS_DIR / "lips"
DEFAULT = "lips-whisper"  # the shipped head that whisper motion models wear unless told otherwise
MIN_SPREAD = 0.25  # a head whose opening would be widened more than 4x is a crafted file, not a measurement
MAX_MEMBERS = 16  # an ensemble larger than this is a crafted file, not a lip net
# The one a live student wears: trained on live speech's view of the audio, reading 2 frames ahead (since
# 2026-12-06, night; ``lips-whisper-live`` reads 1, its first frame 40 ms sooner, lips further from filmed people's).
DEFAULT_LIVE = "lips-whisper-live-a2"


@dataclass(frozen=True)
class LipNetConfig:
    """The net's shape: ``members`` nets of two convolutions of ``kernel`` frames over ``dim`` audio features.
    ``ahead`` >= 0: a frame's opening reads only that many frames of audio after it (the rest of its reach
    before it), for live speech, whose future is not yet heard; -1: ``reach`` frames on each side."""

    dim: int = 384
    hidden: int = 64
    kernel: int = 5
    dropout: float = 0.3
    ahead: int = -1
    members: int = 1  # nets of this shape, each initialised and trained on its own; the opening is their mean

    @property
    def reach(self) -> int:
        """Frames of audio on each side a frame's opening depends on (``ahead`` -1)."""
        return 2 * (self.kernel // 2)


class LipNet(nn.Module):
    """Audio features [B, T, dim] (already in the net's units) -> lip opening [B, T] in z-units: the mean of
    ``members`` nets. An ensemble because the data is small: nets that differ only in their initial weights and
    dropout disagree on unseen people, and their mean follows them better than any one of them (docs/lips.md)."""

    def __init__(self, cfg: LipNetConfig) -> None:
        super().__init__()
        self.cfg = cfg
        k, h = cfg.kernel, cfg.hidden
        pad = k // 2 if cfg.ahead < 0 else 0  # with ``ahead``, the input is padded once, unevenly (forward)
        self.bodies = nn.ModuleList(
            nn.Sequential(nn.Dropout(cfg.dropout), nn.Conv1d(cfg.dim, h, k, padding=pad), nn.GELU(),
                          nn.Dropout(cfg.dropout), nn.Conv1d(h, h, k, padding=pad), nn.GELU(), nn.Conv1d(h, 1, 1))
            for _ in range(cfg.members))

    def each(self, feats: Tensor) -> Tensor:
        """Every member's opening [members, B, T] (training fits each one alone)."""
        x = feats.transpose(1, 2)
        if self.cfg.ahead >= 0:
            span = 2 * self.cfg.reach
            x = nn.functional.pad(x, (span - self.cfg.ahead, self.cfg.ahead), mode="replicate")
        return torch.stack([body(x)[:, 0] for body in self.bodies])

    def forward(self, feats: Tensor) -> Tensor:
        return self.each(feats).mean(0)


_LIPS = [61, 62, 63, 65, 66, 67, 0, 16]  # dlib's inner lips, upper then lower, and the face's two sides


Face = tuple[Tensor, Tensor, Tensor]  # a rig at the points the gap is read from: points [8, 2], basis, seal


def lip_face(rig) -> Face:
    """A face's rig (``face.template.Rig``) at the points the gap is read from, as the camera sees them (its
    pose included, motion's head pose not): (points [8, 2], basis [52, 8, 2], seal [8, 2]), on the CPU."""
    rotation = rig.rotation.detach().float().cpu()
    turn = lambda x: (x[..., _LIPS, :].detach().float().cpu() @ rotation.T)[..., :2]  # noqa: E731
    return turn(rig.points), turn(rig.basis), turn(rig.seal)


@lru_cache(maxsize=1)
def _standard_face() -> Face:
    """The template face: where the lips are drawn when the face is not known (the units the head reads)."""
    from talkhead.face.template import TEMPLATE, fit_rig

    return lip_face(fit_rig(TEMPLATE[:68, :2] * 100.0))


def drawn_gap(motion: Tensor, face: Face | None = None) -> Tensor:
    """The inner-lip gap over face width that motion [N, 58] draws on ``face`` (default: the standard face) ->
    [N]; signed (lips sealed past each other are below 0), so that it only grows as the mouth opens."""
    from talkhead.face.template import coefficients

    points, basis, seal_to = _standard_face() if face is None else face
    e, seal = coefficients(motion[:, SPEC.expression])
    p = points + torch.einsum("tc,cpd->tpd", e, basis) + seal[:, None, None] * seal_to
    gap = (p[:, [3, 4, 5], 1] - p[:, [2, 1, 0], 1]).mean(1)
    return gap / (p[:, 7] - p[:, 6]).norm(dim=1).clamp_min(1e-6)


def rest_gap(face: Face | None) -> float:
    """The gap a face draws with every channel at rest: a photo's own lips (0.015 on the standard face, 0.075 on
    the default photo, who smiles). Solved on a face, the net's opening is taken about it: about the standard
    face's rest, the default photo's lips were only ever sealed, its jaw never moving."""
    return float(drawn_gap(torch.zeros(1, SPEC.dim), face)[0])


_SEALS = ("mouthClose", "mouthPressLeft", "mouthPressRight")
_ROLLS = ("mouthRollLower", "mouthRollUpper")


def set_opening(motion: Tensor, u: Tensor) -> Tensor:
    """Motion [N, 58] with its lip opening set by ``u`` [N] in [-1, 1]: 0 lips at rest, u > 0 the jaw open
    by u (nothing sealing the lips), u < 0 the jaw shut and the lips sealing by -u (pressed together
    over the face's own gap: a face photographed with its mouth open closes it). The gap any face draws
    grows with u, so one opening means the same on every face; the mouth's shape channels are kept."""
    from talkhead.face.template import SEAL_FULL

    m = motion.clone()
    seal = (-u).clamp(0.0, 1.0) * SEAL_FULL
    m[:, SPEC["jawOpen"]] = u.clamp(0.0, 1.0)
    for name in _SEALS:
        m[:, SPEC[name]] = torch.minimum(m[:, SPEC[name]], seal)
    for name in _SEALS[1:]:
        m[:, SPEC[name]] = seal
    for name in _ROLLS:  # a rolled lip seals at half weight
        m[:, SPEC[name]] = torch.minimum(m[:, SPEC[name]], 2 * seal)
    return m


def follow_gap(motion: Tensor, target: Tensor, grid: int = 41, face: Face | None = None) -> Tensor:
    """Motion [N, 58] (rig units) whose opening (``set_opening``) makes the lip gap it draws on ``face`` (default:
    the standard face) ``target`` [N], as nearly as the opening can. The gap grows with the opening, piecewise linearly:
    it is drawn once for every frame at ``grid`` openings (one batched projection, not a search: a live
    window has milliseconds) and the opening read off between the two that bracket the target."""
    n = len(motion)
    u = torch.linspace(-1.0, 1.0, grid)
    flat = motion[:, None].expand(n, grid, motion.shape[1]).reshape(n * grid, -1)
    gaps = drawn_gap(set_opening(flat, u.repeat(n)), face).reshape(n, grid)
    gaps = torch.cummax(gaps, 1).values  # monotone to the last digit, so the bracket is unique
    k = (gaps < target[:, None]).sum(1).clamp(1, grid - 1)  # the first grid opening at or above the target
    lo, hi = gaps.gather(1, (k - 1)[:, None])[:, 0], gaps.gather(1, k[:, None])[:, 0]
    w = ((target - lo) / (hi - lo).clamp_min(1e-9)).clamp(0.0, 1.0)
    return set_opening(motion, u[k - 1] + w * (u[k] - u[k - 1]))


@dataclass
class LipHead:
    """A trained lip net with the units it reads and writes; ``load_head(path)`` rebuilds one."""

    net: LipNet
    features: FeatureConfig
    feat_mean: Tensor
    feat_std: Tensor
    gap_mean: float  # the standard face's drawn gap of captured real motion: z-units -> gap
    gap_std: float
    meta: dict[str, Any] | None = None
    # How far the lips drawn from this kind of net swing on people it never heard, against the captured lips'
    # swing (1: as far; ``bench lips``'s spread, the fold nets' over the capture's, recipes/lipnet.sh). Trained by
    # regression, a net predicts the expected opening, which swings less than lips do: ``apply`` widens the
    # opening about its mean by the inverse, so a mouth opens and closes about as far as a person's.
    spread: float = 1.0
    # The face the motion will be drawn on (``motion.model.on_face``): the opening is solved on it, so that its
    # own lips, photographed open or closed, and the mouth's other channels on it, draw the net's gap. None: the
    # standard face. Solved there, the lips drawn on people's faces followed their filmed lips at r 0.647 against
    # 0.684 solved on each face (13 people, fold nets, recipes/lips_drawing_cost.py).
    face: Face | None = None
    rest_shift: float = 0.0  # the face's lips at rest over the standard face's (``on``): once, not every window

    def on(self, face: Face) -> "LipHead":
        """This head solving on ``face``, the net's opening taken about that face's own lips at rest."""
        return replace(self, face=face, rest_shift=rest_gap(face) - rest_gap(None))

    def fits(self, features: FeatureConfig) -> bool:
        """Whether the head reads the front end a motion model uses (and, with taps, inner layers of it)."""
        return features == self.features.output

    @torch.no_grad()
    def opening(self, raw: Tensor) -> Tensor:
        """Raw audio features [B, T, dim] -> lip opening [B, T] in z-units."""
        if self.net.training:
            self.net.eval()
        return self.net((raw - self.feat_mean) / self.feat_std)

    @torch.no_grad()
    def apply(self, raw: Tensor, motion: Tensor) -> Tensor:
        """Raw features [B, T, dim] and motion [B, T, 58] (rig units) -> motion with the net's lip opening."""
        b, t, d = motion.shape
        flat = motion.reshape(b * t, d).float()
        z = self.opening(raw) / self.spread
        target = (self.gap_mean + self.gap_std * z + self.rest_shift).reshape(-1).clamp_min(0.0)
        return follow_gap(flat, target, face=self.face).reshape(b, t, d).to(motion)

    def save(self, path: str | Path, extra: dict[str, Any] | None = None) -> None:
        meta = {**(self.meta or {}), **(extra or {}), "kind": "lipnet", "lipnet": asdict(self.net.cfg),
                "features": asdict(self.features), "gap": [self.gap_mean, self.gap_std], "spread": self.spread}
        tensors = {**{f"net.{k}": v for k, v in self.net.state_dict().items()},
                   "feat_mean": self.feat_mean, "feat_std": self.feat_std}
        save_checkpoint(path, tensors, meta)


def resolve(name_or_path: str | Path) -> Path:
    return resolve_named(name_or_path, LIPS_DIR, "lip net")


def load_head(name_or_path: str | Path) -> LipHead:
    """Rebuild a lip head from its checkpoint (a shipped name such as ``lips-whisper``, or a path)."""
    path = resolve(name_or_path)
    tensors, meta = load_checkpoint(path)
    with described(path, "lip net"):
        if meta.get("kind") != "lipnet":
            raise ValueError("it is not a lip net")
        cfg = dataclass_from(LipNetConfig, meta["lipnet"])
        if not 1 <= cfg.members <= MAX_MEMBERS:
            raise ValueError(f"it names {cfg.members} member nets (1 to {MAX_MEMBERS})")
        weights = {k[4:]: v for k, v in tensors.items() if k.startswith("net.")}
        # A net saved before ensembles has one body: it is the first member.
        weights = {"bodies.0." + k[5:] if k.startswith("body.") else k: v for k, v in weights.items()}
        net = with_weights(lambda: LipNet(cfg), weights, str(path))
        feats = dataclass_from(FeatureConfig, meta["features"])
        mean, std = tensors["feat_mean"], tensors["feat_std"]
        if mean.shape != (cfg.dim,) or std.shape != (cfg.dim,) or not bool((std > 0).all()):
            raise ValueError("its feature normalisation does not match the net")
        gap_mean, gap_std = (float(v) for v in meta["gap"])
        spread = float(meta.get("spread", 1.0))  # a head saved before the field: its opening as the net says
        if not MIN_SPREAD <= spread <= 1.0:
            raise ValueError(f"its opening's spread must be in [{MIN_SPREAD}, 1], not {spread}")
    net.eval()
    return LipHead(net, feats, mean, std, gap_mean, gap_std, meta={k: meta[k] for k in ("train",) if k in meta},
                   spread=spread)


def shipped_head(live: bool = False) -> Path | None:
    """The shipped head for an offline model or a live student (falling back to the offline one), if any."""
    for name in (DEFAULT_LIVE, DEFAULT) if live else (DEFAULT,):
        p = LIPS_DIR / f"{name}.safetensors"
        if p.is_file():
            return p
    return None
