"""ONNX export of a latent engine (one denoiser call and the decoder), run with onnxruntime.

The exported denoiser takes raw motion and returns the clipped x0 estimate, parameterisation and
normalisation inside, so the sampling loop around it is the diffusion core's own ``sample_ddim``
whichever runtime evaluates the network. Needs the ``onnx`` extra (onnx, onnxscript, onnxruntime).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import Tensor, nn

from talkhead.diffusion.samplers import sample_ddim
from talkhead.errors import InputError
from talkhead.latent.engine import LatentEngine, load_engine


class _Denoise(nn.Module):
    def __init__(self, engine: LatentEngine) -> None:
        super().__init__()
        self.engine = engine

    def forward(self, x: Tensor, t: Tensor, reference: Tensor, motion: Tensor, geometry: Tensor | None = None) -> Tensor:
        return self.engine.denoise(x, t, self.engine.cond(reference, motion, geometry))


class _Decode(nn.Module):
    def __init__(self, engine: LatentEngine) -> None:
        super().__init__()
        self.engine = engine

    def forward(self, z: Tensor) -> Tensor:
        return self.engine.decode_float(z)


def _require(module: str) -> None:
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise InputError(f"ONNX needs the {module} package: pip install 'talkhead[onnx]'")


def export_onnx(engine: str | Path | LatentEngine, out: str | Path) -> list[Path]:
    """Write ``denoiser.onnx`` and ``decoder.onnx`` (dynamic batch) into ``out``; returns their paths."""
    _require("onnxscript")
    eng = engine if isinstance(engine, LatentEngine) else load_engine(engine)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    b, lat = 2, eng.cfg.latent
    side = eng.vae.cfg.size // 8
    x = torch.randn(b, lat, side, side)
    args = (x, torch.full((b,), 999, dtype=torch.long), torch.randn(b, lat, side, side), torch.zeros(b, 58))
    names = ["x", "t", "reference", "motion"]
    if eng.cfg.geometry:
        args, names = (*args, torch.zeros(b, eng.cfg.geometry, side, side)), [*names, "geometry"]
    eng.schedule.abar(0)  # the abar table, built now, is a constant of the graph (not a traced cumprod)
    batch = torch.export.Dim("batch", min=1, max=1024)
    paths = [out / "denoiser.onnx", out / "decoder.onnx"]
    with torch.no_grad():
        for module, inputs, names, path in [
                (_Denoise(eng), args, names, paths[0]),
                (_Decode(eng), (x,), ["z"], paths[1])]:
            tmp = path.with_suffix(".onnx.tmp")
            torch.onnx.export(module.eval(), inputs, str(tmp), input_names=names, output_names=["out"],
                              dynamic_shapes={n: {0: batch} for n in names}, dynamo=True, external_data=False,
                              verbose=False)
            tmp.replace(path)  # written whole or not at all
    return paths


class OnnxEngine:
    """An exported engine under onnxruntime: ``sample`` and ``decode`` as ``LatentEngine``'s."""

    def __init__(self, folder: str | Path, engine: LatentEngine, threads: int = 0) -> None:
        _require("onnxruntime")
        import onnxruntime as ort

        opts = ort.SessionOptions()
        if threads:
            opts.intra_op_num_threads = threads
        folder = Path(folder)
        self.denoiser = ort.InferenceSession(str(folder / "denoiser.onnx"), opts, providers=["CPUExecutionProvider"])
        self.decoder = ort.InferenceSession(str(folder / "decoder.onnx"), opts, providers=["CPUExecutionProvider"])
        self.schedule, self.timesteps, self.from_diffusion = engine.schedule, engine.timesteps, engine.from_diffusion

    def sample(self, reference: Tensor, motion: Tensor, noise: Tensor, timesteps: list[int] | None = None,
               geometry: Tensor | None = None) -> Tensor:
        ref = np.ascontiguousarray(reference.expand(len(motion), -1, -1, -1).numpy())
        m = motion.numpy()

        def denoise(x: Tensor, t: Tensor) -> Tensor:
            feeds = {"x": x.numpy(), "t": t.numpy(), "reference": ref, "motion": m}
            if geometry is not None:
                feeds["geometry"] = np.ascontiguousarray(geometry.numpy())
            return torch.from_numpy(self.denoiser.run(None, feeds)[0])

        x = sample_ddim(denoise, noise.contiguous(), self.schedule, timesteps or self.timesteps)
        return self.from_diffusion(x, reference)

    def decode(self, z: Tensor) -> np.ndarray:
        x = self.decoder.run(None, {"z": np.ascontiguousarray(z.numpy())})[0]
        return (np.clip(x, 0, 1) * 255 + 0.5).astype(np.uint8).transpose(0, 2, 3, 1)
