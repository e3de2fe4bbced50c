"""``talkhead data align`` on real recordings: a corpus that eval and training read, a report of what was skipped."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from talkhead.cli import main
from talkhead.errors import InputError
from talkhead.motion.data.real import AlignConfig, align_folder, read_transcripts
from talkhead.motion.data.windows import load_clips
from talkhead.rig.spec import SPEC

SPEECH = Path(__file__).resolve().parents[2] / "assets" / "speech"
GOOD = {"arctic_a0007", "arctic_a0009", "allison-agent-alreadyon", "allison-all-circuits-busy-now"}


@pytest.fixture(scope="module")
def aligned(tmp_path_factory):
    out = tmp_path_factory.mktemp("real") / "corpus"
    rows, skipped = align_folder(SPEECH, SPEECH / "transcripts.txt", out, AlignConfig(speaker="mixed", clips_per_shard=2))
    return out, rows, skipped


def test_aligned_corpus_reads_like_a_synthetic_one(aligned):
    out, rows, _ = aligned
    assert {r["id"] for r in rows} == GOOD
    assert all(r["split"] == "heldout" and r["voice"] == "mixed" for r in rows)
    clips = load_clips(out, "heldout")
    for row, motion in zip(clips.rows, clips.motion):
        assert len(motion) == row["frames"]
        jaw = motion[:, SPEC["jawOpen"]].numpy()
        # The mouth opens inside the aligned speech and rests in the silences around it.
        t = np.arange(len(jaw)) / 25
        first = next(s for p, s, _ in row["phones"] if p != "SIL")
        assert jaw[t > first].max() > 0.3 and jaw[t < first - 0.15].max(initial=0) < 0.1


def test_bad_clips_are_skipped_and_reported(aligned):
    out, _, skipped = aligned
    reasons = {s["id"]: s["reason"] for s in skipped}
    assert set(reasons) == {"allison-vm-goodbye", "allison-conf-now-unmuted", "missing-recording"}
    assert "does not fit" in reasons["allison-vm-goodbye"]
    assert "unmuted" in reasons["allison-conf-now-unmuted"]
    assert json.loads((out / "report.json").read_text())["skipped"] == skipped


def test_a_killed_run_resumes(aligned, tmp_path):
    out, rows, skipped = aligned
    copy = tmp_path / "corpus"
    shutil.copytree(out, copy)
    (copy / "manifest.jsonl").unlink()
    last = sorted((copy / "shards").glob("shard-*.npz"))[-1]
    last.unlink()  # killed while writing the last shard
    again, skipped_again = align_folder(SPEECH, SPEECH / "transcripts.txt", copy,
                                        AlignConfig(speaker="mixed", clips_per_shard=2))
    assert again == rows and sorted(map(str, skipped_again)) == sorted(map(str, skipped))
    with pytest.raises(InputError, match="other settings"):
        align_folder(SPEECH, SPEECH / "transcripts.txt", copy, AlignConfig(speaker="other", clips_per_shard=2))


def test_split_by_hash_is_stable(tmp_path):
    cfg = AlignConfig(heldout=0.5, seed=3)
    a, _ = align_folder(SPEECH, SPEECH / "transcripts.txt", tmp_path / "a", cfg)
    b, _ = align_folder(SPEECH, SPEECH / "transcripts.txt", tmp_path / "b", cfg)
    assert [r["split"] for r in a] == [r["split"] for r in b]


def test_transcript_file_errors(tmp_path):
    bad = tmp_path / "t.txt"
    bad.write_text("no separator here\n")
    with pytest.raises(InputError, match="expected 'ID: text'"):
        read_transcripts(bad)
    assert read_transcripts(SPEECH / "transcripts.txt")["arctic_a0007"].startswith("And you")


def test_cli_align_and_bad_input(tmp_path, capsys):
    assert main(["data", "align", str(SPEECH), "--transcripts", str(SPEECH / "transcripts.txt"),
                 "--out", str(tmp_path / "c"), "--quiet"]) == 0
    assert "4 clips (4 held out)" in capsys.readouterr().out
    assert main(["data", "align", str(tmp_path / "nowhere"), "--transcripts", str(SPEECH / "transcripts.txt"),
                 "--out", str(tmp_path / "d"), "--quiet"]) == 2
    assert "no such folder" in capsys.readouterr().err
    assert main(["data", "align", str(SPEECH), "--transcripts", str(SPEECH / "transcripts.txt"),
                 "--out", str(tmp_path / "e"), "--heldout", "2", "--quiet"]) == 2
