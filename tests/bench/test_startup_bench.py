"""``talkhead bench startup``: the whole process timed, and beside another checkout in one run."""

from __future__ import annotations

import json
from pathlib import Path

from talkhead.bench.startup import run_startup_bench
from talkhead.cli import main

SRC = Path(__file__).resolve().parents[2] / "src"


def test_startup_is_timed_whole_and_beside_another_checkout(tmp_path):
    r = run_startup_bench(tmp_path, runs=1, against=str(SRC))  # this checkout against itself
    assert r["seen_photo_s"] > 0.5 and r["new_photo_s"] > 0.5 and len(r["against_seen_runs_s"]) == 1
    assert 0.5 < r["seen_ratio_to_against"] < 2.0  # the same code: the same time, within the machine's noise
    assert json.loads((tmp_path / "startup.json").read_text())["against"] == str(SRC)
    assert (tmp_path / "startup.png").stat().st_size > 0


def test_an_avatar_is_timed_as_generate_draws_it(tiny_avatar, tmp_path, capsys):
    assert main(["bench", "startup", "--out", str(tmp_path), "--runs", "1", "--avatar", str(tiny_avatar)]) == 0
    r = json.loads((tmp_path / "startup.json").read_text())
    assert r["avatar"] == tiny_avatar.name and r["seen_photo_s"] > 0.5 and r["new_photo_s"] is None
    assert "the avatar" in capsys.readouterr().out and (tmp_path / "startup.png").stat().st_size > 0
    assert main(["bench", "startup", "--out", str(tmp_path), "--avatar", str(tmp_path / "none.avatar")]) == 2


def test_against_must_be_a_source_folder(tmp_path, capsys):
    assert main(["bench", "startup", "--out", str(tmp_path), "--runs", "1", "--against", str(tmp_path)]) == 2
    assert "src folder" in capsys.readouterr().err
