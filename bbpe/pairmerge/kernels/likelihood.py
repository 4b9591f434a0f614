"""The merge loop under the likelihood score (WordPiece's, seed 002): each merge is a pair
of the highest ``count(ab) / (count(a) * count(b))``, where ``count(ab)`` is how often the
pair is adjacent and ``count(x)`` how often token ``x`` occurs, both in the words as they
are segmented now (weighted by the words' counts).

Why it is a loop of its own rather than a score plugged into ``merge_loop``: a frequency
only falls when a merge breaks a pair, so HF's queue can leave stale entries and re-check
them when they come out. A likelihood also *rises*: a merge of (a, b) lowers count(a) and
count(b), and with them the denominator of every pair that holds a or b. So the queue here
is an indexed heap holding each candidate pair once, under the score it has now: after a
merge, every pair whose count changed and every pair holding a token whose count changed
(each token keeps the list of pairs it is part of) is moved to its new place.

Scores are compared exactly: ``c1 / (a1 * b1) > c2 / (a2 * b2)`` is
``c1 * a2 * b2 > c2 * a1 * b1``, products of three 64-bit counts, compared as 192-bit
integers where their float quotients are too close to tell. Equal scores: the smaller pair
of ids (a, b) first, the tie rule of HF's frequency queue.

The pairs (a hash table of rows), the words each pair occurs in (one list per pair, to
which a word is added each time the pair appears in it; a word met twice by one merge is
merged once) and the tokens' spellings (``tokens``) are kept as in ``merge_loop``; a word's
pairs are counted again around each merge in it (the pairs it loses and gains, netted), so
a merge costs the length of the words it touches.
"""

import numpy as np

from bbpe.kernels.support import _inline, _njit, exported

from .arrays import grown1, grown2
from .tokens import merged_token, token_tables

NONE = -1
_U32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)
_CLOSE = 1e-12  # float scores nearer than this (relatively) are compared exactly


# ----------------------------------------------------------------------------- exact scores

@_inline
def _mul64(a, b):
    """a * b for uint64 a, b: the (high, low) 64-bit halves of the 128-bit product."""
    a_lo, a_hi = a & _U32, a >> _S32
    b_lo, b_hi = b & _U32, b >> _S32
    p0, p1, p2, p3 = a_lo * b_lo, a_lo * b_hi, a_hi * b_lo, a_hi * b_hi
    mid = (p0 >> _S32) + (p1 & _U32) + (p2 & _U32)
    return p3 + (p1 >> _S32) + (p2 >> _S32) + (mid >> _S32), (p0 & _U32) | ((mid & _U32) << _S32)


@_inline
def _mul3(a, b, c):
    """a * b * c for counts below 2**63: the 192-bit product as (high, middle, low) words."""
    hi, lo = _mul64(np.uint64(a), np.uint64(b))
    h1, w0 = _mul64(lo, np.uint64(c))
    h2, l2 = _mul64(hi, np.uint64(c))
    w1 = h1 + l2
    return h2 + (np.uint64(1) if w1 < h1 else np.uint64(0)), w1, w0


@_inline
def _exact_order(c1, a1, b1, c2, a2, b2):
    """1 if c1 / (a1 * b1) > c2 / (a2 * b2), -1 if less, 0 if equal."""
    x2, x1, x0 = _mul3(c1, a2, b2)
    y2, y1, y0 = _mul3(c2, a1, b1)
    if x2 != y2:
        return 1 if x2 > y2 else -1
    if x1 != y1:
        return 1 if x1 > y1 else -1
    if x0 != y0:
        return 1 if x0 > y0 else -1
    return 0


# a row of the pair table: the pair, its count, its place in the heap and the key it was
# placed under (count, count(a), count(b)), the head of its list of words and the last word
# put on it
LEFT, RIGHT, COUNT, PLACE, KEY_C, KEY_A, KEY_B, WORDS, LAST_WORD = range(9)
COLUMNS = 9


@_inline
def _before(rows, score, i, j):
    """Whether heap row i goes before row j: the higher score (as each was placed), then
    the smaller pair (a, b)."""
    si, sj = score[i], score[j]
    if si > sj * (1.0 + _CLOSE):
        return True
    if sj > si * (1.0 + _CLOSE):
        return False
    order = _exact_order(rows[i, KEY_C], rows[i, KEY_A], rows[i, KEY_B], rows[j, KEY_C], rows[j, KEY_A],
                         rows[j, KEY_B])
    if order != 0:
        return order > 0
    return rows[i, LEFT] < rows[j, LEFT] or (rows[i, LEFT] == rows[j, LEFT] and rows[i, RIGHT] < rows[j, RIGHT])


