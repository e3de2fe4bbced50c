"""An ``.avatar`` file trained before 2026-12-07 (night) written again with its base frames' context latents and
colours stored, as ``avatar train`` now writes them (``avatar.file.with_base_views``), so that loading it does not
make them (Pexels' 256 px avatar: 12.6 -> 2.0 s before its first frame). Every other tensor is kept as stored.
Usage: python recipes/avatar_add_views.py IN.avatar OUT.avatar
  python recipes/avatar_add_views.py runs/avatar-bench/pexels.avatar /tmp/av/pexels.avatar   # 13 s on 2 cores
"""

import json
import sys
import time
from pathlib import Path

import torch
from safetensors import safe_open

from talkhead.avatar.file import load_avatar, with_base_views
from talkhead.checkpoint import save_checkpoint

src, dst = Path(sys.argv[1]), Path(sys.argv[2])
load_avatar(src)  # a file that is not an avatar is refused here, in one line
torch.set_num_threads(2)
with safe_open(str(src), framework="pt") as f:  # as stored (the bank in half precision), not as loaded
    tensors, meta = {k: f.get_tensor(k) for k in f.keys()}, {k: json.loads(v) for k, v in f.metadata().items()}
t = time.perf_counter()
meta = with_base_views(tensors, {k: v for k, v in meta.items() if k != "format"}, dst)
save_checkpoint(dst, tensors, meta)
print(f"{dst}: base views of {len(tensors['base.offsets']) - 1} frames made in {time.perf_counter() - t:.1f} s")
