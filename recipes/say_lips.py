#!/usr/bin/env python
# jawOpen r of a live say's motion against the offline motion of the same audio (the same idle tail, 28 s blocks):
# the 4 s sentence blocks alone (one sentence spoken whole) against 4 s blocks after motion.stream.Ramp (joe handed
# over in Piper pieces). Says: Harvard sentences, two per say (3 says), six in one, and five single sentences.
# Usage: python recipes/say_lips.py
import json

import numpy as np

from talkhead.audio.tts import speak_stream, speech_chunks
from talkhead.bench.voices import SENTENCES
from talkhead.metrics import pearson
from talkhead.motion.model import load_model
from talkhead.motion.stream import MotionStream, Ramp
from talkhead.rig.spec import SPEC
from talkhead.serve.session import idle_track

J = SPEC["jawOpen"]
model = load_model("student-1-whisper")
says = [" ".join(SENTENCES[i:i + 2]) for i in (0, 2, 4)] + [" ".join(SENTENCES[:6])] + \
       ["Hello there, friend."] + list(SENTENCES[6:10])
tail = idle_track(12, 0)


def motion(pieces, **view):
    st, rows = MotionStream(model, 0, tail=tail, **view), []
    for p in pieces:
        rows += list(st.push(p))
    return np.concatenate([*rows, *st.flush()])


out = {}
for voice in ("joe", "us-female"):
    rows = []
    for text in says:
        if voice == "joe":
            pieces = list(speech_chunks(text, voice))  # what the live face gets now
        else:
            pieces = [s.wav for s in speak_stream(text, voice)]
        wav = np.concatenate(pieces)
        sentences = len(list(speak_stream(text, "us-female")))
        offline = motion([wav])
        new = motion(pieces, block_s=4.0, context_s=1.0, ramp=Ramp())
        # the old path: one sentence was spoken whole (= offline); more sentence by sentence with 4 s blocks
        old = offline if sentences == 1 else motion([wav], block_s=4.0, context_s=1.0)
        rows.append({"text": text[:30], "s": round(len(wav) / 16000, 2), "sentences": sentences,
                     "old": round(pearson(old[:, J], offline[:, J]), 3), "new": round(pearson(new[:, J], offline[:, J]), 3)})
    multi = [r for r in rows if r["sentences"] > 1]
    out[voice] = {"says": rows, "multi_sentence_mean": {k: round(float(np.mean([r[k] for r in multi])), 3) for k in ("old", "new")},
                  "all_mean": {k: round(float(np.mean([r[k] for r in rows])), 3) for k in ("old", "new")},
                  "min_new": min(r["new"] for r in rows)}
    print(voice, json.dumps(out[voice]["multi_sentence_mean"]), json.dumps(out[voice]["all_mean"]), "min new", out[voice]["min_new"])
    for r in rows:
        print("  ", r)
