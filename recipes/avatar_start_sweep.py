"""Issue 48, items 1 and 2: the bridge started from the bank's mouth moved to the drawn mouth (``AvatarRenderer(
move_start=True)``: the chosen bank latent warped by ``MouthFlow.warp_latent``), at a lower start (t0) and with the
detail moved too. Each trained avatar (``bash recipes/avatar.sh`` made them) re-enacts its held-out video and is driven
by the bench's three recordings, as ``talkhead bench avatar`` measures them. One JSON line per avatar, way and kind.
Usage: python recipes/avatar_start_sweep.py WORK PAIR[,PAIR...] [reenact|speech|both]
  python recipes/avatar_start_sweep.py runs/avatar-bench andrew,edtalk,cap12 both
"""

import json
import sys
from pathlib import Path

import numpy as np

from talkhead.audio.io import load_audio
from talkhead.avatar.file import load_avatar
from talkhead.avatar.renderer import AvatarRenderer
from talkhead.bench.avatar import (
    SPEECH,
    AvatarBenchConfig,
    _crops,
    _follow,
    _held_out,
    _pair_videos,
    _redraw,
    face_metrics,
)
from talkhead.face.paste import pingpong
from talkhead.face.template import fit_rig
from talkhead.motion.model import load_model
from talkhead.motion.stream import MotionConfig
from talkhead.pipeline import for_renderer, motion_from_speech, speech_from_recording

MOVED = {"flow": True, "detail": 0.6, "detail_gain": 1.3}
WAYS = {"shipped": {}, "start moved": {"move_start": True}, "start moved, t0 400": {"move_start": True, "start": 400},
        "start and detail moved, t0 400": {"move_start": True, "start": 400, **MOVED},
        "start and detail moved, t0 600": {"move_start": True, "start": 600, **MOVED}}
work, kind = Path(sys.argv[1]), sys.argv[3] if len(sys.argv) > 3 else "both"
cfg = AvatarBenchConfig()
for name in sys.argv[2].split(","):
    avatar = load_avatar(work / f"{name}.avatar")
    if kind in ("reenact", "both"):
        h = _held_out(avatar, _pair_videos(name, cfg, work)[1])
        real = _crops(h["real"], h["affine"], avatar.side)
        for label, drawing in WAYS.items():
            drawn, ms = _redraw(avatar, h, cfg.seed, **drawing)
            row = face_metrics(_crops(drawn, h["affine"], avatar.side), real, h["paste"])
            print(json.dumps({"pair": name, "kind": "reenact", "way": label, "ms_per_frame": round(ms, 1), **row}),
                  flush=True)
    if kind not in ("speech", "both"):
        continue
    face, model = fit_rig(avatar.crop_points), load_model(None)
    for rec in SPEECH:
        motion = motion_from_speech(speech_from_recording(load_audio(rec)), MotionConfig(seed=cfg.seed),
                                    for_renderer(model, AvatarRenderer(avatar, cfg.seed)))
        for label, drawing in WAYS.items():
            frames = np.stack(list(AvatarRenderer(avatar, cfg.seed, **drawing).frames(motion)))
            crops = _crops(frames, avatar.base_affine[pingpong(np.arange(len(frames)), len(avatar.base))], avatar.side)
            f = _follow(crops, motion, face)
            change = float(np.abs(np.diff(crops.astype(np.float32), axis=0)).mean())  # mean change between frames
            print(json.dumps({"pair": name, "kind": "speech", "recording": Path(rec).stem, "way": label,
                              "lip_r_with_motion_gap": f["r_gap"], "lip_r_with_jawOpen": f["r"], "spread": f["spread"],
                              "frame_change": round(change, 2)}), flush=True)
