"""Stalled ticks of client audio against the start slack (``serve.connection.START_SLACK_S``).

A stalled tick shows a frame again because the next was not drawn in time. Each slack is served in turn as
`talkhead serve` serves it (the default live student, one thread, 256 px, loopback). The recordings are sent at
their own pace in 100 ms and 20 ms chunks, as `bench serve` sends them, and the slacks are alternated ROUNDS times.
The 6 Allison prompts of the night of 2026-12-06 (not the bench's own 6) came from the asterisk sounds package that
recipes/real_speech.sh unpacks:

    python recipes/live_stalls.py --out runs/live-stalls --slack 0,0.01 \\
        corpus/_downloads/deb/usr/share/asterisk/sounds/en_US_f_Allison/{agent-user,conf-invalid,confbridge-pin-bad,demo-echotest,dictate/enter_filename,followme/sorry}.wav

Writes OUT/stalls.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

import numpy as np

import talkhead.serve.connection as connection
from talkhead.audio.io import load_audio
from talkhead.bench.serve import _audio_latency
from talkhead.serve.app import ServeConfig, serve_in_thread
from talkhead.util import atomic_write


def stalls(pcms: list[bytes], slack: float) -> dict[str, list[int]]:
    """Stalled ticks of each recording, in 100 ms and 20 ms chunks, from a fresh server with ``slack``."""
    connection.START_SLACK_S = slack  # read by the pacer at each utterance's first frame
    srv, server = serve_in_thread(ServeConfig(threads=1))
    got: dict[str, list[int]] = {"100": [], "20": []}
    try:
        for ms in (100, 20):
            asyncio.run(_audio_latency(server, pcms, ms, got[str(ms)]))
        return got
    finally:
        srv.should_exit = True


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("wavs", nargs="+", type=Path)
    ap.add_argument("--slack", default="0,0.01", help="slacks in seconds, comma-separated")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    pcms = [(np.clip(load_audio(p), -1, 1) * 32767).astype("<i2").tobytes() for p in args.wavs]
    slacks = [float(v) for v in args.slack.split(",")]
    got = {s: {"100": [], "20": []} for s in slacks}
    for _ in range(args.rounds):
        for s in slacks:
            for k, v in stalls(pcms, s).items():
                got[s][k] += v
    rows = [{"slack_s": s, **{f"stalled_ticks_{k}ms_chunks": v for k, v in g.items()},
             **{f"mean_{k}ms_chunks": round(float(np.mean(v)), 2) for k, v in g.items()}} for s, g in got.items()]
    for r in rows:
        print(json.dumps(r))
    args.out.mkdir(parents=True, exist_ok=True)
    atomic_write(args.out / "stalls.json", json.dumps({"wavs": [str(p) for p in args.wavs], "rounds": args.rounds,
                                                       "rows": rows}, indent=1).encode())


if __name__ == "__main__":
    main()
