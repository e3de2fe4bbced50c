"""``avatar.refine``: a pixel refiner after the avatar's engine, learnt from the avatar's own training frames."""

from __future__ import annotations

import shutil
from dataclasses import replace

import numpy as np
import pytest
import torch

from talkhead.avatar.file import describe_avatar, load_avatar
from talkhead.avatar.renderer import AvatarRenderer
from talkhead.avatar.train import load_data
from talkhead.errors import InputError
from talkhead.face.paste import paste_lower_face, pingpong
from talkhead.rig.spec import SPEC


@pytest.fixture(scope="module")
def refined(tiny_avatar, tiny_avatar_cfg, talking_video, tmp_path_factory):
    """The tiny avatar's trained stages saved again with a refiner, the mouth bank cut to half its frames."""
    from talkhead.avatar.train import train_avatar

    full = load_avatar(tiny_avatar)
    half_mb = 0.5 * (full.bank["detail"][0].nbytes + full.bank["latent"].numel() * 2 + full.bank["motion"].nbytes) / 1e6
    out = tmp_path_factory.mktemp("refined") / "refined.avatar"
    shutil.copytree(tiny_avatar.with_name(tiny_avatar.name + ".work"), out.with_name(out.name + ".work"))
    train_avatar([talking_video[0]], out, replace(tiny_avatar_cfg, refine_steps=60, bank_mb=half_mb), progress=False,
                 log=lambda *a: None)
    return out


def _pairs(path, cfg):
    """The refined avatar's training pairs, as its training stage makes them."""
    from talkhead.avatar.refine import training_pairs

    av = load_avatar(path)
    d = load_data(path.with_name(path.name + ".work") / "data.npz", av.engine.vae.down, cfg.data)
    return av, d, training_pairs(av, d, cfg.bank_exclude)


def test_the_refined_avatar_draws_with_its_refiner_and_the_frame_outside_the_mask_is_the_base(refined):
    av = load_avatar(refined)
    assert av.refiner is not None and describe_avatar(refined)["refiner"] == {"width": 32}
    work = refined.with_name(refined.name + ".work")
    assert (work / "refiner.safetensors").is_file() and not (work / "plain.avatar").exists()
    assert "refiner_s" in av.meta["train"]["wall_s"]  # the file's record of training counts the refiner's stage
    motion = np.zeros((8, 58), np.float32)
    motion[:, SPEC["jawOpen"]] = np.linspace(0, 0.8, 8)
    on = np.stack(list(AvatarRenderer(av, 0).frames(motion)))
    again = np.stack(list(AvatarRenderer(av, 0).frames(motion)))
    off = np.stack(list(AvatarRenderer(av, 0, refine=False).frames(motion)))
    np.testing.assert_array_equal(on, again)  # seeded: drawn alike
    idx = pingpong(np.arange(8), len(av.base))
    paste = av.base_views().paste
    for i in (0, 7):  # where the warped paste mask is zero, the frame is the base frame; inside, the refiner drew
        foot = paste_lower_face(np.zeros_like(av.base[0]), np.full((av.side, av.side, 3), 255, np.uint8),
                                av.base_affine[idx[i]], paste[idx[i]])
        outside, inside = foot.max(-1) == 0, foot.min(-1) == 255
        assert np.array_equal(on[i][outside], av.base[idx[i]][outside])
        assert np.abs(on[i][inside].astype(int) - off[i][inside]).mean() > 1.0


def test_the_refiner_brings_the_engines_crops_of_its_training_frames_nearer_the_real_ones(refined, tiny_avatar_cfg):
    av, d, (drawn, guides, real) = _pairs(refined, tiny_avatar_cfg)
    lower = d.paste > 0.5
    assert drawn.dtype == guides.dtype == real.dtype == np.uint8
    assert len(real) == len(av.bank["motion"]) < sum(len(c["frames"]) for c in d.clips)  # the bank's frames only
    real = real.astype(np.float32)
    before = np.abs(drawn - real)[:, lower].mean()
    after = np.abs(av.refiner.apply(drawn, guides) - real)[:, lower].mean()
    assert after < 0.9 * before, (before, after)


def test_a_killed_refiner_training_resumes_exactly(refined, tiny_avatar_cfg, tmp_path):
    from talkhead.avatar.refine import train_refiner

    av, d, (drawn, guides, real) = _pairs(refined, tiny_avatar_cfg)
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    whole = train_refiner(drawn, guides, real, d.paste, 201, tmp_path / "a")
    train_refiner(drawn, guides, real, d.paste, 201, tmp_path / "b")  # leaves its state at step 200, as a kill would
    assert (tmp_path / "b" / "refiner.state.pt").is_file()
    resumed = train_refiner(drawn, guides, real, d.paste, 201, tmp_path / "b")  # from step 200: one step more
    for (k, a), b in zip(whole.state_dict().items(), resumed.state_dict().values()):
        assert torch.equal(a, b), k


def test_an_avatar_file_whose_refiner_does_not_fit_its_width_is_refused(refined, tmp_path):
    from talkhead.checkpoint import load_checkpoint, save_checkpoint

    tensors, meta = load_checkpoint(refined)
    meta["refiner"] = {"width": 16}
    save_checkpoint(tmp_path / "bad.avatar", tensors, meta)
    with pytest.raises(InputError, match="refiner"):
        load_avatar(tmp_path / "bad.avatar")


def test_a_run_that_changes_the_bank_trains_the_refiner_again_and_one_that_does_not_keeps_it(
        refined, tiny_avatar_cfg, talking_video, tmp_path):
    from talkhead.avatar.train import train_avatar

    av = load_avatar(refined)
    weights = {k: v.clone() for k, v in av.refiner.state_dict().items()}
    out = tmp_path / "again.avatar"
    shutil.copytree(refined.with_name(refined.name + ".work"), out.with_name(out.name + ".work"))
    same = replace(tiny_avatar_cfg, refine_steps=60, bank_mb=av.meta["bank"]["budget_mb"])
    for cfg, kept in ((same, True), (replace(same, bank_mb=tiny_avatar_cfg.bank_mb), False)):
        train_avatar([talking_video[0]], out, cfg, progress=False, log=lambda *a: None)
        again = load_avatar(out)
        assert all(torch.equal(weights[k], v) for k, v in again.refiner.state_dict().items()) == kept
    assert len(again.bank["motion"]) > len(av.bank["motion"])  # the whole bank: the refiner learnt from its drawing