# ----------------------------------------------------------------------------- the indexed heap

@_njit
def _sift_up(heap, rows, score, k):
    row = heap[k]
    while k > 0:
        parent = (k - 1) >> 1
        if not _before(rows, score, row, heap[parent]):
            break
        heap[k] = heap[parent]
        rows[heap[k], PLACE] = k
        k = parent
    heap[k] = row
    rows[row, PLACE] = k


@_njit
def _sift_down(heap, rows, score, k, size):
    row = heap[k]
    while True:
        child = 2 * k + 1
        if child >= size:
            break
        if child + 1 < size and _before(rows, score, heap[child + 1], heap[child]):
            child += 1
        if not _before(rows, score, heap[child], row):
            break
        heap[k] = heap[child]
        rows[heap[k], PLACE] = k
        k = child
    heap[k] = row
    rows[row, PLACE] = k


@_njit
def _place(r, heap, rows, score, freq, lengths, min_count, max_length, sizes):
    """Puts row ``r`` where its current score belongs in the heap (of ``sizes[HEAP]`` rows):
    out of it if it is no candidate (its count under ``min_count``, or its token longer
    than ``max_length``), else in at that score."""
    a, b, k = rows[r, LEFT], rows[r, RIGHT], rows[r, PLACE]
    if rows[r, COUNT] < min_count or lengths[a] + lengths[b] > max_length:
        if k != NONE:  # out: the last row takes its place
            rows[r, PLACE] = NONE
            sizes[HEAP] -= 1
            if k < sizes[HEAP]:
                heap[k] = heap[sizes[HEAP]]
                rows[heap[k], PLACE] = k
                _sift_up(heap, rows, score, k)
                _sift_down(heap, rows, score, rows[heap[k], PLACE], sizes[HEAP])
        return
    if k != NONE and rows[r, KEY_C] == rows[r, COUNT] and rows[r, KEY_A] == freq[a] and rows[r, KEY_B] == freq[b]:
        return  # its score is where the heap has it
    rows[r, KEY_C], rows[r, KEY_A], rows[r, KEY_B] = rows[r, COUNT], freq[a], freq[b]
    score[r] = rows[r, COUNT] / (float(freq[a]) * float(freq[b]))
    if k == NONE:
        k = sizes[HEAP]
        heap[k] = r
        sizes[HEAP] = k + 1
    _sift_up(heap, rows, score, k)
    _sift_down(heap, rows, score, rows[r, PLACE], sizes[HEAP])


# ----------------------------------------------------------------------------- the pair table

ROWS, HEAP, WORD_ITEMS, TOKEN_ITEMS = range(4)  # sizes[]: rows, heap rows, word and token list items


@_inline
def _pair_slot(a, b, mask):
    h = (np.uint64(a) << _S32 | np.uint64(b)) * np.uint64(0x9E3779B97F4A7C15)
    return np.int64(h >> np.uint64(20)) & mask


@_njit
def _grown_index(index, rows, n):
    bigger = np.full(2 * len(index), NONE, dtype=np.int64)
    mask = len(bigger) - 1
    for r in range(n):
        s = _pair_slot(rows[r, LEFT], rows[r, RIGHT], mask)
        while bigger[s] != NONE:
            s = (s + 1) & mask
        bigger[s] = r
    return bigger


@_njit
def _row(a, b, index, rows, score, heap, tokens, sizes):
    """The row of the pair (a, b), made if new (count 0, on the row lists of a and b);
    returns it with the tables, grown if they had to. ``tokens`` = (each token's first
    list item, each item's next, each item's row)."""
    mask = len(index) - 1
    s = _pair_slot(a, b, mask)
    while index[s] != NONE:
        r = index[s]
        if rows[r, LEFT] == a and rows[r, RIGHT] == b:
            return r, index, rows, score, heap, tokens
        s = (s + 1) & mask
    r = sizes[ROWS]
    if r == len(rows):
        rows, score, heap = grown2(rows), grown1(score, r + 1), grown1(heap, r + 1)
    rows[r, LEFT], rows[r, RIGHT], rows[r, COUNT] = a, b, 0
    rows[r, PLACE], rows[r, WORDS], rows[r, LAST_WORD] = NONE, NONE, NONE
    index[s] = r
    sizes[ROWS] = r + 1
    tokens = _listed(tokens, a, r, sizes)
    if b != a:
        tokens = _listed(tokens, b, r, sizes)
    if 4 * (r + 1) > 3 * len(index):
        index = _grown_index(index, rows, r + 1)
    return r, index, rows, score, heap, tokens


