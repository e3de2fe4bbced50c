"""`talkhead batch`: real short TTS jobs on 2 local worker processes and on Ray; resume; bad lines fail alone."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

from talkhead.cli import main
from talkhead.errors import InputError
from talkhead.scale.batch import BatchConfig, is_finished, run_batch
from talkhead.video import probe

GOOD = [{"text": "Hello there.", "size": 64, "seed": 1, "out": "hello.mp4"},
        {"text": "Good morning.", "size": "64x96", "seed": 2, "voice": "gb-male-deep", "out": "morning.mp4"}]


def _decode(path):
    import av

    with av.open(str(path)) as c:
        return np.stack([f.to_ndarray(format="rgb24") for f in c.decode(video=0)])


def _write_jobs(path, lines):
    """One line per item: a dict or list as JSON, a str or bytes as it is."""
    as_bytes = [ln if isinstance(ln, bytes) else (ln if isinstance(ln, str) else json.dumps(ln)).encode()
                for ln in lines]
    path.write_bytes(b"".join(ln + b"\n" for ln in as_bytes))
    return path


@pytest.fixture(scope="module")
def local_run(tmp_path_factory):
    """Two good jobs, a malformed line and a photo with no face, on 2 local workers: (report, folder, paths)."""
    from PIL import Image

    d = tmp_path_factory.mktemp("batch")
    blank = d / "blank.png"
    Image.fromarray(np.full((160, 160, 3), 128, np.uint8)).save(blank)  # a grey square: no face in it
    jobs = _write_jobs(d / "jobs.jsonl", [GOOD[0], '{"text": "Half a line", "out": ', "",
                                          {"text": "Nobody here.", "image": str(blank), "size": 64, "out": "blank.mp4"},
                                          GOOD[1]])
    out = d / "videos"
    report = run_batch(jobs, out, BatchConfig(workers=2, progress=False))
    return report, out, d


def test_two_jobs_on_two_workers_make_videos_and_a_report(local_run):
    report, out, _ = local_run
    assert report["backend"] == "local" and report["workers"] == 2 and report["complete"]
    assert (report["ok"], report["failed"], report["skipped"]) == (2, 2, 0)
    assert json.loads((out / "report.json").read_text()) == report
    rows = {r["line"]: r for r in report["results"]}
    assert sorted(rows) == [1, 2, 4, 5]  # the blank line 3 is not a job
    for line, name, (w, h) in ((1, "hello.mp4", (64, 64)), (5, "morning.mp4", (64, 96))):
        assert rows[line]["out"] == name and rows[line]["status"] == "ok" and rows[line]["seconds"] > 0
        p = probe(out / name)
        assert (p["width"], p["height"], p["video_codec"], p["audio_codec"]) == (w, h, "h264", "aac")
        assert p["video_frames"] >= 15 and is_finished(out / name)
    assert report["max_in_flight"] <= 2 * BatchConfig().in_flight


def test_a_malformed_line_and_a_faceless_photo_fail_alone(local_run):
    report, out, _ = local_run
    rows = {r["line"]: r for r in report["results"]}
    assert rows[2]["status"] == "failed" and rows[2]["error"].startswith("not JSON")
    assert rows[4]["status"] == "failed" and rows[4]["out"] == "blank.mp4"
    assert "no face found in" in rows[4]["error"] and "blank.png" in rows[4]["error"]
    assert not (out / "blank.mp4").exists()
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == ["hello.mp4", "morning.mp4",
                                                                                    "report.json"]


def _dead_pid() -> int:
    """A process number that no process has now."""
    import os

    pid = 4_000_000
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return pid
        except PermissionError:
            pass
        pid += 1


def test_a_rerun_skips_finished_jobs_without_starting_workers(local_run):
    _, out, d = local_run
    before = {n: (out / n).stat().st_mtime_ns for n in ("hello.mp4", "morning.mp4")}
    stale = out / f".hello.mp4.{_dead_pid()}.abcd1234.part.mp4"
    stale.write_bytes(b"half")  # what a killed run leaves behind
    (out / ".my.part.notes").write_bytes(b"the user's own")  # not ours: left alone
    (out / "broken.mp4").write_bytes(b"not a video")
    jobs = _write_jobs(d / "again.jsonl", GOOD)
    report = run_batch(jobs, out, BatchConfig(workers=2, progress=False))
    assert (report["ok"], report["skipped"], report["workers"], report["startup_s"]) == (0, 2, 0, None)
    assert {n: (out / n).stat().st_mtime_ns for n in before} == before
    assert not stale.exists() and (out / ".my.part.notes").read_bytes() == b"the user's own"
    assert not is_finished(out / "broken.mp4")  # a file under the name that is no video is not a finished job


@pytest.mark.parametrize("bad, why", [
    ({"text": "x", "out": "../escape.mp4"}, "line 2: output name '../escape.mp4' escapes the output folder"),
    ({"text": "x", "out": "/tmp/abs.mp4"}, "escapes the output folder"),
    ({"text": "x", "out": "hello.mp4"}, "line 2: output 'hello.mp4' repeats line 1"),
    ({"text": "x", "out": "clip.mov"}, "must end in .mp4"),
])
def test_escaping_and_repeated_names_are_refused_before_any_work(tmp_path, capsys, bad, why):
    jobs = _write_jobs(tmp_path / "jobs.jsonl", [GOOD[0], bad])
    with pytest.raises(InputError, match="nothing was run"):
        run_batch(jobs, tmp_path / "out", BatchConfig(progress=False))
    assert not (tmp_path / "out").exists()
    assert main(["batch", str(jobs), "--out", str(tmp_path / "out")]) == 2
    assert why in capsys.readouterr().err


def test_bad_values_are_that_jobs_failure(tmp_path):
    lines = [{"text": "x", "out": "a.mp4", "sede": 1}, {"text": "x", "audio": "y.wav", "out": "b.mp4"},
             {"text": "x", "seed": "one", "out": "c.mp4"}, {"text": "x", "size": 9000, "out": "d.mp4"},
             {"text": "x"}, [1, 2], {"audio": str(tmp_path / "missing.wav"), "out": "e.mp4"}, "[" * 100_000,
             b"\xff\xfe not UTF-8"]
    report = run_batch(_write_jobs(tmp_path / "jobs.jsonl", lines), tmp_path / "out", BatchConfig(progress=False))
    errors = [r["error"] for r in report["results"]]
    assert report["failed"] == 9 and report["workers"] == 0
    assert "unknown key 'sede'" in errors[0] and 'exactly one of "text" or "audio"' in errors[1]
    assert "'seed' must be a whole number" in errors[2] and "64..4096" in errors[3]
    assert '"out" must be a file name' in errors[4] and "a job is a JSON object" in errors[5]
    assert errors[6].startswith("audio not found") and "nested too deeply" in errors[7] and "UTF-8" in errors[8]


def test_a_jobs_file_of_100000_lines_is_streamed(tmp_path):
    jobs = tmp_path / "jobs.jsonl"
    with open(jobs, "w") as f:  # every job names a photo that is not there: refused in the driver, no worker
        for i in range(100_000):
            f.write(json.dumps({"text": "Hi.", "image": "missing.png", "seed": i, "out": f"v{i:06d}.mp4"}) + "\n")
    t = time.perf_counter()
    report = run_batch(jobs, tmp_path / "out", BatchConfig(progress=False))
    assert time.perf_counter() - t < 60
    assert report["jobs"] == report["failed"] == 100_000 and report["workers"] == 0
    assert report["results"][-1]["line"] == 100_000 and report["results"][-1]["out"] == "v099999.mp4"


def test_an_address_that_does_not_answer_is_exit_2_at_once(tmp_path, capsys):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    jobs = _write_jobs(tmp_path / "jobs.jsonl", GOOD[:1])
    t = time.perf_counter()
    assert main(["batch", str(jobs), "--out", str(tmp_path / "out"), "--ray", f"127.0.0.1:{port}"]) == 2
    assert time.perf_counter() - t < 5
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and f"127.0.0.1:{port}: no Ray cluster answers there" in err


def test_a_port_that_is_not_ray_is_exit_2_within_seconds(tmp_path):
    pytest.importorskip("ray")
    jobs = _write_jobs(tmp_path / "jobs.jsonl", GOOD[:1])
    with socket.socket() as s:  # listens (the port answers) but never speaks Ray's protocol
        s.bind(("127.0.0.1", 0))
        s.listen(8)
        t = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "talkhead.cli", "batch", str(jobs), "--out", str(tmp_path / "o"),
                            "--ray", f"127.0.0.1:{s.getsockname()[1]}"], capture_output=True, text=True, timeout=120)
        took = time.perf_counter() - t
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().splitlines()[-1].startswith("talkhead: error: --ray 127.0.0.1:")
    assert took < 45  # imports (torch, Ray) included: the connection itself gives up in about 4 s, not minutes


@pytest.fixture(scope="module")
def ray_cluster():
    """One one-node Ray cluster for this module's Ray tests (it takes several seconds to start)."""
    ray = pytest.importorskip("ray")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def test_the_same_seed_gives_the_same_frames_on_ray_as_locally(local_run, ray_cluster, tmp_path):
    _, local_out, d = local_run
    blank = {"text": "Nobody here.", "image": str(d / "blank.png"), "out": "blank.mp4"}  # shipped to the actor
    jobs = _write_jobs(tmp_path / "jobs.jsonl", [*GOOD, blank])
    report = run_batch(jobs, tmp_path / "ray", BatchConfig(workers=1, ray=True, progress=False))
    assert report["backend"] == "ray" and (report["ok"], report["failed"]) == (2, 1)
    for job in GOOD:
        ray_frames, local_frames = _decode(tmp_path / "ray" / job["out"]), _decode(local_out / job["out"])
        assert ray_frames.shape == local_frames.shape and np.array_equal(ray_frames, local_frames)
    assert report["results"][2]["error"] == f"no face found in {d / 'blank.png'}"  # the driver's path, not the copy
    assert ray_cluster.is_initialized()  # the caller's cluster: the run used it and left it running


def test_an_avatar_job_draws_on_the_persons_own_frames(tiny_avatar, tmp_path):
    from talkhead.avatar.file import load_avatar

    jobs = _write_jobs(tmp_path / "jobs.jsonl", [{"text": "It is me again.", "avatar": str(tiny_avatar), "out": "me.mp4"}])
    report = run_batch(jobs, tmp_path / "out", BatchConfig(workers=1, progress=False))
    assert report["ok"] == 1, report["results"]
    h, w = load_avatar(tiny_avatar).base.shape[1:3]
    p = probe(tmp_path / "out" / "me.mp4")
    assert (p["width"], p["height"]) == (w, h) and p["video_frames"] >= 15
