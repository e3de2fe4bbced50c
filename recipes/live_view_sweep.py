#!/usr/bin/env python
# Live client-audio views against offline motion (docs: the student-1-whisper-live model card): for each view
# BLOCK,LEFT,RIGHT,LOOK,STEP (frames: Whisper block, context before, context after, window look-ahead, new frames
# per window), the 6 real recordings in tests/assets/speech are fed 40 ms at a time after idle motion, and the live
# motion's jawOpen is correlated with student-1-whisper's offline motion of the same recording.
# Usage: [MODEL=path] [WIN=24] python recipes/live_view_sweep.py 2,10,2,1,1 5,5,5,4,2 ...
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

torch.set_num_threads(1)
from talkhead.audio.io import load_audio
from talkhead.metrics import pearson
from talkhead.motion.model import load, load_model
from talkhead.motion.stream import MotionConfig, MotionStream, motion_from_audio
from talkhead.rig.spec import SPEC
from talkhead.serve.session import idle_track

base = load_model("student-1-whisper")
model = load(os.environ["MODEL"]) if os.environ.get("MODEL") else base
win = int(os.environ["WIN"]) if os.environ.get("WIN") else None
wavs = [load_audio(p) for p in sorted(Path("tests/assets/speech").glob("*.wav"))]
offline = [motion_from_audio(base, w, MotionConfig(seed=0)) for w in wavs]
for view in sys.argv[1:]:
    block, left, right, look, step = map(int, view.split(","))
    rs, firsts, t0, seconds = [], [], time.perf_counter(), 0.0
    for wav, off in zip(wavs, offline):
        s = MotionStream(model, 0, block_s=block / 25, context_s=left / 25, right_s=right / 25, tail=idle_track(12, 0),
                         lookahead=look, step=step, window=win)
        rows, first = [], None
        for i in range(0, len(wav), 640):
            rows += list(s.push(wav[i:i + 640]))
            if first is None and sum(len(r) for r in rows):
                first = i // 640 + 1
        m = np.concatenate([*rows, *s.flush()])
        rs.append(pearson(m[:, SPEC["jawOpen"]], off[:, SPEC["jawOpen"]]))
        firsts.append(first)
        seconds += len(wav) / 16000
    print(json.dumps({"view": view, "window": win or 80, "jaw_r_mean": round(float(np.mean(rs)), 3),
                      "jaw_r_min": round(float(np.min(rs)), 3), "first_frame_audio_ms": max(firsts) * 40,
                      "compute_s_per_speech_s": round((time.perf_counter() - t0) / seconds, 3)}), flush=True)
