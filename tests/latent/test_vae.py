"""The face VAE on real face crops: 8x down to 4-channel latents, it learns through the shared training loop,
its checkpoint rebuilds itself, and PSNR is reported for training and held-out identities."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import torch
from PIL import Image

from talkhead.cli import main
from talkhead.latent.vae import FaceVAE, VAEConfig, load_vae


def test_shapes():
    vae = FaceVAE(VAEConfig(size=64, widths=(8, 8, 8)))
    mean, logvar = vae.encode(torch.rand(2, 3, 64, 64))
    assert mean.shape == logvar.shape == (2, 4, 8, 8) and vae.decode(mean).shape == (2, 3, 64, 64)


def test_a_window_of_a_latent_decodes_as_inside_the_whole_with_the_whole_ones_norm_statistics():
    torch.manual_seed(0)
    vae = FaceVAE(VAEConfig(size=64, widths=(8, 16), shuffle=True)).eval()
    z = torch.randn(2, 4, 16, 16)
    with torch.no_grad():
        whole, stats = vae.decode(z), vae.norm_stats(z)
        assert stats.shape == (2, 2, 8, 2)  # two group norms, 8 groups, mean and variance
        assert torch.allclose(vae.decode(z, stats), whole, atol=1e-5)  # the same statistics: the same images
        inner = whole[:, :, 24:40, 24:40]  # latent cells 6-10, decoded from cells 2-14 (4 cells of margin)
        own = vae.decode(z[:, :, 2:14, 2:14])[:, :, 16:32, 16:32]
        given = vae.decode(z[:, :, 2:14, 2:14], stats)[:, :, 16:32, 16:32]
    assert (given - inner).abs().mean() < 0.2 * (own - inner).abs().mean()


def test_vae_learns_face_crops_through_the_training_loop(tiny_corpus, tmp_path, capsys):
    png = Path(importlib.util.find_spec("skimage").origin).parent / "data" / "astronaut.png"
    mirrored = tmp_path / "mirrored.png"
    Image.open(png).transpose(Image.Transpose.FLIP_LEFT_RIGHT).save(mirrored)
    faces = tmp_path / "faces"
    assert main(["data", "faces", str(png), str(mirrored), "--corpus", str(tiny_corpus), "--out", str(faces),
                 "--size", "64", "--clips", "2", "--heldout", "mirrored.png", "--quiet"]) == 0
    run = tmp_path / "vae"  # a small network, so that the test takes seconds
    assert main(["latent", "vae", "--faces", str(faces), "--out", str(run), "--size", "64", "--widths", "8,16,16",
                 "--steps", "100", "--batch", "8", "--quiet"]) == 0
    assert "dB on held-out identities" in capsys.readouterr().out
    report = json.loads((run / "report.json").read_text())
    assert report["loss_last"] < 0.7 * report["loss_first"]
    assert report["psnr_train_db"] > 14 and report["psnr_heldout_db"] > 12
    vae = load_vae(run / "vae.safetensors")
    assert vae.cfg.widths == (8, 16, 16)
    assert main(["latent", "vae", "--faces", str(faces), "--out", str(run), "--size", "64", "--quiet"]) == 2
