"""``python -m talkhead.cli``: the same as the ``talkhead`` command."""

from talkhead.cli import run

run()
