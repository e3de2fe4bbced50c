"""Figures of ``talkhead bench avatar``: the measures by method and pair, and a contact sheet of re-enacted frames."""

from __future__ import annotations

from pathlib import Path

import numpy as np

METHODS = ("avatar", "warp", "retrieval")
MEASURES = (("psnr_db", "lower-face PSNR (dB)"), ("lip_r", "lip gap r with the real lips"),
            ("detail_ratio", "detail / real"), ("flicker_ratio", "mouth flicker / real"))


def plot_rows(result: dict, path: Path) -> None:
    """One panel per measure: a bar per method, grouped by held-out pair."""
    from talkhead.bench.plots import new_figure, save_figure

    pairs = list(result["pairs"])
    fig, axes = new_figure((3.2 * (len(MEASURES) + 1), 3.4), dpi=100, ncols=len(MEASURES) + 1)
    x = np.arange(len(pairs))
    for ax, (key, label) in zip(axes, MEASURES):
        for j, m in enumerate(METHODS):
            vals = [result["pairs"][p]["rows"][m].get(key) or 0.0 for p in pairs]
            ax.bar(x + (j - 1) * 0.27, vals, 0.27, label=m)
        ax.set_xticks(x, pairs, fontsize=7)  # the held-out videos are named in the JSON
        ax.set_title(label, fontsize=9)
        if key in ("detail_ratio", "flicker_ratio"):
            ax.axhline(1.0, color="k", lw=0.8, ls="--")
    axes[0].legend(fontsize=7, loc="lower left")
    _by_pose(axes[-1], result, pairs)
    fig.suptitle("avatars re-enacting held-out real video (2 CPU cores)", fontsize=10)
    fig.tight_layout()
    save_figure(fig, path, dpi=90)


def _by_pose(ax, result: dict, pairs: list[str]) -> None:
    """Avatar minus warp renderer, lower-face dB, in each bin of head pose novelty (``bench.avatar.by_pose``)."""
    width = 0.8 / max(1, len(pairs))
    for j, p in enumerate(pairs):
        b = result["pairs"][p].get("by_pose")
        if not b:
            continue
        x = np.arange(len(b["bins_deg"]))
        gain = [a - w if a is not None and w is not None else 0.0 for a, w in zip(b["avatar"], b["warp"])]
        ax.bar(x + (j - (len(pairs) - 1) / 2) * width, gain, width, label=p)
        ax.set_xticks(x, [f"{d} deg" for d in b["bins_deg"]], fontsize=7)
    ax.axhline(0.0, color="k", lw=0.8)
    ax.set_title("avatar - warp (dB) by pose novelty", fontsize=9)
    ax.legend(fontsize=7)


def sheet(views: dict, path: Path, per_pair: int = 3) -> None:
    """Rows: held-out frames (most open mouths, spread out); columns: real, avatar, warp, retrieval (aligned crops)."""
    from talkhead.bench.plots import new_figure, save_figure
    from talkhead.rig.spec import SPEC

    rows = []
    for name, v in views.items():
        jaw = v["motion"][:, SPEC["jawOpen"]]
        bounds = np.linspace(0, len(jaw), per_pair + 1).astype(int)  # the widest-open mouth of each part
        picks = [int(a + np.argmax(jaw[a:b])) for a, b in zip(bounds, bounds[1:]) if b > a]
        rows += [(name, k, v) for k in picks]
    cols = ("real",) + METHODS
    fig, axes = new_figure((1.8 * len(cols), 1.9 * len(rows)), dpi=100, nrows=len(rows), ncols=len(cols),
                           squeeze=False)
    for i, (name, k, v) in enumerate(rows):
        for j, c in enumerate(cols):
            axes[i][j].imshow(v[c][k])
            axes[i][j].axis("off")
            if i == 0:
                axes[i][j].set_title(c, fontsize=9)
        axes[i][0].text(-4, v["real"].shape[1] / 2, f"{name}\nframe {k}", fontsize=7, ha="right", va="center")
    fig.suptitle("held-out frames re-enacted from their fitted motion", fontsize=10)
    fig.tight_layout()
    save_figure(fig, path, dpi=80)
