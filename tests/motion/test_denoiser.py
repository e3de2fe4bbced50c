"""The audio encoder's temporal context, and the network's shapes."""

import torch

from talkhead.motion.denoiser import AudioEncoder, DenoiserConfig, MotionTransformer


def test_audio_encoder_sees_exactly_its_receptive_field():
    torch.manual_seed(0)
    enc = AudioEncoder(audio_dim=12, width=16, kernel=5)  # two k=5 convs: frames i-4 .. i+4
    audio = torch.randn(1, 40, 12)
    poked = audio.clone()
    poked[0, 20] += 3.0
    changed = (enc(poked) - enc(audio)).abs().amax(dim=-1)[0] > 1e-6
    assert changed.nonzero().flatten().tolist() == list(range(16, 25))


def test_kernel_one_is_frame_local():
    torch.manual_seed(0)
    enc = AudioEncoder(audio_dim=12, width=16, kernel=1)
    audio = torch.randn(1, 30, 12)
    poked = audio.clone()
    poked[0, 7] -= 2.0
    changed = (enc(poked) - enc(audio)).abs().amax(dim=-1)[0] > 1e-6
    assert changed.nonzero().flatten().tolist() == [7]


def test_transformer_output_shape():
    cfg = DenoiserConfig(width=32, depth=1, heads=2, ff_mult=2)
    net = MotionTransformer(cfg)
    b = 3
    out = net(torch.randn(b, cfg.window, cfg.motion_dim), torch.tensor([0, 500, 999]),
              torch.randn(b, cfg.window, cfg.audio_dim), torch.randn(b, cfg.motion_dim),
              torch.randn(b, cfg.tail, cfg.motion_dim), torch.tensor([True, False, True]))
    assert out.shape == (b, cfg.window, cfg.motion_dim)
