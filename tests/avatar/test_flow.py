"""``avatar.flow``: pixels of one mouth moved to another mouth's shape, the rest of the crop left where it is."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from talkhead.avatar.file import LOWER, load_avatar
from talkhead.avatar.flow import MouthFlow, lips_mask
from talkhead.avatar.mouths import mouth_keys
from talkhead.avatar.renderer import AvatarRenderer
from talkhead.face.paste import paste_lower_face
from talkhead.rig.spec import SPEC


@pytest.fixture(scope="module")
def flow():
    """The rig on the built-in photo's own points (a 512 px picture, as if it were the crop)."""
    from talkhead.face.detect import default_photo, detect_face

    return MouthFlow(detect_face(default_photo()).landmarks, 512)


def _marks(at: list[np.ndarray], side: int) -> torch.Tensor:
    """A dark picture [1, S, S, 1] with a bright 5 px square at each point."""
    img = torch.zeros(1, side, side, 1)
    for x, y in at:
        img[0, int(round(y)) - 2:int(round(y)) + 3, int(round(x)) - 2:int(round(x)) + 3] = 1.0
    return img


def _centre(img: torch.Tensor, near: np.ndarray, r: int = 20) -> np.ndarray:
    """Where the brightness within r px of ``near`` is centred (x, y)."""
    y0, x0 = int(near[1]) - r, int(near[0]) - r
    patch = img[0, y0:y0 + 2 * r, x0:x0 + 2 * r, 0].clamp(min=0).numpy()
    ys, xs = np.mgrid[:2 * r, :2 * r]
    return np.array([(xs * patch).sum() / patch.sum() + x0, (ys * patch).sum() / patch.sum() + y0])


