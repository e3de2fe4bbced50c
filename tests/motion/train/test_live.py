"""The live student (``talkhead distill live``): fine-tuned on live windows of real TTS speech, it describes its
live view, and a stream with that view puts out a frame a few frames after its audio."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from talkhead.audio.tts import synthesize
from talkhead.motion.model import load, load_model
from talkhead.motion.stream import MotionStream
from talkhead.motion.train.live import LiveConfig, LiveObjective, make_pairs, train_live
from talkhead.serve.session import idle_track, live_hearing


@pytest.fixture(scope="module")
def speech():
    return [synthesize(t, "us-female").wav for t in ("Hello there, how are you today?", "The birch canoe slid on by.")]


@pytest.fixture(scope="module")
def live_student(speech, tmp_path_factory):
    cfg = LiveConfig(steps=6, batch=2, augment=0.5)
    pairs = make_pairs(speech, load_model("student-1-whisper"), cfg, progress=False)
    out = tmp_path_factory.mktemp("live") / "live.safetensors"
    report = train_live(load_model("student-1-whisper"), pairs, out, cfg, progress=False)
    return out, pairs, report


def test_pairs_are_live_rows_beside_offline_motion(speech, live_student):
    _, pairs, _ = live_student
    n = sum(int(np.ceil(len(w) / 640)) for w in speech)
    assert pairs["rows"].shape == (n, 384) and pairs["targets"].shape == (n, 58)
    assert pairs["lengths"].tolist() == [int(np.ceil(len(w) / 640)) for w in speech]


def test_live_student_describes_its_view_and_learnt(live_student):
    path, pairs, report = live_student
    live, base = load(path), load_model("student-1-whisper")
    assert live.meta["live"] == {"block": 1, "left": 20, "right": 1, "step": 1, "lookahead": 1, "window": 24}
    assert live.meta["live_train"]["base"] == "student-1-whisper" and live.meta["live_train"]["steps"] == 6
    assert np.isfinite(report["loss_last"])
    changed = [not torch.equal(a.float(), b.float()) for a, b in
               zip(live.denoiser.state_dict().values(), base.denoiser.state_dict().values())]
    assert any(changed)


def test_objective_loss_falls_on_a_batch_it_trains_on(live_student):
    _, pairs, _ = live_student
    model = load_model("student-1-whisper")
    from talkhead.motion.train.live import _Trainable

    module = _Trainable(model).train()
    obj = LiveObjective(pairs, model, LiveConfig(batch=4))
    opt = torch.optim.Adam(module.parameters(), 1e-4)
    losses = []
    for _ in range(5):
        loss = obj(module, torch.Generator().manual_seed(0), 0)  # the same batch each time
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]


def test_a_live_stream_puts_out_its_first_frame_three_frames_after_its_audio(speech, live_student):
    path, _, _ = live_student
    model = load(path)
    stream = MotionStream(model, hearing=live_hearing(model), tail=idle_track(12, 0))
    wav, first = speech[0], None
    for i in range(0, len(wav), 640):  # 40 ms at a time, as a microphone would send it
        if sum(len(m) for m in stream.push(wav[i:i + 640])) and first is None:
            first = i // 640 + 1
    assert first is not None and first <= 3  # block 1 + right 1 + look-ahead 1: 120 ms of audio
    rest = np.concatenate(list(stream.flush()))
    assert np.isfinite(rest).all()


def _first_frame(model, wav) -> int | None:
    stream = MotionStream(model, hearing=live_hearing(model), tail=idle_track(12, 0))
    for i in range(0, len(wav), 640):
        if sum(len(m) for m in stream.push(wav[i:i + 640])):
            return i // 640 + 1
    return None


def test_a_live_stream_waits_for_the_speech_its_lip_net_reads_ahead(speech, live_student):
    """A net that reads k frames past a frame gets them: the window waits, rather than the net reading the
    silence a window is padded with."""
    from dataclasses import replace

    from talkhead.motion.lipnet import LipNet
    from talkhead.motion.model import with_lips

    model = with_lips(load(live_student[0]), "lips-whisper-live")
    reads = lambda k: replace(model, lips=replace(model.lips, net=LipNet(replace(model.lips.net.cfg, ahead=k))))  # noqa: E731
    assert [live_hearing(reads(k)).lookahead for k in (0, 1, 3)] == [1, 1, 3]  # never less than the student's view
    first = {k: _first_frame(reads(k), speech[0]) for k in (1, 3)}
    assert first[3] == first[1] + 2
