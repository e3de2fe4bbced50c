"""``avatar.mouths``: a person's mouths found by their lips' points, played forward while that stays close."""

from __future__ import annotations

import numpy as np
import pytest

from talkhead.avatar.mouths import (
    AS_POINTS,
    MouthBank,
    beyond,
    blend_weights,
    distances,
    lip_points,
    mouth_keys,
    neighbours,
    novelty,
)
from talkhead.rig.spec import SPEC


@pytest.fixture(scope="module")
def keys(talking_video):
    """Lip keys of the true motion of real TTS speech, on the built-in photo's own landmarks."""
    from talkhead.face.detect import default_photo, detect_face

    points = detect_face(default_photo()).landmarks
    return mouth_keys(points, talking_video[1], 512), talking_video[1], points


def test_keys_are_the_lips_so_an_open_jaw_is_far_from_a_closed_one(keys):
    _, motion, points = keys
    m = np.zeros((3, 58), np.float32)
    m[1, SPEC["jawOpen"]], m[2, SPEC["jawOpen"]] = 0.1, 0.8
    k = mouth_keys(points, m, 512)
    assert k.shape == (3, 45)
    d = distances(k, k)
    assert 0 < d[0, 1] < d[0, 2] and np.allclose(np.diag(d), 0, atol=1e-6)
    head = m.copy()
    head[:, SPEC["tx"]], head[:, SPEC["roll"]] = 0.3, 0.2  # the crop's alignment removed these: no effect
    assert np.allclose(mouth_keys(points, head, 512), k, atol=1e-4)


def test_keys_find_the_opening_asked_for_where_the_whole_mouth_sits_elsewhere(keys):
    """A head pitched or turned otherwise (or another take's fit) moves the whole mouth in the crop. The keys count
    the lips' shape about their centre, the inner lips' opening twice more and the centre twice, so the bank frame
    found opens as the one asked for; the points as they are (``AS_POINTS``, the same distances) count the centre
    20 times and find mouths at the same place instead, opened otherwise."""
    _, motion, points = keys
    lips = lip_points(points, motion, 512)
    opening = lips[:, [19, 18, 17], 1].mean(1) - lips[:, [13, 14, 15], 1].mean(1)
    as_points = lips.reshape(len(motion), 40)
    assert np.allclose(distances(*[mouth_keys(points, motion, 512, **AS_POINTS)] * 2), distances(as_points, as_points),
                       rtol=1e-4, atol=1e-2)
    for turn in ("pitch", "yaw"):
        q = motion.copy()
        q[:, SPEC[turn]] += np.radians(10.0)
        r = {}
        for name, weights in (("keys", {}), ("points", AS_POINTS)):
            found = MouthBank(mouth_keys(points, motion, 512, **weights), jump=0.0).choose(
                mouth_keys(points, q, 512, **weights))
            r[name] = np.corrcoef(opening[found], opening)[0, 1]
        assert r["keys"] > 0.95 and r["points"] < r["keys"] - 0.05, (turn, r)


