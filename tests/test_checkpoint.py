"""Checkpoint files: weights read back as written; a NaN or infinity anywhere is refused by the tensor's name."""

from __future__ import annotations

import pytest
import torch

from talkhead.checkpoint import load_checkpoint, save_checkpoint
from talkhead.errors import InputError


def _weights() -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return {f"layer{i}.weight": torch.randn(64, 64, generator=g) for i in range(5)} | {"steps": torch.arange(3)}


@pytest.mark.parametrize("dtype", [None, torch.float16])
def test_weights_come_back_as_float32_and_huge_finite_values_are_accepted(tmp_path, dtype):
    w = _weights()
    w["layer0.weight"][0] = 3e38 if dtype is None else 6e4  # near the type's largest: finite, summing past it
    save_checkpoint(tmp_path / "m.safetensors", w, {"kind": "test"}, dtype=dtype)
    back, meta = load_checkpoint(tmp_path / "m.safetensors")
    assert meta["kind"] == "test" and back["steps"].dtype == torch.int64
    assert all(v.dtype == torch.float32 for k, v in back.items() if k != "steps")
    torch.testing.assert_close(back["layer3.weight"], w["layer3.weight"].to(dtype or torch.float32).float())


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_a_nan_or_infinity_is_refused_naming_its_tensor(tmp_path, bad):
    w = _weights()
    w["layer3.weight"][5, 7] = bad
    save_checkpoint(tmp_path / "m.safetensors", w, {"kind": "test"})
    with pytest.raises(InputError, match="'layer3.weight' holds NaN or infinite values"):
        load_checkpoint(tmp_path / "m.safetensors")


class _Net(torch.nn.Module):
    def __init__(self, width: int = 8, keep: bool = False) -> None:
        super().__init__()
        self.a, self.b = torch.nn.Linear(4, width), torch.nn.LayerNorm(width)
        if keep:
            self.scale = torch.full((width,), 2.0)  # a tensor outside the state: must not stay on the meta device

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(self.a(x))


@pytest.mark.parametrize("keep", [False, True])
def test_with_weights_holds_the_files_tensors_and_builds_for_real_when_it_must(keep):
    from talkhead.checkpoint import with_weights

    weights = {k: torch.randn(v.shape) for k, v in _Net().state_dict().items()}
    net = with_weights(lambda: _Net(keep=keep), weights, "net")
    assert all(not t.is_meta for t in [*net.parameters(), *vars(net).values()] if isinstance(t, torch.Tensor))
    torch.testing.assert_close(net.state_dict(), weights)
    assert net(torch.ones(1, 4)).shape == (1, 8) and (not keep or float(net.scale.sum()) == 16.0)
    with pytest.raises(InputError, match="described"):
        with_weights(lambda: _Net(width=9), weights, "net")
