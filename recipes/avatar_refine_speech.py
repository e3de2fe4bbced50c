"""Issue 48: a bench avatar with its pixel refiner (recipes/avatar_refine.py) driven by the bench's real recordings,
as ``bench avatar``'s speech rows drive the shipped avatars (``bench.avatar.speech_driven``).

The refiner is the one avatar_refine.py trained: its training resumes exactly from the state it kept (step 1000 of
1200), so the last steps are run again to the same weights. The avatar with it is written to
runs/avatar-refine/PAIR.avatar, and each recording's row is added to runs/avatar-refine/speech.jsonl.
Usage: python recipes/avatar_refine_speech.py PAIR [STEPS]     (after python recipes/avatar_refine.py PAIR [STEPS])
"""

import json
import sys
from pathlib import Path

import torch

from talkhead.avatar.file import load_avatar
from talkhead.avatar.refine import train_refiner, training_pairs
from talkhead.avatar.refiner import refiner_tensors
from talkhead.avatar.train import load_data
from talkhead.bench.avatar import AvatarBenchConfig, speech_driven
from talkhead.checkpoint import load_checkpoint, save_checkpoint

torch.set_num_threads(2)
name, steps = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1200
cfg, bench, out = AvatarBenchConfig(), Path("runs/avatar-bench"), Path("runs/avatar-refine")
if not (out / name / "refiner.state.pt").is_file():
    sys.exit(f"no refiner state in {out / name}: run python recipes/avatar_refine.py {name} first")
avatar = load_avatar(bench / f"{name}.avatar")
d = load_data(bench / f"{name}.avatar.work" / "data.npz", avatar.engine.vae.down, cfg.train.data)
net = train_refiner(*training_pairs(avatar, d, cfg.train.bank_exclude, cfg.seed), d.paste, steps, out / name, cfg.seed)
tensors, meta = load_checkpoint(bench / f"{name}.avatar")
refined = out / f"{name}.avatar"
save_checkpoint(refined, {**tensors, **refiner_tensors(net)}, {**meta, "refiner": {"width": net.width}})
for rec in cfg.speech:
    row = {"pair": name, "refiner_steps": steps, **speech_driven(refined, rec, cfg.seed)}
    print(json.dumps(row), flush=True)
    with open(out / "speech.jsonl", "a") as f:
        f.write(json.dumps(row) + "\n")
