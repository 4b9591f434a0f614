"""The lazy max-heap of the merges: (count desc, last occurrence asc) picks each winner
(Q5); an entry that lost occurrences is lowered when it comes to the top.
"""

from bbpe.kernels.support import _inline, _njit, _release, exported

from .key_states import _live, _occ, _tail


@_inline
def _ranks_above(occ, tail, occ2, tail2):
    """The heap's order (Q5): more occurrences first, then the earlier last one."""
    return occ > occ2 or (occ == occ2 and tail < tail2)


@_inline
def _heap_better(hocc, htail, i, j):
    better = _ranks_above(hocc[i], htail[i], hocc[j], htail[j])
    _release(hocc, htail)
    return better


@_inline
def _heap_swap(hocc, htail, hkey, i, j):
    hocc[i], hocc[j] = hocc[j], hocc[i]
    htail[i], htail[j] = htail[j], htail[i]
    hkey[i], hkey[j] = hkey[j], hkey[i]


@_inline
def _heap_sift_down(hocc, htail, hkey, size, i):
    c = 2 * i + 1
    while c < size:
        if c + 1 < size and _heap_better(hocc, htail, c + 1, c):
            c += 1
        if not _heap_better(hocc, htail, c, i):
            break
        _heap_swap(hocc, htail, hkey, i, c)
        i = c
        c = 2 * i + 1
    _release(hocc, htail, hkey)


@_inline
def heap_push(hocc, htail, hkey, hmeta, o, t, k):
    i = hmeta[0]
    hmeta[0] = i + 1
    hocc[i], htail[i], hkey[i] = o, t, k
    while i > 0:
        parent = (i - 1) // 2
        if not _heap_better(hocc, htail, i, parent):
            break
        _heap_swap(hocc, htail, hkey, i, parent)
        i = parent
    _release(hocc, htail, hkey, hmeta)


@exported(lambda t: t.i8(t.I4, t.I4, t.I4, t.I8, t.I4_2, t.I4_2, t.i8, t.i8))
@_njit
def heap_rebuild(hocc, htail, hkey, hmeta, kst, kst1, classes, nkeys):
    """Drop every stale entry: one entry per live key, heapified."""
    size = 0
    for k in range(nkeys):
        if _live(kst, kst1, classes, k):
            hocc[size], htail[size], hkey[size] = _occ(kst, kst1, classes, k), _tail(kst, kst1, classes, k), k
            size += 1
    hmeta[0] = size
    for i in range(size // 2 - 1, -1, -1):
        _heap_sift_down(hocc, htail, hkey, size, i)
    return size


@_inline
def _heap_pop_valid(hocc, htail, hkey, hmeta, kst, kst1, classes):
    """Pop until an entry matches its key's current (occ, tail); -1 if none is left.

    An entry above its key's current value (the key only lost occurrences since it was
    pushed, ``run_merges``) is replaced by that value, which sinks to its place; one below
    it is dropped: the key has another entry at least as high.
    """
    found = -1
    while found < 0 and hmeta[0] > 0:
        o, t, k = hocc[0], htail[0], hkey[0]
        occ, tail = _occ(kst, kst1, classes, k), _tail(kst, kst1, classes, k)
        if occ >= 2 and _ranks_above(o, t, occ, tail):
            hocc[0], htail[0] = occ, tail
            _heap_sift_down(hocc, htail, hkey, hmeta[0], 0)
            continue
        size = hmeta[0] - 1
        hmeta[0] = size
        if size > 0:
            hocc[0], htail[0], hkey[0] = hocc[size], htail[size], hkey[size]
            _heap_sift_down(hocc, htail, hkey, size, 0)
        if occ == o and tail == t and occ >= 2:
            found = k
    _release(hocc, htail, hkey, hmeta, kst, kst1)
    return found
