"""The pair-merge engine's numba kernels, and the one object through which its driver calls
them: ``kernels``, compiled ahead of time or else by numba's JIT (``bbpe.kernels``).

One job per module: ``pair_table`` (the pairs and their counts), ``queue`` (the merge
queue and its order), ``tokens`` (what each token spells; the token a merge makes),
``words`` (a merge inside one word), ``merge_loop`` (the loop itself, by frequency),
``likelihood`` (the loop by WordPiece's likelihood score), ``counting`` (the words of a
corpus), ``arrays`` (growing the tables)."""

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
