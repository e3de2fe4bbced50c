"""Issue 48, items 1 and 2: the bridge started from the bank's mouth moved to the drawn mouth (``AvatarRenderer(
move_start=True)``: the chosen bank latent warped by ``MouthFlow.warp_latent``), at a lower start (t0) and with the
detail moved too, and steadied (``start_memory``, ``carry``). Each trained avatar (``bash recipes/avatar.sh`` made them)
re-enacts its held-out video and is driven by the bench's three recordings, as ``talkhead bench avatar`` measures them;
driven by speech, flicker is the lower face's change between frames against the same base frames' as filmed, and
identity dlib's distance to the avatar's reference crop (the same base frames as filmed give its floor); re-enacted,
the lower-face PSNR by head-pose bin too (``bench.avatar.by_pose``, novelty from the bank's frames). One JSON line per
avatar, way and kind. Ways marked re-enacting only (``means_met``, ``near``) are measured by ``reenact`` alone.
Usage: python recipes/avatar_start_sweep.py WORK PAIR[,PAIR...] [reenact|speech|both] [WAY|WAY...]
  python recipes/avatar_start_sweep.py runs/avatar-bench andrew,edtalk,cap12 both
  python recipes/avatar_start_sweep.py runs/avatar-bench andrew,edtalk,cap12 both "start and detail moved, t0 400, \
start memory 0.8|start moved, t0 400, start memory 0.8"
"""

import json
import sys
from pathlib import Path

import numpy as np

from talkhead.audio.io import load_audio
from talkhead.avatar.file import load_avatar
from talkhead.avatar.mouths import AS_POINTS, MOUTH, lip_points, novelty
from talkhead.avatar.renderer import AvatarRenderer
from talkhead.bench.avatar import (
    FLOW,
    SPEECH,
    AvatarBenchConfig,
    _crops,
    _follow,
    _held_out,
    _pair_videos,
    _redraw,
    by_pose,
    face_metrics,
    pose_novelty,
)
from talkhead.bench.face_metrics import frame_change
from talkhead.face.identity import identity_distance
from talkhead.face.paste import pingpong
from talkhead.face.template import fit_rig
from talkhead.motion.model import load_model
from talkhead.motion.stream import MotionConfig
from talkhead.pipeline import for_renderer, motion_from_speech, speech_from_recording
from talkhead.warp.renderer import WarpRenderer

