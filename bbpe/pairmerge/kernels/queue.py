"""The merge queue: a binary heap of entries, each a pair's row, the count it had when the
entry was made, and the words to merge it in (a range of the word arena). Deletion is lazy,
as in HF's trainer: an entry whose count no longer is its pair's goes back in with the
current count when it reaches the top.

Order (``_before``): the greater count first, counts compared as unsigned 64-bit numbers
(HF reads a pair count that went negative ``as u64``); then the tie rule: ``TIE_IDS``, the
smaller pair of ids, (a, b) compared as a tuple (trainer.rs's ``Ord for Merge``, HF's), or
``TIE_FIRST_SEEN``, the pair that appeared first in the words.
"""

import numpy as np

from bbpe.kernels.support import _inline

from .pair_table import KEY

# the columns of an entry: the count it was made with, where its words start in the arena,
# and its pair's row and how many words it holds, as row << 32 | words
COUNT, START, ROW_LENGTH = 0, 1, 2
WIDTH = 3
TIE_IDS, TIE_FIRST_SEEN = 0, 1
_SIGN = np.int64(-0x8000000000000000)


@_inline
def unsigned_less(a, b):
    """a < b for int64 holding unsigned 64-bit values."""
    return (a ^ _SIGN) < (b ^ _SIGN)


@_inline
def row_of(entries, e):
    return entries[e, ROW_LENGTH] >> 32


@_inline
def length_of(entries, e):
    return entries[e, ROW_LENGTH] & 0xFFFFFFFF


@_inline
def _before(entries, rows, x, y, tie):
    cx, cy = entries[x, COUNT], entries[y, COUNT]
    if cx != cy:
        return unsigned_less(cy, cx)
    if tie == TIE_IDS:
        return rows[row_of(entries, x), KEY] < rows[row_of(entries, y), KEY]
    return row_of(entries, x) < row_of(entries, y)


@_inline
def push(heap, size, entries, rows, e, tie):
    """Adds entry ``e`` to the heap of ``size`` entries (room made by the caller)."""
    i = size
    while i > 0:
        parent = (i - 1) >> 1
        if not _before(entries, rows, e, heap[parent], tie):
            break
        heap[i] = heap[parent]
        i = parent
    heap[i] = e


@_inline
def pop(heap, size, entries, rows, tie):
    """Removes and returns the first entry of a heap of ``size`` > 0 entries."""
    top = heap[0]
    size -= 1
    last = heap[size]
    i = 0
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        if child + 1 < size and _before(entries, rows, heap[child + 1], heap[child], tie):
            child += 1
        if not _before(entries, rows, heap[child], last, tie):
            break
        heap[i] = heap[child]
        i = child
    heap[i] = last
    return top
