"""Motion files: Live Link Face style CSV and .npy, atomic, strict about what they accept."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from talkhead.errors import InputError
from talkhead.rig.io import load_motion, save_motion
from talkhead.rig.spec import SPEC


@pytest.fixture(scope="module")
def motion(tts_motions) -> np.ndarray:
    return tts_motions["us-female"][1]


def test_csv_round_trip(tmp_path: Path, motion: np.ndarray) -> None:
    path = tmp_path / "m.csv"
    save_motion(path, motion)
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    assert tuple(rows[0]) == SPEC.names  # header: the 58 channel names in SPEC order
    assert len(rows) == 1 + len(motion)  # one row per frame
    assert all(len(r) == 58 for r in rows)
    back = load_motion(path)
    assert back.dtype == np.float32 and back.shape == motion.shape
    np.testing.assert_allclose(back, motion, rtol=1e-5, atol=1e-6)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.csv"]  # no temp file left


def test_npy_round_trip_is_exact(tmp_path: Path, motion: np.ndarray) -> None:
    save_motion(tmp_path / "m.npy", motion)
    back = load_motion(tmp_path / "m.npy")
    assert back.dtype == np.float32 and np.array_equal(back, motion)
    save_motion(tmp_path / "d.npy", motion.astype(np.float64))  # stored as float32 whatever comes in
    assert np.load(tmp_path / "d.npy").dtype == np.float32


def test_live_link_face_capitalised_headers(tmp_path: Path, motion: np.ndarray) -> None:
    """Columns are found by name: Live Link Face's capitals, extra columns, any order."""
    rng = np.random.default_rng(0)
    order = rng.permutation(SPEC.dim)
    header = ["Timecode", "BlendShapeCount"] + [SPEC.names[i][0].upper() + SPEC.names[i][1:] for i in order]
    header += ["LeftEyeYaw"]
    path = tmp_path / "llf.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        for k, row in enumerate(motion):
            w.writerow([f"00:00:{k // 25:02d}:{k % 25:02d}.000", 61] + [f"{row[i]:.7g}" for i in order] + ["0.1"])
    back = load_motion(path)
    np.testing.assert_allclose(back, motion, rtol=1e-6, atol=1e-7)
    assert "JawOpen" in header and "jawOpen" not in header


@pytest.mark.parametrize("name", ["m.txt", "m.json", "m", "m.CSV.bak"])
def test_wrong_extension_is_an_input_error(tmp_path: Path, motion: np.ndarray, name: str) -> None:
    with pytest.raises(InputError, match=r"\.csv or \.npy"):
        save_motion(tmp_path / name, motion)
    assert list(tmp_path.iterdir()) == []
    save_motion(tmp_path / "ok.csv", motion)
    (tmp_path / name).write_bytes((tmp_path / "ok.csv").read_bytes())  # a good CSV by another name
    with pytest.raises(InputError):
        load_motion(tmp_path / name)


