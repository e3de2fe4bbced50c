"""``talkhead bench latent`` on a tiny trained engine: every table is filled from real frames, JSON and PNGs written."""

from __future__ import annotations

import json

from talkhead.cli import main


def test_latent_bench_writes_tables_and_figures(tiny_engine_run, tiny_faces, tmp_path, capsys):
    out = tmp_path / "bench"
    engines = [str(tiny_engine_run / "teacher.safetensors"), str(tiny_engine_run / "student-1.safetensors")]
    assert main(["bench", "latent", "--out", str(out), "--faces", str(tiny_faces), "--engines", *engines,
                 "--clips", "1", "--frames", "12", "--threads", "1", "--runs", "1", "--beside", engines[-1]]) == 0
    r = json.loads((out / "latent.json").read_text())
    held = r["quality_heldout"]
    assert set(engines) < set(held) and "VAE reconstruction" in held and "noisy decode (t=100)" in held
    for row in held.values():
        assert row["psnr_vs_recon_db"] > 5 and 0 <= row["temporal_l1"] < 1 and 0 <= row["flicker"] < 1
    assert held["VAE reconstruction"]["psnr_vs_recon_db"] > 90  # itself (the floor of 1e-10 MSE: 100 dB)
    speed = r["speed"]
    teacher_rows = [k for k in speed if k.startswith(engines[0])]
    assert {speed[k]["steps"] for k in teacher_rows} == {1, 2, 4, 8, 50}
    assert {v["runtime"] for v in speed.values()} == {"torch", "onnxruntime"}
    for v in speed.values():
        assert v["E2"]["ms_per_frame"] > 0 and v["E1"]["ms_per_frame"] > 0
    assert {"warp", f"latent {engines[-1]}, cadence 4"} <= set(r["renderers_512"])
    assert not (out / "onnx").exists()  # exported to time, not left behind
    for name in ("latent.png", "latent_sheet.png"):
        assert (out / name).stat().st_size > 10_000
