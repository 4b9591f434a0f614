"""The scan: the corpus cut into lists, each distinct list stored once as a type.

The scalable engine stores each distinct training list once, as a *type* with its
multiplicity and the index of its last occurrence among all lists; types are numbered
in the order of their first occurrence (a type is made where its list first occurs).
That changes nothing in the results: a list's first pass depends only on its own content
and on the global counts, and merges treat equal lists alike; the scan order the C++
uses for ties and for the order of singles is recovered from the type numbers and the
last occurrences.

Type store: tokens ``ttoks`` (int32), type t = ttoks[tstart[t]:tstart[t + 1]];
``tmult``/``tlast`` (int64); ``thash`` (uint64) and the index ``tslots``
(int32, type + 1, 0 = empty); ``tmeta`` = [types, tokens, lists seen].
"""

import numpy as np

from bbpe.kernels.support import _inline, _njit, _release, exported, prefetch

from .keys import _M1, _SH29
from .text import _DELIMITER_LEAD, _cut_segment_memo, delimiter_len

_SEQ_SEED = np.uint64(0x84222325CBF29CE4)


@_inline
def _same_tokens(toks, a, b, length):
    for k in range(length):
        if toks[a + k] != toks[b + k]:
            return False
    return True


_SCAN_BATCH = 32  # lists cut and hashed before the first of them is looked up


@_inline
def _store_lists(nb, bstart, blen, bhash, blist, ntypes, nt, ttoks, tstart, tmult, tlast, thash, tslots):
    """Add a batch of cut lists to the type store, in order; returns (types, tokens).

    List b's tokens were cut to ttoks[bstart[b]:] (after the store's nt tokens and the
    batch's earlier lists), its hash and index are bhash[b] and blist[b]. A new list's
    tokens move down to the end of the store (only after a repeat of the batch), a
    repeat's are dropped.
    """
    tmask = tslots.shape[0] - 1
    for b in range(nb):
        src, length, h = bstart[b], blen[b], bhash[b]
        slot = np.int64(h & np.uint64(tmask))
        while True:
            t = np.int64(tslots[slot]) - 1
            if t < 0:
                if src != nt:
                    for q in range(length):  # downwards: safe although the ranges may overlap
                        ttoks[nt + q] = ttoks[src + q]
                tslots[slot] = ntypes + 1
                thash[ntypes] = h
                tstart[ntypes + 1] = nt + length
                tmult[ntypes] = 1
                tlast[ntypes] = blist[b]
                ntypes += 1
                nt += length
                break
            if thash[t] == h and tstart[t + 1] - tstart[t] == length and _same_tokens(ttoks, tstart[t], src, length):
                tmult[t] += 1
                tlast[t] = blist[b]
                break
            slot = (slot + 1) & tmask
    _release(bstart, blen, bhash, blist, ttoks, tstart, tmult, tlast)
    _release(thash, tslots)
    return ntypes, nt


@exported(lambda t: t.UniTuple(t.i8, 2)(
    t.U1_READONLY, t.i8, t.U8_2, t.I4, t.I8, t.i8, t.I4, t.I8, t.I8, t.I8, t.U8, t.I4, t.I8, t.I4
))
@_njit
def scan_types(buf, start, words, slots, meta, key_limit, ttoks, tstart, tmult, tlast, thash, tslots, tmeta,
               memo):
    """Cut buf[start:] into lists (as ``segment_lists``) and add them to the type store.

    The lists are looked up in the type index in batches (``_SCAN_BATCH``): each is cut
    and hashed, and its index entry asked for (prefetched), before the batch's lookups
    begin, so that their cache misses overlap (the lookups were half of the scan's time).

    Stops before a segment that might not fit (keys beyond ``key_limit``, tokens or types
    beyond the arrays, the index more than half full) and returns (its offset, its length),
    so the caller can grow the arrays and call again from there; (len(buf), 0) when done.
    """
    n = buf.shape[0]
    ntypes, nt, nlists = tmeta[0], tmeta[1], tmeta[2]
    tmask = tslots.shape[0] - 1
    bstart = np.empty(_SCAN_BATCH, dtype=np.int64)
    blen = np.empty(_SCAN_BATCH, dtype=np.int64)
    bhash = np.empty(_SCAN_BATCH, dtype=np.uint64)
    blist = np.empty(_SCAN_BATCH, dtype=np.int64)
    nb = 0
    cut = nt  # where the next list's tokens go: after the batch's
    seg_start = start
    i = start
    while i <= n:
        while i < n and _DELIMITER_LEAD[buf[i]] == 0:
            i += 1
        dlen = delimiter_len(buf, i, n) if i < n else 1
        if dlen == 0:
            i += 1
            continue
        seglen = i - seg_start
        if (meta[0] + seglen > key_limit or cut + seglen > ttoks.shape[0] or ntypes + nb + 2 > tmult.shape[0]
                or 2 * (ntypes + nb + 1) > tslots.shape[0]):
            if nb == 0:
                tmeta[0], tmeta[1], tmeta[2] = ntypes, nt, nlists
                return seg_start, seglen
            ntypes, nt = _store_lists(nb, bstart, blen, bhash, blist, ntypes, nt, ttoks, tstart, tmult, tlast,
                                      thash, tslots)
            nb = 0
            cut = nt
            continue  # the same segment again, with the batch out of the way
        k = _cut_segment_memo(buf, seg_start, i, words, slots, meta, ttoks, cut, memo)
        if k - cut >= 2:
            h = _SEQ_SEED
            for q in range(cut, k):
                h = (h ^ np.uint64(ttoks[q] + 1)) * _M1
            h ^= h >> _SH29
            prefetch(tslots, np.int64(h & np.uint64(tmask)))
            bstart[nb], blen[nb], bhash[nb], blist[nb] = cut, k - cut, h, nlists
            nb += 1
            cut = k
            nlists += 1
            if nb == _SCAN_BATCH:
                ntypes, nt = _store_lists(nb, bstart, blen, bhash, blist, ntypes, nt, ttoks, tstart, tmult, tlast,
                                          thash, tslots)
                nb = 0
                cut = nt
        i += dlen
        seg_start = i
    ntypes, nt = _store_lists(nb, bstart, blen, bhash, blist, ntypes, nt, ttoks, tstart, tmult, tlast, thash, tslots)
    tmeta[0], tmeta[1], tmeta[2] = ntypes, nt, nlists
    return n, 0


