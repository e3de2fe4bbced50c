"""``talkhead batch``: a jobs file (JSON lines) -> one video per line, on local worker processes or Ray.

Each line is a JSON object whose keys are ``generate``'s flags (``JOB_KEYS``: ``text`` or ``audio``,
``image``, ``voice``, ``model``, ``size``, ``seed``, ``renderer``, ...) plus ``out``, a file name inside
the output folder; it becomes a ``GenerateConfig`` and runs through ``pipeline.generate``.

The file is read twice, a line at a time and never whole: first to count the jobs and refuse output
names that escape the folder or repeat (before any work), then to feed the workers with at most
``in_flight`` jobs per worker queued. A malformed line, a missing photo or a job that fails in its
worker is reported (``report.json``: each job's line, out, status, seconds, error) and the others run.
Rerun, finished jobs (their mp4 opens and has frames) are skipped: outputs are written atomically, so
a killed run loses only the jobs it had in flight. Workers run torch on one thread each and keep the
models they load, so the same seed gives the same frames on every worker, local or Ray
(``talkhead.scale.ray``).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from talkhead.config import parse_size
from talkhead.errors import InputError
from talkhead.motion.stream import MotionConfig
from talkhead.pipeline import GenerateConfig
from talkhead.scale.ray import CONNECT_TIMEOUT_S
from talkhead.scale.workers import FILE_KEYS, LocalRunner, failed
from talkhead.util import atomic_write, check_writable, clear_stale_parts

REPORT = "report.json"
MAX_LINE = 1 << 20  # bytes: a job is a few hundred; a longer line is refused, not read into memory
SHOW_FAILURES = 20  # failures printed as they happen; the report holds them all

# A job's key -> (where it goes: a GenerateConfig field, or "motion.<MotionConfig field>"; what it must be).
# A new generate flag is one more row; keys may also be spelt as the flag is ("cadence-stride").
JOB_KEYS: dict[str, tuple[str, object]] = {
    "text": ("text", str), "audio": ("audio", str), "transcript": ("transcript", str),
    "image": ("image", str), "voice": ("voice", str), "size": ("size", "size"),
    "renderer": ("renderer", str), "latent_engine": ("latent_engine", str), "cadence_stride": ("cadence_stride", int),
    "model": ("motion.model", str), "steps": ("motion.steps", int), "seed": ("motion.seed", int),
    "driver": ("motion.driver", str), "avatar": ("avatar", str),
}

@dataclass(frozen=True)
class BatchConfig:
    """How a jobs file is run: where, on how many workers, how much queued ahead."""

    workers: int | None = None  # None: one per CPU (local) or per CPU of the Ray cluster
    ray: bool = False
    ray_address: str | None = None  # with ray: None starts a one-node cluster here for the run
    in_flight: int = 2  # jobs queued per worker: enough to keep it busy, no more of the file read ahead
    connect_timeout_s: float = CONNECT_TIMEOUT_S  # --ray ADDRESS: how long its port may take to answer
    progress: bool = True

    def __post_init__(self) -> None:
        if self.workers is not None and self.workers < 1:
            raise InputError(f"--workers must be at least 1, got {self.workers}")
        if self.in_flight < 1:
            raise InputError(f"in_flight must be at least 1, got {self.in_flight}")


class Job(NamedTuple):
    """One line of the jobs file, checked: its number, its output path and the video's config."""

    line: int
    out: Path
    cfg: GenerateConfig


class Refused(NamedTuple):
    """A line that is not a job (malformed, or naming a missing file): reported as failed, never run."""

    line: int
    out: str | None
    error: str


# ---------------------------------------------------------------------------------------- the jobs file


def _lines(path: Path) -> Iterator[tuple[int, str | None]]:
    """(line number, text) for each non-blank line, read one at a time; text None: not UTF-8 or too long."""
    try:
        f = open(path, "rb")
    except OSError as e:
        raise InputError(f"cannot read jobs file {path}: {e.strerror}") from None
    with f:
        number = 0
        while raw := f.readline(MAX_LINE + 1):
            number += 1
            if len(raw) > MAX_LINE and not raw.endswith(b"\n"):
                while (rest := f.readline(MAX_LINE)) and not rest.endswith(b"\n"):
                    pass  # skip the rest of the over-long line without holding it
                yield number, None
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                yield number, None
                continue
            if text.strip():
                yield number, text


def check_name(name: object) -> str:
    """An output name: a plain .mp4 file name inside the output folder; InputError otherwise."""
    if not isinstance(name, str) or not name:
        raise InputError('"out" must be a file name such as "clip.mp4"')
    if "/" in name or "\\" in name or name in (".", ".."):  # no folder part: nothing absolute or above
        raise InputError(f"output name {name!r} escapes the output folder: give a file name inside it")
    if not name.lower().endswith(".mp4"):
        raise InputError(f"output name {name!r} must end in .mp4")
    return name


