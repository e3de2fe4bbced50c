"""``serve --ray``: the app as a Ray Serve deployment of 2 replicas on a one-node cluster the test starts.

Real WebSocket sessions through Serve's proxy: they spread over both replicas (two opened at the same moment
too: our router, ``serve.ray_router``), an avatar uploaded once is drawn on either, and killing one replica's
process closes its sessions only, the others' frames go on.
Then the same cluster runs the app autoscaled from 1 to 2 replicas, with its avatars in Ray's object store."""

from __future__ import annotations

import asyncio
import io
import json
import os
import socket
import time
import urllib.request

import numpy as np
import pytest
import websockets

from talkhead.cli import main

ray = pytest.importorskip("ray")  # CI installs it (the test extra): there this module runs
pytestmark = [pytest.mark.filterwarnings("ignore:Using extra keyword arguments on `Field`"),  # Ray's own pydantic use
              pytest.mark.filterwarnings("ignore:The `metrics_interval_s` field")]  # ray_serve.deployment_options


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def deployed(tmp_path_factory):
    """2 replicas of 2 sessions each, 64 px frames, a store in a temporary folder: ("127.0.0.1:PORT", store)."""
    from ray import serve

    from talkhead.scale.ray import RayServeConfig
    from talkhead.serve.app import ServeConfig
    from talkhead.serve.ray_serve import deploy

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    store, port = tmp_path_factory.mktemp("avatars"), _free_port()
    owned = deploy(RayServeConfig(replicas=2, port=port), ServeConfig(max_sessions=2, size=64, avatar_store=str(store)))
    assert not owned  # the test's own cluster: deploy used it
    yield f"127.0.0.1:{port}", store
    serve.shutdown()
    ray.shutdown()


async def _start(server: str, wait_s: float = 30.0, **start):
    # max_queue=None: a session the test is not reading still takes the close handshake at once (a client whose
    # queue is full stops reading, and its close() then waits 10 s for a close frame stuck behind video frames)
    ws = await websockets.connect(f"ws://{server}/v1/stream", max_size=1 << 22, open_timeout=wait_s, max_queue=None)
    await ws.send(json.dumps({"type": "start", **start}))
    return ws, json.loads(await asyncio.wait_for(ws.recv(), wait_s))


async def _frames(ws, seconds: float) -> tuple[int, str | None]:
    """Video frames received over ``seconds`` and, if the socket closed, how (else None)."""
    n, end = 0, time.perf_counter() + seconds
    try:
        while (left := end - time.perf_counter()) > 0:
            try:
                m = await asyncio.wait_for(ws.recv(), left)
            except asyncio.TimeoutError:
                break
            n += isinstance(m, bytes) and m[:1] == b"V"
    except websockets.ConnectionClosed as e:
        return n, f"closed ({e.rcvd.code if e.rcvd else 1006})"
    return n, None


def _upload(server: str) -> str:
    from PIL import Image

    from talkhead.face.detect import default_photo

    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(default_photo()[:, ::-1])).save(buf, format="PNG")  # a face no one has yet
    req = urllib.request.Request(f"http://{server}/v1/avatars", data=buf.getvalue(), method="POST")
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())["avatar"]


# The tests without a cluster come first: the cluster fixture stays up from its first use to the module's end.
def test_an_address_that_does_not_answer_is_exit_2_within_seconds(capsys):
    port = _free_port()  # nobody listens there
    t = time.perf_counter()
    assert main(["serve", "--ray", f"127.0.0.1:{port}", "--replicas", "2"]) == 2
    assert time.perf_counter() - t < 5
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and f"127.0.0.1:{port}: no Ray cluster answers there" in err


