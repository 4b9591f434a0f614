"""Run the ``bbpe`` command line as a user does, in a subprocess.

Always from outside the checkout: ``python -m bbpe`` run from the repository's root would
import the uncompiled source tree instead of the installed package.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile


def run_bbpe(*args: str | os.PathLike[str] | int, stdin: bytes = b"", cwd=None) -> subprocess.CompletedProcess:
    """``bbpe ARGS`` with STDIN piped in; stdout and stderr captured as bytes."""
    return subprocess.run([sys.executable, "-m", "bbpe", *map(str, args)], input=stdin, capture_output=True,
                          check=False, cwd=cwd or tempfile.gettempdir())
