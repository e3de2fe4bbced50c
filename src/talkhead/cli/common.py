"""Argument checks every command shares, and flags built from config dataclasses (defaults live once)."""

from __future__ import annotations

import argparse
import builtins
import dataclasses
import inspect
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


def numbers(text: str, flag: str, kind: type) -> tuple:
    """"8,12,8,4" -> (8, 12, 8, 4) ("a,b" -> ("a", "b") for names); else a one-line error naming the flag."""
    if kind is str:
        return tuple(w for w in text.split(",") if w)
    try:
        return tuple(kind(w) for w in text.split(","))
    except ValueError:
        noun = "whole numbers" if kind is int else "numbers"
        raise InputError(f"{flag} takes comma-separated {noun} (got {text!r})") from None


def _flag(f: dataclasses.Field) -> str:
    return f.metadata.get("flag", "--" + f.name.replace("_", "-"))


def _tuple_of(kind) -> type | None:
    """``tuple[X, ...]`` or ``tuple[X, ...] | None`` -> X; anything else -> None."""
    inner = [a for a in typing.get_args(kind) if a is not type(None)]
    tup = next((a for a in [kind, *inner] if typing.get_origin(a) is tuple), None)
    return None if tup is None else typing.get_args(tup)[0]


def add_config_flags(p: argparse.ArgumentParser | argparse._ArgumentGroup, cls: type,
                     skip: tuple[str, ...] = (), only: tuple[str, ...] | None = None) -> None:
    """One flag per field of dataclass ``cls`` (or of its fields named in ``only``), with its default and help.

    A field's ``metadata`` may give ``help``, ``flag`` (its name when not ``--field-name``), ``metavar``,
    ``choices``, ``type`` (a parser of the text, such as ``config.parse_size``), and for a tuple ``nargs`` ("+": one
    flag, several words) or ``append`` (the flag repeated); other tuples are comma-separated numbers.
    """
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if f.name in skip or (only is not None and f.name not in only):
            continue
        made = p.add_argument(_flag(f), dest=f.name, **_flag_kwargs(f, hints[f.name]))
        made.config_field = f"{cls.__name__}.{f.name}"  # tests tell generated flags from hand-written ones


def _flag_kwargs(f: dataclasses.Field, kind) -> dict:
    """argparse's keywords for one config field (see ``add_config_flags``)."""
    meta = f.metadata
    kw = {k: meta[k] for k in ("metavar", "choices", "nargs") if k in meta}
    if "type" in meta:
        kw["type"] = _parser(meta["type"])
    help_text = meta.get("help", "")
    if kind is bool:  # a default of True is turned off by --no-FLAG
        action = argparse.BooleanOptionalAction if f.default else "store_true"
        return {"action": action, "default": f.default, "help": help_text}
    element = _tuple_of(kind)
    shown = "" if f.default in (None, ()) else f" (default {_shown(f.default)})"
    kw.update(default=f.default, help=help_text + shown)
    if meta.get("append"):
        kw.update(action="append", default=list(f.default or ()), type=kw.get("type", element))
    elif element is not None and "nargs" in meta:
        kw["type"] = kw.get("type", element)
    elif "type" not in kw:
        union = typing.get_origin(kind) in (typing.Union, types.UnionType)
        base = next((a for a in typing.get_args(kind) if a is not type(None)), kind) if union else kind  # X | None
        kw["type"] = str if element is not None else base  # a tuple: comma-separated numbers, parsed later
    return kw


def _parser(parse):
    """A config's parser of a flag's text, its ValueError made argparse's one-line usage error."""
    def parse_flag(text: str):
        try:
            return parse(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
    return parse_flag


def _shown(default) -> str:
    return ",".join(map(str, default)) if isinstance(default, tuple) else str(default)


def add_param_flag(p: argparse.ArgumentParser, func, param: str, help: str, type=None, **kw) -> None:
    """A flag whose default is ``func``'s own keyword default ``param`` (written there only): for benchmarks
    whose settings are a function's keywords rather than a config dataclass."""
    default = inspect.signature(func).parameters[param].default
    shown = "" if default is None else f" (default {default})"
    made = p.add_argument("--" + param.replace("_", "-"), dest=param, default=default,
                          type=_parser(type) if type else builtins.type(default), help=help + shown, **kw)
    made.config_field = f"{func.__name__}.{param}"


def config_from_args(cls: type, args: argparse.Namespace, **overrides):
    """The dataclass ``cls`` from parsed flags of its fields' names (as ``add_config_flags`` made them, or left
    unset at None: the field's default) and ``overrides``."""
    hints = typing.get_type_hints(cls)
    values = {}
    for f in dataclasses.fields(cls):
        if f.name in overrides or not hasattr(args, f.name):
            continue
        v = getattr(args, f.name)
        if v is None and f.default is not None:  # a hand-written flag left unset: the config's own default
            continue
        element = _tuple_of(hints[f.name])
        if element is not None and isinstance(v, str):
            v = numbers(v, _flag(f), element)
        elif element is not None and isinstance(v, list):  # nargs or a repeated flag
            v = tuple(v)
        values[f.name] = v
    return cls(**values, **overrides)


def add_video_limit(p: argparse.ArgumentParser) -> None:
    """``--max-seconds`` on a command that reads video (``main`` applies it around the command)."""
    p.add_argument("--max-seconds", type=float, default=None, metavar="S",
                   help="refuse a video longer than S seconds, by its stated length or its frame times "
                        "(default 3600)")
