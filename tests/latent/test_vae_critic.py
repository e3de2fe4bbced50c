"""The critic term of the VAE loss (``latent.train_vae.Adversary``) on real face crops: it learns, it leaves its own
weights out of the generator's gradient, and it resumes exactly."""

from __future__ import annotations

import numpy as np
import torch

from talkhead.latent.train_vae import Adversary, VAEObjective
from talkhead.latent.vae import FaceVAE, VAEConfig, as_batch


def _crops() -> np.ndarray:
    from PIL import Image

    from talkhead.face.detect import default_photo

    photo = np.asarray(Image.fromarray(default_photo()[40:300, 120:380]).resize((96, 96)))  # the face
    return np.stack([photo, photo[:, ::-1], np.roll(photo, 5, axis=0)])


def test_the_critic_learns_and_only_the_vae_gets_the_generator_gradient():
    torch.manual_seed(0)
    vae, adv = FaceVAE(VAEConfig(size=96, widths=(8, 16), latent=4)), Adversary(0.2, seed=0)
    x = as_batch(_crops())
    before = [p.detach().clone() for p in adv.critic.parameters()]
    recon = vae(x)[0]
    g = adv(recon, x)
    assert any(not torch.equal(a, b) for a, b in zip(before, adv.critic.parameters()))  # one critic step ran
    adv.opt.zero_grad(set_to_none=True)
    g.backward()
    assert all(p.grad is None for p in adv.critic.parameters())  # the generator term does not train the critic
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in vae.decoder.parameters())
    scores = []
    for _ in range(30):  # the critic learns to tell the (blurred, untrained) reconstructions from the crops
        adv(vae(x)[0].detach(), x)
        with torch.no_grad():
            scores.append(float(adv.critic(x).mean() - adv.critic(vae(x)[0]).mean()))
    assert scores[-1] > scores[0] and scores[-1] > 0


def test_objective_with_a_critic_resumes_from_its_state():
    torch.manual_seed(0)
    frames, cfg = _crops(), VAEConfig(size=96, widths=(8, 16), latent=4)
    vae = FaceVAE(cfg)
    a = VAEObjective(frames, cfg, 2, 64, Adversary(0.2, seed=1))
    a(vae, torch.Generator().manual_seed(0), 0).backward()
    b = VAEObjective(frames, cfg, 2, 64, Adversary(0.2, seed=2))
    b.load_state_dict(a.state_dict())
    for p, q in zip(a.adversary.critic.parameters(), b.adversary.critic.parameters()):
        assert torch.equal(p, q)
    assert b.adversary.opt.state_dict()["state"].keys() == a.adversary.opt.state_dict()["state"].keys()
    assert VAEObjective(frames, cfg, 2).state_dict() is None  # no critic, no state
