"""``talkhead data talking``, ``talkhead bench lips`` and ``talkhead distill lips`` on talking videos we make:
the astronaut drawn speaking (phone-driven motion, its own speech), once more re-encoded, and once with its
audio 4 frames late. The capture finds the drawn lips, the offset search finds the late audio, a copy is one
clip, a broken file is listed and skipped; the bench scores by person; fine-tuning moves the mouth toward
the captured lips, holds the rest, and its people are never scored."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from talkhead.cli import main
from talkhead.config import HOP
from talkhead.metrics import pearson
from talkhead.motion.data.talking import clip_arrays, gap_of_points, lagged_r, shift_audio
from talkhead.rig.spec import SPEC


def _reencode(src, dst, delay_frames: int = 0):
    """The video's frames again (another encoding, so other bytes), its audio ``delay_frames`` late."""
    from talkhead.audio.io import load_audio
    from talkhead.video import iter_frames, write_mp4

    wav = load_audio(src)
    wav = np.concatenate([np.zeros(delay_frames * HOP, np.float32), wav])[: len(wav)]
    write_mp4(dst, list(iter_frames(src)), wav)
    return dst


@pytest.fixture(scope="module")
def talking(talking_video, tmp_path_factory):
    """(folder of 3 videos + a copy + a broken file, corpus made from it, the true motion)."""
    video, true = talking_video
    root = tmp_path_factory.mktemp("talking")
    vids = root / "videos"
    vids.mkdir()
    shutil.copy(video, vids / "a-synced.mp4")
    _reencode(video, vids / "b-synced.mp4")
    _reencode(video, vids / "c-late.mp4", delay_frames=4)
    shutil.copy(video, vids / "d-copy.mp4")
    (vids / "e-broken.mp4").write_bytes(b"not a video at all")
    people = root / "people.json"
    people.write_text(json.dumps({"people": {"a-synced": "ann", "b-synced": "bob", "c-late": "cat"},
                                  "measure_only": ["c-"]}))
    corpus = root / "corpus"
    assert main(["data", "talking", str(vids), "--out", str(corpus), "--people", str(people), "--quiet",
                 "--no-occlusion"]) == 0
    return vids, corpus, people, true


def _rows(corpus):
    return {r["file"]: r for r in map(json.loads, (corpus / "manifest.jsonl").read_text().splitlines())}


def test_clips_hold_the_drawn_lips_speech_and_people(talking):
    vids, corpus, _, true = talking
    rows = _rows(corpus)
    assert set(rows) == {"a-synced.mp4", "b-synced.mp4", "c-late.mp4"}
    assert (rows["a-synced.mp4"]["person"], rows["c-late.mp4"]["split"]) == ("ann", "measure")
    report = json.loads((corpus / "report.json").read_text())
    why = {s["file"]: s["why"] for s in report["skipped"]}
    assert "same video as a-synced.mp4" in why["d-copy.mp4"] and "e-broken.mp4" in why
    a = clip_arrays(corpus, rows["a-synced.mp4"])
    n = min(len(true), len(a["motion"]))
    assert pearson(a["motion"][:n, SPEC["jawOpen"]], true[:n, SPEC["jawOpen"]]) > 0.9
    assert a["valid"].mean() > 0.95 and len(a["audio"]) == len(a["audio_filmed"]) == rows["a-synced.mp4"]["frames"] * HOP


def test_late_audio_is_found_and_moved_back(talking):
    vids, corpus, _, _ = talking
    rows = _rows(corpus)
    assert abs(rows["a-synced.mp4"]["offset_frames"]) <= 1 and abs(rows["b-synced.mp4"]["offset_frames"]) <= 1
    assert 3 <= rows["c-late.mp4"]["offset_frames"] <= 5
    c = clip_arrays(corpus, rows["c-late.mp4"])
    k = rows["c-late.mp4"]["offset_frames"] * HOP
    assert np.array_equal(c["audio"], c["audio_filmed"][k:])  # the end that has no sound left is cut


