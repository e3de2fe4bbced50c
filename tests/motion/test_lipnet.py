"""The lip net's head (``motion.lipnet``): it sets the lip opening the rig draws and nothing else, rides on a
motion model's windows so streamed and whole motion stay the same, and loads only files that describe it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from talkhead.audio.features import FeatureConfig
from talkhead.errors import InputError
from talkhead.motion.lipnet import LipHead, LipNet, LipNetConfig, drawn_gap, follow_gap, load_head, set_opening
from talkhead.motion.model import in_person_range, load, on_face, split_lips, with_lips
from talkhead.rig.spec import SPEC

WHISPER = FeatureConfig(kind="whisper", pool="mean")


def _head(seed: int = 0) -> LipHead:
    torch.manual_seed(seed)
    net = LipNet(LipNetConfig(dim=384, hidden=8, kernel=3)).eval()
    return LipHead(net, WHISPER, torch.zeros(384), torch.ones(384), 0.06, 0.03,
                   meta={"train": {"people": ["ann"]}})


def test_the_drawn_gap_grows_with_the_jaw():
    m = torch.zeros(11, SPEC.dim)
    m[:, SPEC["jawOpen"]] = torch.linspace(0, 1, 11)
    g = drawn_gap(m)
    assert bool((g.diff() > 0).all()) and 0.0 < float(g[0]) < 0.03 < 0.15 < float(g[-1])


def test_following_a_gap_sets_the_opening_only_and_reaches_what_it_can():
    rng = np.random.default_rng(0)
    m = torch.as_tensor(rng.uniform(0, 0.3, (7, SPEC.dim)), dtype=torch.float32)
    # The first is tighter than sealed lips make it (the shape channels open them), the last wider than any
    # jaw opens: both go as far as they can.
    target = torch.tensor([0.004, 0.03, 0.05, 0.08, 0.1, 0.12, 2.0])
    out = follow_gap(m, target)
    got = drawn_gap(out)
    assert torch.allclose(got[1:6], target[1:6], atol=2e-3)
    assert float(out[6, SPEC["jawOpen"]]) > 0.99
    assert float(out[0, SPEC["jawOpen"]]) == 0.0 and float(out[0, SPEC["mouthPressLeft"]]) > 0.39
    jaw, seal = out[:, SPEC["jawOpen"]], out[:, [SPEC["mouthClose"], SPEC["mouthPressLeft"], SPEC["mouthPressRight"]]]
    assert float(seal[jaw > 0].abs().max()) == 0.0 and bool((jaw[2:] > 0).all())  # open lips seal nowhere
    opening = {SPEC[n] for n in ("jawOpen", "mouthClose", "mouthPressLeft", "mouthPressRight", "mouthRollLower",
                                 "mouthRollUpper")}
    others = [i for i in range(SPEC.dim) if i not in opening]
    assert torch.equal(out[:, others], m[:, others])


def test_an_opening_means_the_same_on_a_face_photographed_with_its_mouth_open():
    from talkhead.face.template import TEMPLATE, fit_rig, project

    lm = TEMPLATE[:68, :2].copy() * 100
    lm[[65, 66, 67, 56, 57, 58], 1] += 12  # the lower lip well below the upper one: a mouth open at rest
    rig = fit_rig(lm)
    u = torch.linspace(-1, 1, 21)
    motion = set_opening(torch.zeros(21, SPEC.dim), u)
    p = project(rig, motion)
    gap = (p[:, [65, 66, 67], 1] - p[:, [63, 62, 61], 1]).mean(1)
    assert bool((gap.diff() > 0).all())  # shut at -1, then wider all the way
    assert float(gap[0]) < 0.1 * float(gap[10]) and float(drawn_gap(motion).diff().min()) >= 0


def _open_mouthed_rig():
    from talkhead.face.template import TEMPLATE, fit_rig

    lm = TEMPLATE[:68, :2].copy() * 100
    lm[[65, 66, 67, 56, 57, 58], 1] += 12  # the lower lip well below the upper one: a mouth open at rest
    lm[:, 0] *= 1.1  # and a wider face than the template's
    return fit_rig(lm)


def test_solved_on_a_face_the_gap_drawn_on_it_is_the_target_as_it_is_not_solved_on_the_standard_one():
    from talkhead.face.template import project
    from talkhead.motion.data.talking import gap_of_points
    from talkhead.motion.lipnet import lip_face

    rig = _open_mouthed_rig()
    face = lip_face(rig)
    rng = np.random.default_rng(0)
    m = torch.as_tensor(rng.uniform(0, 0.3, (9, SPEC.dim)), dtype=torch.float32)
    m[:, SPEC.expression.stop:] = 0.0  # no head pose: the face as photographed
    target = torch.linspace(0.02, 0.12, 9)
    on_it, standard = follow_gap(m, target, face=face), follow_gap(m, target)
    assert torch.allclose(drawn_gap(on_it, face), target, atol=2e-3)
    # What the warp renderer's geometry draws on that face (bench lips's measure) is what was solved for ...
    drawn = torch.as_tensor(gap_of_points(project(rig, on_it).numpy()), dtype=torch.float32)
    assert torch.allclose(drawn, target, atol=3e-3), (drawn, target)
    # ... and not what solving on the standard face draws there: its open lips shift every gap.
    assert float((drawn_gap(standard, face) - target).abs().max()) > 0.01
    assert torch.equal(lip_face(rig.to("cpu"))[0], face[0])


def test_on_a_face_with_lips_apart_at_rest_the_head_opens_about_them():
    """A head solving on a face takes the net's opening about that face's own lips at rest: on a photo whose lips
    rest apart, targets about the standard face's rest would only ever seal them, the jaw never moving."""

    from talkhead.motion.lipnet import lip_face, rest_gap

    face = lip_face(_open_mouthed_rig())
    assert rest_gap(face) > rest_gap(None) + 0.05
    raw, motion = torch.randn(1, 40, 384), torch.zeros(1, 40, SPEC.dim)
    head = _head()
    on_face = head.on(face).apply(raw, motion)[0]
    want = head.gap_mean + head.gap_std * head.opening(raw)[0] + rest_gap(face) - rest_gap(None)
    assert torch.allclose(drawn_gap(on_face, face), want, atol=3e-3)
    assert float(on_face[:, SPEC["jawOpen"]].max()) > 0.1  # the jaw moves, as it does on the standard face


