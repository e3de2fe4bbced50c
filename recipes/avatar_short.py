"""Issue 48: a tuned person's avatar learnt from only the first SECONDS of the pair's training video, so that the
held-out mouths include ones its bank lacks (as a held-out person's short video does), trained by the bench's recipe
into WORK/NAME.avatar. Re-enact the pair's held-out video with it by ``recipes/avatar_flow_sweep.py WORK PAIR@NAME``.
Usage: python recipes/avatar_short.py WORK PAIR SECONDS NAME
  python recipes/avatar_short.py runs/avatar-bench edtalk 8 edtalk8   # 10 min on 2 cores
  python recipes/avatar_short.py runs/avatar-bench andrew 8 andrew8
"""

import sys
from pathlib import Path

from talkhead.avatar.train import train_avatar
from talkhead.bench.avatar import PAIRS, AvatarBenchConfig, _split_video

work, pair, seconds, name = Path(sys.argv[1]), sys.argv[2], float(sys.argv[3]), sys.argv[4]
cfg = AvatarBenchConfig()
folder, video, _ = PAIRS[pair]
src = Path(cfg.videos if folder == "videos" else cfg.talking) / video
short = work / f"{name}-split"  # apart from the bench's own splits, which are made once by name
short.mkdir(parents=True, exist_ok=True)
first, _ = _split_video(src, seconds, short)
print(train_avatar([first], work / f"{name}.avatar", cfg.train, progress=False)["wall_s"])
