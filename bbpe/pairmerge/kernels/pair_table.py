"""The pairs of symbols seen so far, as rows of one int64 table: the pair (packed as
``a << 32 | b``) and its count. Rows are numbered in the order pairs first appear and never
removed (a pair's count falls, it does not go away, as in HF's map), so an open-addressing
hash index from the packed pair to its row only grows: it doubles when 3/4 full, and rows
keep their numbers across growth.

An index slot (int64) holds the row in its low 32 bits and, above it, the top 32 bits of
the pair's hash (its tag). A probe compares tags and reads a row only when they match, so
a pair looked up costs one miss in the index and, when found, one in the rows, and a new
pair none in the rows. The probe starts where the tag says (its top bits, by the index
size), so slots are in tag order and the index grows by one pass over the old one, with
no row read.

A loop that adds rows makes room for all it may add first (``with_room``), then adds them
with ``row_of``, which never replaces an array.
"""

import numpy as np

from bbpe.kernels.support import _inline, _njit, _release, prefetch

from .arrays import grown2

KEY, COUNT = 0, 1  # the columns
WIDTH = 2
EMPTY = -1  # a slot in use is never -1: its row (low half) is under 2**32 - 1
ROW_BITS = 32
ROW_MASK = np.int64((1 << ROW_BITS) - 1)


@_inline
def pack(a, b):
    return (np.int64(a) << 32) | np.int64(b)


@_inline
def first_of(key):
    return np.int64(key >> 32)


@_inline
def second_of(key):
    return np.int64(key & 0xFFFFFFFF)


@_inline
def _tag(key):
    """The top 32 bits of the key's Fibonacci hash, in the top half of an int64."""
    h = np.uint64(key) * np.uint64(0x9E3779B97F4A7C15)
    return np.int64(h >> np.uint64(ROW_BITS)) << ROW_BITS


@_inline
def _start(tag, size):
    """Where the probe for a tag starts in an index of ``size`` (a power of two) slots:
    the tag's top bits."""
    return np.int64((np.uint64(tag) >> np.uint64(ROW_BITS)) * np.uint64(size) >> np.uint64(ROW_BITS))


@_inline
def _probe(index, rows, key):
    """Where the probe for the packed pair ``key`` ends: its slot, or the empty slot where
    it would go."""
    mask = len(index) - 1
    tag = _tag(key)
    s = _start(tag, len(index))
    while index[s] != EMPTY and not (index[s] & ~ROW_MASK == tag and rows[index[s] & ROW_MASK, KEY] == key):
        s = (s + 1) & mask
    _release(index, rows)
    return s


@_inline
def prefetch_slot(index, key):
    """Hint that the probe for ``key`` will read its first slot soon."""
    prefetch(index, _start(_tag(key), len(index)))


@_inline
def prefetch_row(index, rows, key):
    """Hint that the row of ``key`` will be read soon: the first row its tag matches (the
    probe's slots should have been asked for already)."""
    mask = len(index) - 1
    tag = _tag(key)
    s = _start(tag, len(index))
    while index[s] != EMPTY and index[s] & ~ROW_MASK != tag:
        s = (s + 1) & mask
    prefetch(rows, index[s] & ROW_MASK if index[s] != EMPTY else 0)
    _release(index, rows)


@_njit
def grown_index(index):
    """An index twice the size of ``index``, over the same rows."""
    bigger = np.full(2 * len(index), EMPTY, dtype=np.int64)
    mask = len(bigger) - 1
    for slot in index:
        if slot != EMPTY:
            s = _start(slot & ~ROW_MASK, len(bigger))
            while bigger[s] != EMPTY:
                s = (s + 1) & mask
            bigger[s] = slot
    return bigger


@_njit
def with_room(index, rows, n, more):
    """(index, rows) with room for ``more`` rows after the first ``n``: the index at most
    3/4 full then. The loops that add rows make room before they start, so that no array
    they hold is replaced inside them (numba's reference counting of an array that a loop
    may replace costs several times the loop's own work)."""
    if n + more > len(rows):
        rows = grown2(rows, n + more)
    while 4 * (n + more) > 3 * len(index):
        index = grown_index(index)
    return index, rows


@_inline
def row_of(index, rows, n, key):
    """The row of the packed pair ``key`` among the ``n`` rows, added as row ``n`` with
    count 0 if new (room made by ``with_room``): (row, rows now)."""
    s = _probe(index, rows, key)
    if index[s] == EMPTY:
        index[s] = _tag(key) | n
        rows[n, KEY] = key
        rows[n, COUNT] = 0
        n += 1
    row = index[s] & ROW_MASK
    _release(index, rows)
    return row, n
