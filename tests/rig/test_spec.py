"""The 58-channel motion contract: ARKit names in Live Link Face order, then the head pose."""

from __future__ import annotations

import numpy as np
import pytest

from talkhead.audio.tts import synthesize
from talkhead.config import FPS
from talkhead.rig import n_frames, target_motion
from talkhead.rig.spec import BLENDSHAPES, MOUTH, POSE, SPEC, MotionSpec

# The blendshape columns of a Live Link Face CSV export, verbatim (after Timecode, BlendShapeCount).
LIVE_LINK_FACE = (
    "EyeBlinkLeft,EyeLookDownLeft,EyeLookInLeft,EyeLookOutLeft,EyeLookUpLeft,EyeSquintLeft,EyeWideLeft,"
    "EyeBlinkRight,EyeLookDownRight,EyeLookInRight,EyeLookOutRight,EyeLookUpRight,EyeSquintRight,EyeWideRight,"
    "JawForward,JawRight,JawLeft,JawOpen,MouthClose,MouthFunnel,MouthPucker,MouthRight,MouthLeft,"
    "MouthSmileLeft,MouthSmileRight,MouthFrownLeft,MouthFrownRight,MouthDimpleLeft,MouthDimpleRight,"
    "MouthStretchLeft,MouthStretchRight,MouthRollLower,MouthRollUpper,MouthShrugLower,MouthShrugUpper,"
    "MouthPressLeft,MouthPressRight,MouthLowerDownLeft,MouthLowerDownRight,MouthUpperUpLeft,MouthUpperUpRight,"
    "BrowDownLeft,BrowDownRight,BrowInnerUp,BrowOuterUpLeft,BrowOuterUpRight,CheekPuff,CheekSquintLeft,"
    "CheekSquintRight,NoseSneerLeft,NoseSneerRight,TongueOut"
).split(",")


def test_names_are_arkit_in_live_link_face_order_then_pose() -> None:
    assert SPEC.dim == len(SPEC) == 58 and FPS == 25
    assert [n[0].upper() + n[1:] for n in BLENDSHAPES] == LIVE_LINK_FACE
    assert SPEC.names == BLENDSHAPES + POSE
    assert POSE == ("pitch", "yaw", "roll", "tx", "ty", "tz")


def test_lookup_by_name() -> None:
    for i, name in enumerate(SPEC.names):
        assert SPEC[name] == i
    assert SPEC["jawOpen"] == 17 and SPEC["mouthClose"] == 18 and SPEC["pitch"] == 52
    assert SPEC.indices(["tz", "eyeBlinkLeft"]) == [57, 0]
    with pytest.raises(KeyError, match="JawOpen"):
        SPEC["JawOpen"]  # names are case-sensitive ARKit names
    with pytest.raises(KeyError):
        SPEC["mouthSmile"]


def test_slices_and_groups() -> None:
    names = np.array(SPEC.names)
    assert tuple(names[SPEC.expression]) == BLENDSHAPES
    assert tuple(names[SPEC.pose]) == POSE
    assert tuple(names[SPEC.mouth]) == MOUTH
    assert set(MOUTH) <= set(BLENDSHAPES) and len(set(MOUTH)) == len(MOUTH)
    assert all(n.startswith(("mouth", "jaw")) for n in MOUTH)


def test_channel_groups_partition_the_vector() -> None:
    groups = SPEC.groups()
    assert list(groups) == ["mouth", "eyes", "brows", "head"]
    assert sorted(i for idx in groups.values() for i in idx) == list(range(58))
    assert set(SPEC.mouth) <= set(groups["mouth"]) and SPEC["tongueOut"] in groups["mouth"]
    assert SPEC.indices(["eyeBlinkLeft", "eyeWideRight"]) == [groups["eyes"][0], groups["eyes"][-1]]
    assert SPEC["browInnerUp"] in groups["brows"] and SPEC["cheekSquintLeft"] in groups["brows"]
    assert groups["head"] == list(range(52, 58))
    with pytest.raises(ValueError, match="'earWiggle' is in no channel group"):
        MotionSpec(("jawOpen", "earWiggle")).groups()


def test_duplicate_names_are_rejected() -> None:
    with pytest.raises(ValueError):
        MotionSpec(("jawOpen", "mouthClose", "jawOpen"))
    assert MotionSpec(("a", "b")).dim == 2


@pytest.mark.parametrize(("samples", "rate", "frames"), [
    (0, 16_000, 1), (1, 16_000, 1), (640, 16_000, 1), (641, 16_000, 2), (16_000, 16_000, 25),
    (16_001, 16_000, 26), (44_100, 44_100, 25), (48_000 * 3 + 1, 48_000, 76),
])
def test_n_frames_covers_the_audio(samples: int, rate: int, frames: int) -> None:
    assert n_frames(samples, rate) == frames


def test_target_motion_shape_and_ranges() -> None:
    sp = synthesize("Maria painted the purple violin at dawn.", "gb-female")
    m = target_motion(sp.wav, sp.sample_rate, sp.phones, seed=0)
    assert m.dtype == np.float32 and m.shape == (n_frames(len(sp.wav), sp.sample_rate), 58)
    assert m.shape[0] == int(np.ceil(sp.duration * FPS - 1e-6))
    assert np.isfinite(m).all()
    expr = m[:, SPEC.expression]
    assert expr.min() >= 0.0 and expr.max() <= 1.0
    assert m[:, SPEC["jawOpen"]].max() > 0.3  # the mouth actually opens
    assert np.abs(m[:, SPEC.pose]).max() < 0.5  # radians / face widths: a head, not a spinning top
    assert np.abs(m[:, SPEC.pose]).max() > 1e-3  # and it does move
