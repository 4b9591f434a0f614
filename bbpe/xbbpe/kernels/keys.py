"""The key table: interning keys, finding them, and giving their rows back.

Keys. A key is what the C++ calls a ``WordIdKey``: up to 24 bytes plus a length. Here it
is packed into three little-endian uint64 words (byte j sits in word j // 8 at bit
8 * (j % 8), bytes past the length are zero) with the length in the top byte of the third
word: training keys stop at 23 bytes (Q9), so that byte is free, and a key is one 24-byte
row that compares in three word compares. Every distinct key is *interned*: stored once in
``words (cap, 3) uint64`` with an open-addressing index ``slots`` (int32, row + 1, 0 =
empty) and ``meta[0]`` = number of keys, and known by its int32 row. Training lists are
then int32 arrays of key rows. A pair key is the concatenation of two keys (Q9: the left key
alone when the result would reach 24 bytes), interned like any key, so two pairs with equal
bytes share one count, as in the C++ ``unordered_map<WordIdKey, int64_t>``.
"""

import numpy as np

from bbpe.kernels.support import _inline, _njit, _release, exported, prefetch

from .tables import KEY_BYTES

_M1 = np.uint64(0x9E3779B97F4A7C15)
_M2 = np.uint64(0xC2B2AE3D27D4EB4F)
_M3 = np.uint64(0x165667B19E3779F9)
_M4 = np.uint64(0xD6E8FEB86659FD93)
_SH32 = np.uint64(32)
_SH29 = np.uint64(29)
_U64_0 = np.uint64(0)


_LEN_SHIFT = np.uint64(56)
_LOW56 = np.uint64((1 << 56) - 1)
_TOMBSTONE = -1  # an index entry whose key was taken out (``_forget``)


@_inline
def key_len(words, k):
    return np.int64(words[k, 2] >> _LEN_SHIFT)


@_inline
def _key_hash(w0, w1, w2):
    h = (w0 * _M1) ^ (w1 * _M2) ^ (w2 * _M3)
    h ^= h >> _SH32
    h *= _M4
    h ^= h >> _SH29
    return h


@exported(lambda t: t.UniTuple(t.i8, 2)(t.U8_2, t.I4, t.u8, t.u8, t.u8))
@_inline
def _find(words, slots, w0, w1, w2):
    """(slot, row): the row holding the key, or -1 and the empty slot where it would go.
    An entry is row + 1, 0 is empty. For an index without tombstones: before the merges,
    which alone take keys out (``_find_live`` is for any index)."""
    mask = slots.shape[0] - 1
    i = np.int64(_key_hash(w0, w1, w2) & np.uint64(mask))
    row = np.int64(slots[i]) - 1
    while row >= 0 and not (words[row, 0] == w0 and words[row, 1] == w1 and words[row, 2] == w2):
        i = (i + 1) & mask
        row = np.int64(slots[i]) - 1
    _release(words, slots)
    return i, row


@_inline
def _find_live(words, slots, w0, w1, w2):
    """``_find`` in an index that may hold tombstones (_TOMBSTONE: a key the merges took
    out, ``_forget``): a lookup goes on past one, and a new key may take its place."""
    i, row = _find(words, slots, w0, w1, w2)  # it stops at the first tombstone too
    if row == _TOMBSTONE - 1:  # the key may still come further on; if not, it goes here
        mask = slots.shape[0] - 1
        free = i
        while row != -1 and not (row >= 0 and words[row, 0] == w0 and words[row, 1] == w1 and words[row, 2] == w2):
            i = (i + 1) & mask
            row = np.int64(slots[i]) - 1
        if row < 0:
            i = free
    _release(words, slots)
    return i, row


@_inline
def _home(words, slots, row):
    """The index slot where the key in ``row`` is looked up first."""
    return np.int64(_key_hash(words[row, 0], words[row, 1], words[row, 2]) & np.uint64(slots.shape[0] - 1))


@_inline
def _append_row(words, meta, w0, w1, w2):
    """Put a new key in the next row, not indexed; returns the row."""
    row = meta[0]
    meta[0] = row + 1
    words[row, 0] = w0
    words[row, 1] = w1
    words[row, 2] = w2
    _release(words, meta)
    return row


@_inline
def intern(words, slots, meta, w0, w1, w2):
    """Row of the key, added if new. The caller guarantees room (``KeyTable.reserve``)."""
    slot, row = _find(words, slots, w0, w1, w2)
    if row < 0:
        row = _append_row(words, meta, w0, w1, w2)
        slots[slot] = row + 1
    _release(words, slots, meta)
    return row


@exported(lambda t: t.none(t.U8_2, t.I4, t.U8_2, t.I8))
@_njit
def find_rows(words, slots, query, rows):
    """rows[i]: the row of key query[i] (packed as in ``words``), or -1."""
    for i in range(query.shape[0]):
        _, rows[i] = _find_live(words, slots, query[i, 0], query[i, 1], query[i, 2])


@exported(lambda t: t.none(t.U8_2, t.i8, t.i8, t.I4))
@_njit
def index_rows(words, start, stop, slots):
    """Index rows start..stop-1 in ``slots``, which holds other keys or none, and no
    tombstones; a freed row (all zero: no key has length 0) stays out."""
    mask = slots.shape[0] - 1
    # The home of the key _AHEAD rows on is asked for now and kept until its row comes:
    # the probe is in flight meanwhile, and each key is hashed once, not twice.
    homes = np.empty(_AHEAD, dtype=np.int64)
    for row in range(start, min(stop, start + _AHEAD)):
        homes[row & (_AHEAD - 1)] = _home(words, slots, row)
    for row in range(start, stop):
        i = homes[row & (_AHEAD - 1)]
        if row + _AHEAD < stop:
            ahead = _home(words, slots, row + _AHEAD)
            homes[row & (_AHEAD - 1)] = ahead
            prefetch(slots, ahead)
        if words[row, 2] == _U64_0:
            continue
        # the rows hold distinct keys: the first empty slot is the place, no compare needed
        while slots[i] != 0:
            i = (i + 1) & mask
        slots[i] = row + 1


