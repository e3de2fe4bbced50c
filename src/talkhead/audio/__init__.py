"""Speech in: reading audio files, text-to-speech, per-frame features."""
