"""Samplers for any x0-predicting denoiser: pure functions over a timestep list.

A denoiser is any callable ``denoise(x_t [B, ...], t [B] long) -> x0_hat [B, ...]``; conditioning is
closed over by the caller. Every sampler walks the given descending integer timesteps and then
takes one last step to abar = 1 (sigma = 0), so its output is a clean sample (DDIM can stop at
another timestep instead: distillation targets are pieces of a teacher's path). Coefficients are
computed in float64 from the schedule; the state keeps ``x_T``'s dtype and is returned as float32.
``x_T`` is never modified in place.

With the same ``steps`` and "trailing" spacing, these reproduce diffusers' ``DDPMScheduler``
("fixed_small"), ``DPMSolverMultistepScheduler`` (dpmsolver++, order 2, ``final_sigmas_type="zero"``),
``UniPCMultistepScheduler`` (bh2, ``predict_x0=True``, ``final_sigmas_type="zero"``) and
``DDIMScheduler`` (``set_alpha_to_one=True``) for ``prediction_type="sample"``; see
tests/motion/test_samplers.py. One difference: diffusers' DDIM steps from t to t - T // steps
instead of to the next listed timestep, so for ``steps`` not dividing T (e.g. 3) its trailing
trajectory differs from ours; ours always uses consecutive listed timesteps.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch
from torch import Tensor

from talkhead.diffusion.schedule import NoiseSchedule

Denoiser = Callable[[Tensor, Tensor], Tensor]
Callback = Callable[[int, int, Tensor], None]


def _check_timesteps(timesteps: Sequence[int], schedule: NoiseSchedule) -> list[int]:
    ts = [int(t) for t in timesteps]
    if not ts:
        raise ValueError("need at least one timestep")
    if any(a <= b for a, b in zip(ts, ts[1:])):
        raise ValueError(f"timesteps must be strictly descending, got {ts}")
    if ts[0] >= schedule.num_train_timesteps or ts[-1] < 0:
        raise ValueError(f"timesteps must lie in [0, {schedule.num_train_timesteps - 1}], got {ts}")
    return ts


def _abars(schedule: NoiseSchedule, ts: list[int], to: int = -1) -> list[float]:
    # One entry per listed step plus the terminal one: abar = 1 (clean data) unless ``to`` names a timestep.
    abar = schedule.alphas_cumprod
    return [float(abar[t]) for t in ts] + [1.0 if to < 0 else float(abar[to])]


def _sqrt(v):
    """sqrt of a float or a tensor, negatives (round-off) read as 0."""
    return math.sqrt(max(v, 0.0)) if isinstance(v, float) else v.clamp_min(0).sqrt()


def ddim_step(x0: Tensor, x_t: Tensor, abar_t, abar_s, std: float = 0.0) -> Tensor:
    """One DDIM move from abar_t to abar_s given an x0 estimate (Song et al. 2021, eq. 12); abar_s = 1 gives x0.

    The abars are floats or tensors that broadcast against x (per-sample [B, 1, ...]). ``std`` is the
    noise the caller adds afterwards (eta > 0), taken out of the deterministic part here. This is the
    one DDIM formula: samplers, distillation targets and stored teacher samples all use it.
    """
    den = _sqrt(1 - abar_t)
    eps = (x_t - _sqrt(abar_t) * x0) / (max(den, 1e-8) if isinstance(den, float) else den.clamp_min(1e-8))
    return _sqrt(abar_s) * x0 + _sqrt(1 - abar_s - std**2) * eps


def _predict_x0(denoise: Denoiser, x: Tensor, i: int, t: int, callback: Callback | None) -> Tensor:
    x0 = denoise(x, torch.full((x.shape[0],), t, dtype=torch.long, device=x.device))
    if callback is not None:
        callback(i, t, x0)
    return x0


def _randn_like(x: Tensor, generator: torch.Generator | None) -> Tensor:
    # Same call as diffusers' randn_tensor on CPU, so a seeded generator gives the same stream.
    return torch.randn(x.shape, generator=generator, device=x.device, dtype=x.dtype)


def _lambdas(abars: list[float]) -> list[float]:
    # Half log-SNR, lambda = log(alpha / sigma); +inf at the terminal sigma = 0.
    return [0.5 * math.log(a / (1.0 - a)) if a < 1.0 else math.inf for a in abars]


def sample_ddpm(
    denoise: Denoiser,
    x_T: Tensor,
    schedule: NoiseSchedule,
    timesteps: Sequence[int],
    generator: torch.Generator | None = None,
    callback: Callback | None = None,
) -> Tensor:
    """DDPM ancestral sampling, posterior q(x_s | x_t, x0) with "fixed small" variance (Ho et al. 2020)."""
    ts = _check_timesteps(timesteps, schedule)
    abars = _abars(schedule, ts)
    x = x_T
    for i, t in enumerate(ts):
        x0 = _predict_x0(denoise, x, i, t, callback)
        a_t, a_s = abars[i], abars[i + 1]
        # Skipping steps makes the t -> s transition one "big" DDPM step with beta = 1 - abar_t/abar_s.
        beta = 1.0 - a_t / a_s
        c_x0 = math.sqrt(a_s) * beta / (1.0 - a_t)
        c_xt = math.sqrt(1.0 - beta) * (1.0 - a_s) / (1.0 - a_t)
        x = c_x0 * x0 + c_xt * x
        if i < len(ts) - 1:  # the last step has zero posterior variance
            var = (1.0 - a_s) / (1.0 - a_t) * beta
            x = x + math.sqrt(var) * _randn_like(x, generator)
    return x.to(torch.float32)


def sample_ddim(
    denoise: Denoiser,
    x_T: Tensor,
    schedule: NoiseSchedule,
    timesteps: Sequence[int],
    eta: float = 0.0,
    generator: torch.Generator | None = None,
    callback: Callback | None = None,
    to: int = -1,
) -> Tensor:
    """DDIM, deterministic at eta = 0, DDPM-like at eta = 1 (Song et al. 2021, eq. 12).

    ``to`` >= 0 stops the run at that timestep (below the last listed one) instead of at clean data.
    """
    ts = _check_timesteps(timesteps, schedule)
    if to >= ts[-1]:
        raise ValueError(f"a DDIM run over {ts} cannot stop at timestep {to}")
    abars = _abars(schedule, ts, to)
    x = x_T
    for i, t in enumerate(ts):
        x0 = _predict_x0(denoise, x, i, t, callback)
        a_t, a_s = abars[i], abars[i + 1]
        std = eta * math.sqrt((1.0 - a_s) / (1.0 - a_t) * (1.0 - a_t / a_s))
        x = ddim_step(x0, x, a_t, a_s, std)
        if eta > 0:
            # Drawn on every step (std is 0 on the last) to keep the RNG stream aligned with diffusers.
            x = x + std * _randn_like(x, generator)
    return x.to(torch.float32)


def sample_dpmpp_2m(
    denoise: Denoiser,
    x_T: Tensor,
    schedule: NoiseSchedule,
    timesteps: Sequence[int],
    callback: Callback | None = None,
) -> Tensor:
    """DPM-Solver++(2M), multistep second-order data-prediction solver (Lu et al. 2022, alg. 2)."""
    ts = _check_timesteps(timesteps, schedule)
    abars = _abars(schedule, ts)
    lam = _lambdas(abars)
    x, x0_prev = x_T, None
    for i, t in enumerate(ts):
        x0 = _predict_x0(denoise, x, i, t, callback)
        if i == len(ts) - 1:
            # First order into sigma = 0: e^{-h} = 0, so the update is exactly x0_hat.
            x = x0
            break
        s_s = math.sqrt(1.0 - abars[i])
        a_t, s_t = math.sqrt(abars[i + 1]), math.sqrt(1.0 - abars[i + 1])
        h = lam[i + 1] - lam[i]
        if x0_prev is None:  # no history yet: first order (DDIM) step
            d = x0
        else:  # linear extrapolation of x0_hat in lambda to the midpoint of the step
            r = (lam[i] - lam[i - 1]) / h
            d = x0 + (x0 - x0_prev) / (2.0 * r)
        x = (s_t / s_s) * x - a_t * math.expm1(-h) * d
        x0_prev = x0
    return x.to(torch.float32)


def _unic2_rhos(h: float, r: float) -> tuple[float, float]:
    """Weights of UniC-2 with B(h) = e^h - 1 (Zhao et al. 2023, thm. 3.1), solving R a = g / B."""
    hh = -h  # data prediction integrates in -lambda
    b_h = math.expm1(hh)
    g1 = b_h / hh - 1.0  # hh * phi_2(hh), with phi_k the exponential-integrator phi functions
    g2 = g1 / hh - 0.5  # hh * phi_3(hh)
    b0, b1 = g1 / b_h, 2.0 * g2 / b_h  # g_k = k! * hh * phi_{k+1}(hh), scaled by 1 / B(h)
    # R = [[1, 1], [r, 1]] (powers of the node ratios r and 1)
    rho0 = (b0 - b1) / (1.0 - r)
    return rho0, b0 - rho0


def sample_unipc(
    denoise: Denoiser,
    x_T: Tensor,
    schedule: NoiseSchedule,
    timesteps: Sequence[int],
    callback: Callback | None = None,
) -> Tensor:
    """UniPC, order-2 UniP predictor + UniC corrector, B(h) = e^h - 1, data prediction (Zhao et al. 2023)."""
    ts = _check_timesteps(timesteps, schedule)
    abars = _abars(schedule, ts)
    lam = _lambdas(abars)
    alpha = [math.sqrt(a) for a in abars]
    sigma = [math.sqrt(1.0 - a) for a in abars]
    # x0_hat at steps i, i-1, i-2 (each evaluated at the *predicted*, uncorrected sample).
    m0: Tensor | None = None
    m1: Tensor | None = None
    m2: Tensor | None = None
    x, x_last = x_T, x_T
    for i, t in enumerate(ts):
        m2, m1, m0 = m1, m0, _predict_x0(denoise, x, i, t, callback)
        if i > 0:
            # UniC: redo step i-1 -> i with the new model output; it costs no extra evaluation.
            h = lam[i] - lam[i - 1]
            b_h = math.expm1(-h)
            x = (sigma[i] / sigma[i - 1]) * x_last - alpha[i] * b_h * m1
            if i == 1:  # the corrected step was first order: UniC-1, rho = 1/2
                x = x - alpha[i] * b_h * 0.5 * (m0 - m1)
            else:
                r = (lam[i - 2] - lam[i - 1]) / h
                rho0, rho1 = _unic2_rhos(h, r)
                x = x - alpha[i] * b_h * (rho0 * (m2 - m1) / r + rho1 * (m0 - m1))
        if i == len(ts) - 1:
            # First-order UniP into sigma = 0 returns x0_hat exactly; no corrector follows it.
            x = m0
            break
        # UniP: order 1 on the first step (no history), order 2 with rho = 1/2 afterwards.
        h = lam[i + 1] - lam[i]
        b_h = math.expm1(-h)
        x_last = x
        x = (sigma[i + 1] / sigma[i]) * x - alpha[i + 1] * b_h * m0
        if i > 0:
            r = (lam[i - 1] - lam[i]) / h
            x = x - alpha[i + 1] * b_h * 0.5 * (m1 - m0) / r
    return x.to(torch.float32)


SAMPLERS: dict[str, Callable[..., Tensor]] = {
    "ddpm": sample_ddpm,
    "ddim": sample_ddim,
    "dpmpp": sample_dpmpp_2m,
    "unipc": sample_unipc,
}
_STOCHASTIC = {"ddpm", "ddim"}


def sample(
    name: str,
    denoise: Denoiser,
    x_T: Tensor,
    schedule: NoiseSchedule,
    steps: int,
    spacing: str = "trailing",
    generator: torch.Generator | None = None,
    callback: Callback | None = None,
) -> Tensor:
    """Run sampler ``name`` over ``schedule.timesteps(steps, spacing)``; ``generator`` feeds ddpm/ddim noise."""
    if name not in SAMPLERS:
        raise KeyError(f"unknown sampler {name!r}; expected one of {sorted(SAMPLERS)}")
    kwargs = {"generator": generator} if name in _STOCHASTIC else {}
    return SAMPLERS[name](denoise, x_T, schedule, schedule.timesteps(steps, spacing), callback=callback, **kwargs)
