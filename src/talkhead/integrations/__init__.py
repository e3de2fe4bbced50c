"""Talkhead inside other frameworks: optional adapters, each behind its own extra (``talkhead[pipecat]``)."""
