"""The tokens: what each spells (its code points, in one arena) and the token a merge
makes. Two merges that spell the same string make the same token, as in HF's trainer
(``word_to_id`` is keyed by the string): ("a", "bc") after ("ab", "c") gives "abc" its
old id, and a special token spelled like a merge is that merge's token.

A token's hash is a polynomial over its code points, so a merge's hash comes from its
parts' (``h(ab) = h(a) * P**len(b) + h(b)``, mod 2**64); equal hashes are confirmed by
comparing the code points, so a collision costs time, never a wrong id.
"""

import numpy as np

from bbpe.kernels.support import _inline, _njit

from .arrays import grown1

P = np.uint64(0x100000001B3)  # odd: every power is invertible mod 2**64
EMPTY = -1


@_inline
def _slot(h, mask):
    """Where the probe for the hash ``h`` starts. ``h`` is mixed first (Fibonacci hashing):
    a polynomial hash's high bits are nearly the same for all short tokens (a single
    char's hash is the char), which would pile them into one run of slots."""
    return np.int64((h * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(24)) & mask


@_njit
def token_tables(content, starts, capacity):
    """The tables of the first tokens, whose code points are ``content[starts[t]:starts[t + 1]]``,
    with room for ``capacity`` tokens: (lengths, hashes, powers, content starts, arena, arena
    size, hash index)."""
    n = len(starts) - 1
    lengths = np.zeros(capacity, dtype=np.int64)
    hashes = np.zeros(capacity, dtype=np.uint64)
    powers = np.ones(capacity, dtype=np.uint64)
    begin = np.zeros(capacity, dtype=np.int64)
    arena = np.empty(max(2 * len(content), 1024), dtype=np.int32)
    arena[:len(content)] = content
    size = 1024
    while size < 2 * capacity:
        size *= 2
    index = np.full(size, EMPTY, dtype=np.int64)
    for t in range(n):
        h = np.uint64(0)
        p = np.uint64(1)
        for i in range(starts[t], starts[t + 1]):
            h = h * P + np.uint64(content[i] + 1)
            p = p * P
        lengths[t] = starts[t + 1] - starts[t]
        hashes[t] = h
        powers[t] = p
        begin[t] = starts[t]
        s = _slot(h, size - 1)
        while index[s] != EMPTY:
            s = (s + 1) & (size - 1)
        index[s] = t
    return lengths, hashes, powers, begin, arena, np.int64(len(content)), index


@_inline
def _spells(arena, begin, lengths, t, a, b):
    """Whether token ``t`` spells token ``a`` then token ``b``."""
    if lengths[t] != lengths[a] + lengths[b]:
        return False
    at = begin[t]
    for i in range(lengths[a]):
        if arena[at + i] != arena[begin[a] + i]:
            return False
    at += lengths[a]
    for i in range(lengths[b]):
        if arena[at + i] != arena[begin[b] + i]:
            return False
    return True


@_njit
def merged_token(lengths, hashes, powers, begin, arena, used, index, n, a, b):
    """The token that spells ``a`` then ``b``: its id if one of the ``n`` tokens does,
    else ``n``, a new one written into the tables (room for it made by the caller).
    Returns (id, arena, arena size): the arena grows when full."""
    h = hashes[a] * powers[b] + hashes[b]
    mask = len(index) - 1
    s = _slot(h, mask)
    while index[s] != EMPTY:
        t = index[s]
        if hashes[t] == h and _spells(arena, begin, lengths, t, a, b):
            return t, arena, used
        s = (s + 1) & mask
    size = lengths[a] + lengths[b]
    if used + size > len(arena):
        arena = grown1(arena, used + size)
    arena[used:used + lengths[a]] = arena[begin[a]:begin[a] + lengths[a]]
    arena[used + lengths[a]:used + size] = arena[begin[b]:begin[b] + lengths[b]]
    lengths[n] = size
    hashes[n] = h
    powers[n] = powers[a] * powers[b]
    begin[n] = used
    index[s] = n
    return n, arena, used + size
