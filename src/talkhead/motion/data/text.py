"""A generator of varied English sentences with broad phoneme coverage.

A word list and a small grammar; no downloaded corpora. Deterministic for a
``numpy.random.Generator``.
"""

from __future__ import annotations

import numpy as np

NAMES = ["Bob", "Maria", "Judge Thompson", "the pilot", "my neighbour", "our teacher", "Zoe", "the vet",
         "Father Joe", "the captain", "Oliver", "a young chef", "the mayor", "Ruth", "Hugo", "the twins"]
NOUNS = ["apple", "bridge", "voyage", "measure", "thought", "rhythm", "jungle", "orange", "pleasure",
         "feather", "window", "garage", "mountain", "puzzle", "whisper", "yellow boat", "treasure map",
         "chimney", "bottle", "ocean", "museum", "shoe", "violin", "umbrella", "cookie", "zebra", "oyster",
         "thunder", "engine", "lamp", "village", "mirror", "pumpkin", "bagel", "fox", "cabbage", "theatre",
         "kitchen", "question", "judge", "giraffe", "quilt", "rooftop", "bamboo", "wolf", "sheep", "youth"]
VERBS = ["bought", "watched", "pushed", "measured", "juggled", "painted", "carried", "fixed", "thought about",
         "whispered to", "chased", "loved", "borrowed", "moved", "bumped into", "wrapped", "opened", "found",
         "threw", "squeezed", "played with", "shared", "hugged", "photographed", "admired", "ignored"]
ADJS = ["big", "bright", "smooth", "cheap", "huge", "awful", "shiny", "quiet", "purple", "rough", "beautiful",
        "foolish", "vivid", "genuine", "warm", "thick", "tiny", "noisy", "jolly", "mellow", "zany", "odd"]
ADVS = ["quickly", "happily", "rarely", "very slowly", "without warning", "at dawn", "every morning",
        "yesterday", "by the way", "all of a sudden", "for the fifth time", "in June", "at noon"]
PLACES = ["in the garage", "on the beach", "near the bridge", "at the zoo", "under the oak tree",
          "behind the theatre", "beside the pool", "in Boston", "through the woods", "at my aunt's house",
          "on a Thursday", "by the harbour", "across the valley"]
OPENERS = ["Well,", "Oh,", "You know,", "Honestly,", "Look,", "Hmm,", "So,", "Believe me,", "Of course,"]
QUESTIONS = ["Do you think", "Why would", "How could", "Where did", "Who says", "Would you believe"]
NUMBERS = ["two", "three", "seven", "eleven", "twenty", "ninety-nine", "a hundred", "a thousand"]


def _pick(rng: np.random.Generator, words: list[str]) -> str:
    return words[int(rng.integers(len(words)))]


def _noun_phrase(rng: np.random.Generator) -> str:
    r = rng.random()
    if r < 0.35:
        return f"the {_pick(rng, ADJS)} {_pick(rng, NOUNS)}"
    if r < 0.55:
        return f"{_pick(rng, NUMBERS)} {_pick(rng, NOUNS)}s"
    if r < 0.75:
        return _pick(rng, NAMES)
    noun = _pick(rng, NOUNS)
    return f"{'an' if noun[0] in 'aeiou' else 'a'} {noun}"


def sentence(rng: np.random.Generator) -> str:
    """One sentence: a statement, a question or an exclamation."""
    kind = rng.random()
    subject = _noun_phrase(rng)
    body = f"{subject} {_pick(rng, VERBS)} {_noun_phrase(rng)}"
    if rng.random() < 0.5:
        body += f" {_pick(rng, PLACES)}"
    if rng.random() < 0.4:
        body += f" {_pick(rng, ADVS)}"
    if kind < 0.2:
        text = f"{_pick(rng, QUESTIONS)} {body}?"
    elif kind < 0.3:
        text = f"{body}!"
    else:
        text = f"{body}."
    if rng.random() < 0.25:
        text = f"{_pick(rng, OPENERS)} {text[0].lower()}{text[1:]}"
    return text[0].upper() + text[1:]


def paragraph(rng: np.random.Generator, n_sentences: int) -> str:
    """Several sentences joined: speech with pauses between them."""
    return " ".join(sentence(rng) for _ in range(n_sentences))
