"""ms a frame of an avatar's default drawing (``AvatarRenderer.crops`` in batches of 32, the bank's own mouths played
backwards, 2 threads; start-up not counted): to compare two versions of the code, run it alternately with each on
PYTHONPATH (a git worktree's src), one after the other on the same machine.
Usage: python recipes/avatar_draw_speed.py AVATAR [FRAMES]
  for i in 1 2 3; do for w in /tmp/before /tmp/after; do
    PYTHONPATH=$w/src python recipes/avatar_draw_speed.py runs/avatar-bench/edtalk.avatar 160; done; done
"""

import sys
import time

import numpy as np
import torch

from talkhead.avatar.file import load_avatar
from talkhead.avatar.renderer import AvatarRenderer

torch.set_num_threads(2)
avatar = load_avatar(sys.argv[1])
n = int(sys.argv[2]) if len(sys.argv) > 2 else 160
motion = np.asarray(avatar.bank["motion"], np.float32)[::-1][:n].copy()
r = AvatarRenderer(avatar, seed=0)
idx = np.arange(n) % len(avatar.base)
r.crops(motion[:32], idx[:32])  # warm-up: the first batch builds what later ones reuse
t = time.perf_counter()
for i in range(0, n, 32):
    r.crops(motion[i:i + 32], idx[i:i + 32], r.views(idx[i:i + 32]))
print(f"{(time.perf_counter() - t) / n * 1e3:.2f} ms a frame")
