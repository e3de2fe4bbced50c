"""Plots for the docs and the benchmarks (matplotlib, Agg: no display needed)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from talkhead.config import DEFAULT_VOICE, FPS
from talkhead.rig.spec import SPEC
from talkhead.rig.visemes import phone_visemes
from talkhead.util import atomic_path

CLIP_CHANNELS = ("jawOpen", "mouthClose", "mouthPucker", "eyeBlinkLeft")
_SHADE = {"PP": "#f4b6b6", "FF": "#f7d9a8", "W": "#b9d3f2", "U": "#b9d3f2", "O": "#cfe0f5", "aa": "#d8f0c8"}


def new_figure(figsize: tuple[float, float], dpi: int = 110, **subplots):
    """(figure, axes) on matplotlib's Agg backend (no display needed), for a benchmark's plot."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=figsize, dpi=dpi, **subplots)


def save_figure(fig, path: str | Path, dpi: int | None = None) -> None:
    """Write a matplotlib figure as PNG atomically (a killed run leaves the old plot, never half a new one) and close it."""
    import matplotlib.pyplot as plt

    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=dpi)
    plt.close(fig)


def _phone_colour(phone: str) -> str | None:
    try:
        vis = phone_visemes(phone)
    except KeyError:
        return "#dddddd"
    for v in vis:
        if v in _SHADE:
            return _SHADE[v]
    return None if vis in ([], ["sil"]) else "#eeeeee"


def plot_clip(speech, motion: np.ndarray, path: str | Path, title: str | None = None) -> None:
    """One clip: waveform on top, jawOpen, mouthClose, mouthPucker and eyeBlinkLeft below, over its phones.

    ``speech`` has ``wav``, ``sample_rate`` and ``phones`` ((phone, start, end) in seconds), e.g. a
    ``talkhead.audio.tts.Speech``; ``motion`` is its [T, 58] motion at 25 fps. Phones are shaded
    along the time axis (bilabials red, labiodentals orange, rounded sounds blue, open vowels green)
    and labelled. Written atomically as PNG.
    """
    motion = np.asarray(motion)
    if motion.ndim != 2 or motion.shape[1] != SPEC.dim:
        raise ValueError(f"motion must be [T, {SPEC.dim}], got {list(motion.shape)}")
    wav = np.asarray(speech.wav, np.float32)
    duration = max(len(wav) / speech.sample_rate, len(motion) / FPS)
    phones = [(str(p), float(s), float(e)) for p, s, e in speech.phones]

    fig, (ax_w, ax_m) = new_figure((max(8.0, 3.2 * duration), 5.2), dpi=100, nrows=2, sharex=True,
                                   gridspec_kw={"height_ratios": [1, 2.6]})
    for ax in (ax_w, ax_m):
        _shade_phones(ax, phones)
    _plot_wave(ax_w, wav, speech.sample_rate, phones)
    _plot_channels(ax_m, motion, duration)
    if title:
        ax_w.set_title(title, fontsize=10)
    fig.tight_layout()
    save_figure(fig, path, dpi=110)


def _shade_phones(ax, phones: list[tuple[str, float, float]]) -> None:
    for phone, start, end in phones:
        colour = _phone_colour(phone)
        if colour:
            ax.axvspan(start, end, color=colour, alpha=0.55, lw=0)
        ax.axvline(start, color="#bbbbbb", lw=0.4)


def _plot_wave(ax, wav: np.ndarray, sample_rate: int, phones: list[tuple[str, float, float]]) -> None:
    ax.plot(np.arange(len(wav)) / sample_rate, wav, color="#555555", lw=0.4)
    lim = max(float(np.abs(wav).max()) if len(wav) else 1.0, 1e-3)
    ax.set_ylim(-1.05 * lim, 1.05 * lim)
    ax.set_yticks([])
    ax.set_ylabel("audio")
    for k, (phone, start, end) in enumerate(phones):
        if phone != "_":  # alternate heights so that short neighbours stay legible
            ax.text(0.5 * (start + end), lim * (0.82 if k % 2 else 0.62), phone, ha="center", va="center",
                    fontsize=8, family="DejaVu Sans")


def _plot_channels(ax, motion: np.ndarray, duration: float) -> None:
    t = (np.arange(len(motion)) + 0.5) / FPS
    styles = {"jawOpen": ("#1f77b4", "-"), "mouthClose": ("#d62728", "-"), "mouthPucker": ("#2ca02c", "-"),
              "eyeBlinkLeft": ("#7f7f7f", "--")}
    for name in CLIP_CHANNELS:
        colour, ls = styles[name]
        ax.plot(t, motion[:, SPEC[name]], color=colour, ls=ls, lw=1.6, marker=".", ms=3, label=name)
    gap = motion[:, SPEC["jawOpen"]] - motion[:, SPEC["mouthClose"]]
    ax.plot(t, gap, color="#9467bd", lw=0.9, ls=":", label="lip gap (jawOpen - mouthClose)")
    ax.set_ylim(-0.05, 1.05)
    ax.set_xlim(0, duration)
    ax.set_xlabel("time (s); shading: red p/b/m, orange f/v, blue rounded, green open vowels")
    ax.set_ylabel("blendshape weight")
    ax.legend(loc="upper right", fontsize=8, ncol=5, framealpha=0.9)


def main() -> None:  # pragma: no cover - regenerates docs/motion_clip.png
    """python -m talkhead.bench.plots [OUT.png]: the docs' example clip."""
    import sys

    from talkhead.audio.tts import synthesize
    from talkhead.rig import target_motion

    text = "Bob bought a blue umbrella; mom wore a warm woolen scarf."
    speech = synthesize(text, DEFAULT_VOICE)
    motion = target_motion(speech.wav, speech.sample_rate, speech.phones, seed=0)
    out = sys.argv[1] if len(sys.argv) > 1 else "docs/motion_clip.png"
    plot_clip(speech, motion, out, title=f'"{text}" (us-female, seed 0): phone-driven target motion')
    print(out)


if __name__ == "__main__":  # pragma: no cover
    main()


def plot_pareto(rows: list[dict], path: str | Path, title: str = "motion: latency vs parity") -> None:
    """Latency (log axis) against cosine similarity to the teacher at S = 50, one marker per row."""
    markers = {"teacher-ddim": "o", "teacher-dpmpp": "s", "teacher-unipc": "^"}
    fig, ax = new_figure((8, 5))
    for label in dict.fromkeys(r["sampler"] for r in rows):
        pts = [r for r in rows if r["sampler"] == label]
        ax.scatter([r["ms_per_clip"] for r in pts], [r["cosine_to_teacher50"] for r in pts],
                   marker=markers.get(label, "*"), s=90 if label.startswith("student") else 45, label=label)
        for r in pts:
            ax.annotate(f"S={r['steps']}", (r["ms_per_clip"], r["cosine_to_teacher50"]), fontsize=7,
                        xytext=(4, -8), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_xlabel("ms per 165-frame clip (log)")
    ax.set_ylabel("cosine to teacher DDIM S=50")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    save_figure(fig, path)
