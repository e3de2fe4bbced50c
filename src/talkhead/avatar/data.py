"""A person's own video as avatar data: face crops aligned on the stable landmarks, the fitted motion, the masks.

Every frame at 25 fps gets dlib's 68 points (frames without a face are dropped and listed; the video's
frames with a face form clips). The 58-channel motion is fitted to those points (``face.capture``'s fit:
the rig of the video's first face is the neutral one). Each frame's crop is a square of the face
aligned by a similarity on the points that speech does not move (nose bridge, nostrils, eye corners),
smoothed over a few frames against dlib's jitter, so the mouth moves in the crop and the head does not.
The crop side follows the source: ``crop_widths`` face widths of source pixels, rounded down to a
multiple of 16 and at most ``max_side`` (256): never sharper than the video allows.

The lower face (below the nose, inside the jaw, with room for the jaw to open) is what an avatar
regenerates; frames where something hides the mouth or where it is partly outside the picture are not
learnt from (``face.occlusion``; dropped and listed like lost ones). ``masks`` gives its feathered paste mask and the harder mask that hides it from the
network's context. Crops, transforms and masks are all in one coordinate frame per avatar: the first
face's aligned crop.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

from talkhead.config import FPS
from talkhead.errors import InputError
from talkhead.face.affine import apply, invert, similarity
from talkhead.face.track import FaceTrack, cut_frames

STABLE = [27, 28, 29, 30, 31, 33, 35, 36, 39, 42, 45]  # nose bridge, nostrils, eye corners


@dataclass(frozen=True)
class AvatarDataConfig:
    """How a person's video becomes crops."""

    fps: int = FPS
    max_side: int = field(default=256, metadata={"help": "face crops' side at most, px (a smaller face: less)"})
    min_side: int = 64
    crop_widths: float = 1.5  # crop side in face widths: brows to below the chin
    min_seconds: float = field(default=10.0, metadata={"help": "seconds with a face needed at least"})
    min_clip: int = 25  # a stretch with a face shorter than this (frames) is dropped
    smooth: int = 5  # frames of moving average on the stable points
    fit_iters: int = 300
    gap_widths: float = 0.14  # how far below the chin the mask reaches (the jaw opens down)
    # Whose jaw line the masks follow: "frame", each frame's own (its fitted expression taken out, so that the
    # mask says where the head is, not how far the mouth opens); "first", the first face's for every frame. A
    # head that turns moves its jaw inside the crop aligned on the nose and eyes: the Pexels clip's held-out
    # frames overlap the first face's mask at IoU 0.55 (median), and it redrew background beside the jaw.
    mask: str = "frame"


