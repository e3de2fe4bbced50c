"""How far the lips drawn from fold lip nets swing on the people they never heard, against how far the captured
lips swing on the same people (``talkhead bench lips``'s spread: each person's mean over their clips, then the mean
over the fold people, for the fold row and for the capture): printed, for recipes/lipnet.sh to pass as ``--spread``
to the net trained on everyone.

    python recipes/lipnet_spread.py BENCH/lips.json NAME    # NAME: the --fold-names row, e.g. lips-whisper
"""

import json
import sys
from statistics import mean

result = json.load(open(sys.argv[1]))
row = f"{sys.argv[2]} (folds)"
people = set(result["summary"][row]["people"])


def spread(measure: str) -> float:
    per = {}
    for c in result["clips"]:
        if c["person"] in people and measure in c:
            per.setdefault(c["person"], []).append(c[measure]["spread"])
    return mean(mean(v) for v in per.values())


print(f"{min(1.0, spread(row) / spread('capture')):.3f}")
