"""Argument checks every command shares, and flags built from config dataclasses (defaults live once)."""

from __future__ import annotations

import argparse
import dataclasses
import types
import typing

from talkhead.errors import InputError


def check_device(name: str) -> str:
    """``--device``: cuda only where a CUDA device exists."""
    if name == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise InputError("--device cuda: no CUDA device is available")
    return name


def set_threads(n: int) -> None:
    """``--threads``: torch CPU threads (0: torch's default)."""
    if n < 0:
        raise InputError(f"--threads must be >= 0, got {n}")
    if n:
        import torch

        torch.set_num_threads(n)


def add_device(p: argparse.ArgumentParser, threads: bool = False) -> None:
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    if threads:
        p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")


def numbers(text: str, flag: str, kind: type) -> tuple:
    """"8,12,8,4" -> (8, 12, 8, 4); anything else is a one-line error naming the flag."""
    try:
        return tuple(kind(w) for w in text.split(","))
    except ValueError:
        noun = "whole numbers" if kind is int else "numbers"
        raise InputError(f"{flag} takes comma-separated {noun} (got {text!r})") from None


def _flag(f: dataclasses.Field) -> str:
    return f.metadata.get("flag", "--" + f.name.replace("_", "-"))


def add_config_flags(p: argparse.ArgumentParser, cls: type, skip: tuple[str, ...] = ()) -> None:
    """One flag per field of dataclass ``cls``, with the field's default and help (``metadata``)."""
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if f.name in skip:
            continue
        kind, meta = hints[f.name], f.metadata
        extra = {k: meta[k] for k in ("metavar", "choices") if k in meta}
        help_text = meta.get("help", "")
        if kind is bool:  # a default of True is turned off by --no-FLAG
            action = argparse.BooleanOptionalAction if f.default else "store_true"
            p.add_argument(_flag(f), dest=f.name, action=action, default=f.default, help=help_text)
            continue
        union = typing.get_origin(kind) in (typing.Union, types.UnionType)
        base = next((a for a in typing.get_args(kind) if a is not type(None)), kind) if union else kind  # X | None -> X
        if typing.get_origin(base) is tuple:  # comma-separated numbers, parsed (and checked) later
            base = str
        shown = "" if f.default is None else f" (default {f.default})"
        p.add_argument(_flag(f), dest=f.name, type=base, default=f.default, help=help_text + shown, **extra)


def config_from_args(cls: type, args: argparse.Namespace, **overrides):
    """The dataclass ``cls`` from parsed flags (as ``add_config_flags`` made them) and ``overrides``."""
    hints = typing.get_type_hints(cls)
    values = {}
    for f in dataclasses.fields(cls):
        if f.name in overrides or not hasattr(args, f.name):
            continue
        v = getattr(args, f.name)
        inner = [a for a in typing.get_args(hints[f.name]) if a is not type(None)]
        tup = next((a for a in [hints[f.name], *inner] if typing.get_origin(a) is tuple), None)
        if tup is not None and isinstance(v, str):
            v = numbers(v, _flag(f), typing.get_args(tup)[0])
        values[f.name] = v
    return cls(**values, **overrides)


def add_video_limit(p: argparse.ArgumentParser) -> None:
    """``--max-seconds`` on a command that reads video (``main`` applies it around the command)."""
    p.add_argument("--max-seconds", type=float, default=None, metavar="S",
                   help="refuse a video longer than S seconds, by its stated length or its frame times "
                        "(default 3600)")
