"""``talkhead bench phone``'s quality measure (``phone_quality``): a re-enacted video against the real one, streamed."""

from __future__ import annotations

from talkhead.bench.phone import phone_quality


def test_a_video_measured_against_itself_is_perfect_and_the_warp_renderer_is_not(talking_video, tiny_avatar):
    video = talking_video[0]
    q = phone_quality(tiny_avatar, video, video)
    assert q["frames"] > 50 and q["crop_px"] > 0
    same, warp = q["rows"]["avatar"], q["rows"]["warp"]
    assert same["psnr_db"] > 60 and same["detail_ratio"] == 1.0 and same["flicker_ratio"] == 1.0
    # The warp renderer redraws every frame from the first one: close, never the same.
    assert 15 < warp["psnr_db"] < same["psnr_db"] and q["avatar_minus_warp_db"] > 10
