"""Linking the slots that survive the first pass into the occurrence lists of their pair
keys, a piece of the layout at a time (on two threads with two classes).
"""

import numpy as np

from bbpe.kernels.support import _inline, _njit, _release, exported, prefetch

from .pair_keys import _pair_key_reusing
from .tables import HEAD, NXT, OCC, PK, PRV, TAIL, TOK


@_inline
def _link_type(a, n, m, S, words, slots, meta, smul, kst, kst0, kst1, classes, lock, no_free):
    """Link the pairs of the type in slots a..a+n-1 (multiplicity m) into the lists of
    ``kst``, its class's (kst0 and kst1: every class's, for a new key)."""
    for i in range(a, a + n):  # not smul[a : a + n] = m: a view costs reference counting here
        smul[i] = m
    for i in range(a, a + n - 1):
        _prefetch_link(i, S, kst)
        k = np.int64(S[i, PK])
        if k < 0:
            k = _pair_key_reusing(words, slots, meta, no_free, no_free, kst0, kst1, classes, lock, S[i, TOK],
                                  S[i + 1, TOK])
            S[i, PK] = k
        kst[k, OCC] += m
        last = kst[k, TAIL]
        if last < 0:
            kst[k, HEAD] = i
        else:
            S[last, NXT] = i
            S[i, PRV] = last
        kst[k, TAIL] = i
    _release(S, words, slots, meta, smul, kst, kst0, kst1)
    _release(lock, no_free)


# Slots ahead of the one at hand whose key's state the first pass and the linking ask
# for (the linking: its list's last slot at half the distance): both walk the slots in
# order across types, most of which are shorter than that (docs/perf-notes.md, linking).
_WALK_AHEAD = 48


@_inline
def _prefetch_link(i, S, kst):
    """Ask for what linking the slots ahead of slot i will touch (``_WALK_AHEAD``)."""
    j = i + _WALK_AHEAD
    if j < S.shape[0]:
        prefetch(kst, S[j, PK])
    j = i + _WALK_AHEAD // 2
    k = S[j, PK] if j < S.shape[0] else -1
    if k >= 0:
        prefetch(S, kst[k, TAIL])
    _release(S, kst)


@exported(lambda t: t.i8(
    t.I8, t.i8, t.I8, t.I8, t.I8, t.I4_2, t.U8_2, t.I4, t.I8, t.i8, t.I4, t.I4_2, t.I4_2, t.I4_2, t.i8, t.i8, t.i8,
    t.I8
))
@_njit
def link_slots(order, start, base, tlen, tmult, S, words, slots, meta, key_limit, smul, kst, kst0, kst1, classes, shift,
               c, lock):
    """Link every pair of the types of class ``c`` among order[start:] into its key's list
    (slot order), whose states are ``kst`` (kst0 or kst1; both, for a new key). With two
    classes, the blocks of 2**shift slots alternate (a type is in the block of its first
    slot) and the two are linked at once, by two threads: then ``key_limit`` is not
    checked, the caller having made room for every pair the first pass left without a key.
    With one class, every type is class 0.

    Types of length 0 are skipped; smul[s] gets the multiplicity of the type of slot s.
    Returns the next index into order; stops early like ``count_slots``.
    """
    no_free = np.zeros(2, dtype=np.int64)  # the merges' free rows: none yet
    for oi in range(start, order.shape[0]):
        t = order[oi]
        n = tlen[t]
        if n == 0:
            continue
        a = base[t]
        if classes == 2:
            if (a >> shift) & 1 != c:
                continue
        elif meta[0] + n > key_limit:
            return oi
        _link_type(a, n, tmult[t], S, words, slots, meta, smul, kst, kst0, kst1, classes, lock, no_free)
    return order.shape[0]
