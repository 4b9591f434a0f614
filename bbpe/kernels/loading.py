"""Loading a model's kernels at run time: the extension its build compiled ahead of time,
or, when that is missing (the build could not make it) or ``BBPE_JIT=1`` is set, the same
functions through numba's JIT.

The JIT's on-disk cache (``cache=True``) keys each function on its own file's time stamp,
not on the files of the kernels it calls and inlines, which live in other modules (and in
``support``): so the cache directory is keyed on a hash of every source file of the kernel
package and of ``support`` (``jit_cache_dir``), and an edit anywhere starts a fresh cache.
"""

from __future__ import annotations

import functools
import importlib
import os
import sys
from collections.abc import Callable
from types import ModuleType, SimpleNamespace

SUPPORT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "support.py")


def jit_cache_dir(package_dir: str) -> str:
    """Where numba's JIT caches the kernels of ``package_dir``: beside them (numba's own
    place), in a directory named by a hash of their sources and ``support``'s, or in the
    user's cache directory if the package's is not writable."""
    import hashlib  # here: only the JIT fallback needs it, and it costs every start 3 ms

    digest = hashlib.sha256()
    sources = [os.path.join(package_dir, n) for n in sorted(os.listdir(package_dir)) if n.endswith(".py")]
    for path in [*sources, SUPPORT]:
        with open(path, "rb") as f:
            digest.update(os.path.basename(path).encode() + b"\0" + f.read())
    tag = "jit-" + digest.hexdigest()[:16]
    beside = os.path.join(package_dir, "__pycache__")
    if os.access(package_dir, os.W_OK) and (not os.path.exists(beside) or os.access(beside, os.W_OK)):
        return os.path.join(beside, tag)
    return os.path.join(os.path.expanduser("~"), ".cache", "bbpe", tag)


def jit_kernels_of(package: str, package_dir: str, modules: tuple[str, ...]) -> SimpleNamespace:
    """Every kernel of ``package`` through numba's JIT, by name. numba reads its cache
    directory when a function is decorated, so it is set while the modules are imported
    and put back after: other numba code in the process keeps its own."""
    from numba.core import config

    previous = config.CACHE_DIR
    config.CACHE_DIR = jit_cache_dir(package_dir)
    try:
        loaded = [importlib.import_module(f"{package}.{name}") for name in modules]
    finally:
        config.CACHE_DIR = previous
    functions: dict[str, object] = {}
    for module in loaded:
        functions.update((name, value) for name, value in vars(module).items() if hasattr(value, "py_func"))
    return SimpleNamespace(**functions)


def load(package: str, extension: str, jit: Callable[[], SimpleNamespace]) -> tuple[ModuleType | SimpleNamespace, bool]:
    """(the kernels, whether compiled ahead of time): ``package``'s extension module
    ``extension`` unless ``BBPE_JIT`` is set or it is missing, else ``jit()``."""
    if os.environ.get("BBPE_JIT", "") in ("", "0"):
        try:
            return importlib.import_module(f"{package}.{extension}"), True
        except ImportError:
            pass
    return jit(), False


def kernel_package(package: str, package_dir: str, modules: tuple[str, ...],
                   extension: str) -> tuple[Callable[[], SimpleNamespace], Callable[[str], object]]:
    """A kernel package's ``jit_kernels()`` (every kernel through the JIT, made once) and
    its module ``__getattr__``, which loads ``kernels`` and ``AHEAD_OF_TIME`` on first use:
    importing a module of the package for its constants loads no kernels, and ``import
    bbpe`` none."""

    @functools.cache
    def jit_kernels() -> SimpleNamespace:
        return jit_kernels_of(package, package_dir, modules)

    def __getattr__(name: str) -> object:
        if name in ("kernels", "AHEAD_OF_TIME"):
            module = sys.modules[package]
            module.kernels, module.AHEAD_OF_TIME = load(package, extension, jit_kernels)  # type: ignore[attr-defined]
            return getattr(module, name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return jit_kernels, __getattr__
