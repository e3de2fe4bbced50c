"""The live lip net taught by the offline one (docs/lips.md, "The live net taught by the offline net"): the live net
(one-frame Whisper blocks, one frame of look-ahead, 3 members, half of each batch synthetic) trained per fold of
recipes/lips_folds.json with the synthetic half's target either the rig's lip gap (as shipped) or the opening the
offline fold net (``runs/lipnet-x4b/foldK``, which never heard the fold's people) reads from the whole clip: real
people's way of opening, on 20 minutes of speech no one filmed. Scored by the live net alone on the fold people's
clips as a live session hears them, each by the fold net that never heard them (z-scored gap, best lag within +-8
frames). Needs corpus/talking and corpus/synth (recipes/lipnet.sh makes them).

    python recipes/lipnet_live_teacher.py rig teacher teacher-real rig:1 teacher-real:1   # 4-12 min each, 2 cores
    python recipes/lipnet_live_teacher.py teacher-real:0:0.25   # a quarter of each batch synthetic (2026-12-06, evening)
    python recipes/lipnet_live_teacher.py teacher-real:0:0.5:2 teacher-real:0:0.5:3   # 2 and 3 frames of look-ahead

"teacher-real": the offline fold nets trained here on the real clips alone, so that they never heard the synthetic
clips they label (the shipped recipe's fold nets learnt them: on them their opening is the rig's gap, r 0.99).

Results: runs/lipnet-live-teacher/results.jsonl.
"""

import sys
from dataclasses import replace
from pathlib import Path

from lipnet_encoder import FOLDS, fold_result, person_r, run_settings, train

from talkhead.motion.lipnet import LipHead, load_head
from talkhead.motion.train.lipnet import GapClips, LipNetTrainConfig, gap_clips, hearing, synthetic_gap_clips, taught

ROOT = Path("runs/lipnet-live-teacher")
CFG = replace(LipNetTrainConfig(), members=3, view="live", ahead=1)


def teacher(target: str, k: int, hold: tuple[str, ...], real_offline: GapClips) -> LipHead:
    """The offline fold-k net: the shipped recipe's ("teacher": it learnt the synthetic clips too) or one trained
    here on the real clips ``real_offline`` alone ("teacher-real": it never heard the clips it labels)."""
    if target == "teacher":
        return load_head(f"runs/lipnet-x4b/fold{k}/lips-whisper.safetensors")
    net, mean, std = train(real_offline, hold)  # 3 members, no synthetic half
    return LipHead(net, hearing((2,)), mean, std, 0.0, 1.0)


def folds(spec: str) -> dict:
    """``spec``: the target, then ":SEED" for the live nets' seed (default 0), ":SHARE" for the synthetic share of
    each batch (default 0.5) and ":AHEAD" for the frames of look-ahead the live net reads (default 1)."""
    target, seed, share, ahead = (spec.split(":") + ["0", "0.5", "1"][len(spec.split(":")) - 1:])[:4]
    real, _ = gap_clips("corpus/talking", (), 0, "live", hearing(()))
    syn = synthetic_gap_clips("corpus/synth", "live", hearing(()))
    real_offline = gap_clips("corpus/talking", (), 0, "offline", hearing((2,)))[0] if target == "teacher-real" else None
    r: dict[str, float] = {}
    for k, hold in enumerate(FOLDS):
        labelled = (syn if target == "rig"
                    else taught(syn, "corpus/synth", teacher(target, k, tuple(hold), real_offline)))
        net = train(real, tuple(hold), int(seed), replace(CFG, synthetic_share=float(share), ahead=int(ahead)), labelled)
        r.update(person_r([net], [real], lambda p, h=hold: p in h))
    return fold_result("synthetic target", spec, r)


if __name__ == "__main__":
    run_settings(ROOT, folds, sys.argv[1:])
