"""Build-time only: compile one model's kernel package ahead of time into an extension
module with numba's ``pycc`` (setup.py calls ``build`` once per package).

The package's ``aot.py`` names the extension (``MODULE``) and its kernel modules
(``MODULES``); each exported kernel carries its signature beside it (``@exported`` of
``bbpe.kernels.support``): the arrays the drivers pass, by dtype, dimensions and layout. A
call with other types fails with TypeError, which the tests show. The code is compiled for a generic x86-64 (or the build
machine's architecture), so the extension runs wherever the wheel does.

The kernel modules are imported under their own names from the source tree, with every
package above them that is not imported yet stood in for by an empty module: building
then needs neither an installed bbpe nor its Cython extensions (``bbpe/__init__.py`` imports
them), and the kernels' absolute imports of ``bbpe.kernels.support`` resolve in the same
tree. The stand-ins and the modules imported through them are removed afterwards.

``numba.pycc`` is deprecated; docs/design.md ("Compiling the kernels") has the plan: a
numba version cap that the build and CI check, and what replaces pycc when it goes.
"""

from __future__ import annotations

import importlib
import os
import sys
import tempfile
import types as pytypes
from typing import Any


def _stand_ins(package: str, root: str) -> list[str]:
    """Registers an empty package module for each package above and including ``package``
    that is not imported yet; ``root`` is the directory of the top-level package. Returns
    the names registered."""
    parts = package.split(".")
    added = []
    for depth in range(1, len(parts) + 1):
        name = ".".join(parts[:depth])
        if name not in sys.modules:
            module = pytypes.ModuleType(name)
            module.__path__ = [os.path.join(root, *parts[1:depth])]
            sys.modules[name] = module
            added.append(name)
    return added


def _flags_releasing_gil(flags: type) -> type:
    """pycc's compiler flags, with the GIL released around each call (``nogil``).

    pycc has no option for it: it compiles every export with a fresh ``Flags()``, whose
    ``release_gil`` is off, so a compiled kernel would hold the GIL for its whole run and
    another thread of the process could not run meanwhile (the JIT kernels are ``nogil``
    already). The wrapper unboxes the arguments, releases the GIL, calls the kernel and
    takes the GIL back before it boxes the result or raises.
    """

    class FlagsReleasingGil(flags):  # type: ignore[misc, valid-type]
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.release_gil = True

    return FlagsReleasingGil


def build(package: str, root: str, output_dir: str, verbose: bool = False) -> str:
    """Compile the kernels of ``package`` (a dotted name such as ``"bbpe.xbbpe.kernels"``,
    read from the tree whose top-level package directory is ``root``) into ``output_dir``;
    returns the extension's path."""
    # The kernels the exported ones call are compiled by their own dispatchers, which
    # (cache=True) would write JIT cache entries next to the kernel modules, where the
    # JIT fallback would then load entries made for other builds: send them to a
    # throw-away directory instead.
    from numba.core import config
    from numba.pycc import CC
    from numba.pycc import compiler as pycc_compiler

    before = set(sys.modules)
    added = _stand_ins(package, root)
    with tempfile.TemporaryDirectory(prefix="bbpe-aot-cache-") as cache_dir:
        previous, previous_config = os.environ.get("NUMBA_CACHE_DIR"), config.CACHE_DIR
        previous_flags = pycc_compiler.Flags
        os.environ["NUMBA_CACHE_DIR"] = cache_dir
        try:
            config.CACHE_DIR = cache_dir  # numba reads the variable once, at import
            pycc_compiler.Flags = _flags_releasing_gil(previous_flags)
            aot = importlib.import_module(f"{package}.aot")
            kernel_types = importlib.import_module("bbpe.kernels.support").kernel_types()
            exported: dict[str, Any] = {}  # numba dispatchers, by name (one imported elsewhere too: once)
            for name in aot.MODULES:
                loaded = importlib.import_module(f"{package}.{name}")
                exported.update((n, v) for n, v in vars(loaded).items() if hasattr(v, "aot_signature"))
            cc = CC(aot.MODULE, source_module=loaded)
            cc.output_dir = output_dir
            cc.verbose = verbose
            for name, kernel in exported.items():
                cc.export(name, kernel.aot_signature(kernel_types))(kernel.py_func)
            cc.compile()
        finally:
            pycc_compiler.Flags = previous_flags
            config.CACHE_DIR = previous_config
            if previous is None:
                os.environ.pop("NUMBA_CACHE_DIR", None)
            else:
                os.environ["NUMBA_CACHE_DIR"] = previous
            if added:  # what came in through the stand-ins goes with them
                for name in set(sys.modules) - before:
                    if name == added[0] or name.startswith(added[0] + "."):
                        del sys.modules[name]
    return os.path.join(output_dir, cc.output_file)


if __name__ == "__main__":
    # python bbpe/kernels/build.py bbpe.xbbpe.kernels [OUTPUT_DIR]
    _root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    _package = sys.argv[1]
    _out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(_root, *_package.split(".")[1:])
    print(build(_package, _root, _out, verbose=True))
