"""``talkhead bench pipecat`` on a tiny setting (1 agent, short speech, a small face): real Pipecat pipelines, a
real ``talkhead serve`` in the process; the JSON has every figure, each finite, and the plot is written."""

from __future__ import annotations

import json
import math

import pytest

pytest.importorskip("pipecat")  # an optional extra: the base install's tests do not need it


def _figures(result: dict) -> dict:
    first, av = result["first_image_ms"], result["av_offset_ms"]
    return {**{f"first_image_ms.{k}.{s}": first[k][s] for k in ("in_process", "remote", "v1_stream")
               for s in ("median", "p95", "max")},
            **{f"av_offset_ms.{m}.{s}": av[m][s] for m in ("live", "synced") for s in ("p50", "p95", "max")},
            "stale_images_after_interrupt": result["stale_images_after_interrupt"]["max"],
            "new_fps_min": result["agents"][0]["new_fps_min"],
            "interval_ms_p95_max": result["agents"][0]["interval_ms_p95_max"]}


def test_bench_pipecat_writes_every_figure_finite(tmp_path, capsys):
    from talkhead.cli import main

    main(["bench", "pipecat", "--out", str(tmp_path), "--utterances", "2", "--seconds", "1.5", "--agents", "1",
          "--agent-seconds", "2", "--size", "96"])
    assert "agents at 25 fps" in capsys.readouterr().out
    result = json.loads((tmp_path / "pipecat.json").read_text())
    figures = _figures(result)
    assert all(isinstance(v, (int, float)) and math.isfinite(v) for v in figures.values()), figures
    assert result["first_image_ms"]["in_process"]["runs"] == 2 and result["first_image_ms"]["v1_stream"]["runs"] == 2
    assert result["av_offset_ms"]["live"]["n"] >= 60  # 2 x 1.5 s of speech: 75 images, each with its audio
    assert 0 < figures["first_image_ms.in_process.median"] < 2000 and figures["new_fps_min"] > 5
    assert [r["agents"] for r in result["agents"]] == [1] and result["agents_at_25fps"] in (0, 1)
    assert len(result["stale_images_after_interrupt"]["runs"]) == 3
    assert (tmp_path / "pipecat.png").stat().st_size > 10_000


def test_bench_pipecat_refuses_bad_settings_in_one_line(tmp_path, capsys):
    from talkhead.cli import main

    assert main(["bench", "pipecat", "--out", str(tmp_path), "--agents", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("talkhead: error: give --utterances") and "\n" not in err
    assert not (tmp_path / "pipecat.json").exists()
