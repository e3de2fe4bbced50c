"""The worker side of ``talkhead batch``: the one job runner, and the local pool of worker processes.

``Worker`` is what every worker runs, a local process here or a Ray actor (``talkhead.scale.ray``):
torch on one thread, the models it loads kept, a failed job reported rather than raised. A runner
(``LocalRunner``, ``RayRunner``) starts its workers warm, takes jobs (``submit``) and hands back
(job, outcome) pairs as they finish (``next``); the driver (``talkhead.scale.batch.run_batch``) bounds how
many are in flight.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import signal
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from talkhead.errors import InputError
from talkhead.pipeline import GenerateConfig

# Keys that name input files: made absolute here (workers have their own current folder), read by the
# driver and shipped to Ray workers, which need not share its disk.
FILE_KEYS = ("image", "audio", "avatar")

READY_TIMEOUT_S = 900  # a worker's warm-up (imports, models, one tiny video): far less, even on a busy machine


def _keep_models() -> None:
    """generate() loads its motion model per call (0.13-0.18 s of a 0.5 s short job); a worker keeps the
    last few it has loaded. Only worker processes do this: a loaded model is only read (the server
    shares one across sessions the same way)."""
    from talkhead import pipeline

    if not hasattr(pipeline.load_model, "cache_info"):
        pipeline.load_model = functools.lru_cache(maxsize=4)(pipeline.load_model)


def error_text(e: BaseException) -> str:
    """A failure as one line: an InputError's own message, anything else its type and message."""
    text = (str(e) if isinstance(e, InputError) else f"{type(e).__name__}: {e}").strip()
    return text.splitlines()[0] if text else type(e).__name__


def failed(error: str, seconds: float = 0.0) -> dict:
    """The outcome of a job that did not make its video."""
    return {"status": "failed", "seconds": round(seconds, 3), "error": error}


class Worker:
    """One worker process: torch on one thread, models loaded once and kept, one job at a time."""

    def __init__(self) -> None:
        import torch

        # The workers are the parallelism: N processes of one thread each beat N oversubscribed pools,
        # and one thread everywhere makes a seed give the same frames on every worker.
        torch.set_num_threads(1)
        import talkhead.video

        talkhead.video.ENCODER_THREADS = 1  # the encoder too, or one worker would use every core
        _keep_models()

    def warm(self) -> int:
        """Load what jobs need (motion model, audio front end, TTS, face detector): a one-word video."""
        import tempfile

        from talkhead.pipeline import generate

        with tempfile.TemporaryDirectory(prefix="talkhead-warm-") as d:
            generate(GenerateConfig(text="Hello.", size=64), str(Path(d) / "warm.mp4"), progress=False)
        return os.getpid()

    def run(self, cfg: GenerateConfig, out: str) -> dict:
        """One job: the video written (atomically) to ``out``; its outcome, never an exception."""
        from talkhead.pipeline import generate

        t = time.perf_counter()
        try:
            info = generate(cfg, out, progress=False)
        except Exception as e:  # one job's failure is reported; the worker goes on with the next
            return failed(error_text(e), time.perf_counter() - t)
        return {"status": "ok", "seconds": round(time.perf_counter() - t, 3), "frames": info["frames"], "error": None}

    def run_shipped(self, cfg: GenerateConfig, out_name: str, fields: tuple[str, ...],
                    *blobs: bytes) -> tuple[dict, bytes | None]:
        """One job whose input files (``fields`` of ``cfg``) come as bytes and whose mp4 goes back as
        bytes: a Ray worker need not share the driver's disk."""
        import tempfile

        with tempfile.TemporaryDirectory(prefix="talkhead-job-") as d:
            paths: dict[str, str] = {}
            for field, data in zip(fields, blobs):
                p = Path(d) / field / Path(getattr(cfg, field)).name  # its own name, which errors quote
                p.parent.mkdir()
                p.write_bytes(data)
                paths[field] = str(p)
            out = Path(d) / out_name
            outcome = self.run(dataclasses.replace(cfg, **paths), str(out))
            for field, p in paths.items():  # errors name the driver's files, not this worker's copies
                outcome["error"] = outcome["error"] and outcome["error"].replace(p, getattr(cfg, field))
            return outcome, out.read_bytes() if outcome["status"] == "ok" else None


