"""How closely do filmed people's lips follow the textbook? The phone guard of issue 46 on real faces.

`bench real` scores a motion model by jawOpen (and by the lip gap it draws) against the rig of the aligned phones:
the textbook openness of each phone. This asks the same of people filmed talking: the GRID clips of the talking
corpus, whose sentences their file names spell, are aligned to their own (synchronised) speech, and the lips the
capture fitted to their frames are scored against that rig as `bench real` scores a model; beside them the
model alone, and the model wearing the lip net that never heard the person (the fold's net, or the net on
everyone for people no net learnt from).

    python recipes/textbook_lips.py corpus/talking runs/lipnet-s01 --out runs/textbook
    (RUN/fold0..3/lips-whisper.safetensors and RUN/all/lips-whisper.safetensors: recipes/lipnet.sh's nets)

Writes OUT/textbook.json; the aligned clips go to OUT/aligned (a corpus `bench real --data` reads).
"""

from __future__ import annotations

import argparse
import json
import wave
from pathlib import Path

import numpy as np
import torch

from talkhead.metrics import pearson
from talkhead.motion.data.corpus import load_manifest
from talkhead.motion.data.real import AlignConfig, align_folder
from talkhead.motion.data.talking import clip_arrays, lagged_r
from talkhead.motion.data.windows import load_corpora
from talkhead.motion.lipnet import drawn_gap
from talkhead.motion.model import load
from talkhead.rig.spec import SPEC
from talkhead.util import atomic_write

# GRID's grammar: command, colour, preposition, letter, digit, adverb, one character each in the file name.
WORDS = [dict(b="bin", l="lay", p="place", s="set"), dict(b="blue", g="green", r="red", w="white"),
         dict(a="at", b="by", i="in", w="with"), None, None, dict(a="again", n="now", p="please", s="soon")]
LETTERS = dict(a="ay", b="bee", c="see", d="dee", e="ee", f="f", g="gee", h="aitch", i="eye", j="jay", k="kay",
               l="ell", m="em", n="en", o="oh", p="pee", q="queue", r="are", s="ess", t="tee", u="you", v="vee",
               x="ex", y="why", z="zed")
DIGITS = dict(zip("123456789z", "one two three four five six seven eight nine zero".split()))


def grid_sentence(code: str) -> str:
    """'bbaf2n' -> 'bin blue at eff two now'."""
    c, col, prep, letter, digit, adv = code
    return " ".join([WORDS[0][c], WORDS[1][col], WORDS[2][prep], LETTERS[letter], DIGITS[digit], WORDS[5][adv]])


def _write_wav(path: Path, pcm: np.ndarray) -> None:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1), w.setsampwidth(2), w.setframerate(16_000)
        w.writeframes(pcm.astype("<i2").tobytes())


def aligned_corpus(talking: Path, out: Path) -> dict[str, dict]:
    """Each GRID clip's synchronised speech, aligned to its sentence -> OUT (a corpus); {id: talking row}."""
    rows = {r["id"]: r for r in load_manifest(talking) if "grid" in r["id"]}
    audio = out / "audio"
    audio.mkdir(parents=True, exist_ok=True)
    lines = []
    for cid, row in rows.items():
        _write_wav(audio / f"{cid}.wav", clip_arrays(talking, row)["audio"])
        lines.append(f"{cid}: {grid_sentence(cid.rsplit('_', 1)[1])}")
    (out / "transcripts.txt").write_text("\n".join(lines) + "\n")
    _, skipped = align_folder(audio, out / "transcripts.txt", out / "corpus", AlignConfig(speaker="grid"))
    if skipped:
        print("not aligned:", skipped)
    return rows


def net_for(person: str, folds: list[list[str]], nets: Path) -> Path:
    """The net that never heard ``person``: its fold's, or the net on everyone for a measure-only person."""
    k = next((i for i, f in enumerate(folds) if person in f), None)
    return nets / ("all" if k is None else f"fold{k}") / "lips-whisper.safetensors"


@torch.no_grad()
def sample(spec: str, audio: torch.Tensor) -> np.ndarray:
    model = load(spec)
    a = model.norm.audio(audio)[None]
    gen = torch.Generator().manual_seed(0)
    return model.sample(a, model.init_noise(1, len(audio), gen), generator=gen)[0].numpy()


def scores(a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    """jawOpen r and the drawn lip gap's r (as `bench real`), for motions [T, 58]."""
    g = lambda m: drawn_gap(torch.as_tensor(m, dtype=torch.float32)).numpy()  # noqa: E731
    return {"jaw_r": pearson(a[:, SPEC["jawOpen"]], b[:, SPEC["jawOpen"]]), "gap_r": pearson(g(a), g(b))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("talking", type=Path)
    ap.add_argument("nets", type=Path, help="a recipes/lipnet.sh run: fold0..3/ and all/")
    ap.add_argument("--folds", type=Path, default=Path("recipes/lips_folds.json"))
    ap.add_argument("--model", default="student-4-whisper")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    folds = json.loads(args.folds.read_text())["folds"]
    rows = aligned_corpus(args.talking, args.out / "aligned")
    corpus = [args.out / "aligned" / "corpus"]
    val = load_corpora(corpus, None, load(args.model).hearing)
    tapped = load_corpora(corpus, None, load(f"{args.model}+{args.nets / 'all/lips-whisper.safetensors'}").hearing)
    clips, pooled = [], {k: ([], []) for k in ("filmed", "model", "model+net")}
    for audio, taps, rig, vrow in zip(val.audio, tapped.audio, val.motion, val.rows):
        row, rig = rows[vrow["id"]], rig.numpy()
        arr = clip_arrays(args.talking, row)
        net = net_for(row["person"], folds, args.nets)
        motions = {"filmed": arr["motion"], "model": sample(args.model + "+none", audio),
                   "model+net": sample(f"{args.model}+{net}", taps)}
        n = min(len(rig), *(len(m) for m in motions.values()))
        ok = arr["valid"][:n]  # frames where the face was seen and the mouth not covered
        got = {k: scores(m[:n][ok], rig[:n][ok]) for k, m in motions.items()}
        rig_gap = drawn_gap(torch.as_tensor(rig[:n], dtype=torch.float32)).numpy()
        # The lips' own gap in the frames (landmarks), and at the lag that suits them best: lips lead sound.
        got["filmed_landmarks"] = {"gap_r": pearson(arr["gap"][:n][ok], rig_gap[ok]),
                                   "best_lag_gap_r": lagged_r(arr["gap"][:n], rig_gap, ok, max_lag=4)[1]}
        for k, m in motions.items():
            pooled[k][0].append(m[:n][ok]), pooled[k][1].append(rig[:n][ok])
        clips.append({"id": row["id"], "person": row["person"], "net": str(net), "frames": int(ok.sum()), **got})
        print(row["id"], {k: {m: round(v, 3) for m, v in s.items()} for k, s in got.items()})
    summary = {k: {"pooled": scores(np.concatenate(a), np.concatenate(b)),
                   "clip_mean": {m: float(np.mean([c[k][m] for c in clips])) for m in ("jaw_r", "gap_r")}}
               for k, (a, b) in pooled.items()}
    summary["filmed_landmarks"] = {"clip_mean": {m: float(np.mean([c["filmed_landmarks"][m] for c in clips]))
                                                 for m in ("gap_r", "best_lag_gap_r")}}
    print(json.dumps(summary, indent=1))
    atomic_write(args.out / "textbook.json", json.dumps({"model": args.model, "summary": summary, "clips": clips},
                                                        indent=1).encode())


if __name__ == "__main__":
    main()
