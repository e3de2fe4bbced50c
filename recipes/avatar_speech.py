"""Issue 48, item 2: the speech-driven rows of ``talkhead bench avatar`` alone, on the bench's avatars (trained
into runs/avatar-bench by the bench's own recipe if missing; the held-out re-enactment is measured too, without
the sampling variants). Usage:
  python recipes/avatar_speech.py OUT.json PAIR...      e.g. python recipes/avatar_speech.py runs/avatar-speech.json andrew edtalk
"""

import json
import sys
from dataclasses import replace
from pathlib import Path

from talkhead.bench.avatar import AvatarBenchConfig, measure_pair, speech_driven

out_path, pairs = Path(sys.argv[1]), sys.argv[2:]
cfg = replace(AvatarBenchConfig(), variants=False)
work = Path(cfg.work)
out = {}
for pair in pairs:
    if not (work / f"{pair}.avatar").exists():
        out[pair], _ = measure_pair(pair, cfg, work, progress=False)
    out.setdefault(pair, {})["speech"] = [speech_driven(work / f"{pair}.avatar", rec, cfg.seed) for rec in cfg.speech]
    print(pair, json.dumps([{k: v for k, v in s.items() if "lip_r" in k} for s in out[pair]["speech"]]), flush=True)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(out, indent=1, default=str))
