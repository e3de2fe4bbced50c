"""Renderer bench: JSON keys, a contact sheet, and the scripted motion it times."""

from __future__ import annotations

import json

import numpy as np

from talkhead.bench.render import SHEET_ROWS, run_render_bench, scripted_motion
from talkhead.rig.spec import SPEC


def test_scripted_motion_hits_its_key_poses():
    m, marks = scripted_motion(165)
    assert m.shape == (165, SPEC.dim) and m.dtype == np.float32
    assert set(SHEET_ROWS) <= set(marks)
    assert m[marks["open vowel"], SPEC["jawOpen"]] > 0.6
    bil = m[marks["bilabial closure"]]
    assert bil[SPEC["mouthPressLeft"]] > 0.5 and bil[SPEC["jawOpen"]] < 0.1
    assert m[marks["blink"], SPEC["eyeBlinkLeft"]] == 1.0
    assert np.degrees(m[marks["yaw +15°"], SPEC["yaw"]]) == np.float32(15.0)
    assert np.abs(np.diff(m, axis=0)).max() < 0.35  # eased over 5 frames, no jumps
    assert scripted_motion(7)[0].shape == (7, SPEC.dim)


def test_bench_writes_json_and_contact_sheet(tmp_path):
    result = run_render_bench(tmp_path, size=128, frames=12, runs=1, warmup=0, batch=8)
    saved = json.loads((tmp_path / "render.json").read_text())
    assert saved == result
    for key in ("renderer", "device", "width", "height", "frames", "batch", "threads", "fps",
                "ms_per_frame", "median_s", "seconds", "realtime_factor", "setup_s"):
        assert key in result, key
    assert (result["width"], result["height"], result["frames"]) == (128, 128, 12)
    assert result["fps"] > 0 and len(result["seconds"]) == 1
    png = tmp_path / "contact_sheet.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