def test_bad_motion_files_are_input_errors(tmp_path: Path, motion: np.ndarray) -> None:
    cases = {
        "missing.csv": None,
        "empty.csv": b"",
        "binary.csv": b"\xff\xfe\x00\x81garbage\x00",
        "random.npy": np.random.default_rng(0).bytes(300),
        "header_only_wrong.csv": b"jawOpen,mouthClose\n0.1,0.2\n",
        "text.npy": b"not numpy at all",
    }
    for name, content in cases.items():
        if content is not None:
            (tmp_path / name).write_bytes(content)
    np.save(tmp_path / "shape.npy", np.zeros((10, 52), np.float32))
    np.save(tmp_path / "objects.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    nan = motion.copy()
    nan[5, 3] = np.nan
    np.save(tmp_path / "nan.npy", nan)
    np.save(tmp_path / "inf.npy", np.full((4, 58), np.inf, np.float32))
    np.save(tmp_path / "strings.npy", np.full((4, 58), "x"))
    save_motion(tmp_path / "short_row.csv", motion[:3])
    text = (tmp_path / "short_row.csv").read_text().splitlines()
    (tmp_path / "short_row.csv").write_text("\n".join(text[:2] + [text[2].rsplit(",", 5)[0]]) + "\n")
    save_motion(tmp_path / "word.csv", motion[:3])
    lines = (tmp_path / "word.csv").read_text().splitlines()
    lines[2] = "abc," + lines[2].split(",", 1)[1]
    (tmp_path / "word.csv").write_text("\n".join(lines) + "\n")
    for name in list(cases) + ["shape.npy", "objects.npy", "nan.npy", "inf.npy", "strings.npy", "short_row.csv",
                               "word.csv"]:
        with pytest.raises(InputError):
            load_motion(tmp_path / name)


def test_save_rejects_wrong_shape(tmp_path: Path) -> None:
    for bad in (np.zeros((10, 57)), np.zeros(58), np.zeros((2, 10, 58))):
        with pytest.raises(ValueError):
            save_motion(tmp_path / "m.npy", bad)
    assert list(tmp_path.iterdir()) == []


def test_header_only_csv_is_zero_frames(tmp_path: Path) -> None:
    save_motion(tmp_path / "z.csv", np.zeros((0, 58), np.float32))
    assert load_motion(tmp_path / "z.csv").shape == (0, 58)


def test_save_replaces_atomically(tmp_path: Path, motion: np.ndarray) -> None:
    path = tmp_path / "m.csv"
    save_motion(path, motion)
    save_motion(path, motion[:5] * 0.5)
    assert load_motion(path).shape == (5, 58)
    with pytest.raises(InputError):
        save_motion(tmp_path / "nowhere" / "m.csv", motion)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.csv"]


def test_plot_clip_writes_a_png(tmp_path: Path, tts_samples, motion: np.ndarray) -> None:
    from talkhead.bench.plots import plot_clip

    _, sp = tts_samples["us-female"][1]
    path = tmp_path / "clip.png"
    plot_clip(sp, motion, path)
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    import matplotlib.image

    img = matplotlib.image.imread(path)
    assert img.shape[0] > 300 and img.shape[1] > 800
    assert img[..., :3].std() > 0.05  # something drawn, not a blank canvas
    with pytest.raises(ValueError):
        plot_clip(sp, motion[:, :52], tmp_path / "bad.png")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clip.png"]


def _live_link_face_csv(path: Path, motion: np.ndarray, rate: int = 60, codes=None) -> None:
    """``motion`` (25 fps) as Live Link Face writes a take: its header, timecodes, ``rate`` rows a second."""
    t = np.arange(round(len(motion) / 25 * rate)) / rate
    names = [n[0].upper() + n[1:] for n in SPEC.names[:52]]
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["Timecode", "BlendShapeCount", *names, "HeadYaw", "HeadPitch", "HeadRoll",
                    "LeftEyeYaw", "LeftEyePitch", "LeftEyeRoll", "RightEyeYaw", "RightEyePitch", "RightEyeRoll"])
        for k, tk in enumerate(t):
            row = [np.interp(tk, np.arange(len(motion)) / 25, motion[:, c]) for c in range(SPEC.dim)]
            sec, frame = divmod(k, rate)
            code = codes[k] if codes else f"09:59:{sec:02d}:{frame:02d}.000"
            w.writerow([code, 61, *[f"{v:.7g}" for v in row[:52]],
                        *[f"{row[SPEC[n]]:.7g}" for n in ("yaw", "pitch", "roll")], *["0.02"] * 6])


def test_a_live_link_face_export_is_resampled_to_25_fps(tmp_path: Path, motion: np.ndarray) -> None:
    """Its head angles are named HeadYaw/HeadPitch/HeadRoll, it has no head translation, it records at 60 fps."""
    path = tmp_path / "take.csv"
    _live_link_face_csv(path, motion)
    back = load_motion(path)
    n = min(len(back), len(motion))
    assert abs(len(back) - len(motion)) <= 1
    angles = SPEC.indices(["yaw", "pitch", "roll"])
    err = np.abs(back[:n] - motion[:n])  # 25 -> 60 -> 25 fps: linear interpolation twice, off only at kinks
    assert err[:, :52].mean() < 0.005 and err[:, :52].max() < 0.1 and err[:, angles].max() < 0.01
    assert np.abs(np.corrcoef(back[:n, SPEC["jawOpen"]], motion[:n, SPEC["jawOpen"]])[0, 1]) > 0.99
    assert not back[:, SPEC.indices(["tx", "ty", "tz"])].any()  # not in the file: the head stays put


def test_bad_live_link_face_timecodes_are_input_errors(tmp_path: Path, motion: np.ndarray) -> None:
    m = motion[:50]
    n = round(len(m) / 25 * 60)
    for name, codes in {"word": ["soon"] * n,
                        "backwards": [f"00:00:{(n - k) // 60:02d}:{(n - k) % 60:02d}" for k in range(n)],
                        "frame_200": [f"00:00:{k // 60:02d}:{200 if k == 3 else k % 60:02d}" for k in range(n)]}.items():
        _live_link_face_csv(tmp_path / f"{name}.csv", m, codes=codes)
        with pytest.raises(InputError, match="timecode"):
            load_motion(tmp_path / f"{name}.csv")
