"""The pairs of symbols seen so far, as rows of one int64 table: the pair (packed as
``a << 32 | b``) and its count. Rows are numbered in the order pairs first appear and never
removed (a pair's count falls, it does not go away, as in HF's map), so an open-addressing
hash index from the packed pair to its row (int32) only grows: it doubles when 3/4 full,
and rows keep their numbers across growth.
"""

import numpy as np

from bbpe.kernels.support import _inline, _njit, prefetch

KEY, COUNT = 0, 1  # the columns
WIDTH = 2
EMPTY = -1


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
def _slot(key, mask):
    """Where the probe for ``key`` starts (Fibonacci hashing of the 64-bit key)."""
    return np.int64((np.uint64(key) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(24)) & mask


@_inline
def find(index, rows, key):
    """The row of the packed pair ``key``, or -1."""
    mask = len(index) - 1
    s = _slot(key, mask)
    while True:
        row = index[s]
        if row == EMPTY or rows[row, KEY] == key:
            return row
        s = (s + 1) & mask


@_inline
def prefetch_slot(index, key):
    """Hint that the probe for ``key`` will read its first slot soon."""
    prefetch(index, _slot(key, len(index) - 1))


@_njit
def grown_index(index, rows, n):
    """An index twice the size of ``index`` over the first ``n`` rows."""
    bigger = np.full(2 * len(index), EMPTY, dtype=np.int32)
    mask = len(bigger) - 1
    for row in range(n):
        s = _slot(rows[row, KEY], mask)
        while bigger[s] != EMPTY:
            s = (s + 1) & mask
        bigger[s] = row
    return bigger


@_inline
def full(index, n):
    """Whether an index holding ``n`` rows needs to grow before one more goes in."""
    return 4 * (n + 1) > 3 * len(index)


@_inline
def insert(index, rows, n, key):
    """Adds the packed pair ``key`` (not in the table) as row ``n``, count 0; the caller
    has made room (``n < len(rows)``, the index under half full)."""
    mask = len(index) - 1
    s = _slot(key, mask)
    while index[s] != EMPTY:
        s = (s + 1) & mask
    index[s] = n
    rows[n, KEY] = key
    rows[n, COUNT] = 0
