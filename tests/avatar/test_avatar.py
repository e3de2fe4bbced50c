"""Avatars: frames drawn on the person's own video, the lower face redrawn, the rest of the frame the video's own."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from talkhead.avatar.file import describe_avatar, load_avatar
from talkhead.avatar.renderer import AvatarRenderer
from talkhead.cli import main
from talkhead.errors import InputError
from talkhead.face.paste import paste_lower_face, pingpong
from talkhead.rig.spec import SPEC


def test_frames_outside_the_mask_are_the_base_pixel_for_pixel(tiny_avatar):
    av = load_avatar(tiny_avatar)
    r = AvatarRenderer(av, seed=0)
    motion = np.zeros((40, 58), np.float32)
    motion[:, SPEC["jawOpen"]] = np.linspace(0, 0.8, 40)
    frames = np.stack(list(r.frames(motion, batch=16)))
    assert frames.shape == (40, *av.base.shape[1:]) and frames.dtype == np.uint8
    idx = pingpong(np.arange(40), len(av.base))
    paste = av.base_views().paste  # each base frame's own mask
    for i in (0, 17, 39):  # where the warped paste mask is zero, the frame is the base frame
        foot = paste_lower_face(np.zeros_like(av.base[0]), np.full((av.side, av.side, 3), 255, np.uint8),
                                av.base_affine[idx[i]], paste[idx[i]])
        outside = foot.max(-1) == 0
        assert outside.mean() > 0.5
        assert np.array_equal(frames[i][outside], av.base[idx[i]][outside])
        assert not np.array_equal(frames[i], av.base[idx[i]])  # and inside it something was drawn
    again = np.stack(list(AvatarRenderer(av, seed=0).frames(motion, batch=40)))
    # Explicit seed, any batching: the same frames, but for a rare pixel a level apart (a convolution's
    # float sums come out differently rounded in a batch of 8 than in one of 40).
    gap = np.abs(frames.astype(int) - again)
    assert gap.max() <= 1 and (gap > 0).mean() < 1e-5


def test_renderers_of_one_avatar_share_its_base_views_and_draw_alike(tiny_avatar):
    av = load_avatar(tiny_avatar)
    motion = np.zeros((6, 58), np.float32)
    motion[:, SPEC["jawOpen"]] = np.linspace(0, 0.8, 6)
    first = AvatarRenderer(av, seed=0)
    views = av.base_views()
    second = AvatarRenderer(av, seed=0)  # a second live session of the same upload: nothing encoded again
    assert second._views is views and av.base_views().context is views.context
    fresh = AvatarRenderer(load_avatar(tiny_avatar), seed=0)
    drawn = [np.stack(list(r.frames(motion))) for r in (first, second, fresh)]
    assert np.array_equal(drawn[0], drawn[1]) and np.array_equal(drawn[0], drawn[2])


def test_the_base_views_stored_at_training_draw_what_views_made_at_load_do(tiny_avatar, tmp_path, capsys):
    """The file stores the base frames' context latents and tones (half precision), so loading does not encode every
    base frame twice; a file without them (or made another way) has them made again, and draws the same frames."""
    av = load_avatar(tiny_avatar)
    assert av.stored is not None and av.stored[0] == "vae" and av.meta["base"]["views"]["made"] >= 1
    views = av.base_views()
    assert views.context is av.stored[1]  # taken, not made again
    made = av.views(av.base, av.base_affine, av.base_points, "vae")  # as a file without them is loaded
    assert torch.allclose(views.context, made.context, atol=2e-3 * float(made.context.abs().max()))
    assert np.abs(views.tone - made.tone).max() < 1e-3
    bare_path = _crafted(tiny_avatar, tmp_path / "bare.avatar", lambda t, m: m["base"].update(views=None))
    bare = load_avatar(bare_path)
    assert bare.stored is None
    assert (describe_avatar(tiny_avatar)["base"]["views_stored"], describe_avatar(bare_path)["base"]["views_stored"]) \
        == ("vae", None)
    motion = np.zeros((12, 58), np.float32)
    motion[:, SPEC["jawOpen"]] = np.linspace(0, 0.8, 12)
    stored, again = (np.stack(list(AvatarRenderer(a, seed=0).frames(motion))).astype(int) for a in (av, bare))
    gap = np.abs(stored - again)
    assert gap.max() <= 3 and gap.mean() < 0.05  # half-precision contexts: a rare pixel a level or few apart
    assert torch.equal(bare.base_views().context, made.context)
    # `generate` says how to make such a file start sooner; `avatar update` stores them, as training does
    said = tmp_path / "hi.mp4"
    assert main(["generate", "--avatar", str(bare_path), "--text", "Hi.", "-o", str(said), "--quiet"]) == 0
    assert f"talkhead avatar update {bare_path} --out {bare_path}" in capsys.readouterr().err
    assert main(["avatar", "update", str(bare_path), "--out", str(bare_path)]) == 0
    updated = load_avatar(bare_path)
    assert updated.stored is not None and torch.equal(updated.stored[1], av.stored[1])
    assert np.array_equal(updated.stored[2], av.stored[2]) and torch.equal(updated.bank["latent"], av.bank["latent"])
    assert main(["avatar", "update", str(bare_path), "--out", str(tmp_path / "again.avatar")]) == 0
    assert not (tmp_path / "again.avatar").exists()  # stored already: nothing written
    assert main(["avatar", "update", str(tmp_path / "none.avatar"), "--out", str(tmp_path / "x.avatar")]) == 2


def test_bank_detail_gives_back_what_the_vae_loses_of_each_training_crop(tiny_avatar):
    from talkhead.avatar.train import load_data

    av = load_avatar(tiny_avatar)
    d = load_data(tiny_avatar.with_name(tiny_avatar.name + ".work") / "data.npz", av.engine.vae.down, av.data_cfg)
    real = np.concatenate([c["frames"] for c in d.clips]).astype(np.float32)
    picks = np.linspace(0, len(real) - 1, 6).astype(int)
    rec = av.engine.decode(av.bank["latent"][picks]).astype(np.float32)
    restored = np.stack([r + av.detail(int(i)) for r, i in zip(rec, picks)])
    vae_err, left = np.abs(rec - real[picks]).mean(), np.abs(restored - real[picks]).mean()
    # JPEG at quality 90 keeps the detail to two or three levels (2.4-2.6 as the tiny training's outcome varies with
    # the video it learns from; without the detail, the VAE's own error, about 47).
    assert left < 0.3 * vae_err and left < 3.0


def test_a_bank_of_stretches_is_the_bank_of_their_frames_whatever_the_stretches(tiny_avatar):
    """``bank_tensors`` works stretch by stretch in batches of pixels: the same frames cut into stretches of
    uneven lengths give the same latents, detail and norms (a batch never reads the next stretch's latents),
    and the stretches' ends where the cuts are."""
    from dataclasses import replace

    import torch

    from talkhead.avatar.bank import bank_tensors, unjpeg
    from talkhead.avatar.train import load_data

    av = load_avatar(tiny_avatar)
    d = load_data(tiny_avatar.with_name(tiny_avatar.name + ".work") / "data.npz", av.engine.vae.down, av.data_cfg)
    whole = {k: np.concatenate([c[k] for c in d.clips]) for k in ("frames", "motion")}
    n = len(whole["frames"])
    cuts = [0, 7, 7 + 33, n]  # a short stretch, a batch-crossing one, the rest
    clips = [{k: v[a:b] for k, v in whole.items()} for a, b in zip(cuts, cuts[1:])]
    one, three = (bank_tensors(av.engine, replace(d, clips=c)) for c in ([whole], clips))
    assert torch.equal(one["bank.motion"], three["bank.motion"])
    # The same up to the batch a frame was computed in (the kernels' sums run in another order).
    for key in ("bank.latent", "bank.norms"):
        assert one[key].shape == three[key].shape and torch.allclose(one[key].float(), three[key].float(), atol=2e-2), key
    raw = [(b["bank.detail_jpeg"].numpy(), b["bank.detail_offsets"].numpy()) for b in (one, three)]
    assert len(raw[0][1]) == len(raw[1][1]) == n + 1
    diff = [np.abs(unjpeg(*raw[0], i).astype(int) - unjpeg(*raw[1], i)).mean() for i in range(n)]
    assert max(diff) < 0.5, max(diff)
    assert np.flatnonzero(three["bank.ends"].numpy()).tolist() == [c - 1 for c in cuts[1:]]


def _drawn(av, n: int, **drawing) -> np.ndarray:
    """n crops (float) of a jaw opening 0 -> 0.8 over the base, drawn with ``drawing``'s options."""
    motion = np.zeros((n, 58), np.float32)
    motion[:, SPEC["jawOpen"]] = np.linspace(0, 0.8, n)
    return AvatarRenderer(av, seed=0, **drawing).crops(motion, np.arange(n) % len(av.base)).astype(np.float32)


def test_bank_detail_is_added_as_a_running_average(tiny_avatar):
    av = load_avatar(tiny_avatar)
    plain = _drawn(av, 12, detail=None)
    own, smooth = (_drawn(av, 12, detail=m) for m in (0.0, 0.9))
    added, kept = own - plain, smooth - plain
    assert np.abs(added).mean() > 1.0  # the detail is there
    # Memory 0.9: the first frame has its own detail, later ones change from it a tenth as fast.
    assert np.abs(kept[0] - added[0]).mean() < 0.6
    assert np.abs(np.diff(kept, axis=0)).mean() < 0.5 * np.abs(np.diff(added, axis=0)).mean()
    with pytest.raises(InputError, match="detail memory"):
        AvatarRenderer(av, detail=1.0)


def test_detail_gain_scales_what_is_added(tiny_avatar):
    av = load_avatar(tiny_avatar)
    plain = _drawn(av, 6, detail=None)
    one, two = (_drawn(av, 6, detail=0.5, detail_gain=g) - plain for g in (1.0, 2.0))
    assert np.array_equal(_drawn(av, 6, detail=0.5, detail_gain=0.0), plain)
    # Where neither sum was clipped, twice the gain added twice the detail (the tiny avatar's detail is large).
    inside = (np.minimum(plain + one, plain + two) > 0) & (np.maximum(plain + one, plain + two) < 255)
    assert inside.mean() > 0.3
    assert np.abs(two[inside] - 2 * one[inside]).mean() < 0.2 * np.abs(one[inside]).mean()
    with pytest.raises(InputError, match="detail gain"):
        AvatarRenderer(av, detail_gain=-1.0)


def test_decoding_only_the_window_under_the_mask_draws_what_the_whole_crop_does(tiny_avatar):
    av = load_avatar(tiny_avatar)
    r0, r1, c0, c1 = av.base_views().window  # under every base frame's mask
    grid = av.side // av.engine.vae.down
    assert 0 <= r0 < r1 <= grid and 0 <= c0 < c1 <= grid and (r1 - r0) * (c1 - c0) < grid * grid
    motion = np.zeros((8, 58), np.float32)
    motion[:, SPEC["jawOpen"]] = np.linspace(0, 0.8, 8)
    idx = np.arange(8) % len(av.base)
    part, whole = (AvatarRenderer(av, seed=0, window=w).crops(motion, idx).astype(np.float64) for w in (True, False))
    av.bank.pop("norms")  # the window's own group-norm statistics instead of the bank frame's whole ones
    own = AvatarRenderer(av, seed=0, window=True).crops(motion, idx).astype(np.float64)
    seen = av.base_views().paste[idx] > 0
    # Either statistics draw the mask's pixels as the whole decode does; which is closer depends on the avatar
    # (bench avatars, 2026-12-03: cap12 48.9 dB with the bank frame's, 34.6 with the window's own; Pexels
    # 44.5 and 46.7), so that is a benchmark's figure, not this test's.
    for x in (part, own):
        assert 10 * np.log10(255 ** 2 / ((x - whole) ** 2)[seen].mean()) > 30
    assert np.abs(part - own).max() > 0  # the bank frame's statistics are what the window used


@pytest.mark.parametrize("colour", ["frame", "vae"])
def test_colour_follows_the_frame_it_is_drawn_on(tiny_avatar, colour):
    """Frames brighter than the training video's: the drawn lower face is shifted by what its decoding is off by just
    outside the hidden region (the ring), against the frame's own pixels ("frame") or the frame's crop through the
    VAE ("vae", the default: what the VAE cannot draw there is not put onto the face), and the ring then matches."""
    av = load_avatar(tiny_avatar)
    views = av.base_views()
    assert (views.ring.sum((1, 2)) > 50).all() and not (views.ring & views.hidden).any()
    frames = np.clip(av.base.astype(np.int16) + 40, 0, 255).astype(np.uint8)  # another session's light
    motion = np.zeros((8, 58), np.float32)
    motion[:, SPEC["jawOpen"]] = np.linspace(0, 0.8, 8)
    idx = np.arange(8)
    kw = dict(frames=frames[idx], affines=av.base_affine[idx], motion=av.base_motion[idx], points=av.base_points[idx],
              detail=None)
    plain, matched = (AvatarRenderer(av, seed=0, colour=c, **kw).crops(motion, idx).astype(np.float64)
                      for c in ("off", colour))
    real = av.crops_of(frames[idx], av.base_affine[idx])
    target = real if colour == "frame" else av.engine.decode(av.engine.encode(real))
    ring, inside = views.ring[idx], views.paste[idx] > 0.5
    before, after = (np.stack([(x - target)[k][ring[k]].mean(0) for k in range(len(idx))]) for x in (plain, matched))
    assert np.abs(after).max() < 1.5 < np.abs(before).mean()  # the ring matches once shifted (to rounding)
    lift = np.stack([(matched - plain)[k][inside[k]].mean(0) for k in range(len(idx))])
    assert np.allclose(lift, -before, atol=1.0)  # and the lower face was moved by the same amount
    assert np.array_equal(av.tones(real, ring, "off"), np.zeros((len(idx), 3)))
    with pytest.raises(ValueError, match="colour must be one of"):
        AvatarRenderer(av, seed=0, colour="sepia")


def test_speech_opens_an_avatars_mouth_in_the_persons_own_range(tiny_avatar):
    """The avatar's lip range is its filmed frames' own gap (mean, spread); ``stream`` puts speech-driven lips in
    it for a renderer that has one (its own base), and a re-enacted video's fitted motion is left as it is."""
    import torch

    from talkhead.audio.io import load_audio
    from talkhead.motion.lipnet import drawn_gap
    from talkhead.motion.model import in_person_range, load_model
    from talkhead.motion.stream import MotionConfig, motion_from_audio
    from talkhead.pipeline import stream

    av = load_avatar(tiny_avatar)
    mean, spread = av.lip_range()
    filmed = drawn_gap(torch.from_numpy(av.bank["motion"]).float()).numpy()
    assert np.isclose(mean, filmed.mean(), atol=1e-5) and np.isclose(spread, filmed.std(), atol=1e-5) and spread > 0
    r = AvatarRenderer(av, 0)
    assert r.lip_range == (mean, spread)
    assert AvatarRenderer(av, 0, frames=av.base, affines=av.base_affine, motion=av.base_motion,
                          points=av.base_points).lip_range is None
    model = load_model(None)
    wav = load_audio(Path(__file__).parents[1] / "assets" / "speech" / "arctic_a0007.wav")[:16_000 * 2]
    shown = np.stack([f.motion for f in stream([wav], model, r)])
    own = motion_from_audio(in_person_range(model, (mean, spread)), wav, MotionConfig())
    plain = motion_from_audio(model, wav, MotionConfig())
    assert np.allclose(shown, own, atol=1e-4) and not np.allclose(shown, plain, atol=1e-3)


def test_avatar_file_of_another_version_or_kind_is_refused(tiny_avatar, tmp_path, capsys):
    from safetensors import safe_open
    from safetensors.torch import save_file

    with safe_open(str(tiny_avatar), framework="pt") as f:
        meta, tensors = f.metadata(), {k: f.get_tensor(k) for k in f.keys()}
    old = tmp_path / "old.avatar"
    save_file(tensors, str(old), metadata={**meta, "version": "0"})
    args = ["generate", "--avatar", str(old), "--text", "Hello.", "-o", str(tmp_path / "x.mp4"), "--quiet"]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert "another version" in err and len(err.splitlines()) == 1
    junk = tmp_path / "junk.avatar"
    junk.write_bytes(b"not an avatar")
    assert main(args[:2] + [str(junk)] + args[3:]) == 2
    assert "not an avatar file" in capsys.readouterr().err
    assert not (tmp_path / "x.mp4").exists()


def test_generate_with_an_avatar_writes_the_video_at_its_own_size(tiny_avatar, tmp_path, capsys):
    from talkhead.video import probe

    out = tmp_path / "hi.mp4"
    assert main(["generate", "--avatar", str(tiny_avatar), "--text", "Hello there, my friend.", "-o", str(out),
                 "--quiet"]) == 0
    assert "avatar update" not in capsys.readouterr().err  # its base views are stored: nothing to say
    info = probe(out)
    h, w = load_avatar(tiny_avatar).base.shape[1:3]
    assert (info["width"], info["height"]) == (w, h) and info["video_frames"] > 25 and info["audio_codec"]
    assert main(["generate", "--avatar", str(tiny_avatar), "--image", "x.png", "--text", "Hi.", "-o",
                 str(tmp_path / "y.mp4")]) == 2


def test_reenact_follows_the_video_in_its_own_frames(tiny_avatar, talking_video, tmp_path):
    from talkhead.video import probe, read_frames

    video, _ = talking_video
    out = tmp_path / "re.mp4"
    assert main(["avatar", "reenact", str(tiny_avatar), str(video), "-o", str(out), "--quiet"]) == 0
    real, drawn = read_frames(video), read_frames(out)
    assert drawn.shape == real.shape and probe(out)["audio_codec"]  # same size and framing, the video's sound
    psnr = 10 * np.log10(255.0 ** 2 / np.mean((drawn.astype(float) - real) ** 2))
    assert psnr > 24, psnr  # the frame is the video's own; only the lower face is redrawn
    assert main(["avatar", "reenact", str(tiny_avatar), str(tmp_path / "none.mp4"), "-o", str(out)]) == 2


def test_reenact_and_generate_draw_the_lips_filmed_when_asked(tiny_avatar, talking_video, tmp_path):
    from talkhead.video import read_frames

    video, _ = talking_video
    engine, lips = tmp_path / "engine.mp4", tmp_path / "lips.mp4"
    for out, mouth in ((engine, "engine"), (lips, "lips")):
        args = ["avatar", "reenact", str(tiny_avatar), str(video), "-o", str(out), "--quiet", "--mouth", mouth]
        assert main(args) == 0
    real, a, b = read_frames(video).astype(float), read_frames(engine).astype(float), read_frames(lips).astype(float)
    assert a.shape == b.shape == real.shape and np.abs(a - b).mean() > 0.05  # another lower face, the same frames
    assert 10 * np.log10(255.0 ** 2 / np.mean((b - real) ** 2)) > 24
    said = tmp_path / "said.mp4"
    assert main(["generate", "--avatar", str(tiny_avatar), "--text", "Hello.", "-o", str(said), "--quiet",
                 "--avatar-mouth", "filmed"]) == 0
    assert read_frames(said).shape[1:] == real.shape[1:]
    assert main(["generate", "--text", "Hi.", "-o", str(tmp_path / "photo.mp4"), "--avatar-mouth", "lips"]) == 2
    assert not (tmp_path / "photo.mp4").exists()


def _crafted(src, dst, change):
    """A copy of the avatar file ``src`` with ``change(tensors, meta)`` applied (as a stranger could write one)."""
    import json

    from safetensors import safe_open
    from safetensors.torch import save_file

    with safe_open(str(src), framework="pt") as f:
        tensors, meta = {k: f.get_tensor(k) for k in f.keys()}, {k: json.loads(v) for k, v in f.metadata().items()}
    change(tensors, meta)
    save_file(tensors, str(dst), {k: json.dumps(v) for k, v in meta.items()})
    return dst


def _huge_jpeg(tensors, meta):
    import io

    import torch
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (16, 16)).save(buf, "JPEG")
    raw = bytearray(buf.getvalue())
    i = raw.index(b"\xff\xc0") + 5  # the frame header's height and width
    raw[i:i + 4] = (60000).to_bytes(2, "big") * 2  # says 60000 x 60000: 10.8 GB decoded
    tensors["base.jpeg"] = torch.frombuffer(bytes(raw), dtype=torch.uint8).clone()
    tensors["base.offsets"] = torch.tensor([0, len(raw)])