def test_the_head_draws_the_nets_opening():
    raw = torch.randn(1, 30, 384)
    motion = torch.zeros(1, 30, SPEC.dim)
    motion[..., SPEC["jawOpen"]] = 0.4
    head = _head()
    want = (head.gap_mean + head.gap_std * head.opening(raw)[0]).clamp_min(0.0)
    got = drawn_gap(head.apply(raw, motion)[0])
    reachable = want > 0.01
    assert bool(reachable.sum() > 10) and torch.allclose(got[reachable], want[reachable], atol=2e-3)
    assert not torch.allclose(got, drawn_gap(motion[0]), atol=3e-3)


def test_a_head_that_swings_short_widens_its_opening_by_the_inverse(tmp_path):
    """A net whose opening swings 0.5 of the real lips' on unseen people draws twice its opening about the mean;
    the spread survives the file, an older file (none) loads at 1, and a crafted one is named."""
    from dataclasses import replace

    from talkhead.checkpoint import load_checkpoint, save_checkpoint

    raw = torch.randn(1, 30, 384)
    motion = torch.zeros(1, 30, SPEC.dim)
    head = replace(_head(), gap_mean=0.1, spread=0.5)
    want = head.gap_mean + head.gap_std * head.opening(raw)[0] / 0.5
    got = drawn_gap(head.apply(raw, motion)[0])
    reachable = (want > 0.01) & (want < 0.2)
    assert bool(reachable.sum() > 10) and torch.allclose(got[reachable], want[reachable], atol=2e-3)
    head.save(tmp_path / "h.safetensors")
    assert load_head(tmp_path / "h.safetensors").spread == 0.5
    tensors, meta = load_checkpoint(tmp_path / "h.safetensors")
    for name, value in (("older", None), ("crafted", 0.01)):
        m = {k: v for k, v in meta.items() if k not in ("format", "spread")}
        save_checkpoint(tmp_path / f"{name}.safetensors", tensors, m if value is None else {**m, "spread": value})
    assert load_head(tmp_path / "older.safetensors").spread == 1.0
    with pytest.raises(InputError, match=r"crafted\.safetensors.*spread"):
        load_head(tmp_path / "crafted.safetensors")


def test_a_head_survives_its_file_and_a_crafted_file_is_named(tmp_path):
    head = _head()
    head.save(tmp_path / "h.safetensors")
    back = load_head(tmp_path / "h.safetensors")
    raw = torch.randn(2, 20, 384)
    assert torch.allclose(back.opening(raw), head.opening(raw))
    assert (back.gap_mean, back.gap_std, back.meta["train"]["people"]) == (0.06, 0.03, ["ann"])
    from talkhead.checkpoint import load_checkpoint, save_checkpoint

    tensors, meta = load_checkpoint(tmp_path / "h.safetensors")
    for name, t, m in [("wide", tensors, {**meta, "lipnet": {**meta["lipnet"], "hidden": 10**6}}),
                       ("kind", tensors, {**meta, "kind": "motion"}),
                       ("std", {**tensors, "feat_std": torch.zeros(384)}, meta)]:
        save_checkpoint(tmp_path / f"{name}.safetensors", t, {k: v for k, v in m.items() if k != "format"})
        with pytest.raises(InputError, match=name + r"\.safetensors"):
            load_head(tmp_path / f"{name}.safetensors")


