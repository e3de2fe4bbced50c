"""The CLI foundation: `talkhead tts`, `talkhead data synth`, and one-line errors with exit code 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from talkhead.audio.tts import HELD_OUT_VOICES, VOICES, synthesize
from talkhead.cli import main

TEXT = "Bob bought a blue umbrella."


def _files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def _one_line_error(err: str) -> None:
    assert err.startswith("talkhead: error: "), err
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert "Traceback" not in err


@pytest.fixture
def unwritable(tmp_path: Path):
    """A folder this process cannot create files in (root ignores mode bits: use /proc there)."""
    d = tmp_path / "locked"
    d.mkdir()
    d.chmod(0o500)
    try:
        if os.access(d, os.W_OK):
            if not Path("/proc").is_dir():
                pytest.skip("no unwritable folder available")
            yield Path("/proc")
        else:
            yield d
    finally:
        d.chmod(0o700)


def test_console_script_runs_main_and_exits_with_its_code(tmp_path: Path) -> None:
    import subprocess
    import sys

    from talkhead.cli import run

    (ep,) = [e for e in entry_points(group="console_scripts") if e.name == "talkhead"]
    assert ep.value == "talkhead.cli:run" and ep.load() is run
    bad = subprocess.run([sys.executable, "-m", "talkhead.cli", "generate", "--audio", str(tmp_path / "none.wav"), "-o",
                          str(tmp_path / "x.mp4")], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.startswith("talkhead: error:") and "none.wav" in bad.stderr


def test_tts_writes_wav_and_phones(tmp_path: Path, capsys) -> None:
    out = tmp_path / "out.wav"
    assert main(["tts", TEXT, "-o", str(out), "--voice", "gb-female"]) == 0
    assert _files(tmp_path) == {"out.wav", "out.phones.json"}
    wav, sr = sf.read(out, dtype="float32")
    info = sf.info(out)
    assert sr == 16_000 and wav.ndim == 1 and info.subtype == "PCM_16"
    phones = json.loads((tmp_path / "out.phones.json").read_text(encoding="utf-8"))
    assert isinstance(phones, list) and len(phones) > 5
    assert all(set(p) == {"phone", "start", "end"} for p in phones)
    assert phones[0]["start"] == 0.0
    assert all(a["end"] == b["start"] for a, b in zip(phones, phones[1:]))
    assert abs(phones[-1]["end"] - len(wav) / sr) <= 0.03
    # The same speech the library makes, and the phones are the library's, rounded.
    sp = synthesize(TEXT, "gb-female")
    assert len(wav) == len(sp.wav) and np.abs(wav - np.clip(sp.wav, -1, 1)).max() < 2 / 32768
    assert [p["phone"] for p in phones] == [p.phone for p in sp.phones]
    assert [p["start"] for p in phones] == [round(p.start, 5) for p in sp.phones]
    assert "ˈ" in (tmp_path / "out.phones.json").read_text(encoding="utf-8")  # IPA as text, not \u escapes
    out_text = capsys.readouterr().out
    assert "out.wav" in out_text and "out.phones.json" in out_text


def test_list_voices(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["tts", "--list-voices"]) == 0
    lines = capsys.readouterr().out.splitlines()
    from talkhead.audio.piper_tts import PIPER_VOICES

    assert len(lines) == len(VOICES) + len(PIPER_VOICES)  # the espeak-ng table, then the Piper voices
    for name, line in zip(VOICES, lines):
        assert line.split()[0] == name and VOICES[name].sex in line.split()
        assert ("held out" in line) == (name in HELD_OUT_VOICES)
    for name, line in zip(PIPER_VOICES, lines[len(VOICES):]):
        assert line.split()[:3] == [name, PIPER_VOICES[name].sex, "piper"]
    assert _files(tmp_path) == set()


@pytest.mark.parametrize(("args", "message"), [
    (["", "-o", "{d}/out.wav"], "empty"),
    (["   ", "-o", "{d}/out.wav"], "empty"),
    (["...", "-o", "{d}/out.wav"], "nothing speakable"),
    ([TEXT, "-o", "{d}/out.wav", "--voice", "klingon"], "unknown voice"),
    ([TEXT, "-o", "{d}/out.mp3"], ".wav"),
    ([TEXT, "-o", "{d}/out"], ".wav"),
    ([TEXT, "-o", "{d}/missing/out.wav"], "does not exist"),
    ([TEXT], "-o"),
])
def test_tts_bad_input_is_one_line_exit_2_and_no_files(tmp_path: Path, capsys, args, message) -> None:
    (tmp_path / "keep.wav").write_bytes(b"old")
    argv = ["tts"] + [a.replace("{d}", str(tmp_path)) for a in args]
    assert main(argv) == 2
    cap = capsys.readouterr()
    _one_line_error(cap.err)
    assert message in cap.err
    assert _files(tmp_path) == {"keep.wav"}


def test_tts_failure_keeps_an_existing_output(tmp_path: Path, capsys) -> None:
    out = tmp_path / "out.wav"
    out.write_bytes(b"precious")
    assert main(["tts", "...", "-o", str(out)]) == 2
    assert out.read_bytes() == b"precious" and _files(tmp_path) == {"out.wav"}


def _entries(folder: Path) -> set[str]:
    """A folder's names, less /proc's process ids, which come and go with the machine's other processes."""
    return {n for n in os.listdir(folder) if not n.isdigit()}


