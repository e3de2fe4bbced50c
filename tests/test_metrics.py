"""Motion metrics on the corpus' own target motion."""

from __future__ import annotations

import numpy as np
import pytest

from talkhead.audio.tts import synthesize
from talkhead.metrics import error_shares
from talkhead.rig import target_motion
from talkhead.rig.spec import SPEC


@pytest.fixture(scope="module")
def speech():
    return synthesize("Tonight the weather turns cold, with strong winds over the bay.", "us-male")


def test_error_shares_put_a_reseed_outside_the_mouth(speech) -> None:
    # The same sentence with another seed: the lips are the same, blinks, brows and head are redrawn.
    a = target_motion(speech.wav, speech.sample_rate, speech.phones, seed=0)
    b = target_motion(speech.wav, speech.sample_rate, speech.phones, seed=1)
    shares = error_shares([a], [b])
    assert list(shares) == ["mouth", "eyes", "brows", "head"]
    assert shares["mouth"] == 0.0 and shares["eyes"] > 0.0 and shares["head"] > 0.0
    assert sum(shares.values()) == pytest.approx(1.0)


def test_error_shares_pool_clips_by_squared_error(speech) -> None:
    a = target_motion(speech.wav, speech.sample_rate, speech.phones, seed=0)
    jaw, blink = a.copy(), a.copy()
    jaw[:, SPEC["jawOpen"]] += 0.1
    blink[:, SPEC["eyeBlinkLeft"]] += 0.3  # nine times the jaw's squared error, over as many frames
    assert error_shares([jaw, blink], [a, a]) == pytest.approx({"mouth": 0.1, "eyes": 0.9, "brows": 0.0, "head": 0.0})
    assert error_shares([a], [a]) == {"mouth": 0.0, "eyes": 0.0, "brows": 0.0, "head": 0.0}


def test_psnr_matches_scikit_image_per_frame_and_floors_identical_frames() -> None:
    from skimage.metrics import peak_signal_noise_ratio

    from talkhead.metrics import psnr_db

    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, (3, 16, 16, 3), dtype=np.uint8)
    b = np.clip(a + rng.normal(0, 8, a.shape), 0, 255).astype(np.uint8)
    mse = ((a.astype(np.float64) - b) ** 2).mean(axis=(1, 2, 3))
    expected = [peak_signal_noise_ratio(x, y, data_range=255) for x, y in zip(a, b)]
    np.testing.assert_allclose(psnr_db(mse), expected, rtol=1e-9)
    np.testing.assert_allclose(psnr_db(mse / 255 ** 2, peak=1.0), expected, rtol=1e-9)
    assert psnr_db(0.0) == 10 * np.log10(255.0 ** 2 / 1e-10)