def test_an_ensemble_opens_as_its_members_mean_and_an_older_single_net_file_loads(tmp_path):
    torch.manual_seed(1)
    net = LipNet(LipNetConfig(dim=384, hidden=8, kernel=3, members=3)).eval()
    raw = torch.randn(2, 20, 384)
    each = net.each(raw)
    assert each.shape == (3, 2, 20) and torch.allclose(net(raw), each.mean(0))
    assert float((each[0] - each[1]).abs().max()) > 1e-3  # members start apart: they are not copies
    head = LipHead(net, WHISPER, torch.zeros(384), torch.ones(384), 0.06, 0.03)
    head.save(tmp_path / "e.safetensors")
    assert torch.allclose(load_head(tmp_path / "e.safetensors").opening(raw), head.opening(raw))
    from talkhead.checkpoint import load_checkpoint, save_checkpoint

    one = _head()  # a file written before ensembles: its net's weights under "net.body."
    one.save(tmp_path / "one.safetensors")
    tensors, meta = load_checkpoint(tmp_path / "one.safetensors")
    old = {k.replace("net.bodies.0.", "net.body."): v for k, v in tensors.items()}
    lipnet = {k: v for k, v in meta["lipnet"].items() if k != "members"}
    save_checkpoint(tmp_path / "old.safetensors", old, {**{k: v for k, v in meta.items() if k != "format"},
                                                         "lipnet": lipnet})
    assert torch.allclose(load_head(tmp_path / "old.safetensors").opening(raw), one.opening(raw))
    save_checkpoint(tmp_path / "many.safetensors", tensors, {**{k: v for k, v in meta.items() if k != "format"},
                                                              "lipnet": {**lipnet, "members": 10**6}})
    with pytest.raises(InputError, match="member nets"):
        load_head(tmp_path / "many.safetensors")


def test_a_model_wears_a_head_by_name_and_streams_as_it_samples_whole(tmp_path):
    from talkhead.motion.stream import MotionConfig, MotionStream, motion_from_audio

    _head().save(tmp_path / "h.safetensors")
    assert split_lips("student-1-whisper+none") == ("student-1-whisper", "none")
    assert load("student-1-whisper+none").lips is None and load("student-1-whisper").lips is None
    model = load(f"student-1-whisper+{tmp_path / 'h.safetensors'}")
    assert model.lips is not None
    wav = np.sin(np.linspace(0, 900, 16000 * 4)).astype(np.float32) * np.repeat(np.random.default_rng(1).uniform(
        0, 0.5, 40), 1600).astype(np.float32)
    s = MotionStream(model, MotionConfig(seed=3))
    parts = [b for i in range(0, len(wav), 7000) for b in s.push(wav[i:i + 7000])] + list(s.flush())
    offline = motion_from_audio(model, wav, MotionConfig(seed=3))
    assert np.allclose(np.concatenate(parts), offline, atol=1e-5)
    bare = motion_from_audio(load("student-1-whisper"), wav, MotionConfig(seed=3))
    j = SPEC["jawOpen"]
    assert not np.allclose(offline[:, j], bare[:, j], atol=1e-3)  # the head set the opening
    rest = [i for i in range(SPEC.dim) if i != j]
    assert np.abs(offline[:, rest] - bare[:, rest]).max() < 0.5  # the rest only by the next windows' tails


