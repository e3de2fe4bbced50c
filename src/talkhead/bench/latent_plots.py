"""Figures of ``talkhead bench latent``: ms per frame by engine and runtime, and a contact sheet of faces."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np


def plot_speed(speed: dict, path: Path) -> None:
    """Horizontal bars: E1 (sample + decode) and E2 (sample only) ms per frame for every timed configuration."""
    from talkhead.bench.plots import new_figure, save_figure

    names = list(speed)
    e1 = [speed[n]["E1"]["ms_per_frame"] for n in names]
    e2 = [speed[n]["E2"]["ms_per_frame"] for n in names]
    y = np.arange(len(names))
    fig, ax = new_figure((9, 0.35 * len(names) + 1.5), dpi=100)
    ax.barh(y - 0.2, e1, 0.4, label="E1: sample + decode")
    ax.barh(y + 0.2, e2, 0.4, label="E2: sample only (latents out)")
    ax.axvline(10.8, color="k", ls="--", lw=1, label="target, 4 steps (10.8 ms)")
    ax.set_yticks(y, names, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("ms per 128 px frame (batches of 32)")
    ax.legend(fontsize=8)
    ax.set_title("latent face engine: CPU time per frame")
    fig.tight_layout()
    save_figure(fig, path, dpi=90)


def sheet(engines: dict, clips: list[dict], path: Path, draw: Callable, seed: int = 0) -> None:
    """Rows: a clip's most open-mouthed frame; columns: reference, the true crop, then each engine's.

    ``draw(engine, clip, seed)`` makes an engine's crops of a clip (the benchmark's own generation, passed in
    so that the plots need not import the benchmark).
    """
    from talkhead.bench.plots import new_figure, save_figure
    from talkhead.rig.spec import SPEC

    seen, rows = set(), []
    for c in clips:
        if c["row"]["photo_name"] not in seen:
            seen.add(c["row"]["photo_name"])
            rows.append(c)
    cols = ["reference", "truth (warp)", *engines]
    fig, axes = new_figure((1.9 * len(cols), 2.0 * len(rows)), dpi=100, nrows=len(rows), ncols=len(cols),
                           squeeze=False)
    for i, c in enumerate(rows):
        k = int(np.argmax(c["motion"][:, SPEC["jawOpen"]]))
        one = {**c, "motion": c["motion"][k:k + 1], "frames": c["frames"][k:k + 1]}
        imgs = [c["reference"], c["frames"][k]] + [draw(e, one, seed)[0] for e in engines.values()]
        for j, (ax, img) in enumerate(zip(axes[i], imgs)):
            ax.imshow(img)
            ax.axis("off")
            if i == 0:
                ax.set_title(Path(cols[j]).stem.replace("latent-", ""), fontsize=9)
        axes[i][0].text(-4, 64, f"{c['row']['photo_name']}\n({c['row']['split']})", fontsize=7, ha="right", va="center")
    fig.suptitle("latent face engine: held-out identities (and one training identity), jawOpen peak", fontsize=10)
    fig.tight_layout()
    save_figure(fig, path, dpi=80)
