"""Audio-to-motion diffusion: noise schedule, samplers, denoiser and distilled students."""
