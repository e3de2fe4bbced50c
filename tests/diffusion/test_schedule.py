"""NoiseSchedule: cosine betas, spacings and q(x_t | x0), checked against diffusers."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from diffusers import DDIMScheduler

from talkhead.diffusion.schedule import NoiseSchedule


def _ddim(spacing: str = "trailing") -> DDIMScheduler:
    return DDIMScheduler(
        num_train_timesteps=1000,
        beta_schedule="squaredcos_cap_v2",
        prediction_type="sample",
        clip_sample=False,
        set_alpha_to_one=True,
        timestep_spacing=spacing,
        steps_offset=0,
    )


def test_cosine_betas_equal_diffusers_squaredcos_cap_v2() -> None:
    sched = NoiseSchedule()
    ref = _ddim()
    assert sched.betas.dtype == torch.float64 and sched.betas.shape == (1000,)
    # diffusers stores float32; ours rounds to the very same float32 values.
    assert torch.equal(sched.betas.to(torch.float32), ref.betas)
    assert sched.betas.max().item() == pytest.approx(0.999)  # the cap hits the last step
    torch.testing.assert_close(sched.alphas_cumprod.to(torch.float32), ref.alphas_cumprod, rtol=1e-5, atol=1e-7)


def test_schedule_is_frozen_and_cached() -> None:
    sched = NoiseSchedule()
    with pytest.raises(dataclasses.FrozenInstanceError):
        sched.num_train_timesteps = 10  # type: ignore[misc]
    assert sched.alphas_cumprod is sched.alphas_cumprod
    assert NoiseSchedule() == sched


def test_unknown_kind_rejected() -> None:
    with pytest.raises(ValueError):
        NoiseSchedule(kind="linear")


def test_alpha_sigma_and_snr() -> None:
    sched = NoiseSchedule()
    t = torch.arange(1000)
    alpha, sigma = sched.alpha_sigma(t)
    assert alpha.dtype == torch.float64
    torch.testing.assert_close(alpha**2 + sigma**2, torch.ones(1000, dtype=torch.float64))
    assert (alpha[1:] < alpha[:-1]).all()  # strictly more noise with t
    assert alpha[0] > 0.999 and alpha[-1] < 1e-4
    snr = sched.snr(t)
    torch.testing.assert_close(snr, alpha**2 / sigma**2)
    assert (snr[1:] < snr[:-1]).all()
    with pytest.raises(ValueError):
        sched.alpha_sigma(torch.tensor([1000]))


def test_add_noise_matches_diffusers_per_sample_timesteps() -> None:
    sched = NoiseSchedule()
    g = torch.Generator().manual_seed(0)
    x0 = torch.randn(3, 5, 58, generator=g)
    noise = torch.randn(3, 5, 58, generator=g)
    t = torch.tensor([0, 500, 999])
    out = sched.add_noise(x0, noise, t)
    assert out.dtype == torch.float32 and out.shape == x0.shape
    torch.testing.assert_close(out, _ddim().add_noise(x0, noise, t), rtol=1e-5, atol=1e-5)
    alpha, sigma = sched.alpha_sigma(t[1])
    torch.testing.assert_close(out[1], (alpha * x0[1] + sigma * noise[1]).float())


@pytest.mark.parametrize("spacing", ["trailing", "leading", "linspace"])
@pytest.mark.parametrize("steps", [1, 2, 3, 4, 7, 10, 48, 50, 250, 1000])
def test_timesteps_match_diffusers_ddim(spacing: str, steps: int) -> None:
    ref = _ddim(spacing)
    ref.set_timesteps(steps)
    assert NoiseSchedule().timesteps(steps, spacing) == ref.timesteps.tolist()


def test_trailing_is_valid_for_every_step_count() -> None:
    # diffusers' np.arange overshoots for some counts (e.g. 61 -> a 62nd timestep of -1);
    # ours keeps exactly `steps` distinct descending timesteps, starting at T - 1.
    sched = NoiseSchedule()
    for steps in range(1, 1001):
        ts = sched.timesteps(steps)
        assert len(ts) == steps and ts[0] == 999 and ts[-1] >= 0
        assert all(a > b for a, b in zip(ts, ts[1:]))
    ref = _ddim()
    ref.set_timesteps(61)
    assert ref.timesteps.tolist()[:61] == sched.timesteps(61)


def test_timesteps_rejects_bad_arguments() -> None:
    sched = NoiseSchedule()
    with pytest.raises(ValueError):
        sched.timesteps(0)
    with pytest.raises(ValueError):
        sched.timesteps(1001)
    with pytest.raises(ValueError):
        sched.timesteps(10, "karras")
