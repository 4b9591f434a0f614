"""Numba kernels of the trainer: cutting text into chars, interning keys, counting and merging.

Every ``@njit`` function of the trainer lives here because numba's on-disk cache
(``cache=True``) does not notice edits to kernels in *other* modules that a kernel calls.
Kernels take and return numpy arrays and scalars only: no Python objects, no I/O, and no
exceptions for user errors (``train.py`` validates before calling).

Keys. A key is what the C++ calls a ``WordIdKey``: up to 24 bytes plus a length. Here it is
packed into three little-endian uint64 words (byte j sits in word j // 8 at bit 8 * (j % 8),
bytes past the length are zero) and a uint8 length, and every distinct key is *interned*:
stored once in a ``KeyTable`` (``words (cap, 3) uint64``, ``lens (cap,) uint8``, an
open-addressing index ``slots (2**k,) int32`` and ``meta[0]`` = number of keys) and known
by its int32 row. Training lists are then flat ``int32`` arrays of key rows. A pair key is
the concatenation of two keys (Q9: the left key alone when the result would reach 24
bytes), interned like any key, so two pairs with equal bytes share one count as in the C++
``unordered_map<WordIdKey, int64_t>``.

Trade-off: this is the simple engine the C++ describes (recount every pair on every
merge), kept as the reference the faster engine is tested against.
"""

import numba
import numpy as np

_njit = numba.njit(cache=True, nogil=True)

KEY_BYTES = 24  # sizeof(WordIdKey::idKey), MaxKeyCount = 3 * 8

_M1 = np.uint64(0x9E3779B97F4A7C15)
_M2 = np.uint64(0xC2B2AE3D27D4EB4F)
_M3 = np.uint64(0x165667B19E3779F9)
_M4 = np.uint64(0xD6E8FEB86659FD93)
_SH32 = np.uint64(32)
_SH29 = np.uint64(29)
_U64_0 = np.uint64(0)


# --------------------------------------------------------------------------- key table


@_njit
def _key_hash(w0, w1, w2, length):
    h = (w0 * _M1) ^ (w1 * _M2) ^ (w2 * _M3) ^ (np.uint64(length) * _M4)
    h ^= h >> _SH32
    h *= _M1
    h ^= h >> _SH29
    return h


@_njit
def _find(words, lens, slots, w0, w1, w2, length):
    """(slot, row): the row holding the key, or -1 and the empty slot where it would go."""
    mask = np.uint64(slots.shape[0] - 1)
    i = np.int64(_key_hash(w0, w1, w2, length) & mask)
    while True:
        row = slots[i]
        if row < 0:
            return i, -1
        if lens[row] == length and words[row, 0] == w0 and words[row, 1] == w1 and words[row, 2] == w2:
            return i, row
        i = (i + 1) & (slots.shape[0] - 1)


@_njit
def intern(words, lens, slots, meta, w0, w1, w2, length):
    """Row of the key, added if new. The caller guarantees room (``KeyTable.reserve``)."""
    slot, row = _find(words, lens, slots, w0, w1, w2, length)
    if row >= 0:
        return row
    row = meta[0]
    meta[0] = row + 1
    words[row, 0] = w0
    words[row, 1] = w1
    words[row, 2] = w2
    lens[row] = length
    slots[slot] = row
    return row


@_njit
def reindex(words, lens, nkeys, slots):
    """Fill a fresh (all -1) ``slots`` array with rows 0..nkeys-1 (after the table grew)."""
    for row in range(nkeys):
        slot, _ = _find(words, lens, slots, words[row, 0], words[row, 1], words[row, 2], lens[row])
        slots[slot] = row


@_njit
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


