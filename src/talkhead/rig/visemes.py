"""Phones to visemes to blendshape targets, with coarticulation.

Every phone espeak-ng emits (IPA) and every ARPAbet phone (what forced
aligners emit) maps to a sequence of visemes; a diphthong or affricate glides
between two. An unknown phone is an error, never a silent zero. Targets are
blended over time with dominance functions (after Cohen & Massaro): each
segment pulls the mouth toward its target with a weight that rises before the
segment (anticipation) and decays after it (carry-over), so lips move before a
sound starts and strong segments such as bilabials reach their target.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

import numpy as np

from talkhead.config import FPS
from talkhead.rig.spec import SPEC

STRESS_MARKS = "ˈˌ"
# Length, syllabicity, aspiration and similar diacritics change timing, not lip shape.
_MODIFIERS = set("ːˑ̩̯ʰʲʷ̃ˠ-':")


@dataclass(frozen=True)
class Viseme:
    """A mouth shape: blendshape targets and how strongly it dominates its neighbours."""

    name: str
    targets: dict[str, float]
    dominance: float
    spread: float = 1.0  # scales how far ahead/behind the segment its dominance reaches


def _v(name: str, dominance: float, spread: float = 1.0, **targets: float) -> Viseme:
    return Viseme(name, targets, dominance, spread)


VISEMES: dict[str, Viseme] = {
    v.name: v
    for v in (
        _v("sil", 0.8),
        # Bilabials must close: overwhelming inside their segment, but a narrow reach so they
        # do not swamp the neighbouring vowels.
        _v("PP", 30.0, 0.4, jawOpen=0.06, mouthClose=0.06, mouthPressLeft=0.45, mouthPressRight=0.45,
           mouthRollLower=0.15, mouthRollUpper=0.1),
        _v("FF", 4.0, jawOpen=0.08, mouthRollLower=0.55, mouthUpperUpLeft=0.25, mouthUpperUpRight=0.25,
           mouthClose=0.02),
        _v("TH", 2.0, jawOpen=0.16, tongueOut=0.35, mouthStretchLeft=0.1, mouthStretchRight=0.1),
        _v("DD", 0.7, jawOpen=0.18, mouthStretchLeft=0.1, mouthStretchRight=0.1),
        _v("kk", 0.6, jawOpen=0.24, mouthStretchLeft=0.08, mouthStretchRight=0.08),
        _v("CH", 2.5, jawOpen=0.14, mouthFunnel=0.55, mouthPucker=0.35, mouthShrugUpper=0.2),
        _v("SS", 1.5, jawOpen=0.07, mouthStretchLeft=0.3, mouthStretchRight=0.3, mouthSmileLeft=0.15,
           mouthSmileRight=0.15),
        _v("RR", 1.2, jawOpen=0.16, mouthFunnel=0.35, mouthPucker=0.3),
        _v("W", 3.0, jawOpen=0.1, mouthPucker=0.85, mouthFunnel=0.3),
        _v("J", 0.8, jawOpen=0.12, mouthSmileLeft=0.25, mouthSmileRight=0.25, mouthStretchLeft=0.15,
           mouthStretchRight=0.15),
        _v("H", 0.25, jawOpen=0.25),
        _v("aa", 1.0, jawOpen=0.72, mouthLowerDownLeft=0.35, mouthLowerDownRight=0.35,
           mouthUpperUpLeft=0.1, mouthUpperUpRight=0.1),
        _v("E", 1.0, jawOpen=0.45, mouthStretchLeft=0.3, mouthStretchRight=0.3, mouthLowerDownLeft=0.2,
           mouthLowerDownRight=0.2),
        _v("I", 1.0, jawOpen=0.25, mouthSmileLeft=0.35, mouthSmileRight=0.35, mouthStretchLeft=0.3,
           mouthStretchRight=0.3),
        _v("O", 1.0, jawOpen=0.52, mouthFunnel=0.55, mouthPucker=0.3),
        _v("U", 1.2, jawOpen=0.2, mouthPucker=0.7, mouthFunnel=0.35),
        _v("@", 0.8, jawOpen=0.35, mouthLowerDownLeft=0.1, mouthLowerDownRight=0.1),
    )
}

# IPA symbols (as espeak-ng writes them for English voices) to visemes.
IPA: dict[str, str] = {
    "_": "sil",
    **dict.fromkeys(["p", "b", "m"], "PP"),
    **dict.fromkeys(["f", "v"], "FF"),
    **dict.fromkeys(["θ", "ð"], "TH"),
    **dict.fromkeys(["t", "d", "n", "l", "ɾ", "ɫ", "ʔ", "ɬ", "ɗ", "ɳ", "ɖ", "ʈ", "ɭ"], "DD"),
    **dict.fromkeys(["k", "g", "ɡ", "ŋ", "x", "ɣ", "q", "ɲ", "c", "ɟ"], "kk"),
    **dict.fromkeys(["ʃ", "ʒ", "ɕ", "ʑ"], "CH"),
    **dict.fromkeys(["s", "z"], "SS"),
    **dict.fromkeys(["ɹ", "r", "ɚ", "ɝ", "ʁ", "ɻ", "ɐ̯"], "RR"),
    **dict.fromkeys(["w", "ʍ", "ɥ"], "W"),
    "j": "J",
    **dict.fromkeys(["h", "ɦ"], "H"),
    **dict.fromkeys(["a", "ɑ", "æ", "ɐ", "ʌ", "ɶ", "ä"], "aa"),
    **dict.fromkeys(["e", "ɛ", "ɜ", "ɘ"], "E"),
    **dict.fromkeys(["i", "ɪ", "ɨ", "ᵻ", "y"], "I"),
    **dict.fromkeys(["o", "ɔ", "ɒ", "ø", "œ"], "O"),
    **dict.fromkeys(["u", "ʊ", "ɯ", "ʉ"], "U"),
    "ə": "@",
}
# Affricates glide closure -> release.
_AFFRICATES = {"tʃ": ["DD", "CH"], "dʒ": ["DD", "CH"], "ts": ["DD", "SS"], "dz": ["DD", "SS"]}

ARPABET: dict[str, str] = {
    "AA": "ɑ", "AE": "æ", "AH": "ʌ", "AO": "ɔ", "AW": "aʊ", "AX": "ə", "AY": "aɪ", "B": "b",
    "CH": "tʃ", "D": "d", "DH": "ð", "DX": "ɾ", "EH": "ɛ", "ER": "ɝ", "AXR": "ɚ", "EY": "eɪ",
    "F": "f", "G": "g", "HH": "h", "IH": "ɪ", "IX": "ɨ", "IY": "i", "JH": "dʒ", "K": "k",
    "L": "l", "EL": "l", "M": "m", "EM": "m", "N": "n", "EN": "n", "NG": "ŋ", "OW": "oʊ",
    "OY": "ɔɪ", "P": "p", "Q": "ʔ", "R": "ɹ", "S": "s", "SH": "ʃ", "T": "t", "TH": "θ",
    "UH": "ʊ", "UW": "u", "UX": "ʉ", "V": "v", "W": "w", "WH": "ʍ", "Y": "j", "Z": "z",
    "ZH": "ʒ", "SIL": "_", "SP": "_", "SPN": "_", "NSN": "_",
}
_ARPA_RE = re.compile(r"^([A-Z]+)([012])?$")


def stress_of(phone: str) -> int:
    """1 for primary stress, 2 for secondary, 0 for none (IPA marks or ARPAbet digits)."""
    if "ˈ" in phone or phone.endswith("1"):
        return 1
    if "ˌ" in phone or phone.endswith("2"):
        return 2
    return 0


def phone_visemes(phone: str) -> list[str]:
    """Visemes of one phone, IPA or ARPAbet, in order; raises KeyError if unknown."""
    if phone in ("", "_"):
        return ["sil"]
    arpa = _ARPA_RE.match(phone)
    if arpa and arpa.group(1) in ARPABET:
        phone = ARPABET[arpa.group(1)]
    # Combining diacritics (dental t̪, voiceless n̥, ...) refine where the tongue is, not the lips' shape.
    core = "".join(ch for ch in phone if ch not in STRESS_MARKS and ch not in _MODIFIERS and not unicodedata.combining(ch))
    if not core and phone.strip(STRESS_MARKS):
        return []  # a bare modifier (espeak emits e.g. "ʲ" alone): it prolongs the previous shape
    if core in _AFFRICATES:
        return list(_AFFRICATES[core])
    out: list[str] = []
    for ch in core:
        if ch not in IPA:
            raise KeyError(f"unknown phone {phone!r} (symbol {ch!r})")
        if not out or out[-1] != IPA[ch]:
            out.append(IPA[ch])
    return out


def segments(phones: list[tuple[str, float, float]]) -> list[tuple[str, float, float]]:
    """Split phones into (viseme, start, end) segments; glides share their phone's time."""
    segs: list[tuple[str, float, float]] = []
    for phone, start, end in phones:
        vis = phone_visemes(phone)
        if not vis:
            if segs:
                segs[-1] = (segs[-1][0], segs[-1][1], float(end))
            else:
                segs.append(("sil", float(start), float(end)))
            continue
        edges = np.linspace(start, end, len(vis) + 1)
        segs += [(v, float(a), float(b)) for v, a, b in zip(vis, edges[:-1], edges[1:])]
    return segs


