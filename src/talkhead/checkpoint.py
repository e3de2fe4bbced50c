"""Self-describing checkpoints: safetensors weights with config and normalisation in the metadata."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open
from safetensors.torch import save as st_save
from torch.overrides import TorchFunctionMode

from talkhead.errors import InputError
from talkhead.util import atomic_write

FORMAT = "talkhead-motion-v1"


class NotACheckpoint(InputError):
    """The file is not one ``save_checkpoint`` wrote (missing, unreadable, another format)."""


def dataclass_from(cls: type, data: dict[str, Any]) -> Any:
    """Rebuild a frozen config dataclass from JSON, ignoring keys it does not know."""
    names = {f.name for f in fields(cls)}
    return cls(**{k: (tuple(v) if isinstance(v, list) else v) for k, v in data.items() if k in names})


def save_checkpoint(path: str | Path, tensors: dict[str, torch.Tensor], meta: dict[str, Any],
                    dtype: torch.dtype | None = None) -> None:
    """Write weights and JSON-able metadata to ``path`` atomically."""
    meta = {"format": FORMAT, **meta}
    flat = {k: json.dumps(asdict(v) if hasattr(v, "__dataclass_fields__") else v) for k, v in meta.items()}
    cast = {k: (v.to(dtype) if dtype is not None and v.is_floating_point() else v).contiguous().cpu()
            for k, v in tensors.items()}
    atomic_write(path, st_save(cast, metadata=flat))


def resolve_named(name_or_path: str | Path, folder: Path, what: str = "model") -> Path:
    """A checkpoint path, or the name of one shipped in ``folder``; unknown names list the shipped ones."""
    p = Path(name_or_path)
    if p.suffix == ".safetensors" or p.exists():
        return p
    shipped = folder / f"{name_or_path}.safetensors"
    if shipped.is_file():
        return shipped
    names = sorted(q.stem for q in folder.glob("*.safetensors"))
    raise InputError(f"unknown {what} {str(name_or_path)!r}; shipped: {', '.join(names) or 'none'}")


def load_checkpoint(path: str | Path) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """Read weights (as float32) and metadata written by ``save_checkpoint``."""
    path = Path(path)
    if not path.is_file():
        raise NotACheckpoint(f"no such checkpoint: {path}")
    try:
        with safe_open(str(path), framework="pt") as f:
            raw = f.metadata() or {}
            tensors = {k: f.get_tensor(k) for k in f.keys()}
    except Exception as e:  # safetensors raises several types for a damaged file
        raise NotACheckpoint(f"{path} is not a readable safetensors checkpoint ({e})") from None
    try:
        meta = {k: json.loads(v) for k, v in raw.items()}
    except ValueError:
        raise NotACheckpoint(f"{path} is not a talkhead checkpoint (its metadata is not JSON)") from None
    if meta.get("format") != FORMAT:
        raise NotACheckpoint(f"{path} is not a talkhead motion checkpoint")
    tensors = {k: (v.float() if v.is_floating_point() else v) for k, v in tensors.items()}
    # A tensor's sum in float64 is finite exactly when all its values are (float32 values cannot overflow it, and
    # NaN and infinities carry through): 3 ms for a model where isfinite over every value took 70-110 ms.
    sums = [v.sum(dtype=torch.float64) for v in tensors.values() if v.is_floating_point()]
    if sums and not torch.isfinite(torch.stack(sums)).all():
        bad = next(k for k, v in tensors.items() if v.is_floating_point() and not torch.isfinite(v).all())
        raise InputError(f"{path}: tensor {bad[:64]!r} holds NaN or infinite values")
    return tensors, meta


@contextmanager
def described(path: str | Path, what: str) -> Iterator[None]:
    """Errors while building from a file's metadata are the file's: one named InputError, not a traceback."""
    try:
        yield
    except InputError:
        raise
    except (TypeError, ValueError, KeyError, IndexError, AttributeError, RuntimeError, OverflowError) as e:
        raise InputError(f"{path} is not a usable {what} ({type(e).__name__}: {str(e)[:160]})") from None


# Random initialisers, as torch and torch.nn.init name them: a probe's values are never read.
_RANDOM_INIT = {"normal_", "uniform_", "bernoulli_", "random_", "exponential_", "cauchy_", "log_normal_",
                "geometric_", "kaiming_uniform_", "kaiming_normal_", "xavier_uniform_", "xavier_normal_",
                "trunc_normal_", "orthogonal_"}


class _NoRandomInit(TorchFunctionMode):
    """Random initialisation skipped (``randn``/``rand`` give empty tensors, in-place initialisers do nothing).

    Drawing random numbers on the meta device runs torch's Python reference ops, which import its symbolic
    shape machinery (sympy, dynamo): 1.1 s of a ``generate``'s start-up, measured, for values nobody reads."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func in (torch.randn, torch.rand):
            kwargs.pop("generator", None)
            return torch.empty(*args, **kwargs)
        if getattr(func, "__name__", "") in _RANDOM_INIT:
            return args[0] if args else kwargs["tensor"]
        return func(*args, **kwargs)


def check_weights(make: Callable[[], torch.nn.Module], tensors: dict[str, torch.Tensor], what: str) -> torch.nn.Module:
    """Refuse weights that are not exactly those of the network ``make`` builds from a file's metadata; returns
    that network, built on the meta device (its weights are not there).

    The meta device allocates nothing: metadata that describes a huge network (a crafted file's widths)
    costs nothing to refuse, where building it for real would take GBs."""
    with torch.device("meta"), _NoRandomInit():
        probe = make()
    want = {k: tuple(v.shape) for k, v in probe.state_dict().items()}
    got = {k: tuple(v.shape) for k, v in tensors.items()}
    if want != got:
        odd = sorted(set(want) ^ set(got)) or sorted(k for k in want if want[k] != got[k])
        raise InputError(f"{what}: its weights are not those of the network its metadata describes "
                         f"({odd[0][:64]!r}: {want.get(odd[0])} described, {got.get(odd[0])} stored)")
    return probe


def with_weights(make: Callable[[], torch.nn.Module], tensors: dict[str, torch.Tensor], what: str) -> torch.nn.Module:
    """The network ``make`` builds, holding ``tensors`` (checked by ``check_weights``) as its weights.

    The checked meta-device network is given the tensors themselves, so no weights are initialised only to be
    overwritten (a motion model: 0.2 s of every start-up). A network that keeps a tensor outside its state
    (built in ``__init__``, left on the meta device) is built again for real instead."""
    net = check_weights(make, tensors, what)
    net.load_state_dict(tensors, assign=True)
    if any(t.is_meta for m in net.modules() for t in (*m.parameters(False), *m.buffers(False), *vars(m).values())
           if isinstance(t, torch.Tensor)):
        net = make()
        net.load_state_dict(tensors)
    return net