@_njit
def _pair_words(words, lens, a, b):
    """(w0, w1, w2, length) of key a followed by key b; key a alone when that would reach
    24 bytes (Q9: ``WordIdKey::Append`` refuses when ``len + k.len >= 24``)."""
    la = np.int64(lens[a])
    lb = np.int64(lens[b])
    if la + lb >= KEY_BYTES:
        return words[a, 0], words[a, 1], words[a, 2], la
    s0, s1, s2 = _shift_left(words[b, 0], words[b, 1], words[b, 2], la)
    return words[a, 0] | s0, words[a, 1] | s1, words[a, 2] | s2, la + lb


@_njit
def pair_key(words, lens, slots, meta, a, b):
    """Row of the pair key of (a, b), interned."""
    if np.int64(lens[a]) + np.int64(lens[b]) >= KEY_BYTES:
        return a
    w0, w1, w2, length = _pair_words(words, lens, a, b)
    return intern(words, lens, slots, meta, w0, w1, w2, length)


@_njit
def _pair_key_lookup(words, lens, slots, a, b):
    """Row of the pair key of (a, b), or -1 if that key was never interned."""
    if np.int64(lens[a]) + np.int64(lens[b]) >= KEY_BYTES:
        return a
    w0, w1, w2, length = _pair_words(words, lens, a, b)
    _, row = _find(words, lens, slots, w0, w1, w2, length)
    return row


# --------------------------------------------------------------------------- cutting text


@_njit
def char_len(lead):
    """GetWordSize (Q2): the length comes from the lead byte alone; 80-BF and F8-FF -> 1."""
    if lead < 0x80:
        return 1
    if (lead & 0xE0) == 0xC0:
        return 2
    if (lead & 0xF0) == 0xE0:
        return 3
    if (lead & 0xF8) == 0xF0:
        return 4
    return 1


@_njit
def delimiter_len(buf, i, end):
    """Length of the training delimiter that starts at buf[i], 0 if none (Q3).

    The C++ splits with the byte-level regex LF ? space ! " , . and the UTF-8 of
    · ， ？ ！ 。 U+3000 U+200B. No alternative is a prefix of another, so the leftmost match
    is simply the first position where one of them starts.
    """
    c = buf[i]
    if c == 0x0A or c == 0x3F or c == 0x20 or c == 0x21 or c == 0x22 or c == 0x2C or c == 0x2E:
        return 1
    if c == 0xC2:
        return 2 if i + 1 < end and buf[i + 1] == 0xB7 else 0
    if i + 2 >= end:
        return 0
    c1 = buf[i + 1]
    c2 = buf[i + 2]
    if c == 0xEF:
        return 3 if c1 == 0xBC and (c2 == 0x8C or c2 == 0x9F or c2 == 0x81) else 0
    if c == 0xE3:
        return 3 if c1 == 0x80 and (c2 == 0x82 or c2 == 0x80) else 0
    if c == 0xE2:
        return 3 if c1 == 0x80 and c2 == 0x8B else 0
    return 0


@_njit
def _char_key(buf, start, end):
    """(w0, length) of the char that starts at buf[start], for a segment ending at ``end``.

    Q20.1: the C++ reads past the end of a segment whose last char is cut short. The byte
    right after a std::string is its NUL terminator; what lies further is undefined, and
    NUL is used for it too, so a cut char is padded with NUL to its full length.
    """
    length = char_len(buf[start])
    w0 = _U64_0
    for t in range(length):
        if start + t < end:
            w0 |= np.uint64(buf[start + t]) << np.uint64(8 * t)
    return w0, length


