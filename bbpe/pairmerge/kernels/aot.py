"""What the pair-merge engine's kernel package exports when the build compiles it ahead of
time (``bbpe.kernels.build``, which setup.py runs): the extension's name, the kernel
modules, and the exact signature of each exported kernel (all arrays C-contiguous)."""

from __future__ import annotations

MODULE = "_aot_kernels"
MODULES = ("arrays", "pair_table", "queue", "tokens", "words", "merge_loop")


def signatures() -> dict:
    from numba import types as T

    i8, i4 = T.int64, T.int32

    def a(dtype, ndim=1):
        return T.Array(dtype, ndim, "C")

    return {
        "train_merges": T.Tuple((a(i8, 2), i8))(a(i4), a(i8), a(i8), a(i4), a(i8), i8, i8, i8, i8, a(i8)),
    }
