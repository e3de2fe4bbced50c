"""The package's layout, kept as docs/layout.md states it: read from the source's own import statements.

Every ``import`` counts, at the top of a module or inside a function, because a lazy import is still a
dependency a reader has to follow. A package's ``__init__`` is its children's parent, not a dependency.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
ROOT = "talkhead"
# The engines, from the lowest up: each may import the shared ground and the engines before it.
ENGINES = ("face", "motion", "warp", "latent", "avatar")
SHARED = {"errors", "util", "config", "checkpoint", "video", "metrics", "rig", "audio", "diffusion", "train"}
ABOVE = {"render", "pipeline", "scale", "serve", "integrations", "bench", "cli"}  # what no engine imports


def _modules() -> dict[str, Path]:
    out = {}
    for p in (SRC / ROOT).rglob("*.py"):
        parts = list(p.relative_to(SRC).with_suffix("").parts)
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    return out


MODULES = _modules()


def _target(name: str) -> str | None:
    """The module an imported dotted name lives in (``talkhead.x.y.func`` -> ``talkhead.x.y``)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports() -> list[tuple[str, str, str]]:
    """(importing module, imported module, imported name or "") for every import of the package."""
    found = []
    for mod, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found += [(mod, t, "") for a in node.names if (t := _target(a.name)) and t.startswith(ROOT)]
            elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(ROOT):
                assert node.level == 0, f"{mod}: relative import"
                for a in node.names:
                    t = _target(f"{node.module}.{a.name}")
                    found.append((mod, t, "" if t != node.module else a.name))
    return [(a, b, n) for a, b, n in found if b != a and not a.startswith(b + ".")]


IMPORTS = _imports()


def _top(mod: str) -> str:
    return mod.split(".")[1] if "." in mod else ""


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = [stack.pop()]
            while comp[-1] != v:
                comp.append(stack.pop())
            on.difference_update(comp)
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in list(edges):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle_between_modules():
    edges = defaultdict(set)
    for a, b, _ in IMPORTS:
        edges[a].add(b)
    assert _cycles(edges) == []


def test_no_import_cycle_between_packages():
    edges = defaultdict(set)
    for a, b, _ in IMPORTS:
        if _top(a) != _top(b):
            edges[_top(a)].add(_top(b))
    assert _cycles(edges) == []


def test_no_private_name_taken_across_packages():
    taken = [(a, b, n) for a, b, n in IMPORTS if n.startswith("_") and not n.startswith("__") and _top(a) != _top(b)]
    assert taken == []


@pytest.mark.parametrize("engine", ENGINES)
def test_an_engine_imports_only_what_lies_below_it(engine):
    allowed = SHARED | set(ENGINES[:ENGINES.index(engine) + 1])
    wrong = sorted({(a, b) for a, b, _ in IMPORTS if _top(a) == engine and _top(b) not in allowed})
    assert wrong == [], f"{engine} may import {sorted(allowed)} only"


def test_shared_ground_imports_no_engine_and_render_no_engine_module():
    wrong = sorted({(a, b) for a, b, _ in IMPORTS
                    if (_top(a) in SHARED or _top(a) == "render") and _top(b) in set(ENGINES) | ABOVE - {"render"}})
    assert wrong == []


def test_cli_is_the_top():
    assert sorted({a for a, b, _ in IMPORTS if _top(b) == "cli" and _top(a) != "cli"}) == []


def _long_functions(limit: int = 50) -> list[str]:
    out = []
    for mod, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= limit:
                out.append(f"{mod}.{node.name}")
    return sorted(out)


def test_files_and_functions_stay_short():
    long_files = sorted(m for m, p in MODULES.items() if p.read_text().count("\n") >= 400)
    assert long_files == []
    assert len(_long_functions()) <= 2, _long_functions()


def test_every_name_a_recipe_imports_from_the_package_is_there():
    """Recipes are scripts no test runs (they need ../shared's data and minutes to hours); a name moved in ``src``
    must not leave one failing at its first line (``avatar_start_sweep.py`` did, 2026-12-07)."""
    import importlib.util

    missing = []
    for path in sorted((SRC.parent / "recipes").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == ROOT:
                module = importlib.import_module(node.module)
                missing += [f"{path.name}: {node.module}.{a.name}" for a in node.names if not hasattr(module, a.name)
                            and importlib.util.find_spec(f"{node.module}.{a.name}") is None]
    assert missing == []