def test_a_rerun_resumes_and_bad_input_is_one_line(talking, tmp_path, capsys):
    vids, corpus, people, _ = talking
    before = {p.name: p.stat().st_mtime_ns for p in (corpus / "shards").iterdir()}
    assert main(["data", "talking", str(vids), "--out", str(corpus), "--people", str(people), "--quiet"]) == 0
    assert {p.name: p.stat().st_mtime_ns for p in (corpus / "shards").iterdir()} == before  # nothing redone
    assert main(["data", "talking", str(tmp_path / "nothing.mp4"), "--out", str(tmp_path / "c")]) == 2
    assert main(["data", "talking", str(vids / "e-broken.mp4"), "--out", str(tmp_path / "c")]) == 2
    assert main(["data", "talking", str(vids), "--out", str(tmp_path / "c"), "--sync-lag", "30"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "no such video" in err and "could be used" in err and "--sync-lag" in err


def test_a_fixed_sync_lag_moves_the_audio_and_drops_only_moved_clips_features(talking, tmp_path):
    vids, corpus, people, _ = talking
    mine = tmp_path / "corpus"
    shutil.copytree(corpus, mine)
    (mine / "cache").mkdir(exist_ok=True)
    ids = [r["id"] for r in _rows(mine).values()]
    np.savez(mine / "cache" / "features-x.npz", **{i: np.ones(3) for i in ids}, elsewhere=np.zeros(3))
    before = _rows(mine)
    assert main(["data", "talking", str(vids), "--out", str(mine), "--people", str(people), "--quiet",
                 "--sync-lag", "0"]) == 0
    assert {f: r["offset_frames"] for f, r in _rows(mine).items()} == \
        {f: r["speech_lag"] for f, r in before.items()}  # the median was 0 here: nothing moved
    assert set(np.load(mine / "cache" / "features-x.npz").files) == {*ids, "elsewhere"}
    late = before["c-late.mp4"]["speech_lag"]
    assert main(["data", "talking", str(vids), "--out", str(mine), "--people", str(people), "--quiet",
                 "--sync-lag", str(late)]) == 0
    rows = _rows(mine)
    assert rows["c-late.mp4"]["offset_frames"] == 0 and rows["a-synced.mp4"]["median_lag"] == late
    a = clip_arrays(mine, rows["a-synced.mp4"])
    assert np.array_equal(a["audio"][late * HOP:], a["audio_filmed"][: len(a["audio"]) - late * HOP])
    assert set(np.load(mine / "cache" / "features-x.npz").files) == {"elsewhere"}


def test_lags_from_a_file_replace_the_searched_ones_and_are_written_back(talking, tmp_path, capsys):
    vids, corpus, people, _ = talking
    mine = tmp_path / "corpus"
    shutil.copytree(corpus, mine)
    written = json.loads((mine / "lags.json").read_text())
    before = _rows(mine)
    assert written["lags"] == {r["id"]: r["speech_lag"] for r in before.values()}
    late = before["c-late.mp4"]
    lags = tmp_path / "lags.json"
    lags.write_text(json.dumps({"lags": {late["id"]: 0, "no-such-clip": 1}}))
    args = ["data", "talking", str(vids), "--out", str(mine), "--people", str(people), "--quiet", "--sync-lag", "0"]
    assert main([*args, "--lags", str(lags)]) == 0
    assert "no-such-clip" in capsys.readouterr().out  # a misspelt id is said, not ignored
    rows = _rows(mine)
    assert (rows["c-late.mp4"]["speech_lag"], rows["c-late.mp4"]["found_lag"]) == (0, late["speech_lag"])
    c = clip_arrays(mine, rows["c-late.mp4"])
    assert np.array_equal(c["audio"], c["audio_filmed"])  # the audio as filmed: the file said in sync
    assert json.loads((mine / "lags.json").read_text())["lags"][late["id"]] == 0
    assert rows["a-synced.mp4"]["speech_lag"] == before["a-synced.mp4"]["speech_lag"]  # not in the file: searched
    assert main(args) == 0  # without the file, the lag searched comes back
    assert _rows(mine)["c-late.mp4"]["offset_frames"] == late["speech_lag"]
    for bad in ({"lags": {"x": 1.5}}, {"lags": {"x": 40}}, {"nolags": {}}):
        lags.write_text(json.dumps(bad))
        assert main([*args, "--lags", str(lags)]) == 2
    assert main([*args, "--lags", str(tmp_path / "missing.json")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("lags file") == 4


def test_lag_search_and_shift_agree():
    rng = np.random.default_rng(0)
    real = np.convolve(rng.normal(size=300), np.ones(5) / 5, "same")
    late = np.concatenate([np.zeros(3), real])[:300]  # the prediction three frames late
    lag, r, r0 = lagged_r(real, late, max_lag=8)
    assert lag == 3 and r > 0.99 > r0
    wav = np.arange(10 * HOP, dtype=np.float32)
    assert np.array_equal(shift_audio(wav, 2)[:HOP], wav[2 * HOP: 3 * HOP])
    assert np.array_equal(shift_audio(wav, -1)[HOP:], wav)
    pts = np.zeros((1, 68, 2), np.float32)
    pts[0, 16, 0] = 100.0
    pts[0, [65, 66, 67], 1] = 10.0
    assert gap_of_points(pts)[0] == pytest.approx(0.1)


def test_bench_scores_people_and_finetuning_learns_their_lips(talking, tmp_path):
    from talkhead.bench.lips import LipsBenchConfig, run_lips_bench
    from talkhead.motion.model import load
    from talkhead.motion.train.lips import LipsConfig, finetune_lips

    vids, corpus, people, _ = talking
    out = tmp_path / "lips.safetensors"
    report = finetune_lips("student-1-whisper", corpus, out, LipsConfig(iters=30, batch=8, lr=1e-3, ema=0.0,
                                                                        hold_out=("bob",)), progress=False)
    assert report["people"] == ["ann"]  # bob held out, cat measure-only
    before, after = load("student-1-whisper"), load(out)
    assert after.meta["lips"]["people"] == ["ann"] and after.sampling == before.sampling
    row = _rows(corpus)["a-synced.mp4"]
    a = clip_arrays(corpus, row)
    wav = a["audio"].astype(np.float32) / 32767
    from talkhead.motion.stream import motion_from_audio

    got = {k: motion_from_audio(m, wav) for k, m in (("before", before), ("after", after))}
    err = {k: float(np.mean((g[:, SPEC.mouth] - a["motion"][: len(g), SPEC.mouth]) ** 2)) for k, g in got.items()}
    assert err["after"] < 0.8 * err["before"], err
    rest = [i for i in range(SPEC.dim) if i not in SPEC.mouth]
    moved = np.abs(got["after"][:, rest] - got["before"][:, rest]).mean()
    assert moved < 0.5 * np.abs(got["after"][:, SPEC.mouth] - got["before"][:, SPEC.mouth]).mean()
    cfg = LipsBenchConfig(models=("student-1-whisper", str(out)))
    result = run_lips_bench([vids], tmp_path / "bench", cfg, people, corpus, progress=False)
    s = result["summary"]
    assert s["capture"]["mean"] > 0.8 and set(s["capture"]["people"]) == {"ann", "bob", "cat"}
    # The captured lips drawn again swing about as far as the filmed ones; loudness has no gap to compare.
    assert 0.7 < s["capture"]["spread"] < 1.3 and "spread" not in s["loudness"], s["capture"]["spread"]
    assert set(s[str(out)]["people"]) == {"bob", "cat"}  # never scored on the person it learnt from
    assert s["student-1-whisper"]["mean"] > 0.5
    late = next(c for c in result["clips"] if c["person"] == "cat")
    assert 3 <= late["student-1-whisper"]["lag"] - next(c for c in result["clips"] if c["person"] == "ann")[
        "student-1-whisper"]["lag"] <= 5
    for f in ("lips.json", "lips.png", "lips_sheet.png"):
        assert (tmp_path / "bench" / f).stat().st_size > 0