def test_tts_into_unwritable_folder(unwritable: Path, capsys) -> None:
    before = _entries(unwritable)
    assert main(["tts", TEXT, "-o", str(unwritable / "talkhead-test.wav")]) == 2
    _one_line_error(capsys.readouterr().err)
    assert _entries(unwritable) == before


def test_real_exit_codes_in_a_subprocess(tmp_path: Path) -> None:
    cli = [sys.executable, "-m", "talkhead.cli"]
    bad = subprocess.run(cli + ["tts", "", "-o", str(tmp_path / "x.wav")], capture_output=True, text=True,
                         timeout=60)
    assert bad.returncode == 2 and bad.stdout == ""
    _one_line_error(bad.stderr)
    good = subprocess.run(cli + ["tts", TEXT, "-o", str(tmp_path / "y.wav")], capture_output=True, text=True,
                          timeout=60)
    assert good.returncode == 0, good.stderr
    assert _files(tmp_path) == {"y.wav", "y.phones.json"}


@pytest.mark.parametrize("minutes", ["0", "-1"])
def test_data_synth_rejects_non_positive_minutes(tmp_path: Path, capsys, minutes: str) -> None:
    assert main(["data", "synth", "--minutes", minutes, "--out", str(tmp_path / "c"), "--quiet"]) == 2
    _one_line_error(capsys.readouterr().err)
    assert _files(tmp_path) == set()


def test_data_synth_in_process(tmp_path: Path, capsys) -> None:
    out = tmp_path / "c"
    assert main(["data", "synth", "--minutes", "0.1", "--out", str(out), "--workers", "1", "--quiet"]) == 0
    assert _files(out) == {"corpus.json", "manifest.jsonl", "shards", "shards/shard-00000.npz"}
    rows = [json.loads(line) for line in (out / "manifest.jsonl").read_text().splitlines()]
    assert len(rows) == 32  # one whole shard
    assert f"{len(rows)} clips" in capsys.readouterr().out
    # Same folder, other seed: refused in one line.
    assert main(["data", "synth", "--minutes", "0.1", "--out", str(out), "--seed", "1", "--quiet"]) == 2
    _one_line_error(capsys.readouterr().err)


def test_each_command_is_built_from_its_own_family_alone():
    """``talkhead CMD`` builds only CMD's family: the table must name every command, each in its family."""
    from talkhead.cli import COMMANDS, build_parser

    def commands(parser) -> set[str]:
        return set(next(a for a in parser._actions if a.dest == "command").choices)

    assert commands(build_parser()) == set(COMMANDS)
    for cmd, family in COMMANDS.items():
        assert commands(build_parser([cmd])) == {c for c, f in COMMANDS.items() if f == family}


def test_a_generate_refused_while_its_speech_encoder_loads_exits_cleanly(tmp_path: Path) -> None:
    # generate starts loading the Whisper encoder before it reads the audio; a process that ends on a missing file
    # meanwhile must wait for that load, not tear the interpreter down under it (it crashed 8 times in 12: -11, -6).
    import subprocess
    import sys

    for _ in range(4):
        bad = subprocess.run([sys.executable, "-m", "talkhead.cli", "generate", "--audio", str(tmp_path / "none.wav"),
                              "-o", str(tmp_path / "x.mp4")], capture_output=True, text=True)
        assert bad.returncode == 2 and "none.wav" in bad.stderr
