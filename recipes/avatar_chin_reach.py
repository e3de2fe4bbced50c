"""Issue 48, the anchor's redrawn region reaching his collar: how far below its place at rest each avatar's chin goes,
in its filmed frames (the mouth bank's fitted motion) and driven by the bench's three recordings (as ``generate``
drives it: the motion model wearing the lip net, in the person's range), against the mask's reach below the chin
(``AvatarDataConfig.gap_widths``, 0.14 of the face's width at the chin). The chin is dlib's point 8 of the rig fitted
to the avatar's first face, moved by the motion's expression. Trains nothing; about 1 min an avatar.

    python recipes/avatar_chin_reach.py runs/avatar-bench andrew edtalk cap12 pexels macron anchor
"""

import json
import sys
from pathlib import Path

import numpy as np

from talkhead.audio.io import load_audio
from talkhead.avatar.data import maps_motion
from talkhead.avatar.file import load_avatar
from talkhead.avatar.renderer import AvatarRenderer
from talkhead.bench.avatar import SPEECH
from talkhead.face.template import fit_rig, project
from talkhead.motion.model import load_model
from talkhead.motion.stream import MotionConfig
from talkhead.pipeline import for_renderer, motion_from_speech, speech_from_recording
from talkhead.rig.spec import SPEC


def chin_descent(avatar, motion: np.ndarray) -> np.ndarray:
    """Per frame, how far the chin is below its place at rest, in widths of the face."""
    m = maps_motion(np.asarray(motion, np.float32))
    rest = m.copy()
    rest[:, SPEC.expression] = 0.0
    rig = fit_rig(avatar.crop_points)
    moved = (project(rig, m) - project(rig, rest)).numpy()
    p = avatar.crop_points
    return moved[:, 8, 1] / float(np.linalg.norm(p[16] - p[0]))


model = load_model(None)
for name in sys.argv[2:]:
    avatar = load_avatar(Path(sys.argv[1]) / f"{name}.avatar")
    rows = {"filmed": chin_descent(avatar, avatar.bank["motion"])}
    for rec in SPEECH:
        motion = motion_from_speech(speech_from_recording(load_audio(rec)), MotionConfig(seed=0),
                                    for_renderer(model, AvatarRenderer(avatar, 0)))
        rows[Path(rec).stem] = chin_descent(avatar, motion)
    print(json.dumps({"avatar": name, "mask_reach": avatar.data_cfg.gap_widths,
                      **{k: {"p99": round(float(np.percentile(v, 99)), 3), "max": round(float(v.max()), 3)}
                         for k, v in rows.items()}}), flush=True)
