"""``python -m bbpe``: the same as the ``bbpe`` command."""

from .cli import run

run()
