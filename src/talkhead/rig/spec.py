"""The 58-channel motion vector that every part of talkhead shares.

52 ARKit blendshape coefficients (ARKit's names, in the order Live Link Face
writes them) followed by the head pose: pitch, yaw, roll in radians and
tx, ty, tz in face-width units. Code addresses channels by name through
``SPEC``; nothing else should hard-code an index.
"""

from __future__ import annotations

from dataclasses import dataclass

BLENDSHAPES: tuple[str, ...] = (
    "eyeBlinkLeft", "eyeLookDownLeft", "eyeLookInLeft", "eyeLookOutLeft", "eyeLookUpLeft",
    "eyeSquintLeft", "eyeWideLeft",
    "eyeBlinkRight", "eyeLookDownRight", "eyeLookInRight", "eyeLookOutRight", "eyeLookUpRight",
    "eyeSquintRight", "eyeWideRight",
    "jawForward", "jawRight", "jawLeft", "jawOpen",
    "mouthClose", "mouthFunnel", "mouthPucker", "mouthRight", "mouthLeft",
    "mouthSmileLeft", "mouthSmileRight", "mouthFrownLeft", "mouthFrownRight",
    "mouthDimpleLeft", "mouthDimpleRight", "mouthStretchLeft", "mouthStretchRight",
    "mouthRollLower", "mouthRollUpper", "mouthShrugLower", "mouthShrugUpper",
    "mouthPressLeft", "mouthPressRight", "mouthLowerDownLeft", "mouthLowerDownRight",
    "mouthUpperUpLeft", "mouthUpperUpRight",
    "browDownLeft", "browDownRight", "browInnerUp", "browOuterUpLeft", "browOuterUpRight",
    "cheekPuff", "cheekSquintLeft", "cheekSquintRight",
    "noseSneerLeft", "noseSneerRight", "tongueOut",
)
POSE: tuple[str, ...] = ("pitch", "yaw", "roll", "tx", "ty", "tz")

# Channels that shape the mouth: what lip-sync metrics and losses look at.
MOUTH: tuple[str, ...] = (
    "jawOpen", "mouthClose", "mouthFunnel", "mouthPucker",
    "mouthSmileLeft", "mouthSmileRight", "mouthStretchLeft", "mouthStretchRight",
    "mouthRollLower", "mouthRollUpper", "mouthShrugLower", "mouthShrugUpper",
    "mouthPressLeft", "mouthPressRight", "mouthLowerDownLeft", "mouthLowerDownRight",
    "mouthUpperUpLeft", "mouthUpperUpRight",
)

# The face by what drives it in the corpus: the audio nearly fixes the mouth; blinks are random,
# brows rise on some stressed syllables, the head follows the voice's energy with a random drift.
GROUPS: dict[str, tuple[str, ...]] = {
    "mouth": ("jaw", "mouth", "tongue", "cheekPuff"),
    "eyes": ("eye",),
    "brows": ("brow", "cheekSquint", "nose"),
    "head": POSE,
}


@dataclass(frozen=True)
class MotionSpec:
    """Names and positions of the motion channels."""

    names: tuple[str, ...]

    def __post_init__(self) -> None:
        if len(set(self.names)) != len(self.names):
            raise ValueError("motion channel names must be unique")

    @property
    def dim(self) -> int:
        return len(self.names)

    def __len__(self) -> int:
        return len(self.names)

    def __getitem__(self, name: str) -> int:
        try:
            return self._index[name]
        except KeyError:
            raise KeyError(f"unknown motion channel {name!r}") from None

    def indices(self, names: tuple[str, ...] | list[str]) -> list[int]:
        return [self[n] for n in names]

    @property
    def _index(self) -> dict[str, int]:
        # Cached on first use; the dataclass is frozen, hence object.__setattr__.
        cache = self.__dict__.get("_cache")
        if cache is None:
            cache = {n: i for i, n in enumerate(self.names)}
            object.__setattr__(self, "_cache", cache)
        return cache

    @property
    def expression(self) -> slice:
        return slice(0, len(BLENDSHAPES))

    @property
    def pose(self) -> slice:
        return slice(len(BLENDSHAPES), len(BLENDSHAPES) + len(POSE))

    @property
    def mouth(self) -> list[int]:
        return self.indices(MOUTH)

    def groups(self) -> dict[str, list[int]]:
        """Every channel in exactly one of ``GROUPS``, by the name prefixes that define it."""
        out: dict[str, list[int]] = {g: [] for g in GROUPS}
        for i, name in enumerate(self.names):
            group = next((g for g, prefixes in GROUPS.items() if name.startswith(prefixes)), None)
            if group is None:
                raise ValueError(f"motion channel {name!r} is in no channel group")
            out[group].append(i)
        return out


SPEC = MotionSpec(BLENDSHAPES + POSE)
assert len(BLENDSHAPES) == 52 and SPEC.dim == 58
