"""The trainer's kernels as they run: compiled ahead of time, or else by numba's JIT.

``_kernels`` is their source. The build compiles it ahead of time (``_aot``) into the
extension ``_aot_kernels``, which needs neither numba nor LLVM at run time: a training
run then starts in a tenth of a second instead of half of one, and without the 120 MB
that numba's compiler takes in memory (docs/training.md). When that extension is missing
(the build could not make it) or ``BBPE_JIT=1`` is set, the same functions come from
``_kernels`` through numba's JIT and its on-disk cache. Either way ``kernels`` has the
same functions with the same results; tests run both.
"""

from __future__ import annotations

import os
from types import ModuleType


def _load() -> tuple[ModuleType, bool]:
    if os.environ.get("BBPE_JIT", "") in ("", "0"):
        try:
            from . import _aot_kernels  # type: ignore[attr-defined]

            return _aot_kernels, True
        except ImportError:
            pass
    from . import _kernels

    return _kernels, False


kernels, AHEAD_OF_TIME = _load()
