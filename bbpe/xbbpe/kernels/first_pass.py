"""The first pass: the pair count and the C++'s first merge pass over every list (Q6).

Counting the pairs of the first pass. All tokens are chars then, and a char key is as
long as its lead byte says (a cut char is padded, Q20.1), so the bytes of a pair split
only one way: the pair (a, b) of rows is its key. The count goes through a table keyed
by the int64 a << 32 | b whose 32-byte entry holds the key's count, row and last slot:
one cache line per pair instead of four (index, key, count, last slot). Only a pair seen
for the first time is interned by its bytes.
"""

import numpy as np

from bbpe.kernels.support import _inline, _njit, _release, exported, prefetch

from .keys import _AHEAD, _M1, _SH29, _append_row, _pair_key_lookup, _pair_words
from .linking import _WALK_AHEAD
from .tables import DEAD, PK, SENTINEL, TOK

_CODE, _COUNT, _ROW, _LAST = 0, 1, 2, 3  # columns of a pair-table entry; _ROW is row + 1, 0 = empty
_LOW32 = np.int64(0xFFFFFFFF)  # a code's right row


@_inline
def _code_slot(code, mask):
    h = np.uint64(code) * _M1
    return np.int64((h ^ (h >> _SH29)) & np.uint64(mask))


@_njit
def _grown_pair_table(table):
    grown = np.zeros((2 * table.shape[0], 4), dtype=np.int64)
    mask = grown.shape[0] - 1
    for e in range(table.shape[0]):
        if table[e, _ROW] != 0:
            i = _code_slot(table[e, _CODE], mask)
            while grown[i, _ROW] != 0:
                i = (i + 1) & mask
            grown[i] = table[e]
    return grown


@exported(lambda t: t.Tuple((t.i8, t.I8_2))(t.I8, t.i8, t.I8, t.I8, t.I8, t.I4_2, t.U8_2, t.I8, t.i8, t.I8_2, t.I8))
@_njit
def count_slots(order, start, base, tlen, tmult, S, words, meta, key_limit, table, tmeta):
    """Weighted pair counts for the types order[start:] (last-occurrence order, so slot
    order), in the pair table (above): the number of occurrences of each pair key in the
    corpus (the C++ count is one less, Q4) and its last slot; S[s, PK] gets the key of
    each pair. ``tmeta[0]`` counts the entries.

    A pair seen for the first time is a new key, appended to the key rows but not indexed
    (the caller indexes them all afterwards, ``KeyTable.index_all``): its bytes are two
    chars', and a char is as long as its lead byte says (Q2; a cut char is padded, Q20.1),
    so they split only one way and are neither a char's nor another pair's. That spares a
    probe of the key index, with a compare against whatever key sits there, per pair.

    Returns (the next index into order, the table, which grows here at 3/4 full); stops
    early when the key rows might overflow ``key_limit`` (the caller grows them and calls
    again).
    """
    for oi in range(start, order.shape[0]):
        t = order[oi]
        a, n = base[t], tlen[t]
        if meta[0] + n > key_limit:
            return oi, table
        if 4 * (tmeta[0] + n) > 3 * table.shape[0]:
            table = _grown_pair_table(table)
        for i in range(a, a + n - 1):
            e = _tally(S, i, tmult[t], table)
            if table[e, _ROW] == 0:
                _new_pair_key(table, e, words, meta, tmeta)
            S[i, PK] = table[e, _ROW] - 1
    return order.shape[0], table


@_inline
def _tally(S, i, m, table):
    """Count the pair at slot i (weight m, last slot i) in the pair table, which has room;
    returns its entry, whose _ROW is still 0 if the pair is new (the caller sets it)."""
    mask = table.shape[0] - 1
    # ahead in slot order, across types: they are laid out one after the other in this
    # order, and most are shorter than the prefetch distance
    j = i + _AHEAD
    if j + 1 < S.shape[0] and S[j, TOK] >= 0 and S[j + 1, TOK] >= 0:
        prefetch(table, _code_slot((np.int64(S[j, TOK]) << 32) | S[j + 1, TOK], mask))
    code = (np.int64(S[i, TOK]) << 32) | S[i + 1, TOK]
    e = _probe(table, code, mask)
    table[e, _CODE] = code
    table[e, _COUNT] += m
    table[e, _LAST] = i
    _release(S, table)
    return e


@_inline
def _probe(table, code, mask):
    """The pair table's entry for ``code``, or the empty entry where it goes."""
    e = _code_slot(code, mask)
    while table[e, _ROW] != 0 and table[e, _CODE] != code:
        e = (e + 1) & mask
    _release(table)
    return e