def test_neighbours_are_near_and_never_the_frame_or_its_neighbours(keys):
    k = keys[0]
    table = neighbours(k, 4, 10)
    idx = np.arange(len(k))
    assert table.shape == (len(k), 4)
    assert (np.abs(table - idx[:, None]) >= 10).all()
    d = distances(k, k)
    assert np.take_along_axis(d, table, 1).mean() < 0.25 * d[np.abs(idx[:, None] - idx[None]) >= 10].mean()
    clip_of = (idx >= len(k) // 2).astype(int)  # two clips: the same frame numbers in the other clip are allowed
    two = neighbours(k, 4, 10, clip_of)
    same = clip_of[two] == clip_of[:, None]
    assert (np.abs(two - idx[:, None])[same] >= 10).all()


def test_bank_finds_a_mouth_and_plays_on_while_close(keys):
    k = keys[0]
    a = 37
    b = a + 2 + int(np.flatnonzero(distances(k[a + 1:a + 2], k[a + 2:])[0] > 1.0)[0])  # a mouth unlike a + 1's
    assert MouthBank(k).choose(k[[a]]).tolist() == [a]
    assert MouthBank(k, jump=1e9).choose(k[[a, b]]).tolist() == [a, a + 1]  # played on as it was filmed
    assert MouthBank(k, jump=0.0).choose(k[[a, b]]).tolist() == [a, b]
    ends = np.zeros(len(k), bool)
    ends[a] = True  # a stretch ends at a: the next frame is another stretch, never continued into
    assert MouthBank(k, ends, jump=1e9).choose(k[[a, b]]).tolist() == [a, b]
    assert MouthBank(k, jump=2.0).choose(k).tolist() == list(range(len(k)))  # the bank's own lips replay it
    noisy = k + np.random.default_rng(0).normal(0, 0.5, k.shape).astype(np.float32)
    once, parts = MouthBank(k, jump=2.0), MouthBank(k, jump=2.0)  # choosing in pieces is choosing at once
    assert np.array_equal(once.choose(noisy), np.concatenate([parts.choose(noisy[:50]), parts.choose(noisy[50:])]))


def test_the_lip_keys_find_a_bank_frame_whose_head_turns_alike(keys):
    """The keys are the lips' points as the camera sees them, the head's pitch and yaw included: in a bank of the
    video's mouths each turned its own way (yaw -10 to 10 degrees), frame 40's mouth turned 7 degrees finds a frame
    turned within half a degree of it, without any pose term (one was tried: docs/avatar.md). Roll, which the
    crop undoes, does not count."""
    _, motion, points = keys
    yaw = SPEC["yaw"]
    bank = motion.copy()
    bank[:, yaw] = np.radians(np.random.default_rng(0).uniform(-10, 10, len(bank)))
    q = motion[[40]].copy()
    q[:, yaw], q[:, SPEC["roll"]] = np.radians(7.0), np.radians(20.0)
    found = MouthBank(mouth_keys(points, bank, 512), jump=0.0).choose(mouth_keys(points, q, 512))[0]
    assert abs(np.degrees(bank[found, yaw]) - 7.0) < 0.5
    assert abs(np.degrees(bank[40, yaw]) - 7.0) > 0.5  # not merely frame 40 turned by chance


def _path_cost(d: np.ndarray, path: np.ndarray, jump: float, ends: np.ndarray) -> float:
    """What ``MouthBank.path`` minimises: the distances taken plus ``jump`` for each frame not played on."""
    on = (path[1:] == path[:-1] + 1) & ~ends[path[:-1]]
    return float(d[np.arange(len(path)), path].sum() + jump * (1 + (~on).sum()))


def test_the_path_costs_least_and_plays_on_rather_than_jumping_for_a_small_gain(keys):
    k = keys[0]
    rng = np.random.default_rng(0)
    query = k[40:70] + rng.normal(0, 0.6, (30, k.shape[1])).astype(np.float32)  # a filmed stretch, seen noisily
    d = distances(query, k)
    ends = np.zeros(len(k), bool)
    ends[-1] = True
    for jump in (0.0, 5.0, 50.0):
        path = MouthBank(k, jump=jump).path(query)
        greedy = MouthBank(k, jump=jump).choose(query)
        assert _path_cost(d, path, jump, ends) <= _path_cost(d, greedy, jump, ends) + 1e-6
        for _ in range(200):  # no path one frame away costs less
            other = path.copy()
            other[rng.integers(len(path))] = rng.integers(len(k))
            assert _path_cost(d, path, jump, ends) <= _path_cost(d, other, jump, ends) + 1e-6
    assert MouthBank(k, jump=0.0).path(query).tolist() == d.argmin(1).tolist()  # jumps free: each nearest
    assert MouthBank(k, jump=1e6).path(query).tolist() == list(range(40, 70))  # the stretch it was, played whole
    bank = MouthBank(k, jump=1e6)
    first = bank.path(query[:10])
    assert bank.path(query[10:])[0] == first[-1] + 1  # a batch plays on from the last one's last frame


def test_the_blend_is_the_nearest_mouths_weighted_and_changes_continuously_where_the_nearest_jumps(keys):
    k = keys[0]
    idx, w = blend_weights(k[:5], k, 4)
    assert idx.shape == w.shape == (5, 4) and np.allclose(w.sum(1), 1.0)
    assert idx[:, 0].tolist() == list(range(5)) and (np.diff(w, axis=1) <= 1e-12).all()  # its own frame first
    d = distances(k[:5], k)
    assert (np.take_along_axis(d, idx, 1).max(1) <= np.sort(d, 1)[:, 3] + 1e-9).all()  # the 4 nearest
    # A path from one mouth to a distant one: the weights of every bank frame, step by step.
    a, b = 37, int(distances(k[[37]], k)[0].argmax())
    path = np.linspace(k[a], k[b], 300)

    def share(i: np.ndarray, wt: np.ndarray) -> np.ndarray:
        out = np.zeros((len(path), len(k)))
        np.put_along_axis(out, i, wt, 1)
        return out

    nearest = share(*blend_weights(path, k, 1))
    blended = share(*blend_weights(path, k, 4))
    step = lambda s: np.abs(np.diff(s, axis=0)).sum(1)  # noqa: E731
    assert step(nearest).max() == 2.0 and step(blended).max() < 0.5  # the nearest alone swaps whole frames



def test_novelty_is_the_nearest_bank_mouth_and_a_shifted_take_is_told_apart(keys):
    k = keys[0]
    near, matched = novelty(k, k)
    assert np.allclose(near, 0.0, atol=1e-3) and np.allclose(matched, 0.0, atol=1e-3)
    shifted = k + 3.0  # the whole take's mouths 3 % of the side off in every coordinate
    near, matched = novelty(shifted, k)
    assert np.median(near) > 9.0 and np.allclose(matched, 0.0, atol=1e-3)


def test_beyond_is_the_nearest_bank_mouth_over_the_banks_spread(keys):
    k = keys[0]
    spread = np.sqrt(((k - k.mean(0)) ** 2).sum(1).mean())
    assert np.allclose(beyond(k, k), 0.0, atol=1e-3)
    far = k[:5] + 10 * spread  # every coordinate 10 spreads off: far outside every bank mouth
    assert (beyond(far, k) > 10).all()
    assert np.allclose(beyond(k[:5] * 2, k * 2), beyond(k[:5], k))  # a bank's size does not change it
