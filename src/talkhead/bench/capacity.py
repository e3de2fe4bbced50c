"""``talkhead bench capacity``: docs/scale.md's capacity table, computed from the benchmarks' own JSON files.

Videos per hour per CPU core come from ``bench batch`` (docs/bench/batch/batch.json), live sessions per
CPU core from ``bench serve`` and ``bench serve --ray`` (docs/bench/serve*/*.json): each figure is the
run's own result divided by the cores of the machine it ran on. The columns for bigger machines and for
many machines multiply that per-core figure out (an extrapolation that assumes the work scales with
cores, which the table says). No GPU figure is measured, and the table says so rather than guess.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from talkhead.errors import InputError
from talkhead.util import atomic_write

BEGIN = "<!-- capacity table: made by `talkhead bench capacity` from docs/bench/*.json; do not edit by hand -->"
END = "<!-- end of the capacity table -->"
MACHINE_CORES = 16  # the machine the extrapolation column shows
FLEET = 10  # ... and how many of them


def _load(path: Path) -> dict:
    return json.loads(path.read_text())


def _batch_rows(path: Path) -> list[dict]:
    """The fastest run of each backend in a batch.json: one-sentence videos per hour per core."""
    d, out = _load(path), []
    load = _load_span(d)
    for backend in ("local", "ray"):
        runs = [r for r in d["rows"] if r["backend"] == backend and r["jobs_per_min"]]
        if runs:
            best = max(runs, key=lambda r: r["jobs_per_min"])
            out.append({"what": f"videos, `talkhead batch` ({backend}, {best['workers']} workers; one sentence, "
                                f"{d['size']} px)", "kind": "videos", "value": best["jobs_per_min"] * 60,
                        "measured": f"{best['jobs_per_min']} videos/min", "cores": d.get("cpu_count"),
                        "load": load, "source": path})
    return out


def _serve_rows(path: Path) -> list[dict]:
    """Sessions held at 25 fps: a serve.json (one number) or a serve-ray.json (one per replica count)."""
    d = _load(path)
    held, load = d["sessions_at_25fps"], _load_span(d)
    if isinstance(held, int):
        counts = {"`say`": held, "client audio": d.get("client_audio_sessions_at_25fps")}  # the latter since 2026-12-04
        return [{"what": f"live sessions at 25 fps, `talkhead serve`, speaking {how} ({d['size']} px)",
                 "kind": "sessions", "value": k, "measured": _sessions(k), "cores": d.get("cpu_count"), "load": load,
                 "source": path} for how, k in counts.items() if k is not None]
    size = d["config"]["size"]
    return [{"what": (f"live sessions at 25 fps, `serve --ray`, {n} replica{'s' * (int(n) > 1)} ({size} px)" if n != "0"
                      else f"live sessions at 25 fps, `talkhead serve` beside it, no Ray ({size} px)"),
             "kind": "sessions", "value": k, "measured": _sessions(k), "cores": d.get("cpu_count"), "load": load,
             "source": path} for n, k in held.items()]


def _sessions(k: int) -> str:
    return f"{k} session{'s' * (k != 1)}"


def _load_span(d: dict) -> str | None:
    """The 1-minute load average before and after the run, as the benchmark recorded it."""
    before, after = (d.get("load_before") or [None])[0], (d.get("load_after") or [None])[0]
    if before is None:
        return None
    return f"{before:.1f}" + (f" to {after:.1f}" if after is not None else "")


def capacity_rows(bench: str | Path) -> tuple[list[dict], list[str]]:
    """Every figure found under ``bench`` (a docs/bench folder), per CPU core; and the table's notes."""
    bench, rows = Path(bench), []
    for path in sorted(bench.glob("batch/*.json")):
        rows += _batch_rows(path)
    for path in sorted(bench.glob("serve*/*.json")):
        rows += _serve_rows(path)
    notes = []
    known = {r["cores"] for r in rows if r["cores"]}
    if any(not r["cores"] for r in rows) and len(known) == 1:  # older files did not record their machine's cores
        cores = known.pop()
        for r in rows:
            if not r["cores"]:
                r["cores"] = cores
                notes.append(f"{r['source'].relative_to(bench.parent)} does not record its cores: the {cores} "
                             "that the other files record (the same machine) are assumed")
    for r in rows:
        r["per_core"] = r["value"] / r["cores"] if r["cores"] else None
    return rows, notes


def _fmt(row: dict, factor: int) -> str:
    if row["per_core"] is None:
        return "?"
    v = row["per_core"] * factor
    if row["kind"] == "sessions":
        return f"{math.floor(v + 1e-9)}" if factor > 1 else f"{v:.1f}"
    return f"{v:,.0f}"


def capacity_table(bench: str | Path) -> str:
    """The markdown table (and its notes) for docs/scale.md."""
    rows, notes = capacity_rows(bench)
    lines = [f"| workload | measured | per CPU core | a {MACHINE_CORES}-core machine | {FLEET} such machines "
             "| per GPU | load when measured | source |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        unit = "/hour" if r["kind"] == "videos" else " at once"
        load = f"{r['load']} on {r['cores']} cores" if r["load"] is not None else "not recorded"
        src = r["source"].relative_to(Path(bench).parent).as_posix()  # a link from docs/scale.md
        lines.append(f"| {r['what']} | {r['measured']} on {r['cores']} cores | {_fmt(r, 1)}{unit} "
                     f"| {_fmt(r, MACHINE_CORES)}{unit} | {_fmt(r, MACHINE_CORES * FLEET)}{unit} | not measured "
                     f"| {load} | [{Path(src).name}]({src}) |")
    lines += ["", "Per CPU core: the run's figure divided by its machine's cores. The machine and fleet columns "
              "multiply that out, assuming the work scales with cores (more workers, more replicas); they are "
              "not measured. No GPU figure is measured: the benchmarks ran on CPUs only."]
    lines += [f"Note: {n}." for n in notes]
    return "\n".join(lines)


def update_doc(doc: str | Path, bench: str | Path) -> str:
    """Write the table between the markers in ``doc`` (atomically); return it."""
    doc = Path(doc)
    text = doc.read_text()
    if BEGIN not in text or END not in text:
        raise InputError(f"{doc} has no capacity-table markers ({BEGIN!r} ... {END!r})")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    table = capacity_table(bench)
    atomic_write(doc, f"{head}{BEGIN}\n{table}\n{END}{tail}".encode())
    return table