@_inline
def _new_pair_key(table, e, words, meta, tmeta):
    """Give the new pair in entry e (its code set) a key row of its own: appended, not
    indexed (``count_slots`` says why no probe of the key index is needed)."""
    code = table[e, _CODE]
    w0, w1, w2 = _pair_words(words, code >> 32, code & _LOW32)
    table[e, _ROW] = _append_row(words, meta, w0, w1, w2) + 1
    tmeta[0] += 1
    _release(table, words, meta, tmeta)


@exported(lambda t: t.I8_2(t.I8, t.I8, t.I8, t.I8, t.I4_2, t.I8_2, t.I8))
@_njit
def count_codes(order, base, tlen, tmult, S, table, tmeta):
    """``count_slots`` for the last range of the slot order, on a thread beside the one
    counting the ranges before it (``FirstPass``): the pairs get numbers 0, 1, ... in the
    order they first appear instead of key rows (the _ROW column holds number + 1, and
    S[i, PK] the number), and no key row is touched; ``merge_counts`` turns the numbers
    into rows afterwards. Returns the table (grown at 3/4 full)."""
    for oi in range(order.shape[0]):
        t = order[oi]
        a, n = base[t], tlen[t]
        if 4 * (tmeta[0] + n) > 3 * table.shape[0]:
            table = _grown_pair_table(table)
        for i in range(a, a + n - 1):
            e = _tally(S, i, tmult[t], table)
            if table[e, _ROW] == 0:
                tmeta[0] += 1
                table[e, _ROW] = tmeta[0]
            S[i, PK] = table[e, _ROW] - 1
    return table


@exported(lambda t: t.I8_2(t.I8_2, t.i8))
@_njit
def numbered_pairs(table, count):
    """``count_codes``'s pairs by number: (code, count, last slot) each."""
    pairs = np.empty((count, 3), dtype=np.int64)
    for e in range(table.shape[0]):
        if table[e, _ROW] != 0:
            number = table[e, _ROW] - 1
            pairs[number, 0] = table[e, _CODE]
            pairs[number, 1] = table[e, _COUNT]
            pairs[number, 2] = table[e, _LAST]
    return pairs


@exported(lambda t: t.Tuple((t.i8, t.I8_2))(t.I8_2, t.i8, t.I8_2, t.U8_2, t.I8, t.i8, t.I8, t.I4))
@_njit
def merge_counts(pairs, start, table, words, meta, key_limit, tmeta, rows):
    """Fold ``count_codes``'s pairs (``numbered_pairs``) into the table of the slots
    before them (``count_slots``'s), numbers start, start + 1, ...: a pair seen before adds
    its count and takes the later last slot, a new one becomes a new key row, as
    count_slots would have made it there (the numbers are in slot order). rows[number]
    gets its row. Returns (the next number, the table); stops early, as count_slots does,
    when the key rows might overflow ``key_limit``."""
    for number in range(start, pairs.shape[0]):
        if meta[0] + 1 > key_limit:
            return number, table
        if 4 * (tmeta[0] + 1) > 3 * table.shape[0]:
            table = _grown_pair_table(table)
        mask = table.shape[0] - 1
        if number + _AHEAD < pairs.shape[0]:
            # Both cache lines a probe is likely to read: most of these pairs are new, and
            # a probe for a missing code runs on to an empty entry, often in the next line
            # of two entries (the count's probes, mostly hits, are slower with it)
            ahead = _code_slot(pairs[number + _AHEAD, 0], mask)
            prefetch(table, ahead)
            prefetch(table, (ahead + 2) & mask)
        code = pairs[number, 0]
        e = _probe(table, code, mask)
        if table[e, _ROW] == 0:
            table[e, _CODE] = code
            _new_pair_key(table, e, words, meta, tmeta)
        table[e, _COUNT] += pairs[number, 1]
        table[e, _LAST] = pairs[number, 2]
        rows[number] = table[e, _ROW] - 1
    return pairs.shape[0], table


@exported(lambda t: t.none(t.I8, t.I8, t.I8, t.I4_2, t.I4))
@_njit
def renumber_pairs(order, base, tlen, S, rows):
    """S[i, PK] = rows[S[i, PK]] for the pairs of the types ``order`` (``count_codes``'s)."""
    for oi in range(order.shape[0]):
        t = order[oi]
        for i in range(base[t], base[t] + tlen[t] - 1):
            S[i, PK] = rows[S[i, PK]]


