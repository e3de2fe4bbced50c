"""Every parser of outside input, fed by Hypothesis: a named error (InputError, a 4xx, an ``error`` event) or a
valid result, never another exception, a 500 or a dead server. Motion CSV/npy, jobs JSONL, latents files,
avatar files, WebSocket messages, WebRTC offers."""

from __future__ import annotations

import asyncio
import io
import json
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from talkhead.errors import InputError
from talkhead.rig.spec import SPEC

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SLOW = settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                    max_leaves=12)


def _file(suffix: str, data: bytes) -> Path:
    path = Path(tempfile.mkdtemp()) / f"input{suffix}"
    path.write_bytes(data)
    return path


def _cell() -> st.SearchStrategy[str]:
    return st.one_of(st.floats(allow_nan=True, allow_infinity=True).map(str), st.text(max_size=6),
                     st.integers(-10**30, 10**30).map(str))


@FAST
@given(names=st.lists(st.sampled_from([*SPEC.names, "Timecode", "BlendShapeCount", "HeadYaw", ""]), max_size=64),
       rows=st.lists(st.lists(_cell(), max_size=70), max_size=6), noise=st.binary(max_size=40))
def test_motion_csv_is_motion_or_a_named_error(names, rows, noise):
    from talkhead.rig.io import load_motion

    text = "\n".join(",".join(r) for r in [names, *rows]).encode() + noise
    try:
        m = load_motion(_file(".csv", text))
    except InputError:
        return
    assert m.ndim == 2 and m.shape[1] == SPEC.dim and m.dtype == np.float32 and np.isfinite(m).all()


@FAST
@given(shape=st.lists(st.integers(0, 70), min_size=0, max_size=3),
       dtype=st.sampled_from(["f4", "f8", "f2", "i2", "u1", "c8", "U3", "b1"]),
       fill=st.sampled_from([0.0, 1.0, float("nan"), float("inf"), -1e30]), cut=st.integers(0, 200))
def test_motion_npy_is_motion_or_a_named_error(shape, dtype, fill, cut):
    from talkhead.rig.io import load_motion

    buf = io.BytesIO()
    try:
        arr = np.full(shape, fill).astype(dtype)
    except (ValueError, OverflowError):
        arr = np.zeros(shape, dtype)
    np.save(buf, arr)
    data = buf.getvalue()
    data = data[:len(data) - cut] if cut < 100 else data  # some files cut short
    try:
        m = load_motion(_file(".npy", data))
    except InputError:
        return
    assert m.shape[1] == SPEC.dim and np.isfinite(m).all()


JOB_KEYS = ["out", "text", "audio", "image", "voice", "model", "steps", "seed", "size", "renderer", "transcript"]


@FAST
@given(lines=st.lists(st.one_of(st.dictionaries(st.sampled_from(JOB_KEYS), JSON, max_size=6).map(json.dumps),
                                JSON.map(json.dumps), st.text(max_size=40),
                                st.binary(max_size=30).map(lambda b: b.decode("latin-1"))), max_size=8))
def test_jobs_lines_are_jobs_or_refused_with_a_reason(lines):
    from talkhead.scale.batch import Job, Refused, read_jobs

    path = _file(".jsonl", "\n".join(lines).encode("utf-8", "surrogatepass"))
    for item in read_jobs(path, path.parent / "out"):
        assert isinstance(item, (Job, Refused))
        if isinstance(item, Refused):
            assert item.error and "\n" not in item.error


@FAST
@given(latents=st.tuples(st.integers(0, 3), st.integers(0, 5), st.integers(0, 9), st.integers(0, 9)),
       ndim=st.integers(0, 5), fill=st.sampled_from([0.0, float("nan")]), drop=st.sampled_from([None, "audio", "box"]),
       background=st.tuples(st.integers(1, 20), st.integers(1, 20), st.integers(1, 4)))
