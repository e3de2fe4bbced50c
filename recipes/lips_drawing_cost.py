"""Where the lip net's r is lost between its opening and the lips drawn on a person's face (docs/lips.md, "What
drawing costs"). Per fold of recipes/lips_folds.json a lip net is trained without the fold's people (3 members,
no synthetic half: this needs corpus/talking only), then on each fold person's clips, against their filmed lip
gap (r at the best lag within +-8 frames, mean over a person's clips, then over the 13 people):

- alone: the net's opening in z-units;
- standard: the gap that student-4-whisper, wearing the net, draws on the standard face (what the head solves on);
- person: the same motion drawn on the person's own face (what bench lips scores);
- person-solved: the head solving its opening on the person's own face instead of the standard one.

    python recipes/lips_drawing_cost.py [OUT]   (default runs/lips-drawing; about 10 min on 2 cores)
"""

import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from talkhead.face.template import fit_rig
from talkhead.motion import lipnet
from talkhead.motion.data.talking import clip_arrays, lagged_r, motion_gap
from talkhead.motion.model import load
from talkhead.motion.stream import MotionConfig, motion_from_audio
from talkhead.motion.train.lipnet import LipNetTrainConfig, gap_clips, train_lipnet

CORPUS = "corpus/talking"
FOLDS = json.load(open("recipes/lips_folds.json"))["folds"]


def person_face(neutral: np.ndarray):
    """``lipnet._standard_face``'s three arrays for the face whose neutral landmarks are ``neutral``."""
    rig = fit_rig(neutral)
    turn = lambda x: (x[..., lipnet._LIPS, :] @ rig.rotation.T)[..., :2]  # noqa: E731
    return turn(rig.points), turn(rig.basis), turn(rig.seal)


def fold_head(out: Path, k: int) -> Path:
    path = out / f"fold{k}.safetensors"
    if not path.with_suffix(".log.jsonl").exists():
        for f in out.glob(f"fold{k}.*"):
            f.unlink()
        cfg = replace(LipNetTrainConfig(), members=3, synthetic_share=0.0, hold_out=tuple(FOLDS[k]), seed=0)
        train_lipnet(CORPUS, path, cfg, progress=False)
    return path


def scores(out: Path) -> dict:
    data, _ = gap_clips(CORPUS, (), 0)
    index = {row["id"]: i for i, row in enumerate(data.rows)}
    rows = [json.loads(line) for line in open(Path(CORPUS) / "manifest.jsonl")]
    people: dict[str, dict[str, list[float]]] = {}
    standard = lipnet._standard_face
    for k, hold in enumerate(FOLDS):
        head_path = fold_head(out, k)
        model = load(f"student-4-whisper+{head_path}")
        head = lipnet.load_head(head_path)
        for row in rows:
            if row["person"] not in hold or row["id"] not in index:
                continue
            a = clip_arrays(CORPUS, row)
            real, valid, neutral = a["gap"], a["valid"], np.asarray(row["neutral"], np.float32)
            wav = a["audio_filmed"].astype(np.float32) / 32767
            i = index[row["id"]]
            z = head.opening(data.feats[i][0][None])[0].numpy()
            motion = motion_from_audio(model, wav, MotionConfig(seed=0))
            std_gap = lipnet.drawn_gap(torch.from_numpy(motion).float()).numpy()
            lipnet._standard_face = lambda n=neutral: tuple(torch.as_tensor(x, dtype=torch.float32)
                                                            for x in person_face(n))
            try:
                solved = motion_from_audio(model, wav, MotionConfig(seed=0))
            finally:
                lipnet._standard_face = standard
            got = {"alone": z, "standard": std_gap, "person": motion_gap(neutral, motion),
                   "person-solved": motion_gap(neutral, solved)}
            mine = people.setdefault(row["person"], {})
            for name, pred in got.items():
                mine.setdefault(name, []).append(lagged_r(real, pred, valid, 8)[1])
            print(row["id"], {n: round(v[-1], 3) for n, v in mine.items()}, flush=True)
    per = {p: {n: float(np.mean(v)) for n, v in d.items()} for p, d in people.items()}
    names = next(iter(per.values())).keys()
    return {"people": per, "mean": {n: round(float(np.mean([d[n] for d in per.values()])), 4) for n in names},
            "lowest": {n: round(float(min(d[n] for d in per.values())), 4) for n in names}}


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "runs/lips-drawing")
    out.mkdir(parents=True, exist_ok=True)
    result = scores(out)
    (out / "result.json").write_text(json.dumps(result, indent=1))
    print(json.dumps({"mean": result["mean"], "lowest": result["lowest"]}, indent=1))
