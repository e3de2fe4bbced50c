"""Training windows' audio augmentation: the mel-axis stretch that imitates unheard voices."""

from __future__ import annotations

import torch

from talkhead.cli import main
from talkhead.motion.data.windows import WindowSampler, load_clips, warp_audio
from talkhead.motion.model import load


def _centroid(audio: torch.Tensor, model) -> torch.Tensor:
    """Mean mel-bin index weighted by power, per window: [B]."""
    n = model.features.n_mels
    power = (audio * model.norm.audio_std + model.norm.audio_mean).reshape(*audio.shape[:2], -1, n).exp()
    return ((power * torch.arange(n)).sum(-1) / power.sum(-1)).mean((1, 2))


def test_warp_moves_the_spectrum_the_way_of_its_factor(tiny_teacher, tiny_corpus):
    model = load(tiny_teacher)
    audio = WindowSampler(load_clips(tiny_corpus, "train"), model.norm).sample(16, torch.Generator().manual_seed(0))["audio"]
    same = warp_audio(audio, model.norm, model.features, 0.0, torch.Generator().manual_seed(1))
    torch.testing.assert_close(same, audio, atol=1e-5, rtol=1e-5)
    warped = warp_audio(audio, model.norm, model.features, 0.15, torch.Generator().manual_seed(1))
    alpha = 1 + (2 * torch.rand(16, generator=torch.Generator().manual_seed(1)) - 1) * 0.15
    shift = _centroid(warped, model) / _centroid(audio, model)
    clear = (alpha - 1).abs() > 0.03  # near 1 the move is within the edge bins' rounding
    assert clear.sum() >= 8 and ((shift > 1) == (alpha > 1))[clear].all()  # energy moves up with the factor
    assert warped.shape == audio.shape and torch.isfinite(warped).all()


def test_distill_with_warp_records_it_and_refuses_a_wild_one(tiny_teacher, tiny_corpus, tmp_path, capsys):
    args = ["distill", "progressive", "--teacher", str(tiny_teacher), "--data", str(tiny_corpus), "--out", str(tmp_path),
            "--start-steps", "4", "--to", "2", "--iters", "2", "--batch", "4", "--quiet"]
    assert main([*args, "--warp", "0.7"]) == 2
    assert "--warp" in capsys.readouterr().err
    assert main([*args, "--warp", "0.1"]) == 0
    assert load(tmp_path / "student-2.safetensors").meta["distill"]["config"]["warp"] == 0.1
