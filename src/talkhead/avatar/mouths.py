"""A person's own mouths, found by motion: what an avatar's engine starts each frame from.

An avatar keeps every training frame's latent with its fitted motion (a *bank*). For a driving motion
the bank frame whose mouth is nearest (``mouth_keys``: the shape and opening of the lips of the avatar's rig
moved by each motion) is the frame's reference: the engine is sampled as a bridge from that real mouth noised, so it
only has to correct a mouth that is already the person's, close in shape, with their teeth and lips, rather than
draw one from a single neutral reference. On cap12 -> cap13 this alone took the avatar's lip gap r from
0.60 to 0.93 (docs/avatar.md).

Choosing per frame jumps between distant training frames, which flickers; ``MouthBank.choose`` keeps
playing the bank forward (frame j then j + 1, as it was filmed) while that costs at most ``jump`` more
than the nearest, so stretches of real movement are replayed whole. It is causal (one frame at a time,
its state carried), so live streaming and offline generation choose alike.

Training sees the same thing: each frame's reference is one of its ``k`` nearest bank frames at least
``exclude`` frames away in time (``neighbours``; nearest by the lips' points as they are, ``AS_POINTS``), never
the frame itself or its neighbours, which would teach copying.
"""

from __future__ import annotations

import numpy as np

from talkhead.rig.spec import SPEC

# The channels the engine redraws from the driving motion: jaw, mouth, cheeks, tongue.
MOUTH = [i for i, n in enumerate(SPEC.names) if n.startswith(("jaw", "mouth", "cheek", "tongue"))]


# How a mouth is found (``mouth_keys``): the lips' shape about their own centre, the inner lips' opening counted
# ``KEY_GAP`` times more, and where the mouth sits in the crop ``KEY_PLACE`` times its centre. The lips' points as they
# are (``AS_POINTS``: the same distances as the points themselves, until 2026-12-07) let a whole mouth's place outweigh
# its opening: another take's fit or a head's pitch moves every point alike, and the bank frame found then opens
# unlike the frame asked for (the found frame's filmed lip gap against the held-out frames' own, by dlib: r 0.36 /
# 0.35 / 0.80 / 0.42 on feifei / reagan / noem / Pexels; 0.91 / 0.75 / 0.94 on the lecturer / EDTalk / cap12).
# Chosen by re-enacting the tuned three (docs/avatar.md, "The bank found by the lips' shape and opening"): the
# engine's lip r 0.703 / 0.548 / 0.934 -> 0.783 / 0.630 / 0.966, PSNR within 0.2 dB; centred alone (no place) lost
# up to 0.7 dB. On the four held out: feifei 0.47 -> 0.80, noem 0.40 -> 0.50, Pexels 0.13 -> 0.15, reagan 0.61 -> 0.42.
KEY_GAP = 2.0
KEY_PLACE = 2.0
AS_POINTS = {"gap": 0.0, "place": 20 ** 0.5}  # 20 points: their squared distances are the shape's + 20 x the centre's
INNER = ([67, 66, 65], [61, 62, 63])  # the inner lips' lower and upper points, facing pairs


def lip_points(crop_points: np.ndarray, motion: np.ndarray, side: int) -> np.ndarray:
    """The lips' 20 points [T, 20, 2] (rig points 48-67) of the avatar's rig, fitted to its first face's points in the
    crop (``crop_points`` [68, 2]), moved by motion [T, 58], in percent of the crop's side."""
    import torch

    from talkhead.avatar.data import maps_motion
    from talkhead.face.template import fit_rig, project

    m = torch.from_numpy(maps_motion(motion).astype(np.float32))
    return project(fit_rig(crop_points), m).numpy()[:, 48:68] * (100.0 / side)


def mouth_keys(crop_points: np.ndarray, motion: np.ndarray, side: int, gap: float = KEY_GAP,
               place: float = KEY_PLACE) -> np.ndarray:
    """What a mouth is found by [T, 45]: the lips' points (``lip_points``) about their centre, the inner lips' three
    openings times ``gap``, the centre times ``place`` (``AS_POINTS``: the distances of the points as they are).

    Points, not channels: channels that move the lips alike count alike, and the lips' opening counts as much
    as it shows. On cap12 -> cap13, the nearest frame by the points has lip gap r 0.94 with the real frames,
    by the scaled mouth channels 0.87.
    """
    lips = lip_points(crop_points, motion, side)
    opening = lips[:, [i - 48 for i in INNER[0]], 1] - lips[:, [i - 48 for i in INNER[1]], 1]
    centre = lips.mean(1)
    return np.concatenate([(lips - centre[:, None]).reshape(len(lips), 40), gap * opening, place * centre], 1)


def distances(query: np.ndarray, bank: np.ndarray) -> np.ndarray:
    """Squared distance [Q, N] between keys query [Q, D] and bank [N, D]."""
    q, b = np.asarray(query, np.float64), np.asarray(bank, np.float64)
    return np.maximum((q ** 2).sum(1)[:, None] + (b ** 2).sum(1)[None] - 2 * q @ b.T, 0.0)


