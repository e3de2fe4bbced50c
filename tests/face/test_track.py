"""Video in bounded memory (face.track): a face followed through a stream is the face followed through the
frames held whole; frames read again by number, forward only, holding one batch; a phone's portrait video at
60 fps in HEVC, stored on its side, is followed upright."""

from __future__ import annotations

import numpy as np
import pytest

from talkhead.face.track import ForwardFrames, cut_frames, frames_at, track_faces, track_video
from talkhead.video import iter_frames, read_frames


def test_a_face_followed_through_a_stream_is_the_one_followed_through_the_frames_held(talking_video):
    video = talking_video[0]
    held = read_frames(video)
    a = track_faces(held, "held", mirror=True)
    b = track_video(video, mirror=True)  # streamed: each frame looked at once
    assert a.keep == b.keep and len(b.keep) == len(held) == b.frames and b.size == (256, 256) and b.faces == 1
    assert np.array_equal(a.points, b.points) and np.array_equal(a.mirror, b.mirror) and len(b.mirror) == len(b.keep)


def test_frames_read_again_by_number_are_those_frames_and_a_cut_keeps_only_its_result(talking_video):
    video = talking_video[0]
    held = read_frames(video)
    numbers = [0, 3, 4, 40, len(held) - 1]
    got = list(frames_at(video, numbers))
    assert [i for i, _ in got] == numbers and all(np.array_equal(f, held[i]) for i, f in got)
    small = cut_frames(video, numbers, lambda j, f: f[::8, ::8].copy())
    assert [s.shape for s in small] == [(32, 32, 3)] * 5 and np.array_equal(small[3], held[40][::8, ::8])
    with pytest.raises(ValueError, match="in order"):
        cut_frames(video, [4, 3], lambda j, f: f)
    from talkhead.errors import InputError

    with pytest.raises(InputError, match="ends before frame"):
        list(frames_at(video, [len(held) + 5]))


def test_forward_frames_hold_one_batch_and_refuse_to_go_back(talking_video):
    video = talking_video[0]
    held = read_frames(video)
    keep = list(range(2, len(held), 3))
    base = ForwardFrames(video, keep, (256, 256))
    assert len(base) == len(keep) and base.shape == (len(keep), 256, 256, 3)
    for start in range(0, len(keep), 8):  # as AvatarRenderer walks its base: a batch, then each of it again
        idx = np.arange(start, min(start + 8, len(keep)))
        assert np.array_equal(base[idx], held[[keep[k] for k in idx]])
        assert all(np.array_equal(base[k], held[keep[k]]) for k in idx)
        assert len(base._held) <= 8  # one batch at hand, whatever the video's length
    with pytest.raises(ValueError, match="forward only"):
        base[np.arange(0, 4)]


def test_a_phones_portrait_video_at_60_fps_in_hevc_stored_on_its_side_is_followed_upright(talking_video, tmp_path,
                                                                                           write_video):
    import av

    if not hasattr(av.video.stream.VideoStream, "set_display_rotation"):  # only recent PyAV writes a display matrix
        pytest.skip("this PyAV cannot write a rotated video")
    from PIL import Image

    held = read_frames(talking_video[0])[:50]  # 2 s
    # Portrait 360x640 (the face in its upper half, as a phone held at arm's length), each frame shown twice (60
    # fps from 30), stored turned clockwise as a phone's sensor sees it, with the rotation that turns it back.
    upright = np.zeros((len(held), 640, 360, 3), np.uint8)
    upright[:, 100:460] = [np.asarray(Image.fromarray(f).resize((360, 360))) for f in held]
    sideways = np.rot90(np.repeat(upright, 12, axis=0)[::5], -1, axes=(1, 2))  # 25 -> 60 fps
    path = write_video(tmp_path / "phone.mp4", sideways, rate=60, codec="libx265", rotation=90)
    first = next(iter_frames(path))
    assert first.shape == (640, 360, 3)  # upright as shown
    phone = track_video(path)
    ours = track_faces(held, "ours")
    assert phone.size == (360, 640) and phone.frames == len(held) and phone.keep == ours.keep
    expect = ours.points * (360 / 256) + np.array([0, 100])  # the same face, scaled and placed
    assert np.median(np.abs(phone.points - expect)) < 2.0  # px: the same landmarks, through HEVC
