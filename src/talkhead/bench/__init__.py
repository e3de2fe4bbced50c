"""Benchmarks and metrics; each writes JSON (and a plot)."""
