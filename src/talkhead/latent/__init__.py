"""The latent face engine: a VAE, a motion-conditioned denoiser in its latent space, its renderer."""
