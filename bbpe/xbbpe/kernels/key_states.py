"""Per-key state of the merges, in each class of slots: count, list head and tail, flags
(the layout of ``kst`` is in ``merges``).
"""

import numpy as np

from bbpe.kernels.support import _inline, _release, exported

from .tables import DIRTY, FINGER, FLAGS, HEAD, IN_VOCAB, OCC, RAISED, TAIL, TOKEN

_CLEAR_STEP_BITS = np.uint8(0xFF ^ (DIRTY | FINGER | RAISED))
_KEEP = IN_VOCAB | TOKEN


@_inline
def _new_key_state(kst, k):
    """A key created after the table grew: its row is zero, as ``KeyTable.reserve`` leaves
    it (untouched pages cost no memory); the state of a key that never occurred is
    (OCC 0, no HEAD, no TAIL, no FLAGS)."""
    kst[k, OCC] = 0
    kst[k, HEAD] = -1
    kst[k, TAIL] = -1
    kst[k, FLAGS] = 0


@_inline
def _new_key_states(kst, kst1, classes, k):
    """``_new_key_state`` in every class."""
    _new_key_state(kst, k)
    if classes == 2:
        _new_key_state(kst1, k)
    _release(kst, kst1)


@_inline
def _occ(kst, kst1, classes, k):
    """A key's weighted number of occurrences, in all classes."""
    o = np.int64(kst[k, OCC])
    if classes == 2:
        o += kst1[k, OCC]
    _release(kst, kst1)
    return o


@_inline
def _tail(kst, kst1, classes, k):
    """A key's last occurrence, in all classes (-1: none)."""
    t = np.int64(kst[k, TAIL])
    if classes == 2 and kst1[k, TAIL] > t:
        t = kst1[k, TAIL]
    _release(kst, kst1)
    return t


@_inline
def _live(kst, kst1, classes, k):
    """Whether key k has a heap entry: it occurs at least twice, so its C++ count is at
    least 1 (Q4) and it can win."""
    return _occ(kst, kst1, classes, k) >= 2


@exported(lambda t: t.i8(t.I4_2, t.I4_2, t.i8, t.i8))
@_inline
def count_live(kst, kst1, classes, nkeys):
    """The number of keys with a heap entry (``_live``)."""
    n = 0
    for k in range(nkeys):
        n += _live(kst, kst1, classes, k)
    return n
