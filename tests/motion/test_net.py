"""The audio encoder's temporal context, the network's shapes, and per-step expert routing."""

from dataclasses import replace

import torch

from talkhead.motion.net import (
    AudioEncoder,
    DenoiserConfig,
    MotionTransformer,
    StepExperts,
    compile_network,
    make_network,
    same_interface,
)


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
    cond = {"audio": torch.randn(b, cfg.window, cfg.audio_dim), "ref": torch.randn(b, cfg.motion_dim),
            "tail": torch.randn(b, cfg.tail, cfg.motion_dim), "has_tail": torch.tensor([True, False, True])}
    out = net(torch.randn(b, cfg.window, cfg.motion_dim), torch.tensor([0, 500, 999]), cond)
    assert out.shape == (b, cfg.window, cfg.motion_dim)


def _inputs(cfg: DenoiserConfig, t: list[int]):
    b, g = len(t), torch.Generator().manual_seed(1)
    x = torch.randn(b, cfg.window, cfg.motion_dim, generator=g)
    cond = {"audio": torch.randn(b, cfg.window, cfg.audio_dim, generator=g),
            "ref": torch.randn(b, cfg.motion_dim, generator=g), "tail": torch.randn(b, cfg.tail, cfg.motion_dim, generator=g),
            "has_tail": torch.tensor([True, False] * (b // 2))}
    return x, torch.tensor(t), cond


def test_step_experts_route_each_window_to_the_copy_nearest_its_timestep():
    torch.manual_seed(0)
    cfg = DenoiserConfig(width=32, depth=1, heads=2, ff_mult=2, experts=(999, 499, 124))
    net = make_network(cfg).eval()
    assert isinstance(net, StepExperts) and len(net.experts) == 3
    assert same_interface(cfg, replace(cfg, experts=(), depth=3)) and not same_interface(cfg, replace(cfg, window=40))
    for e in net.experts:  # zero-initialised outputs would make every copy agree; give each its own
        torch.nn.init.normal_(e.out.weight, std=0.1)
    x, t, cond = _inputs(cfg, [990, 600, 130, 0])  # nearest: 999, 499, 124, 124
    with torch.no_grad():
        mixed = net(x, t, cond)
        for j, i in enumerate([0, 1, 2, 2]):
            own = net.experts[i](x[j:j + 1], t[j:j + 1], {k: v[j:j + 1] for k, v in cond.items()})
            torch.testing.assert_close(mixed[j:j + 1], own)
        assert not torch.allclose(net.experts[0](x, t, cond), net.experts[1](x, t, cond))


def test_compiled_experts_give_one_whole_graph_per_copy_and_the_same_output():
    torch.manual_seed(0)
    cfg = DenoiserConfig(width=32, depth=1, heads=2, ff_mult=2, experts=(999, 124))
    net = make_network(cfg).eval()
    for e in net.experts:
        torch.nn.init.normal_(e.out.weight, std=0.1)
    graphs = []

    def counting_backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    x, _, cond = _inputs(cfg, [0, 0])
    torch._dynamo.reset()
    with torch.no_grad():
        eager = [net(x, torch.tensor([t, t]), cond) for t in (999, 124)]
        compiled = compile_network(net, backend=counting_backend)
        assert compiled is net and all(isinstance(e, torch._dynamo.eval_frame.OptimizedModule) for e in net.experts)
        torch.testing.assert_close(compiled(x, torch.tensor([999, 999]), cond), eager[0])
        assert len(graphs) == 1  # a graph break inside the copy, or the routing traced, would make more
        torch.testing.assert_close(compiled(x, torch.tensor([124, 124]), cond), eager[1])
    assert len(graphs) <= 2  # the second copy may reuse the first's graph (same code, weights as inputs)
    torch._dynamo.reset()
