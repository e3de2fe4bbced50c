"""ONNX export of a trained engine: onnxruntime samples and decodes what torch does."""

from __future__ import annotations

import numpy as np
import torch

from talkhead.cli import main
from talkhead.latent.data import load_faces
from talkhead.latent.engine import load_engine
from talkhead.latent.onnx import OnnxEngine


def test_onnxruntime_matches_torch(tiny_engine_run, tiny_faces, tmp_path, capsys):
    path = tiny_engine_run / "student-1.safetensors"
    assert main(["latent", "export", str(path), "--out", str(tmp_path)]) == 0
    assert (tmp_path / "denoiser.onnx").is_file() and (tmp_path / "decoder.onnx").is_file()
    eng = load_engine(path)
    ort = OnnxEngine(tmp_path, eng, threads=1)
    clip = load_faces(tiny_faces, "heldout")[0]
    ref = eng.encode(clip["reference"][None])
    m = torch.from_numpy(clip["motion"][:5])  # a batch size the export never saw
    noise = torch.randn((5, *ref.shape[1:]), generator=torch.Generator().manual_seed(2))
    a, b = eng.sample(ref, m, noise), ort.sample(ref, m, noise)
    assert torch.allclose(a, b, atol=1e-3)
    assert np.abs(eng.decode(a).astype(int) - ort.decode(a)).max() <= 1