def scan_jobs(path: str | Path) -> int:
    """Count the jobs; refuse (InputError naming the lines) output names that escape the folder or repeat."""
    seen: dict[str, int] = {}
    problems: list[str] = []
    count = 0
    for number, text in _lines(Path(path)):
        count += 1
        try:
            name = json.loads(text)["out"] if text is not None else None
        except (ValueError, TypeError, KeyError, RecursionError):
            continue  # malformed: the second pass reports it, and the rest run
        if name is None:
            continue
        try:
            name = check_name(name)
        except InputError as e:
            problems.append(f"line {number}: {e}")
            continue
        if name in seen:
            problems.append(f"line {number}: output {name!r} repeats line {seen[name]}")
        else:
            seen[name] = number
    if problems:
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise InputError(f"jobs refused, nothing was run: {'; '.join(problems[:3])}{more}")
    return count


def _value(key: str, value: object, kind: object) -> object:
    """A job value checked against what its key takes."""
    if kind == "size":
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise InputError(f'"size" must be N or "WIDTHxHEIGHT", got {value!r}')
        try:
            return parse_size(str(value))
        except ValueError as e:
            raise InputError(f'"size": {e}') from None
    if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise InputError(f"{key!r} must be a whole number, got {value!r}")
    if kind is str and not isinstance(value, str):
        raise InputError(f"{key!r} must be a string, got {value!r}")
    return value


def job_config(obj: dict) -> GenerateConfig:
    """A job's keys (all but "out") -> the GenerateConfig that ``generate`` takes; InputError naming the problem."""
    top: dict[str, object] = {}
    motion: dict[str, object] = {}
    for key, value in obj.items():
        name = key.replace("-", "_")
        if name == "out" or value is None:  # null: the default, as if the key were absent
            continue
        if name not in JOB_KEYS:
            raise InputError(f"unknown key {key!r} (known: out, {', '.join(JOB_KEYS)})")
        target, kind = JOB_KEYS[name]
        field = target.removeprefix("motion.")
        (motion if field != target else top)[field] = _value(key, value, kind)
    if ("text" in top) == ("audio" in top):
        raise InputError('give exactly one of "text" or "audio"')
    if "transcript" in top and "text" in top:
        raise InputError('"transcript" goes with "audio" (the TTS knows its own phones)')
    for key in FILE_KEYS:
        if key in top:
            p = os.path.abspath(os.path.expanduser(str(top[key])))
            if not os.path.isfile(p):
                raise InputError(f"{key} not found: {top[key]}")
            top[key] = p
    motion.setdefault("driver", "phones" if "transcript" in top else "model")  # as generate's --driver default
    return GenerateConfig(**top, motion=MotionConfig(**motion))


def read_jobs(path: str | Path, out_dir: str | Path) -> Iterator[Job | Refused]:
    """Each line as a Job, or Refused with the reason; lazily, one line at a time."""
    out_dir = Path(out_dir)
    for number, text in _lines(Path(path)):
        out = None
        try:
            if text is None:
                raise InputError(f"not a line of UTF-8 text under {MAX_LINE} bytes")
            try:
                obj = json.loads(text)
            except json.JSONDecodeError as e:
                raise InputError(f"not JSON ({e.msg} at column {e.colno})") from None
            except RecursionError:  # "[[[[...": bounded by MAX_LINE, deep enough to overflow the parser
                raise InputError("not JSON a job can be (nested too deeply)") from None
            if not isinstance(obj, dict):
                raise InputError(f"a job is a JSON object, got {type(obj).__name__}")
            out = check_name(obj.get("out"))
            yield Job(number, out_dir / out, job_config(obj))
        except InputError as e:
            yield Refused(number, out, str(e))


def is_finished(path: str | Path) -> bool:
    """Whether ``path`` is a readable mp4 with at least one video frame (a finished job)."""
    import av

    try:
        with av.open(str(path)) as container:
            if not container.streams.video:
                return False
            for _ in container.decode(video=0):
                return True
    except (av.FFmpegError, OSError):
        return False
    return False


# ---------------------------------------------------------------------------------------- the driver


