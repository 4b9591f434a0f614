"""``python -m bbpe``: the same as the ``bbpe`` command."""

import sys

from .cli import main

sys.exit(main())
