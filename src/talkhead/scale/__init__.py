"""Many jobs: batch generation on local worker processes or a Ray cluster (one Ray module)."""
