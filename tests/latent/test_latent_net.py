"""The latent denoiser's pieces: shapes, conditioning that starts neutral, SLERP, the student grid."""

from __future__ import annotations

import torch

from talkhead.latent.net import LatentConfig, LatentNet, slerp
from talkhead.latent.train import student_grid


def test_net_shapes_and_conditioning():
    net = LatentNet(LatentConfig(widths=(16, 16, 16), emb=32))
    x, ref = torch.randn(3, 4, 16, 16), torch.randn(3, 4, 16, 16)
    out = net(x, torch.tensor([0, 500, 999]), {"reference": ref, "motion": torch.randn(3, 58)})
    assert out.shape == x.shape and torch.all(out == 0)  # the zero-initialised head: training starts from eps = 0
    torch.nn.init.normal_(net.head[-1].weight, std=0.1)
    a = net(x, torch.tensor([10, 10, 10]), {"reference": ref, "motion": torch.zeros(3, 58)})
    b = net(x, torch.tensor([10, 10, 10]), {"reference": ref, "motion": torch.ones(3, 58)})
    c = net(x, torch.tensor([10, 10, 10]), {"reference": -ref, "motion": torch.zeros(3, 58)})
    assert not torch.allclose(a, c)  # the reference reaches the output
    for block in (net.down1, net.down2, net.mid, net.up2, net.up1):
        torch.nn.init.normal_(block.film.weight, std=0.1)
    b = net(x, torch.tensor([10, 10, 10]), {"reference": ref, "motion": torch.ones(3, 58)})
    assert not torch.allclose(a, b)  # and so does the motion, through FiLM


def test_slerp_ends_midpoint_and_norm():
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(5, 1024, generator=g), torch.randn(5, 1024, generator=g)
    assert torch.allclose(slerp(a, b, torch.zeros(5)), a, atol=1e-5)
    assert torch.allclose(slerp(a, b, torch.ones(5)), b, atol=1e-5)
    mid = slerp(a, b, torch.full((5,), 0.5))
    # Two independent Gaussian latents are nearly orthogonal: the arc keeps the norm, the line loses ~30 %.
    assert (mid.norm(dim=1) / a.norm(dim=1)).min() > 0.9 > ((a + b) / 2).norm(dim=1).div(a.norm(dim=1)).max()
    assert torch.allclose(slerp(a, a, torch.full((5,), 0.3)), a, atol=1e-5)  # parallel: no NaN


def test_student_grid_splits_the_teacher_path():
    ts = [999 - 20 * i for i in range(50)]
    starts, paths = student_grid(ts, 4)
    assert starts == [ts[0], ts[12], ts[25], ts[38]]
    assert [p[0] for p in paths] == starts and paths[-1][-1] == -1
    assert sum(len(p) - 1 for p in paths) == 50  # every teacher step in exactly one segment
    assert student_grid(ts, 1) == ([999], [ts + [-1]])
