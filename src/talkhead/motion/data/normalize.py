"""Per-channel normalisation of motion and audio features: fitted on a corpus, carried by every checkpoint.

The one place where features and motion are scaled to and from the units the networks see.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

_KEYS = ("motion_mean", "motion_std", "audio_mean", "audio_std")


@dataclass
class Normalizer:
    """Per-channel statistics of motion and audio features."""

    motion_mean: Tensor
    motion_std: Tensor
    audio_mean: Tensor
    audio_std: Tensor

    def audio(self, features: Tensor) -> Tensor:
        """Raw features [..., A] -> network units. Columns past the model's own (the taps a lip net reads,
        ``FeatureConfig.taps``) pass through raw: the lip net scales them itself."""
        a = len(self.audio_mean)
        own = (features[..., :a] - self.audio_mean.to(features)) / self.audio_std.to(features)
        return own if features.shape[-1] == a else torch.cat([own, features[..., a:]], -1)

    def audio_inverse(self, features: Tensor) -> Tensor:
        a = len(self.audio_mean)
        own = features[..., :a] * self.audio_std.to(features) + self.audio_mean.to(features)
        return own if features.shape[-1] == a else torch.cat([own, features[..., a:]], -1)

    def motion(self, motion: Tensor) -> Tensor:
        """Rig units [..., 58] -> network units."""
        return (motion - self.motion_mean.to(motion)) / self.motion_std.to(motion)

    def motion_inverse(self, motion: Tensor) -> Tensor:
        return motion * self.motion_std.to(motion) + self.motion_mean.to(motion)

    def to_meta(self) -> dict[str, list[float]]:
        return {k: [round(float(x), 6) for x in getattr(self, k)] for k in _KEYS}

    @classmethod
    def from_meta(cls, meta: dict[str, Any]) -> "Normalizer":
        return cls(**{k: torch.tensor(meta[k], dtype=torch.float32) for k in _KEYS})
