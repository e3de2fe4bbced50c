"""The latent face engine (TempoSyncDiff, issue 21): its training data so far (``faces``)."""