def crop_geometry(points0: np.ndarray, cfg: AvatarDataConfig) -> tuple[int, np.ndarray]:
    """(crop side S in pixels, the 2x3 map from crop pixels to the first frame's pixels)."""
    width = float(np.linalg.norm(points0[16] - points0[0]))
    side_src = cfg.crop_widths * width
    step = 16 if side_src <= 128 + 16 else 32  # the VAE's latent grid halves twice more inside the denoiser
    s = int(min(cfg.max_side, side_src) // step * step)
    if s < cfg.min_side:
        raise InputError(f"the face is too small: {width:.0f} px wide, a crop of {side_src:.0f} px "
                         f"(at least {cfg.min_side} needed; film closer or at a higher resolution)")
    cx = float(points0[:, 0].mean())
    cy = float((points0[36:48, 1].mean() + points0[8, 1]) / 2 + 0.05 * width)
    k = side_src / s  # source pixels per crop pixel
    return s, np.array([[k, 0.0, cx - k * s / 2], [0.0, k, cy - k * s / 2]])


def placed_neutral(ref_points: np.ndarray, first: np.ndarray) -> np.ndarray:
    """The avatar's first face [68, 2] placed on another video's first face ``first`` by the stable points: the
    neutral of that video's motion, so that every video's motion has the same zero (the avatar's own face),
    not whatever face that video opens on (a clip that starts on a smile would read every smile as neutral)."""
    ref = np.asarray(ref_points, np.float64)
    return apply(similarity(ref[STABLE], np.asarray(first, np.float64)[STABLE]), ref)


def crop_maps(points: np.ndarray, ref_points: np.ndarray, crop_to_ref: np.ndarray, smooth: int) -> np.ndarray:
    """Per frame, the 2x3 map crop pixels -> that frame's pixels: [T, 2, 3] (stable points smoothed).

    ``ref_points`` [68, 2] are the avatar's first face, in whose pixels ``crop_to_ref`` places the crop.
    """
    st = points[:, STABLE].astype(np.float64)
    if smooth > 1:
        kern = np.ones(smooth) / smooth
        pad = np.pad(st, ((smooth // 2, smooth - 1 - smooth // 2), (0, 0), (0, 0)), mode="edge")
        st = np.apply_along_axis(lambda v: np.convolve(v, kern, mode="valid"), 0, pad)
    out = np.empty((len(points), 2, 3))
    for i, p in enumerate(st):
        to_frame = similarity(ref_points[STABLE].astype(np.float64), p)  # the avatar's first face -> this frame
        out[i, :, :2] = to_frame[:, :2] @ crop_to_ref[:, :2]
        out[i, :, 2] = to_frame[:, :2] @ crop_to_ref[:, 2] + to_frame[:, 2]
    return out


def extract(frame: np.ndarray, crop_to_frame: np.ndarray, side: int) -> np.ndarray:
    """The aligned crop uint8 [S, S, 3] of one frame (bicubic; PIL maps output pixels to input pixels).
    Where the crop reaches past the picture its edge pixels are repeated, not black: a network learning from
    a face at the picture's edge is not taught to draw black below the chin."""
    m = np.array(crop_to_frame, np.float64)
    corners = np.array([[0, 0, 1], [side, 0, 1], [0, side, 1], [side, side, 1]], np.float64) @ m.T
    h, w = frame.shape[:2]
    pad = int(np.ceil(max(0.0, -corners.min(), corners[:, 0].max() - w, corners[:, 1].max() - h))) + 2
    if pad > 2:  # the crop leaves the picture: shift into the picture padded by its edges
        frame = np.pad(frame, ((pad, pad), (pad, pad), (0, 0)), mode="edge")
        m[:, 2] += pad
    # PIL's affine maps the centre of output pixel (x + 0.5) to input coordinates the same way.
    coeffs = (m[0, 0], m[0, 1], m[0, 2], m[1, 0], m[1, 1], m[1, 2])
    img = Image.fromarray(frame).transform((side, side), Image.AFFINE, coeffs, resample=Image.BICUBIC)
    return np.asarray(img)


def masks(landmarks_crop: np.ndarray, side: int, cfg: AvatarDataConfig) -> tuple[np.ndarray, np.ndarray]:
    """(paste mask [S, S] float in [0, 1], feathered; context mask [S, S] bool: hidden from the network)."""
    img = lower_region(landmarks_crop, side, cfg)
    hard = grown(np.asarray(img), max(1, side // 64)) > 0  # hidden: the region grown by side/64 px each way
    soft = img.filter(ImageFilter.GaussianBlur(max(1.0, side / 40)))
    # Inside the drawn region the paste is whole; the blur fades it out across the edge.
    paste = np.maximum(np.asarray(soft, np.float32) / 255, 0.0)
    paste = np.clip(paste * 2, 0, 1) * hard
    return paste.astype(np.float32), hard


def grown(img: np.ndarray, px: int) -> np.ndarray:
    """A picture [H, W] grown by ``px`` pixels each way: the maximum over a square window, as PIL's MaxFilter takes it
    (to the pixel, edges included: the masks every avatar was trained with), 20-60x as fast (7.7 -> 0.3 ms at 256 px,
    103 -> 1.7 ms at 512)."""
    from scipy.ndimage import maximum_filter

    return maximum_filter(img, size=2 * px + 1, mode="nearest")


def lower_region(landmarks_crop: np.ndarray, side: int, cfg: AvatarDataConfig) -> Image.Image:
    """The lower face as drawn from its points [68, 2] (crop pixels): the jaw line, grown below the chin by
    ``cfg.gap_widths``, up to just under the nose; an 8-bit picture [S, S], 255 inside."""
    p = landmarks_crop
    width = float(np.linalg.norm(p[16] - p[0]))
    centre = p[48:68].mean(0)
    jaw = p[2:15].copy()
    jaw = centre + (jaw - centre) * 1.08
    jaw[:, 1] += cfg.gap_widths * width * np.clip((jaw[:, 1] - centre[1]) / max(1.0, p[8, 1] - centre[1]), 0, 1)
    top = p[33, 1] + 0.02 * width
    poly = [(jaw[0, 0], top)] + [tuple(q) for q in jaw] + [(jaw[-1, 0], top)]
    img = Image.new("L", (side, side), 0)
    ImageDraw.Draw(img).polygon(poly, fill=255)
    return img


def frame_masks(points: np.ndarray, side: int, cfg: AvatarDataConfig) -> tuple[np.ndarray, np.ndarray]:
    """``masks`` of each frame's face points [T, 68, 2] (crop pixels): paste [T, S, S] float, hidden [T, S, S] bool."""
    pairs = [masks(p, side, cfg) for p in points]
    return np.stack([p for p, _ in pairs]), np.stack([h for _, h in pairs])


def mask_points(crop_points: np.ndarray, points: np.ndarray, motion: np.ndarray, cfg: AvatarDataConfig) -> np.ndarray:
    """The points [T, 68, 2] (crop pixels) whose ``masks`` each frame gets: with ``cfg.mask`` "frame", the frame's
    own points less what its fitted expression moves them by on the avatar's rig (the first face's
    ``crop_points``), so the jaw line is where the head puts it with the mouth at rest; "first": the first face's.

    Taking the expression out matters where a frame's mask and its motion come from different frames (a
    base frame drawn with speech's motion): a mask that followed the real chin would tell the network where the
    chin is, and it would learn to draw it there whatever the motion says."""
    from talkhead.face.template import fit_rig, project
    from talkhead.rig.spec import SPEC

    if cfg.mask == "first":
        return np.repeat(np.asarray(crop_points, np.float32)[None], len(points), 0)
    if cfg.mask != "frame":
        raise ValueError(f"mask must be 'frame' or 'first', not {cfg.mask!r}")
    rig, m = fit_rig(crop_points), maps_motion(motion)
    rest = m.copy()
    rest[:, SPEC.expression] = 0.0
    moved = (project(rig, m) - project(rig, rest)).numpy()
    return (np.asarray(points, np.float64) - moved).astype(np.float32)


def context(crops: np.ndarray, hidden: np.ndarray) -> np.ndarray:
    """Crops [T, S, S, 3] with the hidden region ([S, S] for all or [T, S, S] per frame) painted mid-grey: what
    the network sees around what it draws."""
    out = crops.copy()
    out[np.broadcast_to(hidden, out.shape[:3])] = 128
    return out


def runs(indices: list[int], min_len: int) -> list[tuple[int, int]]:
    """Consecutive stretches [start, end) of ``indices`` (positions in it) at least ``min_len`` long."""
    out, start = [], 0
    for j in range(1, len(indices) + 1):
        if j == len(indices) or indices[j] != indices[j - 1] + 1:
            if j - start >= min_len:
                out.append((start, j))
            start = j
    return out


def lost_frames(indices: list[int], total: int) -> list[tuple[int, int]]:
    """Frame ranges [a, b] (inclusive) without a face, for the report."""
    from talkhead.video import frame_runs

    return frame_runs(np.setdiff1d(np.arange(total), indices))


@dataclass
class AvatarData:
    """What ``ingest`` finds in a person's videos."""

    side: int
    clips: list[dict]  # per stretch with a face: frames (crops), motion, reference, context, maps
    reference: np.ndarray  # uint8 [S, S, 3]: the first face's crop (the neutral of the motion)
    ref_points: np.ndarray  # [68, 2]: the first face's landmarks, in its frame's pixels
    crop_to_ref: np.ndarray  # [2, 3]
    crop_points: np.ndarray  # [68, 2]: the first face's landmarks in crop pixels (the mouth maps' rig)
    paste: np.ndarray  # [S, S] float
    hidden: np.ndarray  # [S, S] bool
    report: dict  # per video: frames, kept, and the ranges lost, occluded and outside the picture
    cfg: AvatarDataConfig = field(default_factory=AvatarDataConfig)


def maps_motion(motion: np.ndarray) -> np.ndarray:
    """Motion for the mouth maps in the aligned crop: roll and translation are what the alignment removed."""
    from talkhead.rig.spec import SPEC

    m = np.array(motion, np.float32, copy=True)
    for name in ("roll", "tx", "ty", "tz"):
        m[:, SPEC[name]] = 0.0
    return m


def mouth_maps_for(crop_points: np.ndarray, motion: np.ndarray, side: int, grid: int, fine: int = 1):
    """The mouth maps [T, 2 * fine², grid, grid] of ``motion`` on the avatar's rig (``face.framing``)."""
    from talkhead.face.framing import mouth_maps
    from talkhead.face.template import fit_rig

    return mouth_maps(fit_rig(crop_points), maps_motion(motion), side, grid, fine)


def _video_faces(path: Path, cfg: AvatarDataConfig, progress: bool, cache: Path | None) -> FaceTrack:
    """The face followed through one video, streamed (no frame is kept: ``face.track``), kept in ``cache``."""
    import sys

    from talkhead.face.track import cached_track

    track = cached_track(path, cfg.fps, cache, progress)  # a corrupt or unknown file is a named error there
    if not track.keep:
        raise InputError(f"no face found in {path.name}")
    if track.faces > 1:  # said once: the largest face is the person
        print(f"talkhead: {path.name} shows more than one face; the avatar follows the largest", file=sys.stderr)
    return track


def usable(track: FaceTrack, name: str) -> tuple[np.ndarray, dict]:
    """bool per kept frame: one the avatar may learn from (``face.occlusion``: the mouth is not hidden and its
    lips are inside the picture), and the report's ranges of those dropped; each said once on stderr."""
    import sys

    from talkhead.face.occlusion import OcclusionConfig, lips_outside, occluded
    from talkhead.video import frame_runs

    hid = occluded(track.mirror, track.keep, OcclusionConfig())
    out = lips_outside(track.points, track.size)
    notes = {"occluded": hid, "outside": out & ~hid}
    report = {}
    for what, flags in notes.items():
        ranges = frame_runs(np.asarray(track.keep)[flags])
        report[what] = ranges
        if ranges:
            why = "the mouth is hidden" if what == "occluded" else "the lips are partly outside the picture"
            where = ", ".join(f"{a}-{b}" if b > a else f"{a}" for a, b in ranges)
            print(f"talkhead: {name}: {why} in frames {where} ({int(flags.sum())} of {track.frames}): "
                  "not learnt from", file=sys.stderr)
    return ~(hid | out), report


def ingest(videos: list[str | Path], cfg: AvatarDataConfig = AvatarDataConfig(), progress: bool = True,
           cache: str | Path | None = None) -> AvatarData:
    """Crops, fitted motion, crop maps and masks of one person's videos (see the module's text); ``condition``
    adds what the denoiser sees. Each video is read twice, never held (``face.track``); with ``cache``
    (a folder), each video's followed face is kept there, and a run killed after it resumes from it."""
    from talkhead.face.capture import VideoConfig, fit_motion

    clips, report, geo = [], {}, None
    for path in map(Path, videos):
        track = _video_faces(path, cfg, progress, None if cache is None else Path(cache))
        pts = track.points
        if geo is None:
            side, crop_to_ref = crop_geometry(pts[0], cfg)
            crop_points = apply(invert(crop_to_ref), pts[0])
            geo = (side, crop_to_ref, pts[0], crop_points, *masks(crop_points, side, cfg))
        side, crop_to_ref, ref_points, crop_points, paste, hidden = geo
        neutral = placed_neutral(ref_points, pts[0])
        motion = fit_motion(pts, VideoConfig(fit_iters=cfg.fit_iters), neutral).astype(np.float32)
        maps_ = crop_maps(pts, ref_points, crop_to_ref, cfg.smooth)
        ok, dropped = usable(track, path.name)
        lost = lost_frames(track.keep, track.frames)
        keep, motion, maps_, pts = [k for k, o in zip(track.keep, ok) if o], motion[ok], maps_[ok], pts[ok]
        stretches = runs(keep, cfg.min_clip)
        report[path.name] = {"frames": track.frames, "kept": int(sum(b - a for a, b in stretches)),
                             "lost": lost, **dropped}
        chosen = [j for a, b in stretches for j in range(a, b)]
        # The second pass: each chosen frame cut to its aligned crop as it is read again.
        crops = cut_frames(path, [keep[j] for j in chosen], lambda k, f: extract(f, maps_[chosen[k]], side),
                           cfg.fps, progress, f"crops {path.name}")
        at = 0
        for a, b in stretches:
            own = np.stack([apply(invert(maps_[j]), pts[j]) for j in range(a, b)])
            clips.append({"frames": np.stack(crops[at:at + b - a]), "motion": motion[a:b], "affine": maps_[a:b],
                          "video": path.name, "frame_index": np.asarray(keep[a:b]),
                          "points": mask_points(crop_points, own, motion[a:b], cfg)})
            at += b - a
    if geo is None or not clips:
        raise InputError("no stretch of a second or more with a face in " + ", ".join(Path(v).name for v in videos))
    side, crop_to_ref, ref_points, crop_points, paste, hidden = geo
    seconds = sum(len(c["frames"]) for c in clips) / cfg.fps
    if seconds < cfg.min_seconds:
        raise InputError(f"too short: {seconds:.1f} s of video with a face; an avatar needs at least "
                         f"{cfg.min_seconds:.0f} s (30 s to 5 min is best)")
    reference = clips[0]["frames"][0]
    for c in clips:
        c["reference"] = reference
    return AvatarData(side, clips, reference, ref_points, crop_to_ref, crop_points, paste, hidden, report, cfg)


def structure_renderer(reference: np.ndarray):
    """The warp renderer on the avatar's reference crop, drawing at the crop's size (the face found at 2x: dlib
    misses small faces). Its frames put the mouth where the motion says, as the warp renderer's geometry does
    (lip r 0.92 with a held-out lecturer's real lips): ``structure_crops``, ``AvatarTrainConfig.structure``."""
    from PIL import Image

    from talkhead.warp.renderer import WarpRenderer

    s = reference.shape[0]
    big = np.asarray(Image.fromarray(reference).resize((2 * s, 2 * s), Image.BICUBIC))
    return WarpRenderer(big, size=(s, s), full_frame=True, name="the avatar's reference crop")


def structure_crops(warp, motion: np.ndarray) -> np.ndarray:
    """uint8 [T, S, S, 3]: the reference crop warped by ``motion`` in the aligned crop (``maps_motion``)."""
    return np.stack(list(warp.frames(maps_motion(motion))))


def condition(d: AvatarData, grid: int, chunk: int = 256, fine: int = 1, structure: bool = False) -> AvatarData:
    """Give each clip what the denoiser is conditioned on: its context crops and mouth maps at ``grid`` cells
    (each cell drawn ``fine`` x ``fine``: ``face.framing.mouth_maps``) and, with ``structure``, the reference warped
    by each frame's motion (``structure_crops``).
    The masks are drawn ``chunk`` frames at a time: a phone's 2 minutes (3,000 crops of 256 px) drawn at once held
    1.5 GB of paste masks that are not kept."""
    warp = None
    for c in d.clips:
        ctx = np.empty_like(c["frames"])
        for i in range(0, len(ctx), chunk):
            hidden = frame_masks(c["points"][i:i + chunk], d.side, d.cfg)[1]
            ctx[i:i + chunk] = context(c["frames"][i:i + chunk], hidden)
        c["context"] = ctx
        c["maps"] = mouth_maps_for(d.crop_points, c["motion"], d.side, grid, fine)
        if structure:
            warp = warp or structure_renderer(d.reference)
            c["structure"] = structure_crops(warp, c["motion"])
    return d
