"""Counting words: the distinct byte strings among a corpus's pieces, each stored once, with
how often it occurs. A model's pre-tokenizer cuts the text into pieces (their ends); this
hashes each piece (FNV-1a, 64 bits) into an open-addressing table whose hits are confirmed
by comparing the bytes, so equal hashes never merge two words.

A table is the tuple (index, words, arena, sizes): ``index`` holds word numbers (-1 empty),
``words`` rows (hash, start in the arena, length, count), ``arena`` the words' bytes one
after the other in the order they were first seen, ``sizes`` (words, arena bytes used).
Each call returns the table, grown if it had to.
"""

import numpy as np

from bbpe.kernels.support import _inline, _njit, exported

from .arrays import grown1, grown2

HASH, START, LENGTH, COUNT = 0, 1, 2, 3


def _table(t):
    """A table's arrays but its sizes (index, words, arena), as the signatures write them."""
    return t.I8, t.I8_2, t.U1

EMPTY = -1
_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)


@_inline
def _hash(data, start, end):
    h = _FNV_OFFSET
    for i in range(start, end):
        h = (h ^ np.uint64(data[i])) * _FNV_PRIME
    return np.int64(h)


@_inline
def _same(data, start, end, arena, at):
    for i in range(end - start):
        if data[start + i] != arena[at + i]:
            return False
    return True


@exported(lambda t: t.Tuple((*_table(t), t.I8))())
@_njit
def new_table():
    sizes = np.zeros(2, dtype=np.int64)
    return (np.full(1 << 12, EMPTY, dtype=np.int64), np.empty((1024, 4), dtype=np.int64),
            np.empty(1 << 16, dtype=np.uint8), sizes)


@_njit
def _grown_index(index, words, n):
    bigger = np.full(2 * len(index), EMPTY, dtype=np.int64)
    mask = len(bigger) - 1
    for w in range(n):
        s = words[w, HASH] & mask
        while bigger[s] != EMPTY:
            s = (s + 1) & mask
        bigger[s] = w
    return bigger


@_njit
def _add(index, words, arena, sizes, data, start, end, h, count):
    """Adds ``count`` to the word ``data[start:end]`` of hash ``h``, stored if new."""
    mask = len(index) - 1
    s = h & mask
    length = end - start
    while index[s] != EMPTY:
        w = index[s]
        if words[w, HASH] == h and words[w, LENGTH] == length and _same(data, start, end, arena, words[w, START]):
            words[w, COUNT] += count
            return index, words, arena
        s = (s + 1) & mask
    n, used = sizes[0], sizes[1]
    if n == len(words):
        words = grown2(words)
    if used + length > len(arena):
        arena = grown1(arena, used + length)
    arena[used:used + length] = data[start:end]
    words[n, HASH] = h
    words[n, START] = used
    words[n, LENGTH] = length
    words[n, COUNT] = count
    index[s] = n
    sizes[0] = n + 1
    sizes[1] = used + length
    if 4 * (n + 1) > 3 * len(index):
        index = _grown_index(index, words, n + 1)
    return index, words, arena


@exported(lambda t: t.Tuple(_table(t))(*_table(t), t.I8, t.U1_READONLY, t.i8, t.I8, t.i8))
@_njit
def count_pieces(index, words, arena, sizes, data, begin, ends, n_ends):
    """Counts the pieces ``data[begin:ends[0]]``, ``data[ends[0]:ends[1]]``, ... (the first
    ``n_ends`` ends) into the table; returns it (index, words, arena). An end written
    negated (-end) ends a gap, which is no word."""
    start = begin
    for k in range(n_ends):
        end = ends[k]
        if end < 0:
            start = -end
            continue
        if end > start:
            index, words, arena = _add(index, words, arena, sizes, data, start, end, _hash(data, start, end), 1)
        start = end
    return index, words, arena


@exported(lambda t: t.I8(t.U1, t.I8))
@_njit
def word_hashes(arena, starts):
    """The hash of each word ``arena[starts[w]:starts[w + 1]]``, as the table takes it."""
    out = np.empty(len(starts) - 1, dtype=np.int64)
    for w in range(len(out)):
        out[w] = _hash(arena, starts[w], starts[w + 1])
    return out


@exported(lambda t: t.Tuple(_table(t))(*_table(t), t.I8, t.I8_2, t.U1, t.i8))
@_njit
def merge_tables(index, words, arena, sizes, other_words, other_arena, other_n):
    """Adds the first ``other_n`` words of another table (with its arena) to this one, in
    their order; returns this table (index, words, arena)."""
    for w in range(other_n):
        start = other_words[w, START]
        end = start + other_words[w, LENGTH]
        index, words, arena = _add(index, words, arena, sizes, other_arena, start, end, other_words[w, HASH],
                                   other_words[w, COUNT])
    return index, words, arena
