"""The slot table: the types laid out one after the other in scan order.

After the scan the types are laid out one after the other in last-occurrence order, each
followed by a SENTINEL slot; the type store is then dropped and every later stage works
in place on these slots. Row s of ``S (n, 4) int32`` holds, in one cache line: TOK, the
key row (DEAD once merged into its left neighbour, or deleted by the first pass); PK,
the pair key of this slot and its right neighbour (-1 if none or not known yet);
NXT/PRV, its neighbours in PK's occurrence list. Slot order is the C++ scan order of
last occurrences, so "the earliest last occurrence" (Q5) is "the smallest last slot".
(The columns and markers are in ``tables``.)
"""

import numpy as np

from bbpe.kernels.support import _inline, _njit, exported

from .tables import NXT, PK, PRV, SENTINEL, TOK


@exported(lambda t: t.none(t.I8, t.I8, t.I8, t.i8, t.i8, t.i8, t.I8, t.I8, t.I8, t.I8))
@_njit
def slot_order(tlast, tstart, tmult, nlists, first, slot_offset, order, base, tlen, mult):
    """A part's share of the slot order, written into the slices of the whole that are its
    own (``ScannedTypes``): order[k] = first + the type whose last occurrence is the k-th
    of the part's, base[t] its first slot when the types are laid out in that order from
    ``slot_offset``, each followed by a sentinel; tlen and mult, each type's length and
    multiplicity. A list is the last occurrence of at most one type, so a scatter by last
    occurrence sorts them (``tlast`` < ``nlists``), in two linear passes."""
    n = tlast.shape[0]
    at = np.full(nlists, -1, dtype=np.int32)
    for t in range(n):
        at[tlast[t]] = t
        tlen[t] = tstart[t + 1] - tstart[t]
        mult[t] = tmult[t]
    k = 0
    slot = slot_offset
    for i in range(nlists):
        t = at[i]
        if t >= 0:
            order[k] = first + t
            base[t] = slot
            slot += tlen[t] + 1
            k += 1


@exported(lambda t: t.I8(t.I8, t.I8, t.I8, t.i8, t.i8, t.i8, t.I8, t.I8, t.I8, t.I8))
@_njit
def backward_slot_order(tlast, tstart, tmult, nlists, first, slot_offset, order, base, tlen, mult):
    """``slot_order`` of a part scanned backwards (``scan_types_backward``), its types
    given in first-occurrence numbers as a forward scan numbers them. The scan made its
    types latest last occurrence first, so the slot order is the reverse of its own;
    ``tlast`` holds where each type first occurs, counted from the end, and each list is
    the first occurrence of at most one type, so a scatter by it ranks them. Returns
    ``number``: number[j] is the first-occurrence number (in the part) of the scan's type
    j, by which its tokens are still stored."""
    n = tlast.shape[0]
    at = np.full(nlists, -1, dtype=np.int32)
    for j in range(n):
        at[tlast[j]] = j
    number = np.empty(n, dtype=np.int64)
    r = 0
    for i in range(nlists - 1, -1, -1):  # the largest index from the end occurs first
        j = at[i]
        if j >= 0:
            number[j] = r
            r += 1
    slot = slot_offset
    for k in range(n):
        j = n - 1 - k
        t = number[j]
        order[k] = first + t
        base[t] = slot
        tlen[t] = tstart[j + 1] - tstart[j]
        mult[t] = tmult[j]
        slot += tlen[t] + 1
    return number


@_inline
def _lay_out(ttoks, a, b, rowmap, s, S):
    """Copy ttoks[a:b], mapped through ``rowmap`` (a part's key rows -> the key table's),
    into the slots from s, then a sentinel; every field else -1."""
    for i in range(a, b):
        S[s, TOK] = rowmap[ttoks[i]]
        S[s, PK] = -1
        S[s, NXT] = -1
        S[s, PRV] = -1
        s += 1
    S[s, TOK] = SENTINEL
    S[s, PK] = -1
    S[s, NXT] = -1
    S[s, PRV] = -1


@exported(lambda t: t.none(t.I4, t.I8, t.i8, t.I4, t.I8, t.I4_2))
@_njit
def layout_types(ttoks, tstart, ntypes, rowmap, base, S):
    """Lay out a part's types 0..ntypes-1, each at base[t] (``_lay_out``). By number, not
    in slot order: in slot order zh-large's forward part took 10-20% longer."""
    for t in range(ntypes):
        _lay_out(ttoks, tstart[t], tstart[t + 1], rowmap, base[t], S)


@exported(lambda t: t.none(t.I4, t.I8, t.I8, t.I4, t.I8, t.I4_2))
@_njit
def layout_types_backward(ttoks, tstart, number, rowmap, base, S):
    """``layout_types`` for a part scanned backwards: its tokens are by the scan's own
    type numbers j, and type j goes to base[number[j]] (``backward_slot_order``), with no
    gather of the bases (which had this part's thread start 4 ms late)."""
    for j in range(number.shape[0]):
        _lay_out(ttoks, tstart[j], tstart[j + 1], rowmap, base[number[j]], S)