@_njit
def _listed(tokens, t, r, sizes):
    """``tokens`` with row ``r`` put on token ``t``'s list."""
    head, nxt, row = tokens
    n = sizes[TOKEN_ITEMS]
    if n == len(row):
        row, nxt = grown1(row, n + 1), grown1(nxt, n + 1)
    row[n] = r
    nxt[n] = head[t]
    head[t] = n
    sizes[TOKEN_ITEMS] = n + 1
    return head, nxt, row


@_njit
def _add_word(r, w, rows, words, sizes):
    """``words`` (each item's next, each item's word) with word ``w`` put on row ``r``'s list."""
    nxt, word = words
    n = sizes[WORD_ITEMS]
    if n == len(word):
        word, nxt = grown1(word, n + 1), grown1(nxt, n + 1)
    word[n] = w
    nxt[n] = rows[r, WORDS]
    rows[r, WORDS] = n
    rows[r, LAST_WORD] = w
    sizes[WORD_ITEMS] = n + 1
    return nxt, word


# ----------------------------------------------------------------------------- the loop

@exported(lambda t: t.Tuple((t.I8_2, t.i8))(t.I4, t.I8, t.I8, t.I4, t.I8, t.i8, t.i8, t.i8, t.I8))
@_njit
def likelihood_merges(symbols, starts, counts, content, content_starts, vocab_size, min_frequency, max_length,
                      state):
    """The merges of the words (``symbols[starts[w]:starts[w + 1]]``, ``counts[w]`` each)
    by the likelihood score until there are ``vocab_size`` tokens or no pair reaching
    ``min_frequency`` (at least 1) is left; ``content``/``content_starts`` spell the first
    tokens, and a merge spelling an existing token takes its id. A merge whose token would be
    longer than ``max_length`` chars is never made. ``state`` = [merges made, tokens] as it
    goes. Returns (merges as rows (a, b, new), tokens). ``symbols`` are rewritten."""
    n_first = len(content_starts) - 1
    min_count = max(min_frequency, 1)
    capacity = max(min(vocab_size, n_first + len(symbols)), n_first)
    lengths, hashes, powers, begin, arena, used, tindex = token_tables(content, content_starts, capacity)
    n_tokens = n_first
    freq = np.zeros(capacity, dtype=np.int64)
    n_words = len(starts) - 1
    size = np.empty(n_words, dtype=np.int64)  # each word's symbols now (it shrinks in place)
    for w in range(n_words):
        size[w] = starts[w + 1] - starts[w]
        for i in range(starts[w], starts[w + 1]):
            freq[symbols[i]] += counts[w]

    index = np.full(4096, NONE, dtype=np.int64)
    rows = np.empty((1024, COLUMNS), dtype=np.int64)
    score = np.zeros(1024, dtype=np.float64)
    heap = np.empty(1024, dtype=np.int64)
    words = (np.empty(1024, dtype=np.int64), np.empty(1024, dtype=np.int32))
    tokens = (np.full(capacity, NONE, dtype=np.int64), np.empty(1024, dtype=np.int64), np.empty(1024, dtype=np.int64))
    sizes = np.zeros(4, dtype=np.int64)

    for w in range(n_words):  # the pairs of every word, counted
        for i in range(starts[w], starts[w] + size[w] - 1):
            r, index, rows, score, heap, tokens = _row(symbols[i], symbols[i + 1], index, rows, score, heap, tokens,
                                                       sizes)
            rows[r, COUNT] += counts[w]
            if rows[r, LAST_WORD] != w:
                words = _add_word(r, w, rows, words, sizes)
    for r in range(sizes[ROWS]):
        _place(r, heap, rows, score, freq, lengths, min_count, max_length, sizes)

    merges = np.empty((max(capacity - n_first, 0), 3), dtype=np.int64)
    n_merges = 0
    stamp = np.full(n_words, NONE, dtype=np.int64)  # the merge that last merged in each word
    deltas = (np.empty((64, 2), dtype=np.int32), np.empty(64, dtype=np.int64))
    changed = np.empty(1024, dtype=np.int64)  # rows to place again after a merge
    moved = np.empty(3, dtype=np.int64)  # the tokens whose counts a merge moves
    while n_tokens < vocab_size and sizes[HEAP] > 0:
        top = heap[0]
        a, b = rows[top, LEFT], rows[top, RIGHT]
        new, arena, used = merged_token(lengths, hashes, powers, begin, arena, used, tindex, n_tokens, a, b)
        if new == n_tokens:
            n_tokens += 1
        merges[n_merges, 0], merges[n_merges, 1], merges[n_merges, 2] = a, b, new
        n_changed = 0
        item = rows[top, WORDS]
        while item != NONE:
            w = words[1][item]
            item = words[0][item]
            if stamp[w] == n_merges:
                continue  # on the list twice
            stamp[w] = n_merges
            n_deltas, deltas = _merge_word(symbols, starts[w], size, w, counts[w], a, b, new, freq, deltas)
            for k in range(n_deltas):
                r, index, rows, score, heap, tokens = _row(deltas[0][k, 0], deltas[0][k, 1], index, rows, score,
                                                           heap, tokens, sizes)
                rows[r, COUNT] += deltas[1][k]
                if deltas[1][k] > 0 and rows[r, LAST_WORD] != w:
                    words = _add_word(r, w, rows, words, sizes)
                changed = _push(changed, n_changed, r)
                n_changed += 1
        n_merges += 1
        moved[0], moved[1], moved[2] = a, b, new
        for t in moved:  # every pair holding a token whose count moved has another score now
            item = tokens[0][t]
            while item != NONE:
                changed = _push(changed, n_changed, tokens[2][item])
                n_changed += 1
                item = tokens[1][item]
        for k in range(n_changed):
            _place(changed[k], heap, rows, score, freq, lengths, min_count, max_length, sizes)
        state[0] = n_merges
        state[1] = n_tokens
    return merges[:n_merges].copy(), n_tokens


