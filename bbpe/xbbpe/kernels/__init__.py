"""The XBBPE trainer's numba kernels, by stage, and the one object through which the
drivers call them: ``kernels``, compiled ahead of time or else by numba's JIT.

The modules here are the kernels' source, one job each (numba's decorators and the LLVM
intrinsics they use are ``bbpe.kernels.support``, shared with other models): ``keys``
(the key table), ``text`` (cutting text into chars and segments), ``scan`` (distinct
segments as types), ``layout`` (the slot table), ``first_pass`` (the pair count and the
C++ first pass), ``linking`` (the occurrence lists), ``key_states``, ``heap``, ``lists``,
``pair_keys``, ``handover`` (the two merge threads' protocol) and ``merges``,
``map_order`` (libstdc++'s map order); ``tables`` holds what they and their drivers
agree on. The build compiles them ahead of time (``aot``) into the extension
``_aot_kernels``, which needs neither numba nor LLVM at run time: a training run then
starts in a tenth of a second instead of half of one, and without the 120 MB that
numba's compiler takes in memory. When that extension is missing (the build could not
make it) or ``BBPE_JIT=1`` is set, the same functions come through numba's JIT instead.

The JIT caches them in a directory keyed on a hash of their sources
(``bbpe.kernels.loading``). Either way ``kernels`` has the same functions with the same
results; tests run both.
"""

from __future__ import annotations

import os
from types import ModuleType, SimpleNamespace
from typing import TYPE_CHECKING

from bbpe.kernels import loading

from .aot import MODULE, MODULES

if TYPE_CHECKING:
    kernels: ModuleType | SimpleNamespace
    AHEAD_OF_TIME: bool

HERE = os.path.dirname(os.path.abspath(__file__))
jit_kernels, __getattr__ = loading.kernel_package(__name__, HERE, MODULES, MODULE)
