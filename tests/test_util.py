"""Shared helpers: background prefetch keeps order, passes errors on, and stops with its consumer."""

from __future__ import annotations

import threading
import time

import pytest

from talkhead.util import prefetch


def test_prefetch_yields_everything_in_order():
    assert list(prefetch(iter(range(1000)), size=4)) == list(range(1000))


def test_a_producer_error_is_raised_in_the_consumer_after_what_came_before():
    def items():
        yield 1
        yield 2
        raise ValueError("bad frame")

    got = []
    with pytest.raises(ValueError, match="bad frame"):
        for x in prefetch(items()):
            got.append(x)
    assert got == [1, 2]


def test_a_consumer_that_stops_early_stops_the_producer():
    made = []

    def items():
        for i in range(10_000):
            made.append(i)
            yield i

    for x in prefetch(items(), size=2):
        if x == 3:
            break
    time.sleep(0.3)
    n = len(made)
    time.sleep(0.3)
    assert len(made) == n < 20  # it stopped a few items ahead, not at the end
    assert not any(t.name == "prefetch" and t.is_alive() for t in threading.enumerate())