def test_a_person_who_opens_wider_is_drawn_opening_wider_at_the_same_moments(tmp_path):
    """``in_person_range``: the head's opening in a person's own gap units, twice the spread drawing the gap's
    moves twice as large around the new mean (where no opening is clamped), the timing unchanged."""
    from talkhead.audio.io import load_audio
    from talkhead.motion.stream import MotionConfig, motion_from_audio

    _head().save(tmp_path / "h.safetensors")
    model = load(f"student-1-whisper+{tmp_path / 'h.safetensors'}")
    wav = load_audio(Path(__file__).parents[1] / "assets" / "speech" / "arctic_a0007.wav")
    gap = lambda m: drawn_gap(torch.from_numpy(motion_from_audio(m, wav, MotionConfig(seed=3)))).numpy()  # noqa: E731
    base, wide = gap(model), gap(in_person_range(model, (0.12, 0.06)))  # the head's own: (0.06, 0.03)
    z_base, z_wide = (base - 0.06) / 0.03, (wide - 0.12) / 0.06
    free = (base > 0.005) & (wide > 0.005)  # neither clamped at a shut mouth
    assert free.mean() > 0.5 and np.abs(z_base - z_wide)[free].max() < 0.05, np.abs(z_base - z_wide)[free].max()
    assert wide.std() > 1.7 * base.std()
    # A narrower range than the head's (a video where the mouth moved little) leaves the head's own.
    assert np.allclose(gap(in_person_range(model, (0.03, 0.01))), base)
    part = in_person_range(model, (0.03, 0.06)).lips  # each of mean and spread at least the head's
    assert (part.gap_mean, part.gap_std) == (0.06, 0.06)
    assert in_person_range(model, None) is model and in_person_range(load("student-1-whisper"), (0.1, 0.1)).lips is None
    assert on_face(model, None) is model and on_face(load("student-1-whisper+none"), _open_mouthed_rig()).lips is None
    solved = on_face(model, _open_mouthed_rig())
    assert solved.lips.face is not None and model.lips.face is None and solved.denoiser is model.denoiser
    for bad in ((0.1, 0.0), (float("nan"), 0.1), (0.1, float("inf"))):
        with pytest.raises(InputError, match="lip range"):
            in_person_range(model, bad)


def test_a_head_reading_an_inner_layer_gets_it_beside_the_models_own_features(tmp_path):
    """A head with taps (``FeatureConfig.taps``): the model's front end computes them in the same pass, the
    denoiser still reads its own columns only, streamed motion is whole motion, and the opening follows the tap."""
    from talkhead.audio.io import load_audio
    from talkhead.motion.stream import MotionConfig, MotionStream, motion_from_audio

    torch.manual_seed(0)
    tapped = FeatureConfig(kind="whisper", pool="mean", taps=(2,))
    net = LipNet(LipNetConfig(dim=768, hidden=8, kernel=3)).eval()
    with torch.no_grad():  # the net reads the tap's columns only: the output's weights are zero
        for body in net.bodies:
            body[1].weight[:, :384] = 0
    LipHead(net, tapped, torch.zeros(768), torch.ones(768), 0.06, 0.03).save(tmp_path / "t.safetensors")
    model = load(f"student-1-whisper+{tmp_path / 't.safetensors'}")
    assert model.hearing == tapped and model.features.taps == () and load("student-1-whisper").hearing.dim == 384
    wav = load_audio(Path(__file__).parents[1] / "assets" / "speech" / "arctic_a0007.wav")
    s = MotionStream(model, MotionConfig(seed=3))
    parts = [b for i in range(0, len(wav), 7000) for b in s.push(wav[i:i + 7000])] + list(s.flush())
    whole = motion_from_audio(model, wav, MotionConfig(seed=3))
    assert np.allclose(np.concatenate(parts), whole, atol=1e-5)
    feats = model.audio_features(wav)
    assert feats.shape[1] == 768
    want = model.lips.opening(model.norm.audio_inverse(feats)[None])[0]
    got = drawn_gap(torch.from_numpy(whole))
    assert np.corrcoef(want.numpy(), got.numpy())[0, 1] > 0.8  # the gap drawn follows the tap-read opening


def test_a_head_for_another_front_end_is_refused_or_left_off(tmp_path):
    head = _head()
    head.features = FeatureConfig()  # log-mel
    head.save(tmp_path / "mel.safetensors")
    model = load("student-1-whisper")
    with pytest.raises(InputError, match="lip net"):
        with_lips(model, tmp_path / "mel.safetensors")
    assert with_lips(model, tmp_path / "mel.safetensors", strict=False).lips is None


def test_a_net_with_little_look_ahead_never_reads_further():
    torch.manual_seed(0)
    net = LipNet(LipNetConfig(dim=16, hidden=8, kernel=5, ahead=1)).eval()
    x = torch.randn(1, 40, 16)
    y = x.clone()
    y[:, 21:] += 5.0  # change the audio from frame 21 on
    a, b = net(x)[0], net(y)[0]
    assert a.shape == (40,) and torch.equal(a[:20], b[:20]) and not torch.allclose(a[20], b[20])
    sym = LipNet(LipNetConfig(dim=16, hidden=8, kernel=5)).eval()
    assert not torch.allclose(sym(x)[0][17], sym(y)[0][17])  # the symmetric net reads 4 frames ahead