class _Run:
    """One run's bookkeeping: the runner (started at the first job with work to do), outcomes, the bar."""

    def __init__(self, out_dir: Path, cfg: BatchConfig, total: int, runner) -> None:
        from tqdm import tqdm

        self.out_dir, self.cfg, self.runner = out_dir, cfg, runner
        self.started = False
        self.rows: list[tuple] = []  # (line, out, status, seconds, error): a tuple each, for 100,000 lines
        self.counts = {"ok": 0, "failed": 0, "skipped": 0}
        self.t0, self.t_work, self.startup_s, self.max_in_flight, self.shown = time.perf_counter(), None, None, 0, 0
        self.bar = tqdm(total=total, unit="job", desc="batch", disable=not cfg.progress)

    def feed(self, item: Job | Refused) -> None:
        """One line: reported at once (refused, or already finished), or queued on a worker."""
        if isinstance(item, Refused):
            return self.record(item.line, item.out, failed(item.error))
        if is_finished(item.out):
            return self.record(item.line, item.out.name, {"status": "skipped", "seconds": 0.0, "error": None})
        if not self.started:
            t = time.perf_counter()
            self.started = True  # before start(): close() must stop a half-started runner too
            self.runner.start()
            self.t_work = time.perf_counter()
            self.startup_s = round(self.t_work - t, 3)
        while len(self.runner.pending) >= self.runner.workers * self.cfg.in_flight:
            self._collect()
        try:
            self.runner.submit(item)
        except OSError as e:  # an input file gone or unreadable since its line was read
            return self.record(item.line, item.out.name, failed(f"cannot read this job's input: {e}"))
        self.max_in_flight = max(self.max_in_flight, len(self.runner.pending))

    def drain(self) -> None:
        while self.started and self.runner.pending:
            self._collect()

    def _collect(self) -> None:
        for job, outcome in self.runner.next():
            self.record(job.line, job.out.name, outcome)

    def record(self, line: int, out: str | None, outcome: dict) -> None:
        status = outcome["status"]
        self.counts[status] += 1
        self.rows.append((line, out, status, outcome.get("seconds", 0.0), outcome.get("error")))
        if status == "failed" and self.shown < SHOW_FAILURES:
            self.shown += 1
            more = f" (further failures: see {REPORT})" if self.shown == SHOW_FAILURES else ""
            self.bar.write(f"line {line}{f' ({out})' if out else ''}: {outcome['error']}{more}", file=sys.stderr)
        self.bar.update(1)
        if not self.bar.disable and (status == "failed" or len(self.rows) % 50 == 0):  # formatting costs, 100,000 times
            self.bar.set_postfix(self.counts, refresh=False)

    def close(self, interrupted: bool) -> None:
        self.bar.close()
        self.runner.close(interrupted=interrupted)

    def report(self, jobs_file: Path, complete: bool) -> dict:
        end = time.perf_counter()
        run_s = round(end - self.t_work, 3) if self.t_work is not None else 0.0
        ok = self.counts["ok"]
        return {"jobs_file": str(jobs_file), "out": str(self.out_dir), "backend": self.runner.backend,
                "workers": self.runner.workers if self.started else 0, "complete": complete,
                "jobs": len(self.rows), **self.counts, "startup_s": self.startup_s, "run_s": run_s,
                "wall_s": round(end - self.t0, 3), "jobs_per_min": round(ok / run_s * 60, 2) if ok and run_s else None,
                "max_in_flight": self.max_in_flight,
                "results": [{"line": line, "out": out, "status": status, "seconds": seconds, "error": error}
                            for line, out, status, seconds, error in sorted(self.rows)]}


@contextmanager
def _exclusive(out_dir: Path) -> Iterator[None]:
    """One run per output folder: two would each take the other's half-written files for stale ones."""
    import fcntl

    with open(out_dir / ".talkhead-batch.lock", "a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise InputError(f"another talkhead batch is writing to {out_dir}") from None
        yield


def _runner(cfg: BatchConfig):
    """The cfg's runner, made (an explicit Ray address is connected to now, to fail fast) but not started."""
    if not cfg.ray:
        return LocalRunner(cfg.workers)
    from talkhead.scale.ray import RayRunner

    return RayRunner(cfg.workers, cfg.ray_address, cfg.connect_timeout_s)


def run_batch(jobs_file: str | Path, out_dir: str | Path, cfg: BatchConfig = BatchConfig()) -> dict:
    """Run every job of ``jobs_file`` into ``out_dir``; the report (also written as out_dir/report.json).

    Refuses, before any work, output names that escape ``out_dir`` or repeat (InputError). Everything
    else that goes wrong with a job is that job's failure in the report.
    """
    jobs_file, out_dir = Path(jobs_file), Path(out_dir).expanduser().resolve()  # absolute: workers' cwd differs
    total = scan_jobs(jobs_file)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"cannot make output folder {out_dir}: {e.strerror}") from None
    check_writable(out_dir / REPORT)
    with _exclusive(out_dir):
        clear_stale_parts(out_dir)  # what a killed run was writing: never a finished video
        run = _Run(out_dir, cfg, total, _runner(cfg))
        complete = False
        try:
            for item in read_jobs(jobs_file, out_dir):
                run.feed(item)
            run.drain()
            complete = True
        finally:
            run.close(interrupted=not complete)
            report = run.report(jobs_file, complete)
            atomic_write(out_dir / REPORT, _report_json(report).encode())
    return report


def _report_json(report: dict) -> str:
    """The report as JSON: the summary indented, then one line per job (readable, and quick for 100,000)."""
    head = json.dumps({k: v for k, v in report.items() if k != "results"}, indent=1)
    rows = ",\n  ".join(json.dumps(r) for r in report["results"])
    return f'{head[:-2]},\n "results": [\n  {rows}\n ]\n}}\n' if rows else f'{head[:-2]},\n "results": []\n}}\n'

