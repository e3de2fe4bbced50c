"""What a live lip net's look-ahead costs in latency: `talkhead serve`'s client audio, first chunk to first frame.

A live session's window waits for as many frames of speech past its new frame as the live student's lip net reads
(``serve.session.live_hearing``). Each live model spec below (a live student wearing a net) is served in turn as
`talkhead serve` serves it (one thread, 256 px, loopback), and the six recordings of tests/assets/speech are sent
at their own pace in 100 ms and in 20 ms chunks, as `bench serve` sends them; beside it how the live lips follow
offline motion (`bench serve`'s client_audio_lips). The specs are alternated ROUNDS times, so the machine's drift
falls on each alike.

    python recipes/live_lookahead.py --out runs/live-lookahead student-1-whisper-live \\
        student-1-whisper-live+runs/lipnet-a2/all/lips-whisper-live.safetensors

Writes OUT/lookahead.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

import numpy as np

from talkhead.audio.io import load_audio
from talkhead.bench.serve import SPEECH, _audio_latency, _ms, client_audio_lips
from talkhead.serve.app import ServeConfig, serve_in_thread
from talkhead.util import atomic_write


def latencies(live_model: str) -> dict[str, list[float]]:
    """First chunk -> first frame (ms) for each recording, in 100 ms and 20 ms chunks, from a fresh server, and
    the ticks of its speech that repeated a frame (``stalls_100``, ``stalls_20``)."""
    pcms = [(np.clip(load_audio(p), -1, 1) * 32767).astype("<i2").tobytes() for p in sorted(SPEECH.glob("*.wav"))]
    srv, server = serve_in_thread(ServeConfig(live_model=live_model, threads=1))
    got: dict[str, list] = {"stalls_100": [], "stalls_20": []}
    try:
        for ms in (100, 20):
            got[str(ms)] = asyncio.run(_audio_latency(server, pcms, ms, got[f"stalls_{ms}"]))
        return got
    finally:
        srv.should_exit = True


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("specs", nargs="+", help="live student specs, MODEL+NET")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    got: dict[str, dict[str, list[float]]] = {s: {} for s in args.specs}
    for _ in range(args.rounds):
        for spec in args.specs:
            for k, v in latencies(spec).items():
                got[spec].setdefault(k, []).extend(v)
    rows = [{"live_model": s, "first_frame_ms_100ms_chunks": _ms(v["100"]), "first_frame_ms_20ms_chunks": _ms(v["20"]),
             "stalled_ticks_100ms_chunks": v["stalls_100"], "stalled_ticks_20ms_chunks": v["stalls_20"],
             "client_audio_lips": client_audio_lips(ServeConfig().model, s)} for s, v in got.items()]
    for r in rows:
        print(json.dumps(r))
    args.out.mkdir(parents=True, exist_ok=True)
    atomic_write(args.out / "lookahead.json", json.dumps({"rounds": args.rounds, "rows": rows}, indent=1).encode())


if __name__ == "__main__":
    main()
