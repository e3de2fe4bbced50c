"""Loss functions: the progressive-distillation target is exact, the temporal term sees jitter."""

from __future__ import annotations

import torch

from talkhead.diffusion.denoiser import Denoiser
from talkhead.diffusion.losses import diffusion_loss, progressive_loss, progressive_target
from talkhead.diffusion.samplers import ddim_step
from talkhead.diffusion.schedule import NoiseSchedule
from talkhead.motion.net import DenoiserConfig, MotionTransformer


def test_progressive_target_lands_one_ddim_step_on_the_two_step_result():
    g = torch.Generator().manual_seed(0)
    x_t, x_s = torch.randn(4, 80, 58, generator=g), torch.randn(4, 80, 58, generator=g)
    abar = NoiseSchedule().alphas_cumprod.float()
    for a_t, a_s in [(abar[999], abar[499]), (abar[499], abar[124]), (abar[124], torch.tensor(1.0))]:
        a_t, a_s = a_t.expand(4)[:, None, None], a_s.expand(4)[:, None, None]
        target = progressive_target(x_t, x_s, a_t, a_s)
        assert torch.allclose(ddim_step(target, x_t, a_t, a_s), x_s, atol=2e-3)


def test_diffusion_loss_weights_and_temporal_term():
    torch.manual_seed(0)
    den = Denoiser(MotionTransformer(DenoiserConfig(width=32, depth=1, heads=2)), NoiseSchedule())
    g = lambda: torch.Generator().manual_seed(3)  # noqa: E731
    b = 8
    batch = {"x0": torch.randn(b, 80, 58), "audio": torch.randn(b, 80, 320), "ref": torch.zeros(b, 58),
             "tail": torch.zeros(b, 10, 58), "has_tail": torch.zeros(b, dtype=torch.bool)}
    plain = diffusion_loss(den, batch, g())
    with_velocity = diffusion_loss(den, batch, g(), velocity=1.0)
    weighted = diffusion_loss(den, batch, g(), snr_weight=(1.0, 5.0))
    assert with_velocity > plain  # white-noise x0 has large frame differences the zero-init net misses
    assert weighted >= plain  # every weight is >= 1


def test_progressive_velocity_term_prefers_a_smooth_miss_to_a_jittery_one():
    g = torch.Generator().manual_seed(1)
    target = torch.randn(2, 80, 58, generator=g).cumsum(1) * 0.1  # smooth-ish motion
    abar = torch.full((2, 1, 1), 0.5)
    smooth = target + 0.1  # an offset: same error on every frame
    jittery = target + 0.1 * torch.tensor([1.0, -1.0]).repeat(40)[None, :, None]  # alternating sign
    # Plain MSE cannot tell the two misses apart; the frame-difference term can.
    assert torch.isclose(progressive_loss(smooth, target, abar), progressive_loss(jittery, target, abar))
    assert progressive_loss(jittery, target, abar, velocity=1.0) > 2 * progressive_loss(smooth, target, abar, velocity=1.0)
    assert torch.isclose(progressive_loss(smooth, target, abar, velocity=1.0), progressive_loss(smooth, target, abar))
