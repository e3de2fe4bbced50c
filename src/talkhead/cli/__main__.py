"""``python -m talkhead.cli``: the same as the ``talkhead`` command."""

import sys

from talkhead.cli import main

sys.exit(main())