WAYS = {"shipped": {}, "start moved": {"move_start": True}, "start moved, t0 400": {"move_start": True, "start": 400},
        # The start moved in pixels (the bank frame's crop moved and encoded again), as ``--bridge-move pixels`` trains.
        "start moved in pixels": {"move_start": True, "move_pixels": True},
        # The bank's detail as shipped until 2026-12-07: the chosen frame's alone, memory 0.7, gain 1.2.
        "detail of the chosen frame, memory 0.7 gain 1.2": {"detail": 0.7, "detail_gain": 1.2, "detail_blend": 1},
        "start and detail moved, t0 400": {"move_start": True, "start": 400, **FLOW},
        "start and detail moved, t0 600": {"move_start": True, "start": 600, **FLOW},
        # Steadier (2026-12-06): the moved start averaged over frames at the bank's mean mouth.
        "start and detail moved, t0 400, start memory 0.8": {"move_start": True, "start": 400, "start_memory": 0.8,
                                                              **FLOW},
        "start moved, t0 400, start memory 0.8": {"move_start": True, "start": 400, "start_memory": 0.8},
        # Steadier still: each frame's start half the frame before it, moved to its mouth.
        "start and detail moved, t0 400, carry 0.5": {"move_start": True, "start": 400, "carry": 0.5, **FLOW},
        "start and detail moved, t0 400, carry 0.5, detail memory 0.8 gain 1.5": {
            "move_start": True, "start": 400, "carry": 0.5, "flow": True, "detail": 0.8, "detail_gain": 1.5},
        # No engine on the mouth, or on the lips alone: the person's filmed mouth moved to the motion's
        # (``AvatarRenderer(mouth=...)``, recipes/avatar_filmed.py, 2026-12-06 night).
        "filmed": {"mouth": "filmed"}, "filmed, path jump 30": {"mouth": "filmed", "path": 30.0},
        "lips filmed": {"mouth": "lips"}, "lips filmed, path jump 30": {"mouth": "lips", "path": 30.0},
        # The engine's bridge started from the same bank mouth the lips are filmed from, moved to the motion's, so
        # that the engine's mouth and the filmed lips agree (2026-12-07).
        "lips filmed, start moved": {"mouth": "lips", "move_start": True},
        "lips filmed, start moved, t0 400": {"mouth": "lips", "move_start": True, "start": 400},
        # The filmed mouth blended from the nearest bank mouths, so that it changes continuously (``blend``).
        "lips filmed, blend 3": {"mouth": "lips", "blend": 3}, "lips filmed, blend 6": {"mouth": "lips", "blend": 6},
        "filmed, blend 3": {"mouth": "filmed", "blend": 3}, "filmed, blend 6": {"mouth": "filmed", "blend": 6},
        # Re-enacting only: the take's mean mouth moved onto the bank's (``means_met``), as ``novelty`` measures it.
        "shipped, means met": {"means_met": True}, "lips filmed, means met": {"mouth": "lips", "means_met": True},
        # Re-enacting only: the filmed lips on the frames whose nearest bank mouth is near (within the first figure, %
        # of the side), the engine's where it is far (beyond the second), a ramp between (``near``).
        "lips filmed where near 5-10": {"near": (5.0, 10.0)}, "lips filmed where near 3-6": {"near": (3.0, 6.0)},
        # The bank found by the lips' points as they are (``mouths.AS_POINTS``), as before 2026-12-07.
        "shipped, bank by points": {"bank_keys": AS_POINTS}, "lips filmed, bank by points": {"mouth": "lips",
                                                                                          "bank_keys": AS_POINTS},
        # The keys' weights tried before the shipped ones (the opening's ``gap``, the mouth's centre ``place``).
        **{f"{w}, bank keys gap {g:g} place {p:g}": {**({"mouth": "lips"} if w == "lips filmed" else {}),
                                                     "bank_keys": {"gap": g, "place": p}}
           for w in ("shipped", "lips filmed") for g, p in ((2.0, 0.0), (4.0, 0.0), (2.0, 1.0))},
        # The bank frame found by the new keys (it opens as asked) kept more: the bridge started lower (2026-12-07;
        # t0 2: the found bank frame decoded with its detail, no engine).
        **{f"shipped, t0 {t}": {"start": t} for t in (2, 400, 500, 600, 700)},
        # The colour matched to the frame's own pixels on the ring, as until 2026-12-07 (now to the frame through the
        # avatar's VAE), or not at all (``Avatar.tones``).
        "colour matched to the frame as filmed": {"colour": "frame"}, "colour not matched": {"colour": "off"},
        # Driven by speech only: the warp renderer from the avatar's first base frame, as ``generate`` drives it.
        "warp renderer": None}


def means_met(avatar, h: dict) -> dict:
    """The held-out take with its mean mouth (the channels the engine redraws) moved onto the bank's mean: a shift of
    the whole take, which r with the real lips does not see and which brings its mouths near the bank's."""
    m = np.array(h["motion"], np.float32, copy=True)
    m[:, MOUTH] += avatar.bank["motion"][:, MOUTH].mean(0) - m[:, MOUTH].mean(0)
    return {**h, "motion": m}


def where_near(avatar, h: dict, near: float, far: float) -> tuple[np.ndarray, float]:
    """The held-out frames drawn with the lips filmed where the frame's nearest bank mouth is within ``near`` (% of
    the crop's side), as shipped beyond ``far``, and mixed between: the lips filmed are the shipped frame with the
    filmed lips laid over it (the same engine draw), so the mix is the frame's share of that overlay."""
    shipped, ms = _redraw(avatar, h, cfg.seed)
    lips, _ = _redraw(avatar, h, cfg.seed, mouth="lips")
    d = novelty(*(lip_points(avatar.crop_points, m, avatar.side).reshape(len(m), 40)
                  for m in (h["motion"], avatar.bank["motion"])))[0]
    share = np.clip((far - d) / (far - near), 0.0, 1.0)[:, None, None, None]
    return np.round(shipped + share * (lips.astype(np.float32) - shipped)).astype(np.uint8), ms