@_njit
def _push(items, n, value):
    if n == len(items):
        items = grown1(items, n + 1)
    items[n] = value
    return items


@_njit
def _merge_word(symbols, start, size, w, weight, a, b, new, freq, deltas):
    """Merges every (a, b) of word ``w`` left to right (HF's Word::merge), in place, and
    moves the tokens' counts. The word's pair counts change by (its pairs after - before)
    * ``weight``, netted, so that a pair the merge did not touch drops out: written into
    ``deltas`` (pairs, changes; grown if needed), whose number comes first."""
    end = start + size[w]
    n = 0
    for i in range(start, end - 1):  # the pairs before, each -weight
        deltas = _delta(deltas, n, symbols[i], symbols[i + 1], -weight)
        n += 1
    out = start
    i = start
    while i < end:
        if i + 1 < end and symbols[i] == a and symbols[i + 1] == b:
            symbols[out] = new
            freq[a] -= weight
            freq[b] -= weight
            freq[new] += weight
            i += 2
        else:
            symbols[out] = symbols[i]
            i += 1
        out += 1
    size[w] = out - start
    for i in range(start, out - 1):  # the pairs after, each +weight
        deltas = _delta(deltas, n, symbols[i], symbols[i + 1], weight)
        n += 1
    pairs, changes = deltas
    kept = 0
    for k in range(n):  # equal pairs summed (words are short: a scan)
        found = NONE
        for j in range(kept):
            if pairs[j, 0] == pairs[k, 0] and pairs[j, 1] == pairs[k, 1]:
                found = j
                break
        if found == NONE:
            pairs[kept, 0], pairs[kept, 1], changes[kept] = pairs[k, 0], pairs[k, 1], changes[k]
            kept += 1
        else:
            changes[found] += changes[k]
    netted = 0
    for k in range(kept):
        if changes[k] != 0:
            pairs[netted, 0], pairs[netted, 1], changes[netted] = pairs[k, 0], pairs[k, 1], changes[k]
            netted += 1
    return netted, deltas


@_njit
def _delta(deltas, k, x, y, change):
    pairs, changes = deltas
    if k == len(changes):
        pairs, changes = grown2(pairs), grown1(changes, k + 1)
    pairs[k, 0], pairs[k, 1], changes[k] = x, y, change
    return pairs, changes
