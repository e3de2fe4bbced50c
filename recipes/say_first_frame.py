#!/usr/bin/env python
# A live say to its first frame over a real server and WebSocket client (talkhead.bench.serve._say_latency, as
# `bench serve` measures say_to_first_frame_ms and say_joe_to_first_frame_ms), plus audio stalls: gaps over 70 ms
# between speech audio packets in the first 3 s of a say. Prints one JSON line. Before/after on a shared machine:
#   git worktree add /tmp/old HEAD; alternate
#   (cd /tmp/old && PYTHONPATH=/tmp/old/src python recipes/say_first_frame.py old 5)
#   python recipes/say_first_frame.py new 5
import asyncio
import json
import os
import sys
import time

import numpy as np


async def gaps(server, voice, text, n):
    from talkhead.bench.serve import _recv, _session
    ws, out = await _session(server, voice), []
    for _ in range(n):
        await asyncio.sleep(0.5)
        await ws.send(json.dumps({"type": "say", "text": text}))
        times, t_end = [], None
        while True:
            m = await _recv(ws)
            now = time.perf_counter()
            if isinstance(m, tuple) and m[0] == "A":
                times.append(now)
                t_end = t_end or now + 3.0
            if (isinstance(m, dict) and m["type"] == "done") or (t_end and now > t_end):
                break
        await ws.send(json.dumps({"type": "interrupt"}))
        while not (isinstance(m := await _recv(ws), dict) and m["type"] == "interrupted"):
            pass
        out.append(int((np.diff(times) > 0.07).sum()))
    await ws.close()
    return out


def main():
    label, reps = sys.argv[1], int(sys.argv[2])
    import talkhead
    from talkhead.bench.serve import LONG_TEXT, _say_latency
    from talkhead.serve.app import ServeConfig, serve_in_thread
    srv, server = serve_in_thread(ServeConfig(max_sessions=4, model="student-1-whisper", size=256))
    res = {"label": label, "code": talkhead.__file__, "load_before": os.getloadavg()[0]}
    try:
        res["us_female"] = [round(1000 * x, 1) for x in asyncio.run(_say_latency(server, reps))]
        from talkhead.bench.serve import SENTENCE
        res["us_female_2_sentences"] = [round(1000 * x, 1) for x in asyncio.run(_say_latency(server, reps, None, SENTENCE))]
        res["joe_20"] = [round(1000 * x, 1) for x in asyncio.run(_say_latency(server, reps, "joe", "Hello there, friend."))]
        res["joe_5000"] = [round(1000 * x, 1) for x in asyncio.run(_say_latency(server, reps, "joe", LONG_TEXT))]
        res["gaps_joe_20"] = asyncio.run(gaps(server, "joe", "Hello there, friend.", 2))
        res["gaps_joe_5000"] = asyncio.run(gaps(server, "joe", LONG_TEXT, 2))
    finally:
        srv.should_exit = True
    res["load_after"] = os.getloadavg()[0]
    print("JSON", json.dumps(res))


main()