@exported(lambda t: t.UniTuple(t.i8, 2)(
    t.U1_READONLY, t.i8, t.U8_2, t.I4, t.I8, t.i8, t.I4, t.I8, t.I8, t.I8, t.U8, t.I4, t.I8, t.I4
))
@_njit
def scan_types_backward(buf, end, words, slots, meta, key_limit, ttoks, tstart, tmult, tlast, thash, tslots, tmeta,
                        memo):
    """``scan_types`` of buf[:end] from its end to its start: the same lists, added to the
    store last to first (each list's tokens still first to last). Types are then made in
    the order of their last occurrences, latest first, and a type's ``tlast`` is the
    index, in this order, of its *first* occurrence (``TypeStore.finish`` turns both
    round). No byte inside a delimiter can start one (``delimiter_len``), so matches
    never overlap and looking for them backwards finds the forward scan's.

    Stops as ``scan_types`` does and returns (the end of the segment that might not fit,
    its length), to be called again with that end; (-1, 0) when done.
    """
    n = buf.shape[0]
    ntypes, nt, nlists = tmeta[0], tmeta[1], tmeta[2]
    bstart = np.empty(_SCAN_BATCH, dtype=np.int64)
    blen = np.empty(_SCAN_BATCH, dtype=np.int64)
    bhash = np.empty(_SCAN_BATCH, dtype=np.uint64)
    blist = np.empty(_SCAN_BATCH, dtype=np.int64)
    tmask = tslots.shape[0] - 1
    nb = 0
    cut = nt
    seg_end = end
    j = end - 1
    while True:
        while j >= 0 and (_DELIMITER_LEAD[buf[j]] == 0 or delimiter_len(buf, j, n) == 0):
            j -= 1
        seg_start = j + delimiter_len(buf, j, n) if j >= 0 else 0
        seglen = seg_end - seg_start
        if (meta[0] + seglen > key_limit or cut + seglen > ttoks.shape[0] or ntypes + nb + 2 > tmult.shape[0]
                or 2 * (ntypes + nb + 1) > tslots.shape[0]):
            if nb == 0:
                tmeta[0], tmeta[1], tmeta[2] = ntypes, nt, nlists
                return seg_end, seglen
            ntypes, nt = _store_lists(nb, bstart, blen, bhash, blist, ntypes, nt, ttoks, tstart, tmult, tlast,
                                      thash, tslots)
            nb = 0
            cut = nt
            continue  # the same segment again (j is still at its delimiter)
        k = _cut_segment_memo(buf, seg_start, seg_end, words, slots, meta, ttoks, cut, memo)
        if k - cut >= 2:
            h = _SEQ_SEED
            for q in range(cut, k):
                h = (h ^ np.uint64(ttoks[q] + 1)) * _M1
            h ^= h >> _SH29
            prefetch(tslots, np.int64(h & np.uint64(tmask)))
            bstart[nb], blen[nb], bhash[nb], blist[nb] = cut, k - cut, h, nlists
            nb += 1
            cut = k
            nlists += 1
            if nb == _SCAN_BATCH:
                ntypes, nt = _store_lists(nb, bstart, blen, bhash, blist, ntypes, nt, ttoks, tstart, tmult, tlast,
                                          thash, tslots)
                nb = 0
                cut = nt
        if j < 0:
            break
        seg_end = j
        j -= 1
    ntypes, nt = _store_lists(nb, bstart, blen, bhash, blist, ntypes, nt, ttoks, tstart, tmult, tlast, thash, tslots)
    tmeta[0], tmeta[1], tmeta[2] = ntypes, nt, nlists
    return -1, 0


@exported(lambda t: t.none(t.U8, t.i8, t.I4))
@_njit
def reindex_types(thash, ntypes, tslots):
    """Fill a fresh (all 0) type index with types 0..ntypes-1."""
    tmask = tslots.shape[0] - 1
    for t in range(ntypes):
        slot = np.int64(thash[t] & np.uint64(tmask))
        while tslots[slot] != 0:
            slot = (slot + 1) & tmask
        tslots[slot] = t + 1