# ---------------------------------------------------------------------------------------- local processes

_WORKER: Worker | None = None
_BARRIER = None


def _init_process(barrier, driver: int) -> None:
    global _WORKER, _BARRIER
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the driver's: it stops the workers itself
    threading.Thread(target=_exit_with, args=(driver,), daemon=True, name="driver-watch").start()
    _WORKER, _BARRIER = Worker(), barrier


def _exit_with(driver: int) -> None:
    """End this worker when the driver process ends, however it ends (kill -9 too).

    A pool's workers hold both ends of its queues, so a killed driver would leave them (and the fork
    server) waiting for ever, or finishing queued jobs behind the back of the next run.
    """
    import select

    try:
        fd = os.pidfd_open(driver)
    except (AttributeError, OSError):  # no pidfd (old kernel): look once a second instead
        while _alive(driver):
            time.sleep(1.0)
    else:
        select.select([fd], [], [])
    os._exit(1)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # there, as another user's process
        pass
    return True


def _ready() -> int:
    """Warm this worker, then wait for all the others: each worker takes exactly one of these tasks."""
    try:
        pid = _WORKER.warm()
    except BaseException:
        _BARRIER.abort()  # the others stop waiting; this worker's error reaches the driver
        raise
    _BARRIER.wait(READY_TIMEOUT_S)
    return pid


def _run(cfg: GenerateConfig, out: str) -> dict:
    return _WORKER.run(cfg, out)


class LocalRunner:
    """``workers`` processes on this machine (forkserver: a clean process to fork from, safe with torch)."""

    backend = "local"

    def __init__(self, workers: int | None) -> None:
        self.workers = workers or len(os.sched_getaffinity(0))
        self.pool: ProcessPoolExecutor | None = None
        self.pending: dict[Future, object] = {}
        self.pids: list[int] = []

    def start(self) -> None:
        """Start the workers and return once every one of them is warm."""
        import multiprocessing

        ctx = multiprocessing.get_context("forkserver")
        # Imported once in the fork server, so each worker starts with torch and the pipeline loaded.
        ctx.set_forkserver_preload(["talkhead.pipeline", "talkhead.warp.renderer", "talkhead.video"])
        self.pool = ProcessPoolExecutor(self.workers, mp_context=ctx, initializer=_init_process,
                                        initargs=(ctx.Barrier(self.workers), os.getpid()))
        ready = [self.pool.submit(_ready) for _ in range(self.workers)]
        self.pids = [f.result() for f in ready]

    def submit(self, job) -> None:
        self.pending[self.pool.submit(_run, job.cfg, str(job.out))] = job

    def next(self) -> list[tuple[object, dict]]:
        """Wait for at least one job to finish; (job, outcome) for each finished."""
        done, _ = wait(list(self.pending), return_when=FIRST_COMPLETED)
        results, broken = [], False
        for f in done:
            try:
                results.append((self.pending[f], f.result()))
                del self.pending[f]
            except BrokenProcessPool:  # a worker died (killed, out of memory): the pool is gone
                broken = True
        if broken:
            # The old pool's outcomes are lost with it (a video that a surviving worker had just finished
            # is on disk all the same: the next run skips it); the next jobs go to a fresh pool.
            self.close(interrupted=True)
            results += [(job, failed("a worker process died while this job was queued or running"))
                        for job in self.pending.values()]
            self.pending.clear()
            self.start()
        return results

    def close(self, interrupted: bool = False) -> None:
        """Stop the workers: after the queue, or at once (``interrupted``: jobs in flight are lost)."""
        if self.pool is None:
            return
        if interrupted:
            self.pool.shutdown(wait=False, cancel_futures=True)
            for pid in self.pids:  # our own workers, by id: they ignore SIGINT and would finish their jobs
                try:
                    os.kill(pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        self.pool.shutdown(wait=True, cancel_futures=True)
        self.pool, self.pids = None, []