def test_latents_files_are_videos_or_a_named_error(latents, ndim, fill, drop, background):
    from talkhead.latent.renderer import LatentVideo

    arrays = {"latents": np.full(latents[:ndim], fill, np.float16), "engine": np.array("latent-student-4"),
              "background": np.zeros(background, np.uint8), "box": np.array([0.0, 0.0, 8.0, 8.0]),
              "audio": np.zeros(320, np.int16), "fps": np.array(25)}
    arrays.pop(drop, None)
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    try:
        video = LatentVideo.load(_file(".npz", buf.getvalue()))
    except InputError:
        return
    assert video.latents.ndim == 4 and np.isfinite(video.latents).all() and video.background.shape[2] == 3


@pytest.fixture(scope="module")
def avatar_parts(tiny_avatar):
    from safetensors import safe_open

    with safe_open(str(tiny_avatar), framework="pt") as f:
        return {k: f.get_tensor(k) for k in f.keys()}, {k: json.loads(v) for k, v in f.metadata().items()}


@SLOW
@given(edits=st.lists(st.tuples(st.sampled_from(["side", "version", "engine", "base", "bank", "kind", "format"]),
                                st.lists(st.text(max_size=10), max_size=2), JSON), min_size=1, max_size=3))
def test_avatar_files_with_any_metadata_load_or_are_refused_by_name(avatar_parts, edits):
    from safetensors.torch import save_file

    from talkhead.avatar.file import load_avatar

    tensors, meta = avatar_parts
    meta = json.loads(json.dumps(meta))
    for key, path, value in edits:  # replace a value somewhere under meta[key]
        node = meta
        for step in [key, *path[:-1]]:
            node = node.setdefault(step, {}) if isinstance(node, dict) else {}
        if isinstance(node, dict):
            node[path[-1] if path else key] = value
    out = Path(tempfile.mkdtemp()) / "edited.avatar"
    save_file(tensors, str(out), {k: json.dumps(v) for k, v in meta.items()})
    try:
        load_avatar(out)
    except InputError as e:
        assert "\n" not in str(e)


@SLOW
@given(messages=st.lists(st.one_of(
    st.fixed_dictionaries({"type": st.sampled_from(["start", "say", "interrupt", "avatar", "audio_end", "end", "x"])},
                          optional={"text": JSON, "avatar": JSON, "voice": JSON, "model": JSON, "seed": JSON}).map(json.dumps),
    JSON.map(json.dumps), st.text(max_size=30), st.binary(max_size=64)), max_size=25))
def test_websocket_messages_get_answers_and_the_server_keeps_serving(server, messages):
    import websockets

    async def go():
        async with websockets.connect(f"ws://{server}/v1/stream", max_size=1 << 22) as ws:
            await ws.send(json.dumps({"type": "start"}))
            for m in messages:
                if '"end"' in str(m):
                    continue  # the one message that closes a session on purpose
                await ws.send(m)
            await ws.send(json.dumps({"type": "interrupt"}))  # audio sent above would hold up the say: dropped
            await ws.send(json.dumps({"type": "say", "text": "Still here."}))
            while True:  # the session still speaks after all of them
                m = await asyncio.wait_for(ws.recv(), 20)
                if isinstance(m, str) and json.loads(m)["type"] == "speaking":
                    return

    asyncio.run(go())


@FAST
@given(body=st.one_of(JSON, st.fixed_dictionaries({"type": st.just("offer"), "sdp": st.lists(st.one_of(
    st.sampled_from(["v=0", "m=video 9 UDP/TLS/RTP/SAVPF 96", "a=recvonly", "a=mid:0", "a=setup:actpass",
                     "a=fingerprint:sha-256 00", "a=ice-ufrag:x", "a=ice-pwd:y", "c=IN IP4 0.0.0.0", "m=audio 9 x"]),
    st.text(max_size=30)), max_size=12).map(lambda ls: "\r\n".join(["v=0", *ls]) + "\r\n")},
    optional={"avatar": JSON, "model": JSON})))
def test_webrtc_offers_are_answered_or_refused_never_a_500(server, body):
    req = urllib.request.Request(f"http://{server}/v1/webrtc", data=json.dumps(body).encode(), method="POST")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            status = r.status
            answer = json.loads(r.read())
    except urllib.error.HTTPError as e:
        status, answer = e.code, json.loads(e.read())
    assert status in (200, 400, 503), (status, answer)
    assert status == 200 or "\n" not in answer["error"]
