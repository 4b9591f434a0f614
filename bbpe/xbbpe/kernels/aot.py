"""Build-time only: compile the trainer's kernels (the modules of this package) ahead of
time into the extension module ``_aot_kernels`` with numba's ``pycc`` (``setup.py``
calls ``build``).

Each exported kernel needs its exact signature here: the arrays the Python side
(``bbpe.xbbpe.engine``, ``map_order``) passes, by dtype, dimensions and layout (all
C-contiguous; the scan's input buffer is read-only). A call with other types fails with
TypeError, which the tests would show. The code is compiled for a generic x86-64 (or the
build machine's architecture), so the extension runs wherever the wheel does.

The kernel modules are loaded from their files under a stand-in package name (without
this package's ``__init__``), so that building needs neither an installed bbpe nor its
Cython codec.

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

MODULE = "_aot_kernels"
# the kernel modules whose functions the drivers call (``kernels`` takes them from here too)
MODULES = ("keys", "text", "scan", "layout", "first_pass", "linking", "key_states", "heap", "lists", "pair_keys",
           "handover", "merges", "map_order")


def _signatures() -> dict:
    from numba import types as T

    i8, i4, u8, u1 = T.int64, T.int32, T.uint64, T.uint8

    def a(dtype, ndim=1, readonly=False):
        return T.Array(dtype, ndim, "C", readonly=readonly)

    I8, I4, U8 = a(i8), a(i4), a(u8)
    S, KST, WORDS, TABLE = a(i4, 2), a(i4, 2), a(u8, 2), a(i8, 2)
    pair, none = T.UniTuple(i8, 2), T.none
    return {
        # key table
        "_find": pair(WORDS, I4, u8, u8, u8),
        "find_rows": none(WORDS, I4, WORDS, I8),
        "reindex": none(WORDS, i8, I4),
        "index_rows": none(WORDS, i8, i8, I4),
        "intern_rows": none(WORDS, i8, WORDS, I4, I8, I4),
        # scan
        "scan_types": pair(a(u1, 1, readonly=True), i8, WORDS, I4, I8, i8, I4, I8, I8, I8, U8, I4, I8, I4),
        "scan_types_backward": pair(a(u1, 1, readonly=True), i8, WORDS, I4, I8, i8, I4, I8, I8, I8, U8, I4, I8, I4),
        "reindex_types": none(U8, i8, I4),
        # first pass
        "slot_order": none(I8, I8, I8, i8, i8, i8, I8, I8, I8, I8),
        "backward_slot_order": I8(I8, I8, I8, i8, i8, i8, I8, I8, I8, I8),
        "layout_types": none(I4, I8, i8, I4, I8, S),
        "layout_types_backward": none(I4, I8, I8, I4, I8, S),
        "count_slots": T.Tuple((i8, TABLE))(I8, i8, I8, I8, I8, S, WORDS, I8, i8, TABLE, I8),
        "count_codes": TABLE(I8, I8, I8, I8, S, TABLE, I8),
        "numbered_pairs": TABLE(TABLE, i8),
        "merge_counts": T.Tuple((i8, TABLE))(TABLE, i8, TABLE, WORDS, I8, i8, I8, I4),
        "renumber_pairs": none(I8, I8, I8, S, I4),
        "pair_counts": none(TABLE, I8, I8),
        "best_pair": i8(I8, I8, i8),
        "first_pass": i8(I8, I8, I8, I8, i8, S, WORDS, I4, I8, I8, I8),
        # merges
        "link_slots": i8(I8, i8, I8, I8, I8, S, WORDS, I4, I8, i8, I4, KST, KST, KST, i8, i8, i8, I8),
        "heap_rebuild": i8(I4, I4, I4, I8, KST, KST, i8, i8),
        "count_live": i8(KST, KST, i8, i8),
        "compact_slots": i8(S, i8, I4, KST, KST, i8, i8),
        "run_merges": T.Tuple((i8, i8, i8, I4, I4, I4, I4, I4, I4, I8))(
            i8, i8, i8, I4, S, I4, WORDS, I4, I8, KST, KST, i8, I4, I4, I4, I8, I4, I4, I4, I8, I8, I4, I4, I8, I4,
            I8, I8, T.boolean, i8),
        "follow_merges": i8(i8, I8, S, I4, WORDS, I4, I8, KST, KST, I4, I4, I8, I4, I4, I8, I8),
        "stop_follower": none(I8),
        "too_slow": T.boolean(i8, i8, i8),
        "follower_stopped": none(I8),
        # libstdc++ map order (map_order)
        "blog_hashes": U8(a(u1, 2), I8),
        "umap_replay": I8(U8, U8, i8, i8),
    }


def _kernel_functions(package_dir: str) -> tuple[dict[str, Any], pytypes.ModuleType]:
    """Every numba function of the kernel modules, loaded under a stand-in package name,
    and one of those modules (pycc's ``source_module``)."""
    name = "_bbpe_aot_source"
    if name not in sys.modules:
        package = pytypes.ModuleType(name)
        package.__path__ = [package_dir]
        sys.modules[name] = package
    functions: dict[str, Any] = {}  # numba dispatchers
    for module in MODULES:
        loaded = importlib.import_module(f"{name}.{module}")
        functions.update((n, v) for n, v in vars(loaded).items() if hasattr(v, "py_func"))
    return functions, loaded


def _flags_releasing_gil(flags: type) -> type:
    """pycc's compiler flags, with the GIL released around each call (``nogil``).

    pycc has no option for it: it compiles every export with a fresh ``Flags()``, whose
    ``release_gil`` is off, so a compiled kernel would hold the GIL for the whole scan
    and another thread of the process could not run meanwhile (the JIT kernels are
    ``nogil`` already). The wrapper unboxes the arguments, releases the GIL, calls the
    kernel and takes the GIL back before it boxes the result or raises.
    """

    class FlagsReleasingGil(flags):  # type: ignore[misc, valid-type]
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.release_gil = True

    return FlagsReleasingGil


def build(output_dir: str, package_dir: str | None = None, verbose: bool = False) -> str:
    """Compile the kernels into ``output_dir``; returns the extension's path."""
    # The kernels the exported ones call are compiled by their own dispatchers, which
    # (cache=True) would write JIT cache entries naming the stand-in package next to
    # the kernel modules, where the JIT fallback would then load them and fail: send them to a
    # throw-away directory instead.
    from numba.core import config
    from numba.pycc import CC
    from numba.pycc import compiler as pycc_compiler

    with tempfile.TemporaryDirectory(prefix="bbpe-aot-cache-") as cache_dir:
        previous, previous_config = os.environ.get("NUMBA_CACHE_DIR"), config.CACHE_DIR
        previous_flags = pycc_compiler.Flags
        os.environ["NUMBA_CACHE_DIR"] = cache_dir
        try:
            config.CACHE_DIR = cache_dir  # numba reads the variable once, at import
            pycc_compiler.Flags = _flags_releasing_gil(previous_flags)
            functions, source = _kernel_functions(package_dir or os.path.dirname(os.path.abspath(__file__)))
            cc = CC(MODULE, source_module=source)
            cc.output_dir = output_dir
            cc.verbose = verbose
            for name, signature in _signatures().items():
                cc.export(name, signature)(functions[name].py_func)
            cc.compile()
        finally:
            pycc_compiler.Flags = previous_flags
            config.CACHE_DIR = previous_config
            if previous is None:
                os.environ.pop("NUMBA_CACHE_DIR", None)
            else:
                os.environ["NUMBA_CACHE_DIR"] = previous
    return os.path.join(output_dir, cc.output_file)


if __name__ == "__main__":
    print(build(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__)), verbose=True))
