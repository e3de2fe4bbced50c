"""`talkhead motion`, `models` and `eval` on a tiny trained teacher and real TTS speech."""

from __future__ import annotations

import json

import numpy as np

from talkhead.audio.io import write_wav
from talkhead.audio.tts import synthesize
from talkhead.cli import main
from talkhead.rig.io import load_motion
from talkhead.rig.spec import SPEC


def test_motion_from_a_stereo_44k_wav_writes_one_row_per_frame(tiny_teacher, tmp_path, capsys):
    import soundfile as sf
    from scipy.signal import resample_poly

    speech = synthesize("Motion from a file.", "nyc-male")
    stereo = np.stack([resample_poly(speech.wav, 441, 160)] * 2, -1)
    wav = tmp_path / "in.wav"
    sf.write(wav, stereo, 44_100)
    out = tmp_path / "m.csv"
    assert main(["motion", "--audio", str(wav), "-o", str(out), "--model", str(tiny_teacher), "--steps", "2"]) == 0
    m = load_motion(out)
    assert m.shape == (int(np.ceil(len(speech.wav) / 640)), 58)
    assert out.read_text().splitlines()[0].split(",") == list(SPEC.names)


def test_phones_driver_and_bad_inputs(tmp_path, capsys):
    out = tmp_path / "m.npy"
    assert main(["motion", "--text", "Hello there.", "--driver", "phones", "-o", str(out)]) == 0
    assert load_motion(out).shape[1] == 58
    bad = tmp_path / "bad.wav"
    bad.write_bytes(b"not audio at all" * 10)
    capsys.readouterr()
    assert main(["motion", "--audio", str(bad), "-o", str(tmp_path / "x.csv"), "--driver", "phones"]) == 2
    assert main(["motion", "--audio", str(bad), "-o", str(tmp_path / "x.csv")]) == 2
    assert main(["motion", "--text", "hi", "-o", str(tmp_path / "x.txt")]) == 2
    assert main(["motion", "--text", "hi", "-o", str(tmp_path / "x.csv"), "--model", "no-such-model"]) == 2
    err = capsys.readouterr().err
    assert err.count("talkhead: error:") == 4 and "Traceback" not in err
    assert not (tmp_path / "x.csv").exists() and not (tmp_path / "x.txt").exists()


def test_silence_gives_a_closed_still_mouth_with_the_phones_driver(tmp_path):
    wav = tmp_path / "quiet.wav"
    write_wav(wav, np.zeros(16_000 * 2, np.float32), 16_000)
    out = tmp_path / "q.csv"
    # A WAV file has no phones: the model is the only driver for audio files.
    assert main(["motion", "--audio", str(wav), "-o", str(out), "--driver", "phones"]) == 2


def test_eval_reports_every_metric(tiny_teacher, tiny_corpus, tmp_path, capsys):
    out = tmp_path / "eval.json"
    assert main(["eval", "--model", str(tiny_teacher), "--data", str(tiny_corpus), "--clips", "2", "--seeds", "2",
                 "--steps", "2", "--out", str(out)]) == 0
    r = json.loads(out.read_text())
    for key in ("lipsync_r", "lipsync_r_per_voice", "mouth_mse", "blink_rate_per_min", "head_std", "head_velocity",
                "diversity_lips", "diversity_head", "diversity_blink", "seam_ratio"):
        assert key in r
    assert -1 <= r["lipsync_r"] <= 1 and r["clips"] == 2


def test_export_of_several_runs_ships_the_mean_of_their_weights(tiny_teacher, tiny_corpus, tmp_path, capsys):
    import torch

    from talkhead.motion.model import load
    from talkhead.motion.train.configs import ProgressiveConfig
    from talkhead.motion.train.distill import distill

    runs = [distill(str(tiny_teacher), tiny_corpus, tmp_path / f"run{seed}",
                    ProgressiveConfig(start_steps=4, to=2, iters=3, batch=4, lr=1e-2, seed=seed), progress=False)[0]
            for seed in (0, 1)]
    out = tmp_path / "shipped"
    out.mkdir()
    assert main(["models", "--export", *map(str, runs), "--name", "student-2", "--dir", str(out)]) == 0
    assert "mean of 2 checkpoints" in capsys.readouterr().out
    soup, (a, b) = load(out / "student-2.safetensors"), [load(r) for r in runs]
    assert soup.meta["averaged"] == list(map(str, runs)) and soup.timesteps() == a.timesteps()
    for k, v in soup.denoiser.net.state_dict().items():
        mean = (a.denoiser.net.state_dict()[k] + b.denoiser.net.state_dict()[k]) / 2
        torch.testing.assert_close(v, mean, atol=2e-3, rtol=2e-3)  # stored in fp16
    assert not torch.equal(a.denoiser.net.out.weight, b.denoiser.net.out.weight)  # two different runs
    bad = ["models", "--export", str(runs[0]), str(tiny_teacher), "--name", "x", "--dir", str(out)]
    assert main(bad) == 2 and "same network, step grid" in capsys.readouterr().err
    assert not (out / "x.safetensors").exists()


def test_transcript_aligns_real_speech_and_drives_the_lips(tmp_path, capsys):
    from pathlib import Path

    from talkhead.audio.align import align
    from talkhead.audio.io import load_audio
    from talkhead.rig import target_motion

    wav = Path(__file__).resolve().parent / "assets" / "speech" / "arctic_a0009.wav"
    text = "He turned sharply, and faced Gregson across the table."
    out = tmp_path / "m.npy"
    assert main(["motion", "--audio", str(wav), "--transcript", text, "-o", str(out)]) == 0
    audio = load_audio(wav)
    want = target_motion(audio, 16_000, align(audio, text), seed=0)
    assert np.allclose(load_motion(out), want, atol=1e-6)  # --transcript implies the phones driver
    capsys.readouterr()
    assert main(["motion", "--audio", str(wav), "--transcript", "Completely different words here.", "-o", str(out)]) == 2
    assert "does not fit" in capsys.readouterr().err
    assert main(["motion", "--text", "Hi.", "--transcript", "Hi.", "-o", str(out)]) == 2
    assert "--transcript goes with --audio" in capsys.readouterr().err
    assert main(["generate", "--text", "Hi.", "--transcript", "Hi.", "-o", str(tmp_path / "v.mp4")]) == 2
    assert not (tmp_path / "v.mp4").exists()


def test_export_can_set_the_default_sampling(tiny_teacher, tmp_path, capsys):
    from talkhead.motion.model import load

    assert main(["models", "--export", str(tiny_teacher), "--name", "t", "--dir", str(tmp_path),
                 "--default-sampling", "unipc@4"]) == 0
    m = load(tmp_path / "t.safetensors")
    assert m.sampling == {"sampler": "unipc", "steps": 4} and len(m.timesteps()) == 4
    capsys.readouterr()
    for bad in ("euler@4", "unipc@0", "unipc"):
        assert main(["models", "--export", str(tiny_teacher), "--name", "u", "--dir", str(tmp_path),
                     "--default-sampling", bad]) == 2
        assert "SAMPLER@STEPS" in capsys.readouterr().err
    assert not (tmp_path / "u.safetensors").exists()
