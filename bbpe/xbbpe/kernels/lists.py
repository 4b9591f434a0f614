"""The occurrence lists of the pair keys, sorted by slot: unlinking and linking a site,
and squeezing the slots merged away (``compact_slots``).
"""

import numpy as np

from bbpe.kernels.support import _inline, _njit, _release, exported

from .tables import DEAD, DIRTY, FINGER, FLAGS, HEAD, NXT, OCC, PK, PRV, RAISED, SENTINEL, TAIL, TOK


@_inline
def _next_alive(S, s):
    t = s + 1
    while S[t, TOK] == DEAD:
        t += 1
    if S[t, TOK] == SENTINEL:
        t = -1
    _release(S)
    return t


@_inline
def _prev_alive(S, s):
    t = s - 1
    while t >= 0 and S[t, TOK] == DEAD:
        t -= 1
    if t >= 0 and S[t, TOK] == SENTINEL:
        t = -1
    _release(S)
    return t


@_inline
def _mark(k, kst, dirty_list, nd):
    if kst[k, FLAGS] & DIRTY == 0:
        kst[k, FLAGS] |= DIRTY
        dirty_list[nd] = k
        nd += 1
    _release(kst, dirty_list)
    return nd


@_inline
def _connect(S, kst, k, a, b):
    """Make slot b follow slot a in key k's list (-1 stands for the list's ends)."""
    if a >= 0:
        S[a, NXT] = b
    else:
        kst[k, HEAD] = b
    if b >= 0:
        S[b, PRV] = a
    else:
        kst[k, TAIL] = a
    _release(S, kst)


@_inline
def _unlink(s, m, S, kst):
    """Take slot s out of its pair key's list; returns that key."""
    k = S[s, PK]
    _connect(S, kst, k, S[s, PRV], S[s, NXT])
    S[s, NXT] = -1
    S[s, PRV] = -1
    S[s, PK] = -1
    kst[k, OCC] -= m
    _release(S, kst)
    return k


@_inline
def _unlink_marking(s, m, S, kst, dirty, nd):
    """``_unlink``, putting the key on the dirty list only if this class has no occurrence
    of it left: a key that only lost some needs nothing at the end of the step (its heap
    entry stays, an upper bound, ``run_merges``) unless it may have none left at all."""
    k = _unlink(s, m, S, kst)
    if kst[k, OCC] == 0:
        nd = _mark(k, kst, dirty, nd)
    _release(S, kst, dirty)
    return nd


@_inline
def _link(s, k, m, S, kst, finger):
    """Add slot s to key k's list at its place in slot order.

    Nearly always that is the end. When it is not, the place is searched from the slot
    linked into k last in this step (``finger[k]``, valid while k has FINGER): within one
    step the slots linked into a key only grow (sites are visited in slot order, and a
    site links its left neighbour and itself), so a step walks each list at most once.
    Walking back from the tail every time would be quadratic: a Q9 winner is relinked
    into its own list at every one of its sites.
    """
    S[s, PK] = k
    kst[k, OCC] += m
    kst[k, FLAGS] |= RAISED
    p = kst[k, TAIL]
    if p > s:
        # not the end: the finger is read (and kept, FINGER) only here, so the common
        # case touches no finger at all
        f = finger[k]
        if kst[k, FLAGS] & FINGER and S[f, PK] == k and f < s:
            p = f
            while True:
                q = S[p, NXT]
                if q < 0 or q > s:
                    break
                p = q
        else:
            while p > s:
                p = S[p, PRV]
        finger[k] = s
        kst[k, FLAGS] |= FINGER
    q = kst[k, HEAD] if p < 0 else S[p, NXT]
    _connect(S, kst, k, p, s)
    _connect(S, kst, k, s, q)
    _release(S, kst, finger)


@exported(lambda t: t.i8(t.I4_2, t.i8, t.I4, t.I4_2, t.I4_2, t.i8, t.i8))
@_njit
def compact_slots(S, n, smul, kst, kst1, classes, nkeys):
    """Squeeze out the DEAD slots, in place; returns the new number of slots.

    The renumbering keeps slot order, so every list stays sorted and the tie rule is
    unchanged; links and list ends are renumbered, multiplicities move with their slots
    (the heap must be rebuilt).
    """
    new = np.empty(n, dtype=np.int32)
    j = 0
    for s in range(n):
        if S[s, TOK] != DEAD:
            new[s] = j
            j += 1
    for s in range(n):
        if S[s, TOK] != DEAD:
            t = new[s]
            nxt, prv = S[s, NXT], S[s, PRV]
            S[t, TOK] = S[s, TOK]
            S[t, PK] = S[s, PK]
            S[t, NXT] = new[nxt] if nxt >= 0 else -1
            S[t, PRV] = new[prv] if prv >= 0 else -1
            smul[t] = smul[s]
    for k in range(nkeys):
        if kst[k, HEAD] >= 0:
            kst[k, HEAD] = new[kst[k, HEAD]]
            kst[k, TAIL] = new[kst[k, TAIL]]
        if classes == 2 and kst1[k, HEAD] >= 0:
            kst1[k, HEAD] = new[kst1[k, HEAD]]
            kst1[k, TAIL] = new[kst1[k, TAIL]]
    return j
