"""Figures of ``talkhead bench lips``: r by measure and person, and real frames beside speech-driven ones."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def plot_summary(result: dict, path: Path) -> None:
    """A bar per measure (mean r over people), each person's r as a dot on it."""
    from talkhead.bench.plots import new_figure, save_figure

    summary = result["summary"]
    names = sorted(summary, key=lambda m: summary[m]["mean"])
    fig, ax = new_figure((8, 0.45 * len(names) + 1.5), dpi=100)
    y = np.arange(len(names))
    ax.barh(y, [summary[m]["mean"] for m in names], color="#9ecae1")
    for i, m in enumerate(names):
        vals = list(summary[m]["people"].values())
        ax.scatter(vals, [i] * len(vals), s=10, color="#08519c", zorder=3)
        ax.text(max(0.0, summary[m]["mean"]) + 0.01, i, f"{summary[m]['mean']:.2f}", va="center", fontsize=7)
    ax.set_yticks(y, [f"{m} ({summary[m]['clips']} clips)" for m in names], fontsize=7)
    ax.set_xlim(-0.2, 1.0)
    ax.axvline(0, color="k", lw=0.6)
    ax.set_xlabel("inner-lip gap r with the real lips (best lag within +-8 frames); dots: people")
    ax.set_title("speech-driven lips against people filmed talking (held-out people only)", fontsize=9)
    fig.tight_layout()
    save_figure(fig, path, dpi=90)


def sheet(corpus: Path, rows: list[dict], path: Path, model=None, per_clip: int = 1, clips: int = 8) -> None:
    """Rows: one clip per person (its widest real mouth); columns: the real frame, the warp renderer drawing
    the captured motion, and the same drawing the first model's speech-driven motion."""
    from talkhead.bench.plots import new_figure, save_figure
    from talkhead.motion.data.talking import clip_arrays
    from talkhead.motion.stream import MotionConfig, motion_from_audio
    from talkhead.render import make_renderer
    from talkhead.video import iter_frames

    picked, seen = [], set()
    for r in rows:
        if r["person"] not in seen and r.get("path") is not None and len(picked) < clips:
            seen.add(r["person"])
            picked.append(r)
    cols = ["real", "captured motion (warp)"] + (["from speech (warp)"] if model is not None else [])
    fig, axes = new_figure((1.9 * len(cols), 1.9 * len(picked)), dpi=100, nrows=len(picked), ncols=len(cols),
                           squeeze=False)
    for i, r in enumerate(picked):
        a = clip_arrays(corpus, r)
        k = int(np.argmax(np.where(a["valid"], a["gap"], -1)))
        frames = iter_frames(r["path"])
        first = next(frames)
        real = first if k == 0 else next(f for j, f in enumerate(frames, 1) if j == k)
        warp = make_renderer("warp", first, 192, photo_name=r["file"])
        views = [real, next(iter(warp.frames(a["motion"][k:k + 1])))]
        if model is not None:
            wav = a["audio_filmed"].astype(np.float32) / 32767
            views.append(next(iter(warp.frames(motion_from_audio(model, wav, MotionConfig())[k:k + 1]))))
        for j, v in enumerate(views):
            axes[i][j].imshow(v)
            axes[i][j].axis("off")
            if i == 0:
                axes[i][j].set_title(cols[j], fontsize=8)
        axes[i][0].text(-4, real.shape[0] / 2, f"{r['person']}\nframe {k}", fontsize=7, ha="right", va="center")
    fig.suptitle("each person's widest real mouth, and what the tools draw there", fontsize=9)
    fig.tight_layout()
    save_figure(fig, path, dpi=80)
