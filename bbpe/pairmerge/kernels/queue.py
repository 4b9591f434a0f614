"""The merge queue: a binary heap of entries, each a row of one int64 table: the count the
entry was made with, the key it is ordered by among equal counts, where its words start in
the word arena, and its pair's row and how many words it holds (``row << 32 | words``).
An entry carries all that the heap compares, so a comparison reads no other table: a pop
walks one array. Deletion is lazy, as in HF's trainer: an entry whose count no longer is
its pair's goes back in with the current count when it reaches the top.

Order (``_goes_before``): the greater count first, counts compared as unsigned 64-bit
numbers (HF reads a pair count that went negative ``as u64``); then the smaller key. The
key is the tie rule's: ``TIE_IDS``, the packed pair (so (a, b) compared as a tuple:
trainer.rs's ``Ord for Merge``, HF's), or ``TIE_FIRST_SEEN``, the pair's row (the pair that
appeared first in the words).
"""

import numpy as np

from bbpe.kernels.support import _inline

COUNT, ORDER, START, ROW_LENGTH = 0, 1, 2, 3  # an entry's columns
WIDTH = 4
TIE_IDS, TIE_FIRST_SEEN = 0, 1
_SIGN = np.int64(-0x8000000000000000)


@_inline
def unsigned_less(a, b):
    """a < b for int64 holding unsigned 64-bit values."""
    return (a ^ _SIGN) < (b ^ _SIGN)


@_inline
def order_key(tie, key, row):
    """What an entry of the pair ``key`` (packed) at ``row`` is ordered by among equal counts."""
    return key if tie == TIE_IDS else row


@_inline
def row_of(heap, i):
    return heap[i, ROW_LENGTH] >> 32


@_inline
def length_of(heap, i):
    return heap[i, ROW_LENGTH] & 0xFFFFFFFF


@_inline
def _goes_before(count, order, other_count, other_order):
    if count != other_count:
        return unsigned_less(other_count, count)
    return order < other_order


@_inline
def _put(heap, i, count, order, start, row_length):
    heap[i, COUNT] = count
    heap[i, ORDER] = order
    heap[i, START] = start
    heap[i, ROW_LENGTH] = row_length


@_inline
def _move(heap, to, source):
    heap[to, COUNT] = heap[source, COUNT]
    heap[to, ORDER] = heap[source, ORDER]
    heap[to, START] = heap[source, START]
    heap[to, ROW_LENGTH] = heap[source, ROW_LENGTH]


@_inline
def push(heap, size, count, order, start, row_length):
    """Adds an entry to the heap of ``size`` entries (room made by the caller)."""
    i = size
    while i > 0:
        parent = (i - 1) >> 1
        if not _goes_before(count, order, heap[parent, COUNT], heap[parent, ORDER]):
            break
        _move(heap, i, parent)
        i = parent
    _put(heap, i, count, order, start, row_length)


@_inline
def pop(heap, size):
    """Removes the first entry (row 0, read by the caller before) of a heap of ``size`` > 0
    entries."""
    size -= 1
    count, order = heap[size, COUNT], heap[size, ORDER]
    start, row_length = heap[size, START], heap[size, ROW_LENGTH]
    i = 0
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        if child + 1 < size and _goes_before(heap[child + 1, COUNT], heap[child + 1, ORDER], heap[child, COUNT],
                                             heap[child, ORDER]):
            child += 1
        if not _goes_before(heap[child, COUNT], heap[child, ORDER], count, order):
            break
        _move(heap, i, child)
        i = child
    _put(heap, i, count, order, start, row_length)