def novelty(keys: np.ndarray, bank: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per driving key [T, D], the distance to the nearest bank key [N, D]: as given, and with the keys' mean moved
    to the bank's (what is left where a whole take's mouths sit shifted from the bank's, as another take's fit can)."""
    moved = keys - keys.mean(0) + bank.mean(0)
    return np.sqrt(distances(keys, bank).min(1)), np.sqrt(distances(moved, bank).min(1))


def beyond(keys: np.ndarray, bank: np.ndarray) -> np.ndarray:
    """Per driving key [T, D], the distance to the nearest bank key [N, D] over the bank keys' spread (their RMS
    distance from their mean): how far outside the mouths the bank holds each one lies, whatever the bank's size."""
    spread = float(np.sqrt(((bank - bank.mean(0)) ** 2).sum(1).mean()))
    return np.sqrt(distances(keys, bank).min(1)) / max(spread, 1e-6)


def neighbours(keys: np.ndarray, k: int, exclude: int, clip_of: np.ndarray | None = None,
               at: np.ndarray | None = None) -> np.ndarray:
    """Per frame of keys [N, D], its ``k`` nearest frames [N, k] at least ``exclude`` frames away (same clip)
    or in another clip: training's references (a frame with fewer such frames also gets nearer ones). ``at``: each
    frame's number in its clip, where the frames are not all of them (a mouth bank cut to its budget)."""
    n = len(keys)
    clip_of = np.zeros(n, int) if clip_of is None else np.asarray(clip_of)
    out = np.empty((n, k), np.int64)
    idx = np.arange(n) if at is None else np.asarray(at)
    for a in range(0, n, 512):  # [512, N] at a time: a 5-minute video has 7,500 frames
        rows = np.arange(a, min(a + 512, n))
        d = distances(keys[rows], keys)
        near = (np.abs(idx[rows, None] - idx[None]) < exclude) & (clip_of[rows, None] == clip_of[None])
        d[near] = np.inf
        out[a:a + 512] = np.argsort(d, 1)[:, :k]
    return out


class MouthBank:
    """Bank keys [N, D] (in filmed order, ``ends`` marking where a stretch ends) -> the reference of each frame."""

    def __init__(self, keys: np.ndarray, ends: np.ndarray | None = None, jump: float = 1.0) -> None:
        self.keys = np.asarray(keys, np.float32)
        n = len(self.keys)
        self.ends = np.zeros(n, bool) if ends is None else np.array(ends, bool)
        self.ends[-1] = True  # the frame after a stretch's last is another stretch: no continuing there
        self.jump = jump
        self.last: int | None = None

    def choose(self, keys: np.ndarray) -> np.ndarray:
        """Bank indices [T] for driving keys [T, D], continuing from the previous call's last choice."""
        d = distances(keys, self.keys)
        out = np.empty(len(d), np.int64)
        for t, row in enumerate(d):
            best = int(row.argmin())
            nxt = None if self.last is None or self.ends[self.last] else self.last + 1
            self.last = nxt if nxt is not None and row[nxt] <= row[best] + self.jump else best
            out[t] = self.last
        return out

    def path(self, keys: np.ndarray) -> np.ndarray:
        """Bank indices [T] for driving keys [T, D] along the path of least cost: the mouths' squared distances
        summed, each frame that does not play on from the one before (j then j + 1, as filmed) costing ``jump``
        more. Where ``choose`` decides frame by frame, this sees the whole call (a batch), so it leaves a stretch
        only where a better one is worth it; the previous call's last choice is played on from at no cost."""
        d = distances(keys, self.keys)
        n = d.shape[1]
        goes_on = ~self.ends  # j + 1 follows j as filmed
        cost = d[0] + self.jump
        if self.last is not None and goes_on[self.last]:
            cost[self.last + 1] -= self.jump
        back = np.empty(d.shape, np.int32)
        for t in range(1, len(d)):
            best = int(cost.argmin())
            on = np.full(n, np.inf)
            on[1:] = np.where(goes_on[:-1], cost[:-1], np.inf)
            stay = on <= cost[best] + self.jump
            back[t] = np.where(stay, np.arange(n) - 1, best)
            cost = np.where(stay, on, cost[best] + self.jump) + d[t]
        out = np.empty(len(d), np.int64)
        out[-1] = int(cost.argmin())
        for t in range(len(d) - 1, 0, -1):
            out[t - 1] = back[t, out[t]]
        self.last = int(out[-1])
        return out


def blend_weights(keys: np.ndarray, bank: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` bank frames nearest each driving key [T, D] (indices [T, k]) and their weights [T, k], summing to
    1: each the distance to the (k + 1)-th nearest less its own. A frame's weight is 0 where it enters or leaves
    the nearest ``k``, so the blend changes continuously as the keys move, where the nearest frame alone jumps."""
    d = np.sqrt(distances(keys, bank))
    m = min(k + 1, d.shape[1])
    order = np.argpartition(d, m - 1, 1)[:, :m] if m < d.shape[1] else np.argsort(d, 1)  # only the nearest k + 1
    order = np.take_along_axis(order, np.argsort(np.take_along_axis(d, order, 1), 1), 1)
    near = np.take_along_axis(d, order, 1)
    w = near[:, k:k + 1] - near[:, :k] if order.shape[1] > k else np.ones((len(d), k))
    w[w.sum(1) <= 0] = 1.0  # k + 1 frames at one distance: all alike
    return order[:, :k], w / w.sum(1, keepdims=True)
