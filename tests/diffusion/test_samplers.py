"""Samplers: trajectory parity with diffusers' schedulers, determinism, and convergence.

Every parity test drives the diffusers scheduler with the same x0-predicting denoiser from the same
x_T (``prediction_type="sample"``) and compares each step's x0_hat (so, the whole trajectory) and the
final sample. diffusers keeps its schedule in float32 and we keep ours in float64, hence the
tolerances; with the denoiser below the gap stays under ~6e-6 even at S = 50.

diffusers flags chosen to match our math (every sampler ends with one step to sigma = 0):
- DDIM: ``set_alpha_to_one=True`` (final abar = 1), ``clip_sample=False``, ``steps_offset=0``.
- DPM-Solver++ / UniPC: ``final_sigmas_type="zero"`` (the last update returns x0_hat exactly) and
  ``lower_order_final=True`` (first order into sigma = 0, where h is infinite).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from diffusers import (
    DDIMScheduler,
    DDPMScheduler,
    DPMSolverMultistepScheduler,
    UniPCMultistepScheduler,
)
from torch import Tensor

from talkhead.diffusion.samplers import (
    SAMPLERS,
    sample,
    sample_ddim,
    sample_ddpm,
    sample_dpmpp_2m,
    sample_unipc,
)
from talkhead.diffusion.schedule import NoiseSchedule

# diffusers 0.42 + numpy 2 warn inside set_timesteps; not ours to fix.
pytestmark = pytest.mark.filterwarnings("ignore:__array__ implementation:DeprecationWarning")

B, T, D = 2, 8, 58
SCHED = NoiseSchedule()
COMMON = dict(
    num_train_timesteps=1000,
    beta_schedule="squaredcos_cap_v2",
    prediction_type="sample",
    timestep_spacing="trailing",
)


def make_denoiser(seed: int = 0) -> Callable[[Tensor, Tensor], Tensor]:
    """x0_hat = tanh(x_t A + b t/1000): nonlinear, t-dependent, gain ~1 so float32 error stays small."""
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(D, D, generator=g) / D**0.5
    b = torch.randn(D, generator=g)

    def denoise(x: Tensor, t: Tensor) -> Tensor:
        assert t.dtype == torch.long and t.shape == (x.shape[0],)
        return torch.tanh(x @ a.to(x.dtype) + b.to(x.dtype) * (t.to(x.dtype) / 1000)[:, None, None])

    return denoise


def make_noise(seed: int = 1, dtype: torch.dtype = torch.float32) -> Tensor:
    return torch.randn(B, T, D, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def run_diffusers(scheduler, denoise, x_T: Tensor, steps: int | None = None, timesteps=None, **step_kw):
    """The usual diffusers loop; returns the final sample and every model output."""
    if timesteps is None:
        scheduler.set_timesteps(steps)
    else:
        scheduler.set_timesteps(timesteps=timesteps)
    x, outs = x_T.clone(), []
    for t in scheduler.timesteps:
        out = denoise(x, t.expand(x.shape[0]).long())
        outs.append(out)
        x = scheduler.step(out, t, x, **step_kw).prev_sample
    return x, outs


def run_ours(name: str, denoise, x_T: Tensor, steps: int, **kw):
    outs: list[Tensor] = []
    ts: list[int] = []

    def callback(i: int, t: int, x0: Tensor) -> None:
        assert i == len(outs)
        outs.append(x0)
        ts.append(t)

    x = sample(name, denoise, x_T, SCHED, steps, callback=callback, **kw)
    return x, outs, ts


def assert_same_trajectory(ours, theirs, atol: float) -> None:
    (x, outs, _), (x_ref, outs_ref) = ours, theirs
    assert len(outs) == len(outs_ref)
    for i, (o, r) in enumerate(zip(outs, outs_ref)):
        torch.testing.assert_close(o, r, rtol=0, atol=atol, msg=lambda m: f"step {i}: {m}")
    torch.testing.assert_close(x, x_ref, rtol=0, atol=atol)


@pytest.mark.parametrize("steps", [1, 2, 4, 10, 50])
def test_ddim_matches_diffusers(steps: int) -> None:
    ref = DDIMScheduler(clip_sample=False, set_alpha_to_one=True, steps_offset=0, **COMMON)
    denoise, x_T = make_denoiser(), make_noise()
    ours = run_ours("ddim", denoise, x_T, steps)
    assert ours[2] == SCHED.timesteps(steps)
    assert_same_trajectory(ours, run_diffusers(ref, denoise, x_T, steps), atol=1e-5)


def test_ddim_eta_matches_diffusers_with_same_generator() -> None:
    ref = DDIMScheduler(clip_sample=False, set_alpha_to_one=True, steps_offset=0, **COMMON)
    denoise, x_T = make_denoiser(), make_noise()
    theirs = run_diffusers(ref, denoise, x_T, 10, eta=0.5, generator=torch.Generator().manual_seed(7))
    outs: list[Tensor] = []
    x = sample_ddim(
        denoise, x_T, SCHED, SCHED.timesteps(10), eta=0.5, generator=torch.Generator().manual_seed(7),
        callback=lambda i, t, x0: outs.append(x0),
    )
    assert_same_trajectory((x, outs, None), theirs, atol=1e-5)


@pytest.mark.parametrize("steps", [1, 4, 10])
def test_ddpm_matches_diffusers_with_same_generator(steps: int) -> None:
    # DDPMScheduler steps between consecutive listed timesteps, as ours does, and draws the same noise.
    ref = DDPMScheduler(clip_sample=False, variance_type="fixed_small", **COMMON)
    denoise, x_T = make_denoiser(), make_noise()
    theirs = run_diffusers(ref, denoise, x_T, steps, generator=torch.Generator().manual_seed(3))
    ours = run_ours("ddpm", denoise, x_T, steps, generator=torch.Generator().manual_seed(3))
    assert_same_trajectory(ours, theirs, atol=1e-5)


def _dpmpp() -> DPMSolverMultistepScheduler:
    return DPMSolverMultistepScheduler(
        algorithm_type="dpmsolver++",
        solver_order=2,
        final_sigmas_type="zero",
        lower_order_final=True,
        use_karras_sigmas=False,
        **COMMON,
    )


def _unipc() -> UniPCMultistepScheduler:
    return UniPCMultistepScheduler(
        solver_order=2,
        predict_x0=True,
        solver_type="bh2",
        final_sigmas_type="zero",
        lower_order_final=True,
        use_karras_sigmas=False,
        **COMMON,
    )


@pytest.mark.parametrize("steps", [1, 2, 3, 4, 10, 50])
def test_dpmpp_2m_matches_diffusers(steps: int) -> None:
    denoise, x_T = make_denoiser(), make_noise()
    ours = run_ours("dpmpp", denoise, x_T, steps)
    assert_same_trajectory(ours, run_diffusers(_dpmpp(), denoise, x_T, steps), atol=1e-4)


def test_dpmpp_2m_matches_diffusers_on_a_custom_timestep_list() -> None:
    # Uneven spacing exercises the step-size ratio r = h_prev / h of the second-order update.
    ts = [999, 850, 600, 420, 200, 90, 15]
    denoise, x_T = make_denoiser(), make_noise()
    outs: list[Tensor] = []
    x = sample_dpmpp_2m(denoise, x_T, SCHED, ts, callback=lambda i, t, x0: outs.append(x0))
    assert_same_trajectory((x, outs, None), run_diffusers(_dpmpp(), denoise, x_T, timesteps=ts), atol=1e-4)


@pytest.mark.parametrize("steps", [1, 2, 3, 4, 10, 50])
def test_unipc_matches_diffusers(steps: int) -> None:
    denoise, x_T = make_denoiser(), make_noise()
    ours = run_ours("unipc", denoise, x_T, steps)
    assert_same_trajectory(ours, run_diffusers(_unipc(), denoise, x_T, steps), atol=1e-4)


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_deterministic_given_inputs_and_never_mutates_x_T(name: str) -> None:
    denoise, x_T = make_denoiser(), make_noise(dtype=torch.float64)
    before = x_T.clone()
    a = sample(name, denoise, x_T, SCHED, 6, generator=torch.Generator().manual_seed(0))
    b = sample(name, denoise, x_T, SCHED, 6, generator=torch.Generator().manual_seed(0))
    assert torch.equal(x_T, before)
    assert torch.equal(a, b)
    assert a.dtype == torch.float32 and a.shape == x_T.shape
    assert torch.isfinite(a).all()


def test_ddpm_seed_controls_noise() -> None:
    denoise, x_T = make_denoiser(), make_noise()
    a = sample_ddpm(denoise, x_T, SCHED, SCHED.timesteps(10), torch.Generator().manual_seed(0))
    b = sample_ddpm(denoise, x_T, SCHED, SCHED.timesteps(10), torch.Generator().manual_seed(1))
    assert (a - b).abs().max() > 1e-2


@pytest.mark.parametrize("name", sorted(SAMPLERS))
@pytest.mark.parametrize("steps", [1, 3, 10])
def test_oracle_denoiser_is_recovered_exactly(name: str, steps: int) -> None:
    x0 = make_noise(seed=5).tanh()
    calls: list[int] = []

    def oracle(x: Tensor, t: Tensor) -> Tensor:
        calls.append(int(t[0]))
        return x0

    out = sample(name, oracle, make_noise(), SCHED, steps, generator=torch.Generator().manual_seed(0))
    assert torch.equal(out, x0)
    assert calls == SCHED.timesteps(steps)  # one evaluation per listed timestep, in order


def gaussian_data_denoiser(mu: Tensor, s: float) -> Callable[[Tensor, Tensor], Tensor]:
    """Exact E[x0 | x_t] for x0 ~ N(mu, s^2 I): its probability-flow ODE has a closed-form solution."""

    def denoise(x: Tensor, t: Tensor) -> Tensor:
        alpha, sigma = SCHED.alpha_sigma(t)
        alpha, sigma = alpha[:, None, None], sigma[:, None, None]
        gain = alpha * s**2 / (alpha**2 * s**2 + sigma**2)
        return (mu + gain * (x - alpha * mu)).to(x.dtype)

    return denoise


def test_samplers_converge_to_the_exact_ode_solution() -> None:
    mu = torch.randn(D, generator=torch.Generator().manual_seed(2), dtype=torch.float64) * 0.5
    s = 0.3
    denoise, x_T = gaussian_data_denoiser(mu, s), make_noise()
    # Along the ODE, (x_t - alpha_t mu) / sqrt(alpha_t^2 s^2 + sigma_t^2) is constant.
    alpha, sigma = SCHED.alpha_sigma(torch.tensor(999))
    exact = (mu + s * (x_T.double() - alpha * mu) / (alpha**2 * s**2 + sigma**2).sqrt()).float()

    def err(name: str, steps: int) -> float:
        return (sample(name, denoise, x_T, SCHED, steps) - exact).abs().max().item()

    # DDIM is first order: S = 1000 and S = 500 agree, and doubling S about halves the error.
    d500, d1000 = sample("ddim", denoise, x_T, SCHED, 500), sample("ddim", denoise, x_T, SCHED, 1000)
    assert (d500 - d1000).abs().max() < 1e-2
    assert err("ddim", 1000) < 0.7 * err("ddim", 500) < 1e-2
    # The second-order multistep solvers beat DDIM clearly at the same S.
    for name in ("dpmpp", "unipc"):
        assert err(name, 20) < 0.5 * err("ddim", 20)
        assert err(name, 50) < 1e-2


def test_sample_rejects_unknown_name_and_bad_timesteps() -> None:
    denoise, x_T = make_denoiser(), make_noise()
    with pytest.raises(KeyError):
        sample("euler", denoise, x_T, SCHED, 4)
    for fn in (sample_ddim, sample_dpmpp_2m, sample_unipc):
        with pytest.raises(ValueError):
            fn(denoise, x_T, SCHED, [500, 700])  # ascending
        with pytest.raises(ValueError):
            fn(denoise, x_T, SCHED, [1000, 10])  # out of range
        with pytest.raises(ValueError):
            fn(denoise, x_T, SCHED, [])


def test_every_sampler_is_offered_by_the_sampler_flag():
    # The flag's choices live in talkhead.config, which imports nothing heavy (a command's parser costs nothing).
    from talkhead.config import SAMPLER_NAMES

    assert sorted(SAMPLER_NAMES) == sorted(SAMPLERS)
