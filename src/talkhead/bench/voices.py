"""``talkhead bench voices``: the TTS voices side by side on the same sentences.

Per voice, on ten Harvard sentences (phonetically balanced, every word in the CMU dictionary):
- speed: synthesis seconds over audio seconds (real-time factor), warm (a Piper model's load apart),
  how soon a 5,000-character text has its first sentence (``speak_stream``), and an estimate of how long
  all its sentences take (what a live face would wait without sentence streaming);
- lip sync: the default motion model's jawOpen on the voice's audio against the rig targets of the
  voice's own phones (pooled Pearson r, as ``bench real``);
- phone timing: the rig's jawOpen from the engine's phones against the rig's jawOpen from PocketSphinx's
  forced alignment of the same audio (r): whether the phones the lips follow are where the sounds are;
- intelligibility: PocketSphinx decodes the audio with its US English language model; word error
  rate against the text (a relative figure: the recogniser is weak, but weak alike for every voice).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from talkhead.config import option
from talkhead.util import atomic_write

SENTENCES = (
    "The birch canoe slid on the smooth planks.",
    "Glue the sheet to the dark blue background.",
    "It's easy to tell the depth of a well.",
    "These days a chicken leg is a rare dish.",
    "Rice is often served in round bowls.",
    "The juice of lemons makes fine punch.",
    "The box was thrown beside the parked truck.",
    "The hogs were fed chopped corn and garbage.",
    "Four hours of steady work faced us.",
    "A large size in stockings is hard to sell.",
)


@dataclass(frozen=True)
class VoicesBenchConfig:
    """Which voices on which sentences, which motion model (None: the default shipped one), its noise seed."""

    voices: tuple[str, ...] = option(("joe", "us-female", "us-male", "gb-male"), "voice names", nargs="+")
    sentences: tuple[str, ...] = SENTENCES
    model: str | None = option(None, "motion model (default: the default one)")
    seed: int = 0
    long_chars: int = 5000  # the long text whose first sentence is timed


def word_errors(ref: list[str], hyp: list[str]) -> int:
    """Word-level edit distance (substitutions, insertions, deletions)."""
    row = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        prev, row[0] = row[0], i
        for j, h in enumerate(hyp, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (r != h))
    return row[-1]


@lru_cache(maxsize=1)
def _recogniser():
    import pocketsphinx

    return pocketsphinx.Decoder(samprate=16_000, loglevel="FATAL")  # with its US English language model


def _recognise(wav: np.ndarray) -> list[str]:
    """What PocketSphinx hears in 16 kHz audio, lower-case words."""
    d = _recogniser()
    d.start_utt()
    d.process_raw((np.clip(wav, -1, 1) * 32767).astype(np.int16).tobytes(), full_utt=True)
    d.end_utt()
    hyp = d.hyp()
    return hyp.hypstr.lower().split() if hyp is not None else []


def _timing_r(speech, text: str) -> float | None:
    """jawOpen of the rig from the engine's phones vs from PocketSphinx's alignment (None: alignment refused)."""
    from talkhead.audio.align import AlignError, align
    from talkhead.metrics import pearson
    from talkhead.rig import n_frames
    from talkhead.rig.spec import SPEC
    from talkhead.rig.visemes import mouth_targets

    try:
        aligned = align(speech.wav, text)
    except AlignError:
        return None
    n = n_frames(len(speech.wav), speech.sample_rate)
    jaw = SPEC["jawOpen"]
    return pearson(mouth_targets(speech.phones, n)[:, jaw], mouth_targets(aligned, n)[:, jaw])


def _voice_row(voice: str, model, cfg: VoicesBenchConfig) -> dict:
    from talkhead.audio.align import normalise
    from talkhead.audio.tts import speak_stream, synthesize
    from talkhead.metrics import lipsync_r
    from talkhead.motion.stream import MotionConfig, motion_from_audio
    from talkhead.rig import target_motion

    t = time.perf_counter()
    synthesize("Ready.", voice)  # loads a Piper model; warms espeak and the resampler
    warm_s = time.perf_counter() - t
    synth_s = audio_s = 0.0
    gens, targets, errors, words, timing, per = [], [], 0, 0, [], []
    for text in cfg.sentences:
        t = time.perf_counter()
        speech = synthesize(text, voice)
        synth_s += time.perf_counter() - t
        audio_s += speech.duration
        gens.append(motion_from_audio(model, speech.wav, MotionConfig(seed=cfg.seed)))
        targets.append(target_motion(speech.wav, speech.sample_rate, speech.phones, cfg.seed))
        ref, hyp = normalise(text), _recognise(speech.wav)
        errors, words = errors + word_errors(ref, hyp), words + len(ref)
        timing.append(_timing_r(speech, text))
        per.append({"text": text, "seconds": round(speech.duration, 3), "heard": " ".join(hyp),
                    "lip_r": round(lipsync_r(gens[-1:], targets[-1:]), 4),
                    "timing_r": None if timing[-1] is None else round(timing[-1], 4)})
    joined = " ".join(cfg.sentences)
    long_text = " ".join([joined] * (cfg.long_chars // len(joined) + 1))[: cfg.long_chars]
    t = time.perf_counter()
    next(speak_stream(long_text, voice))
    first_s = time.perf_counter() - t
    aligned = [r for r in timing if r is not None]
    return {"voice": voice, "warm_up_s": round(warm_s, 3), "synth_s": round(synth_s, 3), "audio_s": round(audio_s, 3),
            "rtf": round(synth_s / audio_s, 4), "long_text_chars": len(long_text),
            "long_text_first_sentence_s": round(first_s, 3),
            "long_text_all_sentences_s_estimate": round(synth_s / len(joined) * len(long_text), 1),
            "lip_r": round(lipsync_r(gens, targets), 4), "wer": round(errors / words, 4),
            "aligned": f"{len(aligned)}/{len(cfg.sentences)}",
            "timing_r": round(float(np.mean(aligned)), 4) if aligned else None, "sentences": per}


def run_voices_bench(out: str | Path, cfg: VoicesBenchConfig = VoicesBenchConfig()) -> dict:
    """Every voice of ``cfg`` on the same sentences; writes voices.json and voices.png under ``out``."""
    import torch

    from talkhead.audio.tts import check_voice
    from talkhead.motion.model import default_model_name, load_model

    for v in cfg.voices:
        check_voice(v)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    model = load_model(cfg.model)
    rows = []
    for v in cfg.voices:
        rows.append(_voice_row(v, model, cfg))
        r = rows[-1]
        print(f"{v:16s} RTF {r['rtf']:.3f}  lip r {r['lip_r']:.3f}  phone timing r {r['timing_r']}  "
              f"WER {r['wer']:.2f}  first of {r['long_text_chars']} chars in {r['long_text_first_sentence_s']:.2f} s")
    result = {"config": asdict(cfg), "model": cfg.model or default_model_name(),
              "threads": torch.get_num_threads(), "cpu_count": os.cpu_count(), "rows": rows}
    atomic_write(out / "voices.json", json.dumps(result, indent=1, ensure_ascii=False).encode())
    _plot(rows, out / "voices.png")
    return result


def _plot(rows: list[dict], path: Path) -> None:
    from talkhead.bench.plots import new_figure, save_figure

    names = [r["voice"] for r in rows]
    panels = [("rtf", "synthesis time / audio time (lower is faster)"), ("lip_r", "jawOpen r: model vs phones"),
              ("timing_r", "phone timing r vs forced alignment"), ("wer", "word error rate (PocketSphinx)")]
    fig, axes = new_figure((3.2 * len(panels), 0.45 * len(rows) + 1.6), dpi=100, ncols=len(panels))
    y = np.arange(len(rows))
    for ax, (key, label) in zip(axes, panels):
        ax.barh(y, [r[key] or 0.0 for r in rows], color=["C1" if n in _piper() else "C0" for n in names])
        ax.set_yticks(y, names if ax is axes[0] else [""] * len(rows), fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel(label, fontsize=8)
    fig.tight_layout()
    save_figure(fig, path)


def _piper() -> set[str]:
    from talkhead.audio.piper_tts import PIPER_VOICES

    return set(PIPER_VOICES)
