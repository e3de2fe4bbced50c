"""The latent face engine as one object and one file: VAE, denoiser, normalisation and sampling steps.

``LatentEngine.sample`` turns a reference latent and motion rows into frame latents with the
diffusion core's DDIM (the teacher on 50 steps, a student on its distilled 1, 2 or 4); ``decode``
turns latents into 128 px crops. ``save_engine``/``load_engine`` write and rebuild the whole thing
from one safetensors file (weights, configs, statistics and steps in its metadata), so a checkpoint
describes itself and a student file stands alone.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import Tensor, nn

from talkhead.checkpoint import (
    check_weights,
    dataclass_from,
    described,
    load_checkpoint,
    resolve_named,
    save_checkpoint,
)
from talkhead.config import MODELS_DIR
from talkhead.diffusion.denoiser import Denoiser
from talkhead.diffusion.samplers import sample_ddim
from talkhead.diffusion.schedule import NoiseSchedule
from talkhead.errors import InputError
from talkhead.latent.net import LatentConfig, LatentNet
from talkhead.latent.vae import FaceVAE, VAEConfig, as_batch

KIND = "latent-engine"
LATENT_DIR = MODELS_DIR / "latent"  # the shipped engines
CLIP = 5.0  # |x0| bound in normalised latent units (the data lie within about 4)


class LatentEngine(nn.Module):
    """Reference crop + motion [T, 58] -> frame latents -> crops; latents are normalised per channel."""

    def __init__(self, vae: FaceVAE, cfg: LatentConfig = LatentConfig(), stats: dict | None = None,
                 timesteps: list[int] | None = None) -> None:
        super().__init__()
        self.vae, self.cfg = vae.eval().requires_grad_(False), cfg
        self.net = LatentNet(cfg)
        self.schedule = NoiseSchedule(cfg.timesteps)
        self.denoiser = Denoiser(self.net, self.schedule, cfg.prediction)
        stats = stats or {}
        self.register_buffer("lat_mean", torch.tensor(stats.get("lat_mean", [0.0] * cfg.latent)))
        self.register_buffer("lat_std", torch.tensor(stats.get("lat_std", [1.0] * cfg.latent)))
        self.register_buffer("mot_mean", torch.tensor(stats.get("mot_mean", [0.0] * 58)))
        self.register_buffer("mot_std", torch.tensor(stats.get("mot_std", [1.0] * 58)))
        self.register_buffer("res_std", torch.tensor(stats.get("res_std", [1.0] * cfg.latent)))
        self.timesteps = list(timesteps or self.schedule.timesteps(50))
        # A bridge (after LeapTalk): sampling starts at timesteps[0] from the reference noised to that
        # level, not from pure noise at T. An eps network's x0 at t ~ T is noise over alpha ~ 0; from
        # t = 800 with the person's reference in x_t it is already close (docs/avatar.md).
        self.bridge = False
        self.meta: dict = {}  # a loaded file's metadata (name, provenance); empty for a new engine

    def stats(self) -> dict:
        return {k: getattr(self, k).tolist() for k in ("lat_mean", "lat_std", "mot_mean", "mot_std", "res_std")}

    @torch.no_grad()
    def encode_many(self, crops: np.ndarray, pixels: int = 1 << 21) -> Tensor:
        """``encode`` over any number of crops, ``pixels`` of them at a time: the encoder's first layers hold 32
        channels at full size, so 256 crops of 256 px at once took 7 GB (a phone's video), 32 take 0.3 GB."""
        batch = max(1, pixels // max(1, crops.shape[1] * crops.shape[2]))
        return torch.cat([self.encode(crops[i:i + batch]) for i in range(0, len(crops), batch)])

    @torch.no_grad()
    def encode(self, crops: np.ndarray) -> Tensor:
        """uint8 crops [B, S, S, 3] -> normalised latents [B, L, S/8, S/8] (the VAE's mean)."""
        z = self.vae.encode(as_batch(crops))[0]
        return (z - self.lat_mean[:, None, None]) / self.lat_std[:, None, None]

    def decode_float(self, z: Tensor, norms: Tensor | None = None) -> Tensor:
        """Normalised latents -> images [B, 3, S, S] in [0, 1] (differentiable: training's pixel terms);
        ``norms``: the decoder's group-norm statistics to use (``FaceVAE.decode``)."""
        return self.vae.decode(z * self.lat_std[:, None, None] + self.lat_mean[:, None, None], norms)

    @torch.no_grad()
    def decode(self, z: Tensor, norms: Tensor | None = None) -> np.ndarray:
        """Normalised latents [B, L, h, w] -> uint8 crops [B, S, S, 3]."""
        x = self.decode_float(z, norms).mul_(255).add_(0.5).clamp_(0, 255)
        return x.to(torch.uint8).permute(0, 2, 3, 1).numpy()

    @torch.no_grad()
    def norm_stats(self, z: Tensor) -> Tensor:
        """The decoder's group-norm statistics [B, K, G, 2] decoding normalised latents ``z`` whole."""
        return self.vae.norm_stats(z * self.lat_std[:, None, None] + self.lat_mean[:, None, None])

    def to_diffusion(self, z: Tensor, reference: Tensor) -> Tensor:
        """Frame latents -> what the diffusion models: their change from the reference, unit scale (``residual``)."""
        return (z - reference) / self.res_std[:, None, None] if self.cfg.residual else z

    def from_diffusion(self, x: Tensor, reference: Tensor) -> Tensor:
        """The inverse of ``to_diffusion``: a sample -> frame latents."""
        return reference + x * self.res_std[:, None, None] if self.cfg.residual else x

    def cond(self, reference: Tensor, motion: Tensor, geometry: Tensor | None = None,
             context: Tensor | None = None) -> dict[str, Tensor]:
        """The network's conditioning: reference latents [1 or B, L, h, w], raw motion [B, 58], mouth maps, context."""
        b = motion.shape[0]
        out = {"reference": reference.expand(b, -1, -1, -1), "motion": (motion - self.mot_mean) / self.mot_std}
        if self.cfg.geometry:
            if geometry is None:
                raise ValueError("this engine also takes the mouth maps (engine.maps)")
            out["geometry"] = geometry
        if self.cfg.context:
            if context is None:
                raise ValueError("this engine also takes context latents (an avatar's masked frames)")
            out["context"] = context
        return out

    def anchor(self, crop: np.ndarray) -> dict:
        """What a face's frames are drawn from: its reference latent [1, L, h, w] (and rig, for the mouth maps)."""
        from talkhead.face.framing import reference_rig

        return {"latent": self.encode(crop[None]), "rig": reference_rig(crop) if self.cfg.geometry else None}

    def maps(self, anchor: dict, motion: Tensor | np.ndarray) -> Tensor | None:
        """The mouth maps of motion [B, 58] on the anchor's face (None for an engine without them)."""
        if not self.cfg.geometry:
            return None
        from talkhead.face.framing import mouth_maps

        return mouth_maps(anchor["rig"], motion, self.vae.cfg.size, self.vae.cfg.size // self.vae.down)

    def denoise(self, x: Tensor, t: Tensor, cond: dict[str, Tensor]) -> Tensor:
        """x0 estimate, clipped: an eps network's x0 at t ~ T is noise over alpha ~ 0 (DDPM clips it too)."""
        return self.denoiser(x, t, cond).clamp(-CLIP, CLIP)

    @torch.no_grad()
    def sample(self, reference: Tensor, motion: Tensor, noise: Tensor, timesteps: list[int] | None = None,
               geometry: Tensor | None = None, context: Tensor | None = None) -> Tensor:
        """Frame latents [B, L, h, w] for motion [B, 58] from starting noise [B, L, h, w] (DDIM, eta 0)."""
        cond = self.cond(reference, motion, geometry, context)
        steps = timesteps or self.timesteps
        if self.bridge:
            base = self.to_diffusion(reference, reference).expand_as(noise)
            noise = self.schedule.add_noise(base, noise, torch.full((noise.shape[0],), steps[0]))
        x = sample_ddim(lambda x, t: self.denoise(x, t, cond), noise, self.schedule, steps)
        return self.from_diffusion(x, reference)


def engine_tensors(engine: LatentEngine) -> tuple[dict[str, Tensor], dict]:
    """The engine's weights (``vae.*``, ``net.*``) and the metadata that rebuilds it (``engine_from``)."""
    tensors = {f"vae.{k}": v for k, v in engine.vae.state_dict().items()}
    tensors.update({f"net.{k}": v for k, v in engine.net.state_dict().items()})
    return tensors, {"vae": engine.vae.cfg, "latent": engine.cfg, "stats": engine.stats(), "timesteps": engine.timesteps,
                     "bridge": engine.bridge}


def engine_from(tensors: dict[str, Tensor], meta: dict) -> LatentEngine:
    """Rebuild an engine from ``engine_tensors``' weights and metadata (JSON-decoded). Every size the metadata
    gives is checked before anything is built from it: a file may come from anyone (a server's upload)."""
    part = {p: {k[4:]: v for k, v in tensors.items() if k.startswith(p + ".")} for p in ("vae", "net")}
    with described(meta.get("name", "the file"), "latent engine"):
        vcfg, lcfg = dataclass_from(VAEConfig, meta["vae"]), dataclass_from(LatentConfig, meta["latent"])
        steps = [int(t) for t in meta["timesteps"]]
        if not 1 <= lcfg.timesteps <= 100_000 or not 1 <= len(steps) <= 1000 or \
                any(not 0 <= t < lcfg.timesteps for t in steps):
            raise ValueError(f"sampling steps {steps[:8]} do not fit a schedule of {lcfg.timesteps}")
        check_weights(lambda: FaceVAE(vcfg), part["vae"], "its VAE")
        check_weights(lambda: LatentNet(lcfg), part["net"], "its denoiser")
        vae = FaceVAE(vcfg)
        vae.load_state_dict(part["vae"])
        engine = LatentEngine(vae, lcfg, meta["stats"], steps)
        engine.net.load_state_dict(part["net"])
    engine.bridge = bool(meta.get("bridge", False))
    engine.meta = meta
    return engine.eval()


def save_engine(path: str | Path, engine: LatentEngine, meta: dict, dtype: torch.dtype | None = None) -> None:
    """One file: VAE and denoiser weights, statistics, configs and sampling steps, plus ``meta`` (provenance)."""
    tensors, own = engine_tensors(engine)
    save_checkpoint(path, tensors, {"kind": KIND, **own, **meta}, dtype)


def resolve_engine(name_or_path: str | Path) -> Path:
    """A shipped latent engine name (``latent-student-2``, ...) or a checkpoint path."""
    return resolve_named(name_or_path, LATENT_DIR, "latent engine")


def load_engine(name_or_path: str | Path) -> LatentEngine:
    """Rebuild a ``LatentEngine`` from a shipped name or a file ``save_engine`` wrote."""
    path = resolve_engine(name_or_path)
    tensors, meta = load_checkpoint(path)
    if meta.get("kind") != KIND:
        raise InputError(f"{path} is not a latent face engine checkpoint")
    return engine_from(tensors, meta)
