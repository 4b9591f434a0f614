"""Making a pair key during the merges: a freed row is reused, and with two threads the key
is made under the spin lock, written before the store that indexes it.
"""

import numpy as np

from bbpe.kernels.support import _inline, _release, atomic_store

from .handover import _lock, _unlock
from .key_states import _new_key_states
from .keys import _TOMBSTONE, _append_refused, _find_live, _pair_words


@_inline
def _pair_key_reusing(words, slots, meta, free, fmeta, kst, kst1, classes, lock, a, b):
    """``pair_key``, but a new key takes a freed row when there is one; its states (every
    class's) are set.

    With two classes the other thread may be making keys at the same time. The index is
    read without the lock: a key found there is whole, because its row is written before
    the release store that indexes it. A key not found is looked for again under the lock
    and made there if it is still missing.
    """
    if _append_refused(words, a, b):
        row = np.int64(a)
    else:
        w0, w1, w2 = _pair_words(words, a, b)
        slot, row = _find_live(words, slots, w0, w1, w2)
        if row < 0:
            if classes == 2:
                _lock(lock)
                slot, row = _find_live(words, slots, w0, w1, w2)
            if row < 0:
                if fmeta[0] > 0:
                    fmeta[0] -= 1
                    row = np.int64(free[fmeta[0]])
                else:
                    row = meta[0]
                    meta[0] = row + 1
                _new_key_states(kst, kst1, classes, row)
                words[row, 0] = w0
                words[row, 1] = w1
                words[row, 2] = w2
                if slots[slot] == _TOMBSTONE:
                    fmeta[1] -= 1
                atomic_store(slots, slot, row + 1)
            if classes == 2:
                _unlock(lock)
    _release(words, slots, meta, free, fmeta, kst, kst1, lock)
    return row
