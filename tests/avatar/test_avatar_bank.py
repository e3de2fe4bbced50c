"""What an avatar file keeps of its video: whole seconds of the mouth bank within a budget (the trained
avatar's case is in tests/train/test_avatar_train.py)."""

from __future__ import annotations

import numpy as np
import pytest

from talkhead.avatar.bank import keep_seconds
from talkhead.errors import InputError


def test_a_bank_that_fits_is_kept_whole():
    nbytes = np.full(100, 1000)
    assert np.array_equal(keep_seconds(nbytes, np.zeros(100, bool), 100_000), np.arange(100))


def test_seconds_never_cross_a_stretchs_end_and_come_from_every_stretch():
    ends = np.zeros(160, bool)
    ends[[59, 159]] = True  # two stretches: 60 and 100 frames
    nbytes = np.full(160, 1000)
    keep = keep_seconds(nbytes, ends, 80_000)
    assert nbytes[keep].sum() <= 80_000 and len(keep) >= 60
    runs = np.split(keep, np.flatnonzero(np.diff(keep) != 1) + 1)
    assert all(not (r[0] <= 59 < r[-1]) for r in runs)  # none runs over the first stretch's end
    assert any(r[0] < 60 for r in runs) and any(r[0] >= 60 for r in runs)
    starts = {int(r[0]) for r in runs}
    assert starts <= {0, 25, 50, 60, 85, 110, 135}  # each second starts where a stretch's seconds start


def test_a_budget_under_one_second_is_a_named_error():
    with pytest.raises(InputError, match="--bank-mb"):
        keep_seconds(np.full(100, 1000), np.zeros(100, bool), 10_000)