CRAFTED = {
    "huge network": (lambda t, m: m["engine"]["latent"].update(widths=[1 << 20, 1 << 20, 1 << 20]), "weights are not"),
    "huge schedule": (lambda t, m: m["engine"]["latent"].update(timesteps=10 ** 9), "not a usable"),
    "many steps": (lambda t, m: m["engine"].update(timesteps=list(range(10 ** 6))), "do not fit"),
    "huge crops": (lambda t, m: m.update(side=1 << 20), "crop side"),
    "huge base picture": (_huge_jpeg, "too large to decode"),
    "NaN weight": (lambda t, m: t[max(k for k in t if k.startswith("engine.net."))].fill_(float("nan")), "NaN"),
    "missing tensor": (lambda t, m: t.pop("paste"), "not a usable avatar file"),
    "wrong shape": (lambda t, m: t.update(paste=t["paste"][:5]), "paste is"),
    "wrong base views": (lambda t, m: t.update({"base.context": t["base.context"][:1]}), "base.context is"),
    "base views without their tones": (lambda t, m: t.pop("base.tone"), "not a usable avatar file"),
    "another version": (lambda t, m: m.update(version=-1), "another version"),
}


@pytest.mark.parametrize("case", sorted(CRAFTED))
def test_a_crafted_avatar_file_is_refused_in_one_line_before_anything_is_built(case, tiny_avatar, tmp_path, capsys):
    import time

    change, why = CRAFTED[case]
    path = _crafted(tiny_avatar, tmp_path / "crafted.avatar", change)
    t = time.perf_counter()
    assert main(["avatar", "info", str(path)]) == 2
    assert time.perf_counter() - t < 2.0  # before: 52 s and 1.6 GB for a crafted network
    err = capsys.readouterr().err.strip()
    assert why in err and err.count("\n") == 0
