"""``talkhead avatar reenact``: another video's own frames and fitted motion drive an avatar, in that video's
coordinates (the self-reenactment test: each output frame re-enacts the real one)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import numpy as np

from talkhead.avatar.file import Avatar, load_avatar
from talkhead.avatar.renderer import AvatarRenderer
from talkhead.errors import InputError
from talkhead.face.affine import apply, invert


class Drive(NamedTuple):
    """A video's frames as an avatar's driver (``fitted_drive``), one row per frame with a face."""

    keep: list[int]  # indices of the frames with a face
    motion: np.ndarray  # [N, 58]: fitted from the avatar's own first face (``avatar.data.placed_neutral``)
    affine: np.ndarray  # [N, 2, 3]: crop pixels -> frame pixels, in the avatar's crop
    points: np.ndarray  # [N, 68, 2]: where the masks are drawn (``Avatar.mask_points``)
    landmarks: np.ndarray  # [N, 68, 2]: dlib's points, frame pixels


def fitted_drive(avatar: Avatar, frames: np.ndarray, name: str, progress: bool = True) -> Drive:
    """The frames with a face, their motion, crop maps and masks (``drive_of`` their landmarks)."""
    from talkhead.face.track import face_points

    keep, pts, _ = face_points(frames, name, progress)
    return drive_of(avatar, keep, pts, name)


def drive_of(avatar: Avatar, keep: list[int], pts: np.ndarray, name: str) -> Drive:
    """The drive of frames ``keep`` with landmarks ``pts`` [N, 68, 2]. The motion's zero is the avatar's own first
    face, as in its training: fitted from the video's own first face, a clip that opens on a smile would read
    every smile as neutral (the Pexels pair's held-out part: 14.2 dB against 17.4)."""
    from talkhead.avatar.data import AvatarDataConfig, crop_maps, placed_neutral
    from talkhead.face.capture import VideoConfig, fit_motion

    if not keep:
        raise InputError(f"no face found in {name}")
    cfg = AvatarDataConfig()
    neutral = placed_neutral(avatar.ref_points, pts[0])
    motion = fit_motion(pts, VideoConfig(fit_iters=cfg.fit_iters), neutral).astype(np.float32)
    aff = crop_maps(pts, avatar.ref_points, avatar.crop_to_ref, cfg.smooth)
    own = np.stack([apply(invert(a), p) for a, p in zip(aff, pts)])
    return Drive(keep, motion, aff, avatar.mask_points(own, motion), pts)


def reenact_frames(avatar: Avatar | str | Path, video: str | Path, seed: int = 0, progress: bool = True,
                   mouth: str | None = None) -> tuple[int, list[int], Iterator[np.ndarray]]:
    """(VIDEO's frame count at 25 fps, the numbers of those with a face, its frames with the lower face redrawn).

    The motion is fitted to VIDEO's own landmarks and its frames are the base, so each output frame
    re-enacts the real one in its own coordinates; frames without a face pass through unchanged. The video
    is streamed, never held: read once for its landmarks, then again for the base frames as they are drawn
    and for the frames that pass through (``face.track``). ``mouth``: how the lower face is drawn
    (``AvatarRenderer``'s; None: its default).
    """
    from talkhead.face.track import ForwardFrames, track_video
    from talkhead.video import iter_frames

    av = avatar if isinstance(avatar, Avatar) else load_avatar(avatar)
    video = Path(video)
    track = track_video(video, 25, progress)  # a corrupt or unknown file is a named error there
    d = drive_of(av, track.keep, track.points, video.name)
    base = ForwardFrames(video, d.keep, track.size, 25)
    drawing = {} if mouth is None else {"mouth": mouth}
    renderer = AvatarRenderer(av, seed, frames=base, affines=d.affine, motion=d.motion, points=d.points, **drawing)

    def out() -> Iterator[np.ndarray]:
        drawn, have = renderer.frames(d.motion), set(d.keep)
        for i, f in enumerate(iter_frames(video, 25)):
            yield next(drawn) if i in have else f

    return track.frames, d.keep, out()


def reenact(avatar: str | Path, video: str | Path, out: str | Path, seed: int = 0, progress: bool = True,
            mouth: str | None = None) -> dict:
    """``talkhead avatar reenact``: write VIDEO re-enacted by the avatar (with VIDEO's sound, if it has any)."""
    from talkhead.audio.io import load_audio
    from talkhead.video import write_mp4

    count, keep, drawn = reenact_frames(avatar, video, seed, progress, mouth)
    try:
        audio = load_audio(video)
    except InputError:
        audio = None  # a silent video stays silent
    write_mp4(out, drawn, audio, 16_000)
    return {"frames": count, "redrawn": len(keep)}
