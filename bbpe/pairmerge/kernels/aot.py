"""What the pair-merge engine's kernel package exports when the build compiles it ahead of
time (``bbpe.kernels.build``, which setup.py runs): the extension's name, the kernel
modules, and the exact signature of each exported kernel (all arrays C-contiguous)."""

from __future__ import annotations

MODULE = "_aot_kernels"
MODULES = ("arrays", "pair_table", "queue", "tokens", "words", "merge_loop", "counting")


def signatures() -> dict:
    from numba import types as T

    i8, i4, u1 = T.int64, T.int32, T.uint8

    def a(dtype, ndim=1, readonly=False):
        return T.Array(dtype, ndim, "C", readonly=readonly)

    table = (a(i8), a(i8, 2), a(u1))  # a word table without its sizes (counting.py)
    return {
        "train_merges": T.Tuple((a(i8, 2), i8))(a(i4), a(i8), a(i8), a(i4), a(i8), i8, i8, i8, i8, a(i8)),
        "new_table": T.Tuple((*table, a(i8)))(),
        "count_pieces": T.Tuple(table)(*table, a(i8), a(u1, readonly=True), i8, a(i8), i8),
        "merge_tables": T.Tuple(table)(*table, a(i8), a(i8, 2), a(u1), i8),
        "word_hashes": a(i8)(a(u1), a(i8)),
    }
