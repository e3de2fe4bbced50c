"""The synthetic corpus: deterministic for a seed, resumable after a kill, honest about its settings."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from talkhead.audio.tts import CORPUS_VOICES, HELD_OUT_VOICES, SAMPLE_RATE, VOICES
from talkhead.config import FPS
from talkhead.errors import InputError
from talkhead.motion.data.corpus import CorpusConfig, load_manifest, read_shard_rows, synth_corpus
from talkhead.rig.spec import SPEC

TINY = CorpusConfig(minutes=0.6, seed=3, clips_per_shard=4)


def _shard_arrays(folder: Path) -> dict[str, dict[str, np.ndarray]]:
    out = {}
    for shard in sorted((folder / "shards").glob("*.npz")):
        with np.load(shard) as z:
            out[shard.name] = {k: z[k] for k in z.files}
    return out


def _leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.rglob("*") if ".part" in p.name]


@pytest.fixture(scope="module")
def tiny_pair(tmp_path_factory):
    """The tiny corpus made twice: in this process and with two worker processes."""
    a, b = tmp_path_factory.mktemp("one"), tmp_path_factory.mktemp("two")
    rows_a = synth_corpus(a, TINY, workers=1)
    rows_b = synth_corpus(b, TINY, workers=2)
    return a, rows_a, b, rows_b


def test_deterministic_across_runs_and_worker_counts(tiny_pair) -> None:
    a, rows_a, b, rows_b = tiny_pair
    assert rows_a == rows_b
    assert (a / "manifest.jsonl").read_bytes() == (b / "manifest.jsonl").read_bytes()
    assert (a / "corpus.json").read_bytes() == (b / "corpus.json").read_bytes()
    arr_a, arr_b = _shard_arrays(a), _shard_arrays(b)
    assert arr_a.keys() == arr_b.keys() and len(arr_a) >= 2
    for shard in arr_a:
        assert arr_a[shard].keys() == arr_b[shard].keys()
        for key in arr_a[shard]:
            assert np.array_equal(arr_a[shard][key], arr_b[shard][key]), (shard, key)
    assert _leftovers(a) == _leftovers(b) == []


def test_a_third_run_elsewhere_matches(tiny_pair, tmp_path: Path) -> None:
    a, rows_a, _, _ = tiny_pair
    synth_corpus(tmp_path, TINY, workers=1)
    assert (tmp_path / "manifest.jsonl").read_bytes() == (a / "manifest.jsonl").read_bytes()


def test_clips_and_manifest(tiny_pair) -> None:
    a, rows, _, _ = tiny_pair
    assert rows == load_manifest(a)
    total = sum(r["duration"] for r in rows)
    assert total >= TINY.minutes * 60
    assert total - max(r["duration"] for r in rows) * TINY.clips_per_shard < TINY.minutes * 60  # stopped in time
    assert len({r["id"] for r in rows}) == len(rows)
    arrays = _shard_arrays(a)
    for r in rows:
        assert 2.0 <= r["duration"] <= 12.0, r["id"]
        assert r["voice"] in VOICES
        assert r["split"] == ("heldout" if r["voice"] in HELD_OUT_VOICES else "train")
        assert r["frames"] == math.ceil(r["duration"] * FPS - 1e-6)
        shard = arrays[Path(r["shard"]).name]
        audio, motion = shard[f"{r['id']}/audio"], shard[f"{r['id']}/motion"]
        assert audio.dtype == np.int16 and motion.dtype == np.float32
        assert len(audio) / SAMPLE_RATE == pytest.approx(r["duration"], abs=1e-4)
        assert motion.shape == (r["frames"], SPEC.dim) == (math.ceil(len(audio) * FPS / SAMPLE_RATE), 58)
        phones = r["phones"]
        assert phones[0][1] == 0.0 and phones[-1][2] == pytest.approx(r["duration"], abs=1e-4)
        assert all(p[2] == q[1] for p, q in zip(phones, phones[1:]))
        assert r["text"] and 0 <= r["pitch"] <= 99 and r["rate"] > 80
    assert {r["split"] for r in rows} == {"train", "heldout"}  # this seed draws both kinds
    for shard in (a / "shards").glob("*.npz"):
        assert read_shard_rows(shard) == [r for r in rows if Path(r["shard"]).name == shard.name]


def test_other_settings_in_the_same_folder_are_refused(tiny_pair, tmp_path: Path) -> None:
    a, _, _, _ = tiny_pair
    before = {p: p.read_bytes() for p in a.rglob("*") if p.is_file()}
    for cfg in (CorpusConfig(minutes=0.6, seed=4, clips_per_shard=4),
                CorpusConfig(minutes=0.6, seed=3, clips_per_shard=8),
                CorpusConfig(minutes=0.6, seed=3, clips_per_shard=4, held_out=("us-male",))):
        with pytest.raises(InputError, match="other settings"):
            synth_corpus(a, cfg, workers=1)
    assert {p: p.read_bytes() for p in a.rglob("*") if p.is_file()} == before  # untouched


def test_more_minutes_extends_the_same_corpus(tiny_pair, tmp_path: Path) -> None:
    a, rows_a, _, _ = tiny_pair
    small = tmp_path / "c"
    synth_corpus(small, TINY, workers=1)
    bigger = synth_corpus(small, CorpusConfig(minutes=1.0, seed=3, clips_per_shard=4), workers=1)
    assert bigger[: len(rows_a)] == rows_a and len(bigger) > len(rows_a)


def test_load_manifest_of_a_non_corpus_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not a talkhead corpus"):
        load_manifest(tmp_path)


def _synth_cmd(out: Path, seed: int = 5, minutes: float = 5.0) -> list[str]:
    return [sys.executable, "-m", "talkhead.cli", "data", "synth", "--minutes", str(minutes), "--out", str(out),
            "--seed", str(seed), "--workers", "1", "--quiet"]


def test_killed_run_resumes_to_the_same_corpus(tmp_path: Path) -> None:
    """SIGKILL after the first shard lands, run again: the same corpus as an uninterrupted run.

    The CLI packs 32 clips (~3 min of speech) into a shard, so 5 minutes makes two shards and the
    kill falls between them ("--minutes 1.5" would fit in a single shard: nothing to resume).
    """
    whole, resumed = tmp_path / "whole", tmp_path / "resumed"
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    proc = subprocess.Popen(_synth_cmd(resumed), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    first = resumed / "shards" / "shard-00000.npz"
    deadline = time.monotonic() + 60
    while not first.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read().decode()  # killed, not finished
    assert first.exists()
    assert not (resumed / "manifest.jsonl").exists()  # it really was cut short
    assert not (resumed / "shards" / "shard-00001.npz").exists()

    done = subprocess.run(_synth_cmd(resumed), env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    full = subprocess.run(_synth_cmd(whole), env=env, capture_output=True, text=True, timeout=120)
    assert full.returncode == 0, full.stderr

    assert (resumed / "manifest.jsonl").read_bytes() == (whole / "manifest.jsonl").read_bytes()
    rows = load_manifest(resumed)
    assert len(rows) == len({r["id"] for r in rows}) and len({r["shard"] for r in rows}) >= 2
    assert _leftovers(resumed) == []
    a, b = _shard_arrays(resumed), _shard_arrays(whole)
    assert a.keys() == b.keys()
    for shard in a:
        for key in a[shard]:
            assert np.array_equal(a[shard][key], b[shard][key]), (shard, key)

    # The same folder with another seed: refused, one line, exit 2, nothing changed.
    before = {p: p.read_bytes() for p in resumed.rglob("*") if p.is_file()}
    other = subprocess.run(_synth_cmd(resumed, seed=6), env=env, capture_output=True, text=True, timeout=60)
    assert other.returncode == 2
    assert other.stderr.startswith("talkhead: error: ") and other.stderr.count("\n") == 1
    assert {p: p.read_bytes() for p in resumed.rglob("*") if p.is_file()} == before


def test_a_wide_corpus_adds_the_extra_voices_and_keeps_held_out_voices_held_out(tmp_path: Path) -> None:
    from talkhead.cli import main

    assert CorpusConfig().voices == CORPUS_VOICES
    assert main(["data", "synth", "--minutes", "0.5", "--seed", "5", "--voices", "wide", "--workers", "1",
                 "--quiet", "--out", str(tmp_path)]) == 0
    rows = load_manifest(tmp_path)
    assert {r["voice"] for r in rows} - set(CORPUS_VOICES)  # speech in voices the teacher never heard
    assert all(r["split"] == ("heldout" if r["voice"] in HELD_OUT_VOICES else "train") for r in rows)
    assert main(["data", "synth", "--minutes", "0.5", "--seed", "5", "--quiet", "--out", str(tmp_path)]) == 2