@dataclass(frozen=True)
class CoarticulationConfig:
    """Dominance-function shape: how far ahead lips anticipate and how long they carry over."""

    anticipation_s: float = 0.06
    carryover_s: float = 0.045
    exponent: float = 2.0
    silence_hold_s: float = 0.12  # pauses shorter than this barely pull the mouth shut


def mouth_targets(phones: list[tuple[str, float, float]], n_frames: int,
                  cfg: CoarticulationConfig = CoarticulationConfig()) -> np.ndarray:
    """Phone timings -> coarticulated blendshape targets [n_frames, 58] (pose zero)."""
    segs = segments(phones)
    t = (np.arange(n_frames) + 0.5) / FPS
    starts = np.array([s for _, s, _ in segs])
    ends = np.array([e for _, _, e in segs])
    alpha = np.array([VISEMES[v].dominance for v, _, _ in segs])
    spread = np.array([VISEMES[v].spread for v, _, _ in segs])
    # Short pauses inside speech should not snap the mouth shut.
    is_sil = np.array([v == "sil" for v, _, _ in segs])
    alpha = np.where(is_sil, alpha * np.clip((ends - starts) / cfg.silence_hold_s, 0.05, 1.0), alpha)
    before = np.clip(starts[None, :] - t[:, None], 0, None) / (cfg.anticipation_s * spread[None, :])
    after = np.clip(t[:, None] - ends[None, :], 0, None) / (cfg.carryover_s * spread[None, :])
    dom = alpha[None, :] * np.exp(-((before + after) ** cfg.exponent))  # [T, K]
    targets = np.zeros((len(segs), SPEC.dim), np.float32)
    for k, (v, _, _) in enumerate(segs):
        for name, value in VISEMES[v].targets.items():
            targets[k, SPEC[name]] = value
    weight = dom.sum(1, keepdims=True)
    out = (dom @ targets) / np.maximum(weight, 1e-8)
    return np.clip(out, 0.0, 1.0).astype(np.float32)
