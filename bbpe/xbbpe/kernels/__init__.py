"""The XBBPE trainer's numba kernels, by stage, and the one object through which the
drivers call them: ``kernels``, compiled ahead of time or else by numba's JIT.

The modules here are the kernels' source, one job each: ``numba_support`` (numba's
decorators and the LLVM intrinsics: prefetch, atomics, sleeping and waking), ``keys``
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

The JIT's on-disk cache (``cache=True``) keys each function on its own file's time
stamp, not on the files of the kernels it calls and inlines, which live in other
modules here: so its cache directory is keyed on a hash of every kernel source file
(``_jit_cache_dir``), and an edit anywhere in the package starts a fresh cache. Either
way ``kernels`` has the same functions with the same results; tests run both.
"""

from __future__ import annotations

import functools
import importlib
import os
from types import ModuleType, SimpleNamespace
from typing import TYPE_CHECKING

from .aot import MODULES

if TYPE_CHECKING:
    kernels: ModuleType | SimpleNamespace
    AHEAD_OF_TIME: bool

HERE = os.path.dirname(os.path.abspath(__file__))


def _jit_cache_dir() -> str:
    """Where numba's JIT caches the kernels: beside them (numba's own place), in a
    directory named by a hash of every kernel source file, or in the user's cache
    directory if the package's is not writable."""
    import hashlib  # here: only the JIT fallback needs it, and it costs every start 3 ms

    digest = hashlib.sha256()
    for name in sorted(os.listdir(HERE)):
        if name.endswith(".py"):
            with open(os.path.join(HERE, name), "rb") as f:
                digest.update(name.encode() + b"\0" + f.read())
    tag = "jit-" + digest.hexdigest()[:16]
    beside = os.path.join(HERE, "__pycache__")
    if os.access(HERE, os.W_OK) and (not os.path.exists(beside) or os.access(beside, os.W_OK)):
        return os.path.join(beside, tag)
    return os.path.join(os.path.expanduser("~"), ".cache", "bbpe", tag)


def _jit_modules() -> list[ModuleType]:
    """The kernel modules with their functions compiled by numba's JIT, cached in
    ``_jit_cache_dir``. numba reads its cache directory when a function is decorated,
    so it is set while the modules are imported and put back after: other numba code in
    the process keeps its own."""
    from numba.core import config

    previous = config.CACHE_DIR
    config.CACHE_DIR = _jit_cache_dir()
    try:
        return [importlib.import_module(f"{__name__}.{name}") for name in MODULES]
    finally:
        config.CACHE_DIR = previous


@functools.cache
def jit_kernels() -> SimpleNamespace:
    """Every kernel through numba's JIT, by name (what ``kernels`` is without the compiled
    extension; the tests compare the two)."""
    functions: dict[str, object] = {}
    for module in _jit_modules():
        functions.update((name, value) for name, value in vars(module).items() if hasattr(value, "py_func"))
    return SimpleNamespace(**functions)


def _load() -> tuple[ModuleType | SimpleNamespace, bool]:
    if os.environ.get("BBPE_JIT", "") in ("", "0"):
        try:
            from . import _aot_kernels  # type: ignore[attr-defined]

            return _aot_kernels, True
        except ImportError:
            pass
    return jit_kernels(), False


def __getattr__(name: str) -> object:
    """``kernels`` and ``AHEAD_OF_TIME``, loaded on first use: importing a module of the
    package for its constants (``tables``: ``bbpe.xbbpe.vocab`` takes ``KEY_BYTES`` from
    there) loads no kernels, and ``import bbpe`` none."""
    if name in ("kernels", "AHEAD_OF_TIME"):
        global kernels, AHEAD_OF_TIME
        kernels, AHEAD_OF_TIME = _load()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
