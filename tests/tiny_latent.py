"""Settings of the tiny latent engine the tests train (imported by conftest and the tests)."""

import importlib.util
from pathlib import Path

from talkhead.latent.net import LatentConfig
from talkhead.latent.train import LatentTrainConfig

ASTRONAUT = Path(importlib.util.find_spec("skimage").origin).parent / "data" / "astronaut.png"
TINY_NET = LatentConfig(widths=(16, 16, 16), emb=32)
TINY_TRAIN = LatentTrainConfig(steps=60, batch=8, lr=2e-3, pixel_batch=4, distill_steps=30, distill_lr=1e-3)
