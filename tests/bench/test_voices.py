"""``bench voices``: word errors counted right, and a run on two sentences writes every figure for each voice."""

from __future__ import annotations

import json

import pytest

from talkhead.bench.voices import SENTENCES, VoicesBenchConfig, run_voices_bench, word_errors
from talkhead.errors import InputError


def test_word_errors_count_substitutions_insertions_and_deletions() -> None:
    ref = "the birch canoe slid".split()
    assert word_errors(ref, ref) == 0
    assert word_errors(ref, "the birch can you slid".split()) == 2  # one substituted, one inserted
    assert word_errors(ref, "birch canoe".split()) == 2
    assert word_errors(ref, []) == 4 and word_errors([], ["a"]) == 1


def test_two_voices_on_two_sentences(tmp_path) -> None:
    cfg = VoicesBenchConfig(voices=("joe", "us-female"), sentences=SENTENCES[:2], long_chars=600)
    result = run_voices_bench(tmp_path, cfg)
    assert json.loads((tmp_path / "voices.json").read_text())["rows"] == result["rows"]
    assert (tmp_path / "voices.png").stat().st_size > 5_000
    rows = {r["voice"]: r for r in result["rows"]}
    for r in rows.values():
        assert 0 < r["rtf"] < 2 and r["audio_s"] > 3 and -1 <= r["lip_r"] <= 1
        assert 0 <= r["wer"] <= 2 and len(r["sentences"]) == 2
        assert 0 < r["long_text_first_sentence_s"] < r["long_text_all_sentences_s_estimate"]
    assert rows["us-female"]["rtf"] < rows["joe"]["rtf"]  # espeak is the faster engine by far
    # The neural voice is understood. Piper draws its own noise, so its WER on two sentences varies: 0.25-0.44 in
    # 12 runs here, 0.56 once in CI; espeak's us-female, which PocketSphinx hardly understands, 0.94.
    assert rows["joe"]["wer"] <= 0.65 and rows["joe"]["aligned"] == "2/2"
    assert rows["joe"]["timing_r"] > 0.5  # its phones are where the aligner finds the sounds
    with pytest.raises(InputError):
        run_voices_bench(tmp_path, VoicesBenchConfig(voices=("jim",)))