def _opening(av, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Motion [n, 58] whose jaw opens frame by frame, the base frames drawn on, and the drive the renderer makes of
    them (the base frame's head and eyes, the motion's lower face)."""
    motion = np.zeros((n, 58), np.float32)
    motion[:, SPEC["jawOpen"]] = np.linspace(0, 0.8, n)
    idx = np.arange(n) % len(av.base)
    drive = np.array(av.base_motion[idx], np.float32)
    drive[:, LOWER] = motion[:, LOWER]
    return motion, idx, drive


def test_a_mark_on_the_lower_lip_goes_where_the_opened_jaw_puts_it_and_the_nose_stays(flow):
    m = np.zeros((2, 58), np.float32)
    m[1, SPEC["jawOpen"]] = 0.8
    closed, opened = flow.points(m)
    lip, nose = 57, 30  # the lower lip's middle, the nose's tip
    assert opened[lip, 1] - closed[lip, 1] > 8  # the jaw drops it by some pixels
    moved = flow.warp(_marks([closed[lip].numpy(), closed[nose].numpy()], 512), closed[None], opened[None])
    assert np.linalg.norm(_centre(moved, opened[lip].numpy()) - opened[lip].numpy()) < 1.5
    assert np.linalg.norm(_centre(moved, closed[nose].numpy()) - closed[nose].numpy()) < 0.5
    same = flow.warp(_marks([closed[lip].numpy()], 512), closed[None], closed[None])
    assert torch.allclose(same, _marks([closed[lip].numpy()], 512), atol=1e-3)  # no move, no change


def test_moved_detail_is_added_and_the_frame_outside_the_mask_is_the_base(tiny_avatar):
    av = load_avatar(tiny_avatar)
    n = 8
    motion, idx, _ = _opening(av, n)

    def drawn(**kw) -> np.ndarray:
        return AvatarRenderer(av, seed=0, **kw).crops(motion, idx).astype(np.float32)

    plain, still, moved = drawn(detail=None), drawn(detail=0.5), drawn(detail=0.5, flow=True)
    still, moved = still - plain, moved - plain
    assert np.abs(moved).mean() > 0.5 * np.abs(still).mean()  # the detail is still there
    # Drawn into frames, what is outside the paste mask is still the base frame's own.
    frames = np.stack(list(AvatarRenderer(av, seed=0, flow=True).frames(motion)))
    paste = av.base_views().paste
    for i in (0, n - 1):
        foot = paste_lower_face(np.zeros_like(av.base[0]), np.full((av.side, av.side, 3), 255, np.uint8),
                                av.base_affine[idx[i]], paste[idx[i]])
        assert np.array_equal(frames[i][foot.max(-1) == 0], av.base[idx[i]][foot.max(-1) == 0])


def test_a_latent_cell_on_the_lower_lip_moves_with_the_jaw_by_cells(flow):
    m = np.zeros((2, 58), np.float32)
    m[1, SPEC["jawOpen"]] = 0.8
    closed, opened = flow.points(m)
    g, lip = 64, 57  # 8 crop pixels a cell
    z = torch.zeros(1, 2, g, g)
    cell = ((closed[lip] + 0.5) / 8 - 0.5).round().long()
    z[0, :, cell[1], cell[0]] = 1.0  # one cell: a wider mark would straddle the lips, which part
    moved = flow.warp_latent(z, closed[None], opened[None])
    want = (opened[lip] + 0.5) / 8 - 0.5 - (closed[lip] + 0.5) / 8 + 0.5 + cell  # the mark's centre, moved
    got = _centre(moved[:, :1].permute(0, 2, 3, 1), want.numpy(), r=3)
    assert np.linalg.norm(got - want.numpy()) < 0.5 and want[1] - cell[1] > 1  # more than a cell down, to within half


def test_the_start_moved_to_the_drawn_mouth_draws_the_frame_and_a_start_out_of_range_is_refused(tiny_avatar):
    from talkhead.errors import InputError

    av = load_avatar(tiny_avatar)
    motion = np.zeros((6, 58), np.float32)
    motion[:, SPEC["jawOpen"]] = np.linspace(0, 0.8, 6)
    idx = np.arange(6) % len(av.base)
    shipped = AvatarRenderer(av, seed=0).crops(motion, idx).astype(np.float32)
    moved = AvatarRenderer(av, seed=0, move_start=True, start=400).crops(motion, idx).astype(np.float32)
    assert moved.shape == shipped.shape and np.abs(moved - shipped).mean() > 0.5
    # Moved in pixels (the bank frame's crop moved and encoded again): the same move made finer, a start near the
    # latent one's and not the same.
    pixels = AvatarRenderer(av, seed=0, move_start=True, start=400, move_pixels=True).crops(motion, idx)
    apart = np.abs(pixels.astype(np.float32) - moved).mean()
    assert pixels.shape == shipped.shape and 0.05 < apart < 0.25 * np.abs(moved - shipped).mean()
    with pytest.raises(InputError, match="bridge's start"):
        AvatarRenderer(av, start=1000)
    with pytest.raises(InputError, match="move_pixels"):
        AvatarRenderer(av, move_pixels=True)


def test_the_start_averaged_at_the_mean_mouth_changes_less_between_frames_and_a_bad_memory_is_refused(tiny_avatar):
    from talkhead.errors import InputError

    av = load_avatar(tiny_avatar)
    n, far = 8, len(av.bank["latent"]) - 1
    chosen = np.array([0, far] * (n // 2))  # the bank frame flips every frame: what shimmers from t = 400
    motion = np.zeros((n, 58), np.float32)
    motion[:, SPEC["jawOpen"]] = 0.4

    def change(**kw) -> float:
        r = AvatarRenderer(av, seed=0, move_start=True, start=400, **kw)
        z = r._moved_start(av.bank["latent"][chosen].float(), chosen, r.mouth.points(motion))
        return float((z[1:] - z[:-1]).abs().mean())

    assert change(start_memory=0.8) < 0.5 * change()
    with pytest.raises(InputError, match="start's memory"):
        AvatarRenderer(av, move_start=True, start_memory=1.0)


def test_each_frame_starts_partly_from_the_one_before_moved_to_its_mouth_and_carry_needs_the_moved_start(tiny_avatar):
    from talkhead.errors import InputError

    av = load_avatar(tiny_avatar)
    n = 3
    motion = np.zeros((n, 58), np.float32)
    motion[:, SPEC["jawOpen"]] = np.linspace(0, 0.8, n)  # each frame's mouth another
    idx = np.arange(n) % len(av.base)
    r = AvatarRenderer(av, seed=0, move_start=True, start=400, carry=0.5)
    ref, dst, drive = av.bank["latent"][[0, 1, 2]].float(), r.mouth.points(motion), torch.from_numpy(motion)
    geometry, context = av.maps(motion), r.views(idx).context
    z = r._sample(ref, drive, geometry, context, dst)
    # Frame 2, drawn on its own from the start the carry makes: half the bank's, half frame 1 moved to its mouth.
    start = 0.5 * r.mouth.warp_latent(z[1:2], dst[1:2], dst[2:3]) + 0.5 * ref[2:3]
    alone = av.engine.sample(start, drive[2:3], r.noise, r.timesteps, geometry=geometry[2:3], context=context[2:3])
    assert torch.allclose(alone, z[2:3], atol=1e-5)
    plain = AvatarRenderer(av, seed=0, move_start=True, start=400)._sample(ref, drive, geometry, context, dst)
    assert torch.allclose(plain[:1], z[:1], atol=1e-5) and (plain[1:] - z[1:]).abs().mean() > 1e-3
    with pytest.raises(InputError, match="carry"):
        AvatarRenderer(av, carry=0.5)  # the start is not moved: nothing to carry it to


def test_the_filmed_mouth_is_the_bank_frames_real_crop_moved_to_the_drawn_mouth(tiny_avatar):
    from talkhead.errors import InputError

    av = load_avatar(tiny_avatar)
    motion, idx, drive = _opening(av, 4)
    r = AvatarRenderer(av, seed=0, mouth="filmed", colour="off")
    crops = r.crops(motion, idx).astype(np.float32)
    chosen = AvatarRenderer(av, seed=0).bank.choose(mouth_keys(av.crop_points, drive, av.side))
    real = r._bank_real(chosen)
    want = r.mouth.warp(real, r._bank_points[torch.from_numpy(chosen)], r.mouth.points(drive)).numpy()
    assert np.abs(crops - np.clip(np.round(want), 0, 255)).max() <= 1.0
    carried = AvatarRenderer(av, seed=0, mouth="filmed", colour="off", carry=0.5).crops(motion, idx).astype(np.float32)
    assert np.abs(carried[0] - crops[0]).max() <= 1.0 and np.abs(carried[1:] - crops[1:]).mean() > 0.1
    with pytest.raises(InputError, match="filmed"):
        AvatarRenderer(av, mouth="painted")


def test_the_blended_filmed_mouth_is_the_nearest_bank_mouths_moved_and_weighted(tiny_avatar):
    from talkhead.avatar.mouths import blend_weights
    from talkhead.errors import InputError

    av = load_avatar(tiny_avatar)
    motion, idx, drive = _opening(av, 4)
    r = AvatarRenderer(av, seed=0, mouth="filmed", colour="off", blend=3)
    crops = r.crops(motion, idx).astype(np.float32)
    near, w = blend_weights(mouth_keys(av.crop_points, drive, av.side), r.bank.keys, 3)
    dst = r.mouth.points(drive)
    want = sum(wk[:, None, None, None] * r.mouth.warp(r._bank_real(i), r._bank_points[torch.from_numpy(i)], dst).numpy()
               for i, wk in zip(near.T, w.T))
    assert np.abs(crops - np.clip(np.round(want), 0, 255)).max() <= 1.0
    assert np.abs(crops - AvatarRenderer(av, seed=0, mouth="filmed", colour="off").crops(motion, idx)).mean() > 0.1
    for mouth, bad in (("filmed", 0), ("lips", 2.5), ("engine", 3)):  # the engine's mouth has nothing to blend
        with pytest.raises(InputError, match="blends"):
            AvatarRenderer(av, mouth=mouth, blend=bad)


def test_the_filmed_lips_are_the_filmed_mouth_on_the_lips_and_the_engines_away_from_them(tiny_avatar):
    av = load_avatar(tiny_avatar)
    motion, idx, drive = _opening(av, 3)
    engine = AvatarRenderer(av, seed=0).crops(motion, idx).astype(np.float32)
    filmed = AvatarRenderer(av, seed=0, mouth="filmed").crops(motion, idx).astype(np.float32)
    r = AvatarRenderer(av, seed=0, mouth="lips")
    lips = r.crops(motion, idx).astype(np.float32)
    w = lips_mask(r.mouth.points(drive).numpy(), av.side)
    assert (w > 0.99).sum() > 20 and (w < 0.01).mean() > 0.5  # the lips, and most of the crop not
    assert np.abs(lips - filmed)[w > 0.99].max() <= 1.0 and np.abs(lips - engine)[w < 0.01].max() <= 1.0


def test_the_blended_detail_follows_the_mouth_not_the_bank_frame_and_a_bad_blend_is_refused(tiny_avatar):
    # The detail of the 4 bank mouths nearest the drawn one: where the bank's chosen frame flips every frame and the
    # mouth asked stays, it stays too (memory 0: nothing averaged); the chosen frame's alone flips with it.
    from talkhead.errors import InputError

    av = load_avatar(tiny_avatar)
    n, far = 6, len(av.bank["latent"]) - 1
    chosen = np.array([0, far] * (n // 2))
    motion = np.zeros((n, 58), np.float32)
    motion[:, SPEC["jawOpen"]] = 0.4

    def change(blend: int) -> float:
        r = AvatarRenderer(av, seed=0, detail=0.0, detail_gain=1.0, detail_blend=blend)
        out = r._add_detail(np.zeros((n, av.side, av.side, 3), np.float32), chosen, r.keys(motion))
        return float(np.abs(out[1:] - out[:-1]).mean())

    assert change(4) < 1e-6 < 0.5 < change(1)
    with pytest.raises(InputError, match="detail blends"):
        AvatarRenderer(av, detail_blend=0)


def test_each_bank_detail_is_decoded_once_while_it_is_among_the_latest(tiny_avatar):
    # The blended detail reads 4 bank details a frame; consecutive frames share most of them, and each read was a
    # JPEG decode. Counted on the avatar itself: a second draw of the same mouths decodes nothing.
    av = load_avatar(tiny_avatar)
    decode, calls = av.detail, []
    av.detail = lambda i: calls.append(i) or decode(i)
    motion = np.zeros((12, 58), np.float32)
    motion[:, SPEC["jawOpen"]] = np.linspace(0, 0.8, 12)
    r = AvatarRenderer(av, seed=0)
    idx = np.arange(12) % len(av.base)
    r.crops(motion, idx)
    assert calls and len(calls) == len(set(calls)) == len(r._details)
    assert all(np.array_equal(d, decode(i)) for i, d in r._details.items())
    calls.clear()
    r.crops(motion, idx)
    assert calls == []


def test_the_detail_fades_where_the_drawn_mouth_is_far_from_every_bank_mouth(tiny_avatar):
    # A bank mouth's own key keeps all its detail at any reach; a key far from every bank key gets none. Drawn, a
    # reach far beyond the bank draws as without one, and a reach near 0 as without the detail.
    from talkhead.errors import InputError

    av = load_avatar(tiny_avatar)
    r = AvatarRenderer(av, detail_reach=0.5)
    keys = r.bank.keys[:6]
    assert np.array_equal(r._detail_fade(keys), np.ones(6))
    assert np.array_equal(r._detail_fade(keys + 1e3), np.zeros(6))
    motion = np.asarray(av.bank["motion"][:6], np.float32).copy()
    motion[:, SPEC["jawOpen"]] = 1.0
    idx = np.arange(6) % len(av.base)

    def drawn(**detail) -> np.ndarray:
        return AvatarRenderer(av, seed=0, **detail).crops(motion, idx).astype(np.float32)

    assert np.array_equal(drawn(detail_reach=1e6), drawn())
    assert np.array_equal(drawn(detail_reach=1e-6), drawn(detail=None))
    assert np.abs(drawn() - drawn(detail=None)).mean() > 0.5
    with pytest.raises(InputError, match="reach"):
        AvatarRenderer(av, detail_reach=0.0)