def speech_row(avatar, speech, motion: np.ndarray, order: np.ndarray, paste: np.ndarray,
               drawing: dict | None) -> tuple:
    """Crops driven by speech, the motion they follow, the rig it is read on, and their lower face's masks."""
    if drawing is None:
        warper = WarpRenderer(avatar.base[0], size=None, full_frame=True)
        m = motion_from_speech(speech, MotionConfig(seed=cfg.seed), for_renderer(MODEL, warper))
        frames, rig = np.stack(list(warper.frames(m))), warper.lip_rig
        aff = np.repeat(avatar.base_affine[:1], len(m), 0)
        mask = np.broadcast_to(paste[:1] > 0.5, (len(m), avatar.side, avatar.side))
    else:
        drawing = dict(drawing)
        avatar.bank["keys"] = drawing.pop("bank_keys", {})
        frames = np.stack(list(AvatarRenderer(avatar, cfg.seed, **drawing).frames(motion)))
        m, aff, rig, mask = motion, avatar.base_affine[order], fit_rig(avatar.crop_points), paste[order] > 0.5
    return _crops(frames, aff, avatar.side), m, rig, mask

work, kind = Path(sys.argv[1]), sys.argv[3] if len(sys.argv) > 3 else "both"
if len(sys.argv) > 4:
    WAYS = {label: WAYS[label] for label in sys.argv[4].split("|")}
cfg, MODEL = AvatarBenchConfig(), load_model(None)
for name in sys.argv[2].split(","):
    avatar = load_avatar(work / f"{name}.avatar")
    if kind in ("reenact", "both"):
        h = _held_out(avatar, _pair_videos(name, cfg, work)[1])
        real = _crops(h["real"], h["affine"], avatar.side)
        for label, drawing in WAYS.items():
            if drawing is None:
                continue  # the bench measures the warp renderer's re-enactment
            drawing = dict(drawing)
            avatar.bank["keys"] = drawing.pop("bank_keys", {})
            if "near" in drawing:
                drawn, ms = where_near(avatar, h, *drawing["near"])
            else:
                drawn, ms = _redraw(avatar, means_met(avatar, h) if drawing.pop("means_met", False) else h, cfg.seed,
                                    **drawing)
            crops = _crops(drawn, h["affine"], avatar.side)
            row = face_metrics(crops, real, h["paste"])
            row["psnr_by_pose"] = by_pose(pose_novelty(avatar.bank["motion"], h["motion"]), {"db": crops}, real,
                                          h["paste"])
            print(json.dumps({"pair": name, "kind": "reenact", "way": label, "ms_per_frame": round(ms, 1), **row}),
                  flush=True)
    if kind not in ("speech", "both"):
        continue
    paste = avatar.base_views().paste
    for rec in SPEECH:
        speech = speech_from_recording(load_audio(rec))
        motion = motion_from_speech(speech, MotionConfig(seed=cfg.seed),
                                    for_renderer(MODEL, AvatarRenderer(avatar, cfg.seed)))
        order = pingpong(np.arange(len(motion)), len(avatar.base))
        # Flicker: against the same base frames' lower face as filmed (the person talking).
        filmed = _crops(avatar.base[order], avatar.base_affine[order], avatar.side)
        filmed_ident = round(identity_distance(avatar.reference, filmed[::5])["distance"] or -1, 3)  # the floor
        filmed = frame_change(filmed, paste[order] > 0.5)
        for label, drawing in WAYS.items():
            if drawing is not None and {"means_met", "near"} & drawing.keys():
                continue  # re-enacting only
            crops, m, rig, mask = speech_row(avatar, speech, motion, order, paste, drawing)
            f = _follow(crops, m, rig)
            ident = identity_distance(avatar.reference, crops[::5])["distance"]  # dlib's, to the reference crop
            print(json.dumps({"pair": name, "kind": "speech", "recording": Path(rec).stem, "way": label,
                              "lip_r_with_motion_gap": f["r_gap"], "lip_r_with_jawOpen": f["r"], "spread": f["spread"],
                              "flicker_vs_filmed": round(frame_change(crops, mask) / filmed, 3),
                              "identity_distance": None if ident is None else round(ident, 3),
                              "filmed_identity_distance": filmed_ident}), flush=True)
