"""Face crops for the latent engine: real photos driven through a real corpus, one crop per motion frame,
aligned and tight on the face, identities held out by photo, resumable, and refused when settings change."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
from PIL import Image

from talkhead.cli import main
from talkhead.latent.data import load_faces
from talkhead.motion.data.corpus import load_manifest


def _photos(tmp_path: Path) -> list[Path]:
    png = Path(importlib.util.find_spec("skimage").origin).parent / "data" / "astronaut.png"
    mirrored = tmp_path / "mirrored.png"  # a second identity for the split (a test-only stand-in)
    Image.open(png).transpose(Image.Transpose.FLIP_LEFT_RIGHT).save(mirrored)
    return [png, mirrored]


def test_faces_are_rendered_per_motion_frame_and_split_by_identity(tiny_corpus, tmp_path, capsys):
    photos, out = _photos(tmp_path), tmp_path / "faces"
    args = ["data", "faces", *map(str, photos), "--corpus", str(tiny_corpus), "--out", str(out), "--size", "64",
            "--clips", "3", "--heldout", "mirrored.png", "--quiet"]
    assert main(args) == 0
    train, held = load_faces(out, "train"), load_faces(out, "heldout")
    assert len(train) == len(held) == 3 and {c["row"]["photo_name"] for c in held} == {"mirrored.png"}
    corpus = {r["id"]: r for r in load_manifest(tiny_corpus)}
    for c in train + held:
        t = corpus[c["row"]["clip"]]["frames"]
        assert c["frames"].shape == (t, 64, 64, 3) and c["frames"].dtype == np.uint8 and c["motion"].shape == (t, 58)
        assert c["reference"].shape == (64, 64, 3)
    a = train[0]["frames"].astype(np.float32)
    assert np.abs(np.diff(a, axis=0)).mean() > 0.5  # the face moves with the motion
    assert a[:, 16:48, 16:48].std() > 20  # tight on a face, not a flat background
    shards = sorted((out / "shards").iterdir())
    stamp = [s.stat().st_mtime_ns for s in shards]
    assert main(args) == 0  # a rerun keeps the finished shards
    assert [s.stat().st_mtime_ns for s in shards] == stamp
    assert main([("96" if a == "64" else a) for a in args]) == 2  # other settings are refused, not mixed in
    assert "other settings" in capsys.readouterr().err
    assert main([*args[:-2], "nobody.png", "--quiet"]) == 2  # a held-out name that is no given photo
    assert "nobody.png" in capsys.readouterr().err
