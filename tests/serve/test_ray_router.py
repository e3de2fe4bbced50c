"""``serve.ray_router.SessionRouter`` without a cluster: Serve's own routing loop (the base class) around fake replicas.

The fakes answer a queue-length probe only after a delay, as a replica across a process boundary does, so the
requests of a burst are all being routed at once: the case where Serve's default router stacks them up."""

from __future__ import annotations

import asyncio
import itertools
from collections import Counter

import pytest

pytest.importorskip("ray")

from ray.serve._private.common import DeploymentHandleSource, DeploymentID, ReplicaID, RequestMetadata  # noqa: E402
from ray.serve.request_router import PendingRequest  # noqa: E402

from talkhead.serve import ray_router  # noqa: E402
from talkhead.serve.ray_router import SessionRouter  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:Using extra keyword arguments on `Field`")  # Ray's own pydantic use
DEPLOYMENT = DeploymentID(name="talkhead", app_name="talkhead")
_ids = itertools.count()


class FakeReplica:
    """What the router and its base class use of a replica: an id, a limit, and a probe of its sessions."""

    def __init__(self, name: str, sessions: int = 0, limit: int = 4) -> None:
        self.replica_id = ReplicaID(unique_id=name, deployment_id=DEPLOYMENT)
        self.max_ongoing_requests = limit
        self.sessions = sessions  # what the replica itself reports when probed

    async def get_queue_len(self, *, deadline_s: float) -> int:
        await asyncio.sleep(0.01)
        return self.sessions


class FakeResult:
    """A routed request's result: ends when the test says so, calling back from another thread as Ray does."""

    def __init__(self) -> None:
        self.callbacks = []

    def add_done_callback(self, cb) -> None:
        self.callbacks.append(cb)

    def end(self) -> None:
        import threading

        for cb in self.callbacks:
            t = threading.Thread(target=cb, args=(None,))
            t.start()
            t.join()


def _router(replicas: list[FakeReplica]) -> SessionRouter:
    router = SessionRouter(deployment_id=DEPLOYMENT, handle_source=DeploymentHandleSource.UNKNOWN,
                           use_replica_queue_len_cache=True)
    router.update_replicas(replicas)
    return router


def _request() -> PendingRequest:
    n = next(_ids)
    return PendingRequest(args=[], kwargs={}, metadata=RequestMetadata(request_id=f"r{n}", internal_request_id=f"i{n}"))


async def _burst(router: SessionRouter, n: int) -> list[str]:
    """``n`` requests routed at the same moment, through the base class's routing tasks: where each went."""
    prs = [_request() for _ in range(n)]
    chosen = await asyncio.gather(*(router._choose_replica_for_request(pr) for pr in prs))
    return [r.replica_id.unique_id for r in chosen]


def test_a_burst_is_spread_evenly_before_any_of_it_has_landed():
    async def go():
        router = _router([FakeReplica("b"), FakeReplica("a")])
        return await _burst(router, 4)

    placed = asyncio.run(go())
    assert sorted(Counter(placed).values()) == [2, 2], placed


def test_equal_counts_alternate_even_when_one_count_is_behind():
    async def go():
        a, b = FakeReplica("a"), FakeReplica("b")
        router = _router([a, b])
        router.on_request_routed(_request(), b.replica_id, FakeResult())  # b's session has ended; not heard yet
        return await _burst(router, 2)  # a (0 against 1), then a tie of 1 and 1: b, as a was just picked

    assert sorted(asyncio.run(go())) == ["a", "b"]


def test_sessions_are_counted_until_they_end_and_a_new_one_goes_where_one_ended():
    async def go():
        replicas = [FakeReplica("a"), FakeReplica("b")]
        router = _router(replicas)
        results = {}
        for _ in range(4):  # one after another, each landing (accepted) before the next
            pr = _request()
            replica = await router._choose_replica_for_request(pr)
            results.setdefault(replica.replica_id.unique_id, []).append(FakeResult())
            router.on_request_routed(pr, replica.replica_id, results[replica.replica_id.unique_id][-1])
        assert router.session_counts() == {"a": 2, "b": 2}
        assert not router._holds  # each reservation went when its request landed
        results["b"][0].end()
        await asyncio.sleep(0.05)  # the callback came from another thread: it is handled on the router's loop
        assert router.session_counts() == {"a": 2, "b": 1}
        return (await _burst(router, 1))[0]

    assert asyncio.run(go()) == "b"


def test_the_replicas_own_reports_count_and_a_full_one_is_not_chosen():
    async def go():  # sessions this router did not send (another proxy's, or from before it started)
        router = _router([FakeReplica("a", sessions=4), FakeReplica("b", sessions=3), FakeReplica("c", sessions=1)])
        await asyncio.sleep(0.05)  # the first probes fill the queue-length cache
        return await _burst(router, 1)

    assert asyncio.run(go()) == ["c"]


def test_a_reservation_never_routed_expires(monkeypatch):
    monkeypatch.setattr(ray_router, "HOLD_S", 0.05)

    async def go():
        router = _router([FakeReplica("a"), FakeReplica("b")])
        first = await _burst(router, 1)  # routed to a replica but never landed (the client gave up): a hold is left
        assert len(router._holds) == 1
        soon = await _burst(router, 1)  # ...so the next goes elsewhere
        await asyncio.sleep(0.1)
        later = await _burst(router, 1)  # all holds expired: back to the first replica by id
        return first, soon, later

    first, soon, later = asyncio.run(go())
    assert first == later == ["a"] and soon == ["b"]


def test_a_replica_that_dies_is_forgotten_and_its_replacement_starts_at_zero():
    async def go():
        a, b = FakeReplica("a"), FakeReplica("b")
        router = _router([a, b])
        for rid in (a.replica_id, a.replica_id, b.replica_id):
            router.on_request_routed(_request(), rid, FakeResult())
        router.on_replica_actor_died(a.replica_id)
        assert router.session_counts() == {"b": 1}
        router.update_replicas([b, FakeReplica("c")])  # Serve's replacement for a
        return await _burst(router, 1)

    assert asyncio.run(go()) == ["c"]
