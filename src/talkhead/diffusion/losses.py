"""Training losses, one short function each, in x0 form over any data shaped [B, T, ...]:
the diffusion objective and the distillation targets."""

from __future__ import annotations

import torch
from torch import Tensor

from talkhead.diffusion.denoiser import Denoiser
from talkhead.diffusion.samplers import sample_ddim
from talkhead.diffusion.schedule import NoiseSchedule


def per_sample_error(pred: Tensor, target: Tensor, velocity: float = 0.0) -> Tensor:
    """Mean squared error per sample [B], plus ``velocity`` times that of the differences along axis 1 (time)."""
    dims = tuple(range(1, pred.dim()))
    err = (pred - target).pow(2).mean(dim=dims)
    if velocity:
        err = err + velocity * (pred.diff(dim=1) - target.diff(dim=1)).pow(2).mean(dim=dims)
    return err


def diffusion_loss(denoiser: Denoiser, batch: dict[str, Tensor], generator: torch.Generator,
                   audio_drop: float = 0.1, snr_weight: tuple[float, float] | None = None,
                   velocity: float = 0.0, drop_key: str = "audio_mask", schedule: NoiseSchedule | None = None) -> Tensor:
    """The DDPM objective in x0 form: MSE between x0 and its prediction from x_t, t ~ U{0..T-1}.

    ``batch`` holds "x0" and the conditioning. A share ``audio_drop`` of rows get ``drop_key`` False
    (the network drops that conditioning: classifier-free guidance's unconditional model).
    ``snr_weight=(lo, hi)`` weights each sample by its SNR clipped to [lo, hi] (truncated SNR,
    Salimans & Ho 2022; plain x0 MSE under-trains the nearly clean steps, whose errors show as
    jitter). ``velocity`` adds a frame-difference term: a temporal regulariser on the prediction.
    ``schedule`` defaults to the denoiser's own (a DDP wrapper hides it).
    """
    schedule = schedule or denoiser.schedule
    x0 = batch["x0"]
    b = x0.shape[0]
    n = schedule.num_train_timesteps
    t = torch.randint(0, n, (b,), generator=generator).to(x0.device)
    noise = torch.randn(x0.shape, generator=generator).to(x0)
    x_t = schedule.add_noise(x0, noise, t)
    keep = (torch.rand(b, generator=generator) >= audio_drop).to(x0.device)
    cond = {k: v for k, v in batch.items() if k != "x0"}
    pred = denoiser(x_t, t, {**cond, drop_key: keep})
    err = per_sample_error(pred, x0, velocity)
    if snr_weight is not None:
        err = err * schedule.snr(t.cpu()).clamp(*snr_weight).to(err)
    return err.mean()


def progressive_target(x_t: Tensor, x_s: Tensor, abar_t: Tensor, abar_s: Tensor) -> Tensor:
    """The x0 for which one DDIM step x_t -> abar_s lands on x_s (Salimans & Ho 2022, eq. 8 in x0 form)."""
    ratio = ((1 - abar_s) / (1 - abar_t).clamp_min(1e-8)).sqrt()
    den = abar_s.sqrt() - ratio * abar_t.sqrt()
    return (x_s - ratio * x_t) / den.clamp_min(1e-6)


@torch.no_grad()
def segment_targets(denoise, schedule: NoiseSchedule, x_t: Tensor, idx: Tensor, paths: list[list[int]],
                    cond: dict[str, Tensor]) -> tuple[Tensor, Tensor]:
    """Progressive distillation's targets over uneven segments: sample ``j`` is at the start of a student step
    that replaces the teacher's DDIM run ``paths[idx[j]]`` (its timesteps, then where it stops; -1: clean).
    Returns each sample's one-step x0 target and abar at its start, [B, 1, ...].

    ``denoise(x, t, cond)`` is the teacher. Samples are grouped by step, so each teacher call covers one group:
    the teacher's work is the samples' own segment lengths, whether the split is even or not.
    """
    ones = (1,) * (x_t.ndim - 1)
    target, abar_t = torch.empty_like(x_t), torch.empty(x_t.shape[0], *ones)
    for i in idx.unique().tolist():
        m, path = idx == i, paths[i]
        sub = {k: v[m] for k, v in cond.items()}
        x_s = sample_ddim(lambda x, t: denoise(x, t, sub), x_t[m], schedule, path[:-1], to=path[-1])
        a_t, a_s = (schedule.abar(torch.full((int(m.sum()),), t)).reshape(-1, *ones) for t in (path[0], path[-1]))
        target[m], abar_t[m] = progressive_target(x_t[m], x_s, a_t, a_s), a_t
    return target, abar_t


def progressive_loss(student_x0: Tensor, target_x0: Tensor, abar_t: Tensor, velocity: float = 0.0) -> Tensor:
    """x0 regression with truncated-SNR weighting max(SNR, 1), capped so near-clean steps don't dominate.

    ``velocity`` adds the frame-difference error: a few-step student's misses are otherwise
    frame-to-frame noise, which plain MSE barely sees but the eye does (jitter).
    """
    weight = (abar_t / (1 - abar_t).clamp_min(1e-8)).clamp(1.0, 5.0)  # abar_t [B, 1, ...]
    return (weight.flatten() * per_sample_error(student_x0, target_x0, velocity)).mean()


def consistency_loss(online_x0: Tensor, target_x0: Tensor) -> Tensor:
    """Consistency distillation (Song et al. 2023): the student's x0 at t_{n+1} matches the EMA target's at t_n."""
    return (online_x0 - target_x0.detach()).pow(2).mean()


def trajectory_loss(student_out: Tensor, teacher_out: Tensor, velocity: float = 0.0) -> Tensor:
    """Whole-sampler distillation (Luhman & Luhman 2021): the student's N-step output against the teacher's, same noise."""
    return per_sample_error(student_out, teacher_out.detach(), velocity).mean()
