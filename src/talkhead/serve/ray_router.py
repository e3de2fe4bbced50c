"""``serve --ray``'s placement: a Ray Serve request router that sends each new session to the replica with fewest.

Why our own: a WebSocket session is one long request, and Serve's default router (power of two choices)
places a burst badly. It routes concurrent requests concurrently, each against the replicas' queue lengths
as it last saw them, so sessions that arrive together all see the same idle replica: with 2 replicas of 4
sessions, 4 sessions opened at once landed [4, 0] or [3, 1] where [2, 2] was possible.

This router runs in Serve's proxy, which sees every session, and counts them itself: a session counts on its
replica from the moment the replica accepts it (``on_request_routed``) until its request ends. A request that
is being routed holds a short reservation on the replica it was ranked first for, so the next request of a
burst, ranked before the first one has landed, already sees it. A reservation goes when its request lands
(wherever it lands) or after ``HOLD_S`` if it never does (a client that gave up must not leave a count behind).
Of replicas with equal counts, the one ranked first longest ago goes first, so a burst alternates even while
one count is a moment behind (a session that has just ended).

Ranking only orders the replicas: Serve's base class still asks each in turn whether it has room, and skips
a full one, so no replica is sent a session it would refuse.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING

from ray.serve.request_router import PendingRequest, ReplicaID, RequestRouter, RunningReplica

if TYPE_CHECKING:
    from ray.serve._private.replica_result import ReplicaResult

HOLD_S = 5.0  # a replica accepts a session in well under a second; a request not landed by then is gone


class SessionRouter(RequestRouter):
    """Fewest sessions first: this proxy's own count of each replica's sessions, plus reservations."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._sessions: dict[ReplicaID, set[int]] = {}  # the sessions this proxy sent that are still open
        # Reservations by the pending request that made them (id(): Serve keeps one PendingRequest per request,
        # retries included, and it is not hashable); value: (replica, expiry on time.monotonic()).
        self._holds: dict[int, tuple[ReplicaID, float]] = {}
        self._tokens = itertools.count()
        self._picked: dict[ReplicaID, int] = {}  # when each replica was last ranked first (a token), for ties

    def _load(self, replica: RunningReplica, held: Counter) -> int:
        """Sessions on the replica as far as this proxy knows; the replica's own last report where that is more
        (sessions sent by other proxies, HTTP requests, or a count this router started after)."""
        rid = replica.replica_id
        own = len(self._sessions.get(rid, ())) + held[rid]
        return max(own, self.replica_queue_len_cache.get(rid) or 0)

    async def choose_replicas(self, candidate_replicas: list[RunningReplica],
                              pending_request: PendingRequest | None = None) -> list[list[RunningReplica]]:
        """Every candidate, one per rank, fewest sessions first; of equals, the one ranked first longest ago (then by
        id), so a burst alternates even while a count is a moment out of date (a session just ended)."""
        now = time.monotonic()
        self._holds = {k: h for k, h in self._holds.items() if h[1] > now}
        if pending_request is not None:  # a retry (its replica was full): its earlier reservation no longer holds
            self._holds.pop(id(pending_request), None)
        held = Counter(rid for rid, _ in self._holds.values())
        loads = {r.replica_id: self._load(r, held) for r in candidate_replicas}
        ranked = sorted(candidate_replicas, key=lambda r: (loads[r.replica_id] >= r.max_ongoing_requests,
                                                           loads[r.replica_id], self._picked.get(r.replica_id, -1),
                                                           r.replica_id.unique_id))
        # Ranked first, and probably where it lands: the next request of the burst sees it there already. (Serve
        # 2.60 always passes the request; without one there is nothing a landing could release, so no reservation.)
        if ranked and pending_request is not None:
            self._holds[id(pending_request)] = (ranked[0].replica_id, now + HOLD_S)
            self._picked[ranked[0].replica_id] = next(self._tokens)
        return [[r] for r in ranked]

    def on_request_routed(self, pending_request: PendingRequest, replica_id: ReplicaID,
                          result: ReplicaResult) -> None:
        """The replica accepted it: its reservation becomes a session, counted until the request ends."""
        self._holds.pop(id(pending_request), None)
        token = next(self._tokens)
        self._sessions.setdefault(replica_id, set()).add(token)
        loop = asyncio.get_running_loop()  # Serve calls this on the router's loop; the result ends on another thread
        result.add_done_callback(lambda _: loop.call_soon_threadsafe(self._ended, replica_id, token))

    def _ended(self, replica_id: ReplicaID, token: int) -> None:
        self._sessions.get(replica_id, set()).discard(token)  # a replica already forgotten stays forgotten

    def update_replicas(self, replicas: list[RunningReplica]) -> None:
        super().update_replicas(replicas)
        self._forget(lambda rid: rid not in self.curr_replicas)

    def on_replica_actor_died(self, replica_id: ReplicaID) -> None:
        super().on_replica_actor_died(replica_id)
        self._forget(lambda rid: rid == replica_id)

    def _forget(self, gone: Callable[[ReplicaID], bool]) -> None:
        """Drop the counts of replicas that are gone: a replacement has a new id and starts at 0."""
        self._sessions = {rid: s for rid, s in self._sessions.items() if not gone(rid)}
        self._holds = {k: h for k, h in self._holds.items() if not gone(h[0])}
        self._picked = {rid: t for rid, t in self._picked.items() if not gone(rid)}

    def session_counts(self) -> dict[str, int]:
        """Open sessions per replica id, as this router counts them (for logs and tests)."""
        return {rid.unique_id: len(s) for rid, s in self._sessions.items()}