@_njit
def segment_lists(buf, words, lens, slots, meta, toks, ntoks, bounds, nlists):
    """Cut ``buf`` (training texts joined by LF) into training lists, appending to the arrays.

    buf : (n,) uint8. Each run between delimiters is cut into chars (Q2); a run of one char
    is dropped (Q3); the others are appended to ``toks`` (int32 key rows) and end at
    ``bounds[1 + list index]``. Needs room for n more toks, n // 2 more lists and n more
    keys. Returns (ntoks, nlists).
    """
    n = buf.shape[0]
    seg_start = 0
    i = 0
    while i <= n:
        dlen = delimiter_len(buf, i, n) if i < n else 1
        if dlen == 0:
            i += 1
            continue
        first = ntoks
        j = seg_start
        while j < i:
            w0, length = _char_key(buf, j, i)
            toks[ntoks] = intern(words, lens, slots, meta, w0, _U64_0, _U64_0, length)
            ntoks += 1
            j += length
        if ntoks - first >= 2:
            nlists += 1
            bounds[nlists] = ntoks
        else:
            ntoks = first
        i += dlen
        seg_start = i
    return ntoks, nlists


# --------------------------------------------------------------------------- one merge


@_njit
def count_pairs(toks, bounds, nlists, words, lens, slots, meta, counts, seen, epoch):
    """The counting loop of MergeMaxPairWord; returns (winner row or -1, its count).

    Q4: a pair seen once counts 0, seen n times n - 1 (``emplace(m, 0)`` then ``++``).
    Q5: the maximum is replaced only by a strictly greater count, so the winner is the pair
    that reaches the final maximum first in scan order. ``seen[row] == epoch`` marks keys
    counted in this pass, so the counts need no clearing between passes.
    """
    best = -1
    best_count = 0
    for li in range(nlists):
        for i in range(bounds[li], bounds[li + 1] - 1):
            p = pair_key(words, lens, slots, meta, toks[i], toks[i + 1])
            if seen[p] != epoch:
                seen[p] = epoch
                counts[p] = 0
            else:
                counts[p] += 1
                if counts[p] > best_count:
                    best_count = counts[p]
                    best = p
    return best, best_count


@_njit
def _count_of(row, counts, seen, epoch):
    # merge[m] through operator[]: a key not counted in this pass reads as 0
    if row < 0 or seen[row] != epoch:
        return 0
    return counts[row]


@_njit
def apply_pass(toks, bounds, nlists, best, first_pass, words, lens, slots, counts, seen, epoch,
               single_counts, single_order, nsingles):
    """The second loop of MergeMaxPairWord, in place; returns (ntoks, nlists, nsingles).

    Walks each list as the C++ does with its index i, keeping the already-walked part in
    toks[start:w] (so toks[w - 1] is the *current* left neighbour) and the rest in toks[r:].
    First pass only (Q6): an element whose current left pair and right pair both count 0 is
    deleted and becomes a single (first deletion counts 0, then +1 each); the next element
    is then judged against the same left neighbour, so deletions cascade. The last element
    is never looked at. Every pass (Q8): where the right pair's key is the winner, the
    element becomes the winner and its right neighbour is erased (Q9: for a truncated key
    the element stays as it is and the neighbour just disappears). After the first pass,
    lists of one element are dropped.
    """
    w = 0
    kept = 0
    start = bounds[0]
    for li in range(nlists):
        end = bounds[li + 1]
        out_start = w
        r = start
        while r + 1 < end:
            cur = toks[r]
            right = _pair_key_lookup(words, lens, slots, cur, toks[r + 1])
            if first_pass:
                left = 0
                if w > out_start:
                    left = _count_of(_pair_key_lookup(words, lens, slots, toks[w - 1], cur), counts, seen, epoch)
                if left == 0 and _count_of(right, counts, seen, epoch) == 0:
                    if single_counts[cur] < 0:
                        single_counts[cur] = 0
                        single_order[nsingles] = cur
                        nsingles += 1
                    else:
                        single_counts[cur] += 1
                    r += 1
                    continue
            if right == best:
                toks[w] = best
                w += 1
                r += 2
                continue
            toks[w] = cur
            w += 1
            r += 1
        while r < end:
            toks[w] = toks[r]
            w += 1
            r += 1
        start = end
        if first_pass and w - out_start <= 1:
            w = out_start
        else:
            kept += 1
            bounds[kept] = w
    return w, kept, nsingles