def test_a_port_in_use_is_refused_before_a_cluster_starts(capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        assert main(["serve", "--ray", "--port", str(port)]) == 2
    assert f"cannot listen on 127.0.0.1:{port}" in capsys.readouterr().err
    assert not ray.is_initialized()


@pytest.mark.parametrize("argv, why", [
    (["--replicas", "2"], "go with --ray"),
    (["--ray", "--replicas", "2", "--max-replicas", "3"], "not both"),
    (["--ray", "--min-replicas", "3", "--max-replicas", "2"], "0 <= min <= max"),
    (["--ray", "--avatar-store", "ray:a/b"], "a name is 1-64 letters"),
    (["--avatar-store", "ray:"], "works with serve --ray only"),  # plain serve: refused before any model loads
    (["--router", "serve"], "go with --ray"),
    (["--ray", "--router", "random"], "--router must be one of sessions, serve"),
])
def test_replica_flags_that_cannot_work_are_refused(argv, why, capsys):
    assert main(["serve", *argv]) == 2
    assert why in capsys.readouterr().err


def test_check_refuses_an_unknown_router_and_takes_both_known_ones():
    from talkhead.errors import InputError
    from talkhead.scale.ray import RayServeConfig
    from talkhead.serve.app import ServeConfig
    from talkhead.serve.ray_serve import check, configs_from_args, deployment_options

    with pytest.raises(InputError, match="--router must be one of sessions, serve, got 'fewest'"):
        check(RayServeConfig(router="fewest"), ServeConfig())
    with pytest.raises(InputError, match="--router must be one of"):
        configs_from_args({"router": "Sessions"})  # a Serve config file's args go through check() too
    ours, theirs = (deployment_options(RayServeConfig(router=r), ServeConfig()) for r in ("sessions", "serve"))
    assert ours["request_router_config"].request_router_class == "talkhead.serve.ray_router.SessionRouter"
    assert "request_router_config" not in theirs  # Serve's default router, as Serve sets it
    assert ours["name"] != theirs["name"]  # the proxy keeps a name's router across redeploys: one name per router


def _wait_until_no_sessions(timeout_s: float = 30.0) -> None:
    """Until every replica has ended its sessions, and a moment more for Serve's proxy (where our router counts
    them) to hear of it: the next sessions then see both replicas empty."""
    from talkhead.serve.ray_serve import replica_actors

    t = time.perf_counter()
    while any(ray.get([a.get_num_ongoing_requests.remote() for a in replica_actors().values()])):
        assert time.perf_counter() - t < timeout_s, "the sessions did not end"
        time.sleep(0.1)
    time.sleep(1.0)


def test_sessions_opened_at_the_same_moment_go_to_different_replicas(deployed):
    """Serve's own router ranks concurrent sessions against the same stale counts and can put both on one
    replica; ours reserves the replica it picks, so the second of a pair goes to the other. Three pairs: a
    router that picks at random splits a pair one time in two, all three one time in eight."""
    server, _ = deployed

    async def pair() -> list[str]:
        sessions = await asyncio.gather(_start(server), _start(server))  # both in flight before either lands
        for ws, _ in sessions:
            await ws.close()
        assert all(r["type"] == "ready" for _, r in sessions), sessions
        return sorted(r["replica"] for _, r in sessions)

    placed = []
    for _ in range(3):
        placed.append(asyncio.run(pair()))
        _wait_until_no_sessions()
    print(f"pairs opened at once went to {placed}")
    assert all(len(set(p)) == 2 for p in placed), placed


def test_sessions_spread_over_both_replicas_use_one_upload_and_outlive_the_other_replica(deployed):
    from talkhead.serve.ray_serve import replica_actors

    server, store = deployed
    aid = _upload(server)  # received by one replica; the other finds it in the shared store
    assert [p.name for p in store.iterdir()] == [f"{aid}.photo"]

    async def go():
        sessions = [await _start(server, avatar=aid) for _ in range(4)]  # one by one: each sees the last placed
        readies = [r for _, r in sessions]
        assert all(r["type"] == "ready" and (r["width"], r["height"]) == (64, 64) for r in readies), readies
        by_replica = {}
        for ws, r in sessions:
            by_replica.setdefault(r["replica"], []).append(ws)
        assert sorted(len(v) for v in by_replica.values()) == [2, 2] and set(by_replica) <= set(replica_actors())
        victim, survivor = sorted(by_replica)
        ray.kill(replica_actors()[victim], no_restart=True)  # its process ends, as a crash would end it
        t = time.perf_counter()
        results = await asyncio.gather(*(_frames(ws, 3.0) for ws in by_replica[victim] + by_replica[survivor]))
        dead, alive = results[:2], results[2:]
        assert all(how is not None for _, how in dead), dead  # the dead replica's sessions are closed...
        assert time.perf_counter() - t < 5.0
        assert all(how is None and n >= 40 for n, how in alive), alive  # ...the others stream on at ~25 fps
        for ws in by_replica[survivor]:
            await ws.close()

    asyncio.run(go())


def test_autoscaling_adds_a_replica_for_waiting_sessions_and_removes_it_after(deployed):
    """1..2 replicas of 2 sessions: 2 open sessions exceed the target (1.5), a third waits for the new replica."""
    from ray import serve

    from talkhead.serve.app import ServeConfig
    from talkhead.serve.avatar_store import RAY_NAMESPACE
    from talkhead.serve.ray_serve import APP, RayServeConfig, deploy, replica_actors

    server, _ = deployed
    serve.delete(APP)  # the fixed replicas go; the same cluster and proxy serve the autoscaled app
    rc = RayServeConfig(min_replicas=1, max_replicas=2, port=int(server.rsplit(":", 1)[1]), upscale_delay_s=1.0,
                        downscale_delay_s=2.0)
    deploy(rc, ServeConfig(max_sessions=2, size=64, live_model=None, avatar_store="ray:autoscale"))
    assert len(replica_actors()) == 1
    aid = _upload(server)  # the only replica puts it in Ray's store; the replica to come has never seen it

    async def go():
        full = [await _start(server, avatar=aid) for _ in range(2)]
        t, third = time.perf_counter(), asyncio.create_task(_start(server, wait_s=120, avatar=aid))
        while not third.done():  # held by the proxy until the new replica is up; the full one streams on meanwhile
            assert all(how is None for _, how in await asyncio.gather(*(_frames(w, 0.5) for w, _ in full)))
        ws, ready = third.result()
        assert ready["type"] == "ready" and ready["replica"] != full[0][1]["replica"] == full[1][1]["replica"], ready
        print(f"a waiting session started on a new replica {time.perf_counter() - t:.1f} s after the first was full")
        n, closed = await _frames(ws, 1.0)
        assert closed is None and n >= 10, (n, closed)  # served, from the avatar it found in the store
        for w in [ws] + [w for w, _ in full]:
            await w.close()

    asyncio.run(go())
    assert ray.get(ray.get_actor("autoscale", namespace=RAY_NAMESPACE).stats.remote())["avatars"] == 1
    t = time.perf_counter()
    while len(replica_actors()) > 1 and time.perf_counter() - t < 60:  # mean of 0 sessions for 2 s: back to 1
        time.sleep(0.5)
    print(f"back to one replica {time.perf_counter() - t:.1f} s after the sessions closed")
    assert len(replica_actors()) == 1
