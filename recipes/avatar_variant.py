"""Issue 48, item 1: an avatar recipe variant against the default, on the pairs of ``talkhead bench avatar``.

Each pair's avatar is trained again with the variant's settings (``AvatarTrainConfig`` fields), from the same
ingested data and the same VAE that ``bash recipes/avatar.sh`` made (copied from runs/avatar-bench, so only the
denoiser differs), then measured as the bench measures it: re-enacting the held-out video, and driven by the three
recordings. Usage:
  python recipes/avatar_variant.py NAME FIELD=VALUE... -- PAIR...     (writes runs/avatar-NAME/result.json)
  python recipes/avatar_variant.py fine4 map_detail=4 -- andrew edtalk
  python recipes/avatar_variant.py structure structure=1 -- andrew edtalk
"""

import json
import shutil
import sys
from dataclasses import fields, replace
from pathlib import Path

from talkhead.avatar.train import AvatarTrainConfig
from talkhead.bench.avatar import AvatarBenchConfig, measure_pair, speech_driven

name, args = sys.argv[1], sys.argv[2:]
settings, pairs = args[:args.index("--")], args[args.index("--") + 1:]
kinds = {f.name: type(f.default) for f in fields(AvatarTrainConfig)}
change = {k: kinds[k](int(v)) if kinds[k] is bool else kinds[k](v) for k, v in (s.split("=") for s in settings)}
src, work = Path("runs/avatar-bench"), Path(f"runs/avatar-{name}")
base = AvatarBenchConfig()
cfg = replace(base, work=str(work), variants=False, train=replace(base.train, **change))
out = {"settings": change}
for pair in pairs:
    w = work / f"{pair}.avatar.work"
    w.mkdir(parents=True, exist_ok=True)
    # The ingested data, and the VAE with its latents where the variant keeps the VAE's settings: not the denoisers.
    keep = ("data.", "track-") + (() if any(k.startswith("vae_") for k in change) else ("vae.", "latents."))
    for f in (src / f"{pair}.avatar.work").glob("*"):
        if f.name.startswith(keep) and not (w / f.name).exists():
            shutil.copy(f, w / f.name)
    for f in [*src.glob("*-first*.mp4"), *src.glob("*-rest*.mp4")]:  # the pairs' split videos
        if not (work / f.name).exists():
            shutil.copy(f, work / f.name)
    result, _ = measure_pair(pair, cfg, work, progress=False)
    result["speech"] = [speech_driven(work / f"{pair}.avatar", rec, cfg.seed) for rec in cfg.speech]
    out[pair] = result
    rows = result["rows"]
    print(pair, {k: {m: v[m] for m in ("psnr_db", "lip_r", "detail_ratio", "flicker_ratio")} for k, v in rows.items()},
          [(s["lip_r_with_jawOpen"], s["warp_lip_r_with_jawOpen"]) for s in result["speech"]], flush=True)
    (work / "result.json").write_text(json.dumps(out, indent=1, default=str))
