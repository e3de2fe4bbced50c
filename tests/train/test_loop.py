"""The one training loop: a stopped run resumes to exactly the weights, average and objective state of an
uninterrupted one, for the teacher's objective and for one with a state of its own (consistency)."""

from __future__ import annotations

import copy

import pytest
import torch

from talkhead.errors import InputError
from talkhead.motion.data.windows import WindowSampler, load_clips
from talkhead.motion.model import load
from talkhead.motion.train.configs import ConsistencyConfig, TrainConfig
from talkhead.motion.train.consistency import ConsistencyObjective
from talkhead.motion.train.teacher import DiffusionObjective
from talkhead.train.loop import EMA, FitConfig, fit, lr_at


def _objectives(teacher, sampler):
    yield DiffusionObjective(sampler, teacher.schedule, TrainConfig(batch=4), 1, torch.device("cpu"))
    yield ConsistencyObjective(teacher, sampler, teacher.schedule.timesteps(4), ConsistencyConfig(batch=4))


@pytest.mark.parametrize("which", [0, 1])
def test_stop_and_resume_gives_the_uninterrupted_run(tiny_teacher, tiny_corpus, tmp_path, which):
    teacher = load(tiny_teacher)
    sampler = WindowSampler(load_clips(tiny_corpus, "train"), teacher.norm)
    cfg = FitConfig(steps=6, lr=1e-3, warmup=2, ema=0.9, ema_warmup=which == 0, seed=3, ckpt_every=2)
    whole_obj = list(_objectives(teacher, sampler))[which]
    whole = fit(copy.deepcopy(teacher.denoiser), whole_obj, cfg, tmp_path / "a.pt", progress=False)
    cut_obj = list(_objectives(teacher, sampler))[which]
    first = fit(copy.deepcopy(teacher.denoiser), cut_obj, FitConfig(**{**cfg.__dict__, "stop_at": 3}),
                tmp_path / "b.pt", progress=False)
    assert first.step == 3
    resumed_obj = list(_objectives(teacher, sampler))[which]  # a fresh process: nothing carried in memory
    rest = fit(copy.deepcopy(teacher.denoiser), resumed_obj, cfg, tmp_path / "b.pt", resume=True, progress=False)
    assert rest.step == 6 and first.losses + rest.losses == whole.losses
    for a, b in zip(whole.module.state_dict().values(), rest.module.state_dict().values()):
        assert torch.equal(a, b)
    if which == 1:  # the target network is the objective's own state, and it came back too
        for a, b in zip(whole_obj.target.state_dict().values(), resumed_obj.target.state_dict().values()):
            assert torch.equal(a, b)


def test_resume_without_a_state_is_a_clear_error(tiny_teacher, tiny_corpus, tmp_path):
    teacher = load(tiny_teacher)
    sampler = WindowSampler(load_clips(tiny_corpus, "train"), teacher.norm)
    objective = next(_objectives(teacher, sampler))
    with pytest.raises(InputError, match="resume"):
        fit(teacher.denoiser, objective, FitConfig(steps=2, lr=1e-3), tmp_path / "none.pt", resume=True, progress=False)


def test_schedule_and_average():
    cfg = FitConfig(steps=11, lr=1.0, warmup=1)
    assert lr_at(0, cfg) == 1.0 and lr_at(1, cfg) == pytest.approx(1.0) and lr_at(10, cfg) == pytest.approx(0.1)
    net = torch.nn.Linear(2, 1)
    ema = EMA(net, 0.5)
    with torch.no_grad():
        net.weight.fill_(2.0)
    ema.update(net, 0)  # the first update copies
    with torch.no_grad():
        net.weight.fill_(4.0)
    ema.update(net, 1)
    assert torch.allclose(ema.module.weight, torch.full_like(net.weight, 3.0))
    with pytest.raises(InputError, match="EMA decay"):
        EMA(net, 1.0)