@exported(lambda t: t.none(t.U8_2, t.i8, t.I4))
@_njit
def reindex(words, nkeys, slots):
    """Fill a fresh (all 0) ``slots`` array with rows 0..nkeys-1 (after the table grew)."""
    index_rows(words, 0, nkeys, slots)


@exported(lambda t: t.none(t.U8_2, t.i8, t.U8_2, t.I4, t.I8, t.I4))
@_njit
def intern_rows(src, nsrc, words, slots, meta, rowmap):
    """Intern the keys src[0:nsrc] (another key table's rows) in this table, in row order;
    rowmap[r] gets the row of src's key r here. The caller guarantees room."""
    for r in range(nsrc):
        rowmap[r] = intern(words, slots, meta, src[r, 0], src[r, 1], src[r, 2])


@_inline
def _shift_left(w0, w1, w2, nbytes):
    """The 192-bit number (w2:w1:w0) shifted left by ``nbytes`` bytes (0 <= nbytes < 24)."""
    q = nbytes // 8
    r = np.uint64(8 * (nbytes % 8))
    if q == 1:
        w2, w1, w0 = w1, w0, _U64_0
    elif q == 2:
        w2, w1, w0 = w0, _U64_0, _U64_0
    if r != 0:
        back = np.uint64(64) - r
        w2 = (w2 << r) | (w1 >> back)
        w1 = (w1 << r) | (w0 >> back)
        w0 = w0 << r
    return w0, w1, w2


@_inline
def _pair_words(words, a, b):
    """The words of key a followed by key b (both shorter than 24 bytes together)."""
    la = key_len(words, a)
    lb = key_len(words, b)
    s0, s1, s2 = _shift_left(words[b, 0], words[b, 1], words[b, 2] & _LOW56, la)
    top = np.uint64(la + lb) << _LEN_SHIFT
    return words[a, 0] | s0, words[a, 1] | s1, (words[a, 2] & _LOW56) | s2 | top


@_inline
def _append_refused(words, a, b):
    """Q9: ``WordIdKey::Append`` refuses when ``len + k.len >= 24``; the pair key of (a, b)
    is then key a itself."""
    refused = key_len(words, a) + key_len(words, b) >= KEY_BYTES
    _release(words)
    return refused


@_inline
def pair_key(words, slots, meta, a, b):
    """Row of the pair key of (a, b), interned (key a itself when Append refuses, Q9)."""
    if _append_refused(words, a, b):
        row = np.int64(a)
    else:
        w0, w1, w2 = _pair_words(words, a, b)
        row = intern(words, slots, meta, w0, w1, w2)
    _release(words, slots, meta)
    return row


@_inline
def _pair_key_lookup(words, slots, a, b):
    """Row of the pair key of (a, b), or -1 if that key was never interned."""
    if _append_refused(words, a, b):
        row = np.int64(a)
    else:
        w0, w1, w2 = _pair_words(words, a, b)
        _, row = _find(words, slots, w0, w1, w2)
    _release(words, slots)
    return row


_AHEAD = 16  # slots (a power of 2): a prefetch has time to arrive (8 and 32 were slower on zh-large)


@_inline
def _forget(words, slots, row, fmeta):
    """Take a key out of the index: its entry becomes a tombstone, counted in fmeta[1]
    until the index is rebuilt (``_index_room``). Shifting the rest of its probe cluster
    back instead would read the key of every entry moved, a cache miss each: that was
    two thirds of the end of a step.

    At the end of a cluster (the next entry empty) no lookup goes past the entry, so it
    becomes empty instead, and so do the tombstones right before it: no key lies beyond
    an empty entry from its home, so none lies beyond these. Most entries at this load
    are there, so few tombstones stay."""
    mask = slots.shape[0] - 1
    i = _home(words, slots, row)
    while slots[i] != row + 1:
        i = (i + 1) & mask
    if slots[(i + 1) & mask] == 0:
        slots[i] = 0
        i = (i - 1) & mask
        while slots[i] == _TOMBSTONE:
            slots[i] = 0
            fmeta[1] -= 1
            i = (i - 1) & mask
    else:
        slots[i] = _TOMBSTONE
        fmeta[1] += 1
    _release(words, slots, fmeta)


@_inline
def _free_row(words, slots, row, free, fmeta):
    """Forget a key and put its row on the free list (fmeta[0] rows), zeroed so
    ``reindex`` skips it."""
    _forget(words, slots, row, fmeta)
    words[row, 0] = _U64_0
    words[row, 1] = _U64_0
    words[row, 2] = _U64_0
    free[fmeta[0]] = row
    fmeta[0] += 1
    _release(words, slots, free, fmeta)


_FREE_AHEAD = 8  # rows: a freed row's key is read this far ahead, its home slot half as far


@_inline
def _free_rows(words, slots, rows, n, free, fmeta):
    """``_free_row`` for rows[:n], each one's key and then its index slot asked for ahead
    (two cache misses a row, which otherwise come one after the other)."""
    for i in range(n):
        if i + _FREE_AHEAD < n:
            prefetch(words, rows[i + _FREE_AHEAD])
        if i + _FREE_AHEAD // 2 < n:
            prefetch(slots, _home(words, slots, rows[i + _FREE_AHEAD // 2]))
        _free_row(words, slots, rows[i], free, fmeta)
    _release(words, slots, rows, free, fmeta)