@exported(lambda t: t.none(t.I8_2, t.I8, t.I8))
@_njit
def pair_counts(table, occ, lastpos):
    """Scatter the pair table into per-key arrays: occ[K] occurrences, lastpos[K] last slot."""
    for e in range(table.shape[0]):
        if table[e, _ROW] != 0:
            k = table[e, _ROW] - 1
            occ[k] = table[e, _COUNT]
            lastpos[k] = table[e, _LAST]


@exported(lambda t: t.i8(t.I8, t.I8, t.i8))
@_njit
def best_pair(occ, lastpos, nkeys):
    """Q5: the pair with the most occurrences (at least 2), ties to the earliest last one.

    The C++ replaces its maximum only on a strictly greater count while it scans, so the
    winner is the first pair to *reach* the final maximum M; a pair reaches M at its last
    occurrence; hence: highest count, then the earliest last occurrence. Returns -1 if no
    pair occurs twice.
    """
    best = -1
    best_occ = 1
    best_pos = np.int64(0)
    for k in range(nkeys):
        o = occ[k]
        if o > best_occ or (o == best_occ and o > 1 and lastpos[k] < best_pos):
            best, best_occ, best_pos = k, o, lastpos[k]
    return best


@exported(lambda t: t.i8(t.I8, t.I8, t.I8, t.I8, t.i8, t.I4_2, t.U8_2, t.I4, t.I8, t.I8, t.I8))
@_njit
def first_pass(order, base, tlen, tmult, best, S, words, slots, occ, single_counts, single_first):
    """The first pass of MergeMaxPairWord (Q6) on the types ``order``, in any order.

    The same walk as ``apply_pass`` with ``first_pass`` set, on weighted counts: a key is
    "count 0" when it occurs at most once in the whole corpus. Each type is rewritten in
    place, tokens and pair keys (-1 where a pair is new, or not in ``slots``), and followed
    by a SENTINEL and DEAD slots; tlen[t] becomes its new length (0, and all DEAD, when one
    element or none is left). A type's walk reads only its own slots and the counts of
    the pass, so types can be walked in any order, in pieces: deleting a key in a type of
    multiplicity m adds m to single_counts[key], and single_first[key] keeps the smallest
    (type << 32 | offset in the type) of its deletions. Types are numbered in the order of
    their first occurrence, which is the order the C++ walks them in, so that is the
    order of the C++'s first deletions (Q7); the caller subtracts the 1 of the first.
    Returns the number of pairs left without a key (-1): at most that many new keys.
    """
    unkeyed = 0
    for oi in range(order.shape[0]):
        t = order[oi]
        start = base[t]
        end = start + tlen[t]
        m = tmult[t]
        w = start
        r = start
        left = np.int64(-1)  # pair key of S[w - 1] and S[r], when known_left
        known_left = False
        while r + 1 < end:
            if r + _WALK_AHEAD < S.shape[0]:
                prefetch(occ, S[r + _WALK_AHEAD, PK])
            cur = S[r, TOK]
            right = np.int64(S[r, PK])  # an original neighbour pair, counted
            left_occ = 0
            if w > start:
                if not known_left:
                    left = _pair_key_lookup(words, slots, S[w - 1, TOK], cur)
                    known_left = True
                if left >= 0:
                    left_occ = occ[left]
            if left_occ <= 1 and occ[right] <= 1:
                single_counts[cur] += m
                single_first[cur] = min(single_first[cur], (np.int64(t) << 32) | (r - start))
                r += 1
                known_left = False
                continue
            if w > start:
                S[w - 1, PK] = -1 if right == best else left
            if right == best:
                S[w, TOK] = best
                w += 1
                r += 2
                known_left = False
                continue
            S[w, TOK] = cur
            w += 1
            r += 1
            left = right
            known_left = True
        if r < end:
            if w > start:
                S[w - 1, PK] = left if known_left else -1
            S[w, TOK] = S[r, TOK]
            w += 1
        n = w - start
        if n < 2:
            n = 0
            w = start
        else:
            S[w - 1, PK] = -1
            S[w, TOK] = SENTINEL
            S[w, PK] = -1
            w += 1
            for i in range(start, start + n - 1):
                unkeyed += S[i, PK] < 0
        for i in range(w, end + 1):  # what the walk freed, and the old sentinel
            S[i, TOK] = DEAD if i < end or n == 0 else SENTINEL
            S[i, PK] = -1
        tlen[t] = n
    return unkeyed
