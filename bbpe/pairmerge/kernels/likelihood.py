"""The merge loop under the likelihood score (WordPiece's, seed 002): each merge is a pair
of the highest ``count(ab) / (count(a) * count(b))``, where ``count(ab)`` is how often the
pair is adjacent and ``count(x)`` how often token ``x`` occurs, both in the words as they
are segmented now (weighted by the words' counts).

Why it is a loop of its own rather than a score plugged into ``merge_loop``: a frequency
only falls when a merge breaks a pair, so HF's queue can leave stale entries and re-check
them when they come out. A likelihood also *rises*: a merge of (a, b) lowers count(a) and
count(b), and with them the denominator of every pair that holds a or b. Each candidate
pair must be where its score is now, and a frequent token is in thousands of pairs.

So the queue has two levels. Each candidate pair is owned by one of its two tokens, and
sits in its owner's heap ordered by ``count(ab) / count(other)``: the owner's count is the
same for the whole heap, so it moving reorders nothing there. A queue of the owners'
heaps, ordered by the score of each heap's top pair, gives the best pair. After a merge,
a pair whose count changed moves in its heap; a token whose count moved moves its own
heap in the queue (one step, however many pairs it owns) and moves, one by one, only the
pairs it is the *other* token of (each token keeps the list of those). A pair is owned by
the token of the two that is in more candidate pairs when it enters a heap, so a token in
many pairs owns most of them: a token's count moving costs about the number of its
partners in more pairs than itself, which is at most min(d, 2P/d) for a token in d of P
pairs (at most sqrt(2P)), where one heap would re-place all d. The rows a token does not
own are unlisted lazily, when a walk finds them out of the heaps.

Scores are compared exactly: ``c1 / (a1 * b1) > c2 / (a2 * b2)`` is
``c1 * a2 * b2 > c2 * a1 * b1``, products of three 64-bit counts, compared as 192-bit
integers where their float quotients are too close to tell. Equal scores: the smaller pair
of ids (a, b) first, the tie rule of HF's frequency queue.

The pairs (a hash table of rows), the words each pair occurs in (one list per pair, to
which a word is added each time the pair appears in it; a word met twice by one merge is
merged once) and the tokens' spellings (``tokens``) are kept as in ``merge_loop``; a merge
in a word changes the counts of the pairs beside it only, so a merge costs the length of
the words it touches.

Why this module is long: it is one loop with what only it uses: its pair table (whose rows
carry the heaps' places and keys beside the pair and its count), the two heaps and the
exact comparisons. The heaps' sift functions come in two pairs, one per order (rows by
count / count(other) within a group, groups by their top row's score).
"""

import numpy as np

from bbpe.kernels.support import _inline, _njit, _release, exported

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


@_inline
def _exact_ratio(c1, o1, c2, o2):
    """1 if c1 / o1 > c2 / o2, -1 if less, 0 if equal (counts below 2**63)."""
    x1, x0 = _mul64(np.uint64(c1), np.uint64(o2))
    y1, y0 = _mul64(np.uint64(c2), np.uint64(o1))
    if x1 != y1:
        return 1 if x1 > y1 else -1
    if x0 != y0:
        return 1 if x0 > y0 else -1
    return 0


@_inline
def _smaller_pair(a1, b1, a2, b2):
    return a1 < a2 or (a1 == a2 and b1 < b2)


# ----------------------------------------------------------------------------- the two queues
#
# A row of the pair table: the pair, its count, its place in its group's heap and the key it
# was placed under there (its count, the other token's count), the token whose group holds
# it (its owner, while it is in), the token on whose list it is (see ``_rows_of``), the head
# of its list of words and the last word put on it.
LEFT, RIGHT, COUNT, PLACE, KEY_C, KEY_O, OWNER, LISTED, WORDS, LAST_WORD = range(10)
COLUMNS = 10
# A group's key in the queue of groups, as it was placed: its top row's count, the count of
# that row's other token, the owner's count, and the row's pair.
G_C, G_O, G_W, G_L, G_R = range(5)
# sizes[]: rows, groups queued, word and token list items, slots used, groups marked since
# the merge began, the merge, the first free token list item
ROWS, GROUPS, WORD_ITEMS, TOKEN_ITEMS, SLOTS, MARKED, STAMP, FREE = range(8)


@_inline
def _other(rows, r):
    """The token of row ``r`` that does not own it (for (t, t), t)."""
    return rows[r, RIGHT] if rows[r, LEFT] == rows[r, OWNER] else rows[r, LEFT]


@_inline
def _row_before(rows, ratio, i, j):
    """Whether row i goes before row j of the same group: the higher count / count(other)
    (their owner's count is the same), then the smaller pair (a, b)."""
    ri, rj = ratio[i], ratio[j]
    if ri > rj * (1.0 + _CLOSE):
        return True
    if rj > ri * (1.0 + _CLOSE):
        return False
    order = _exact_ratio(rows[i, KEY_C], rows[i, KEY_O], rows[j, KEY_C], rows[j, KEY_O])
    if order != 0:
        return order > 0
    return _smaller_pair(rows[i, LEFT], rows[i, RIGHT], rows[j, LEFT], rows[j, RIGHT])


@_inline
def _group_before(keys, score, g, h):
    """Whether group g goes before group h: the higher score of its top row, then the
    smaller pair (a, b) of it."""
    sg, sh = score[g], score[h]
    if sg > sh * (1.0 + _CLOSE):
        return True
    if sh > sg * (1.0 + _CLOSE):
        return False
    order = _exact_order(keys[g, G_C], keys[g, G_O], keys[g, G_W], keys[h, G_C], keys[h, G_O], keys[h, G_W])
    if order != 0:
        return order > 0
    return _smaller_pair(keys[g, G_L], keys[g, G_R], keys[h, G_L], keys[h, G_R])


@_inline
def _row_up(slots, base, rows, ratio, k):
    row = slots[base + k]
    while k > 0:
        parent = (k - 1) >> 1
        above = slots[base + parent]
        if not _row_before(rows, ratio, row, above):
            break
        slots[base + k] = above
        rows[above, PLACE] = k
        k = parent
    slots[base + k] = row
    rows[row, PLACE] = k
    _release(slots, rows, ratio)


@_inline
def _row_down(slots, base, rows, ratio, k, size):
    row = slots[base + k]
    while True:
        child = 2 * k + 1
        if child >= size:
            break
        if child + 1 < size and _row_before(rows, ratio, slots[base + child + 1], slots[base + child]):
            child += 1
        below = slots[base + child]
        if not _row_before(rows, ratio, below, row):
            break
        slots[base + k] = below
        rows[below, PLACE] = k
        k = child
    slots[base + k] = row
    rows[row, PLACE] = k
    _release(slots, rows, ratio)


@_inline
def _group_up(queue, place, keys, score, k):
    g = queue[k]
    while k > 0:
        parent = (k - 1) >> 1
        if not _group_before(keys, score, g, queue[parent]):
            break
        queue[k] = queue[parent]
        place[queue[k]] = k
        k = parent
    queue[k] = g
    place[g] = k
    _release(queue, place, keys, score)


@_inline
def _group_down(queue, place, keys, score, k, size):
    g = queue[k]
    while True:
        child = 2 * k + 1
        if child >= size:
            break
        if child + 1 < size and _group_before(keys, score, queue[child + 1], queue[child]):
            child += 1
        if not _group_before(keys, score, queue[child], g):
            break
        queue[k] = queue[child]
        place[queue[k]] = k
        k = child
    queue[k] = g
    place[g] = k
    _release(queue, place, keys, score)


@_inline
def _mark(g, marked, stamp, sizes):
    """Group ``g`` to be placed again in the queue of groups once the merge is done."""
    if stamp[g] != sizes[STAMP]:
        stamp[g] = sizes[STAMP]
        marked[sizes[MARKED]] = g
        sizes[MARKED] += 1


@_njit
def _room_in_group(g, slots, start, size, cap, sizes):
    """``slots`` with room for one more row in group ``g``: its heap moves to the end with
    twice the room; when the end is reached every group is laid out afresh (the room the
    moves left behind taken back)."""
    grown = max(4, 2 * cap[g])
    if sizes[SLOTS] + grown > len(slots):
        live = 0
        for h in range(len(start)):
            live += cap[h]
        packed = np.empty(live * 3 // 2 + grown + 64, dtype=np.int64)
        at = 0
        for h in range(len(start)):
            packed[at:at + size[h]] = slots[start[h]:start[h] + size[h]]
            start[h] = at
            at += cap[h]
        slots = packed
        sizes[SLOTS] = at
    slots[sizes[SLOTS]:sizes[SLOTS] + size[g]] = slots[start[g]:start[g] + size[g]]
    start[g] = sizes[SLOTS]
    cap[g] = grown
    sizes[SLOTS] += grown
    return slots


@_inline
def _candidate(rows, r, lengths, min_count, max_length):
    """Whether row ``r`` may be merged: its count reaches ``min_count`` and its token is no
    longer than ``max_length``."""
    return rows[r, COUNT] >= min_count and lengths[rows[r, LEFT]] + lengths[rows[r, RIGHT]] <= max_length


@_inline
def _place_row(r, rows, ratio, slots, start, size, cap, head, nxt, item_row, degree, freq, lengths, min_count,
               max_length, marked, stamp, sizes):
    """Puts row ``r`` where its current key belongs in its owner's heap: out of it if it is
    no candidate, else in at that key. A row coming in is owned by the token of the two in
    more candidate pairs (``degree``) and put on the other's list. The group is marked when
    its top row may have changed. ``slots``: the groups' heaps, each group's at its
    ``start``, of its ``size`` and room (``cap``); ``head``, ``nxt``, ``item_row``: the
    tokens' lists (``_listed``). Returns ``slots``, ``nxt``, ``item_row`` (grown if they had
    to)."""
    g, k = rows[r, OWNER], rows[r, PLACE]
    if not _candidate(rows, r, lengths, min_count, max_length):
        if k != NONE:  # out: the last row takes its place
            rows[r, PLACE], rows[r, OWNER] = NONE, NONE
            _count_pair(degree, rows[r, LEFT], rows[r, RIGHT], -1)
            size[g] -= 1
            if k < size[g]:
                last = slots[start[g] + size[g]]
                slots[start[g] + k] = last
                rows[last, PLACE] = k
                _row_up(slots, start[g], rows, ratio, k)
                _row_down(slots, start[g], rows, ratio, rows[last, PLACE], size[g])
            if k == 0:
                _mark(g, marked, stamp, sizes)
    else:
        if k == NONE and g == NONE:
            _count_pair(degree, rows[r, LEFT], rows[r, RIGHT], 1)
            g = _owner(rows[r, LEFT], rows[r, RIGHT], degree)
            rows[r, OWNER] = g
        o = _other(rows, r)
        if k == NONE or rows[r, KEY_C] != rows[r, COUNT] or rows[r, KEY_O] != freq[o]:  # else: in place
            rows[r, KEY_C], rows[r, KEY_O] = rows[r, COUNT], freq[o]
            ratio[r] = rows[r, COUNT] / float(freq[o])
            was_top = k == 0
            if k == NONE:
                if rows[r, LISTED] != o:
                    nxt, item_row = _listed(head, nxt, item_row, o, r, sizes)
                    rows[r, LISTED] = o
                if size[g] == cap[g]:
                    slots = _room_in_group(g, slots, start, size, cap, sizes)
                k = size[g]
                slots[start[g] + k] = r
                size[g] = k + 1
            _row_up(slots, start[g], rows, ratio, k)
            _row_down(slots, start[g], rows, ratio, rows[r, PLACE], size[g])
            if was_top or rows[r, PLACE] == 0:
                _mark(g, marked, stamp, sizes)
    _release(rows, ratio, start, size, cap, head, degree, freq)
    _release(lengths, marked, stamp, sizes)
    return slots, nxt, item_row


@_inline
def _count_pair(degree, a, b, change):
    degree[a] += change
    if b != a:
        degree[b] += change


@_inline
def _place_group(g, rows, slots, start, size, freq, queue, place, keys, score, sizes):
    """Puts group ``g`` where its top row's score belongs in the queue of groups (out of it
    if its heap is empty)."""
    k = place[g]
    if size[g] == 0:
        if k != NONE:
            place[g] = NONE
            sizes[GROUPS] -= 1
            if k < sizes[GROUPS]:
                queue[k] = queue[sizes[GROUPS]]
                place[queue[k]] = k
                _group_up(queue, place, keys, score, k)
                _group_down(queue, place, keys, score, place[queue[k]], sizes[GROUPS])
        return
    r = slots[start[g]]
    c, o, w, a, b = rows[r, KEY_C], rows[r, KEY_O], freq[g], rows[r, LEFT], rows[r, RIGHT]
    if (k != NONE and keys[g, G_C] == c and keys[g, G_O] == o and keys[g, G_W] == w and keys[g, G_L] == a
            and keys[g, G_R] == b):
        return
    keys[g, G_C], keys[g, G_O], keys[g, G_W], keys[g, G_L], keys[g, G_R] = c, o, w, a, b
    score[g] = c / (float(o) * float(w))
    if k == NONE:
        k = sizes[GROUPS]
        queue[k] = g
        sizes[GROUPS] = k + 1
    _group_up(queue, place, keys, score, k)
    _group_down(queue, place, keys, score, place[g], sizes[GROUPS])


# ----------------------------------------------------------------------------- the pair table

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


@_inline
def _row(a, b, index, rows, ratio, sizes):
    """The row of the pair (a, b), made if new (count 0, out of the heaps, unowned, on no
    list); returns it with the tables, grown if they had to."""
    mask = len(index) - 1
    s = _pair_slot(a, b, mask)
    r = index[s]
    while r != NONE and not (rows[r, LEFT] == a and rows[r, RIGHT] == b):
        s = (s + 1) & mask
        r = index[s]
    if r == NONE:
        r = sizes[ROWS]
        if r == len(rows):
            rows, ratio = grown2(rows), grown1(ratio, r + 1)
        rows[r, LEFT], rows[r, RIGHT], rows[r, COUNT] = a, b, 0
        rows[r, PLACE], rows[r, OWNER], rows[r, LISTED], rows[r, WORDS], rows[r, LAST_WORD] = (NONE, NONE, NONE,
                                                                                                NONE, NONE)
        index[s] = r
        sizes[ROWS] = r + 1
        if 4 * (r + 1) > 3 * len(index):
            index = _grown_index(index, rows, r + 1)
    _release(sizes)
    return r, index, rows, ratio


@_inline
def _owner(a, b, degree):
    """The token whose group takes the pair (a, b): the one in more candidate pairs (a on a
    tie), so that a token's count moving re-places few rows one by one (see the module's
    doc)."""
    return a if degree[a] >= degree[b] else b


@_inline
def _listed(head, nxt, row, t, r, sizes):
    """Row ``r`` put on token ``t``'s list (``head``: each token's first item; ``nxt``,
    ``row``: each item's next and row), in a free item if there is one; returns ``nxt`` and
    ``row`` (grown if they had to)."""
    n = sizes[FREE]
    if n != NONE:
        sizes[FREE] = nxt[n]
    else:
        n = sizes[TOKEN_ITEMS]
        if n == len(row):
            row, nxt = grown1(row, n + 1), grown1(nxt, n + 1)
        sizes[TOKEN_ITEMS] = n + 1
    row[n] = r
    nxt[n] = head[t]
    head[t] = n
    return nxt, row


@_inline
def _rows_of(t, head, nxt, row, rows, changed, n_changed, sizes):
    """Pushes on ``changed`` the rows in the heaps that token ``t`` does not own (its count
    moved: so did their keys); returns (changed, its count). The list drops, as it is walked,
    the rows that left the heaps or moved to another token's list since they were put on it
    (a row goes on its list when it enters a heap, and is dropped lazily)."""
    before = np.int64(NONE)
    item = head[t]
    while item != NONE:
        r, after = row[item], nxt[item]
        if rows[r, PLACE] == NONE or rows[r, LISTED] != t:
            if rows[r, LISTED] == t:
                rows[r, LISTED] = NONE
            if before == NONE:
                head[t] = after
            else:
                nxt[before] = after
            nxt[item] = sizes[FREE]
            sizes[FREE] = item
        else:
            changed = _push(changed, n_changed, r)
            n_changed += 1
            before = item
        item = after
    _release(head, nxt, row, rows, sizes)
    return changed, n_changed


@_njit
def _owners(rows, degree, lengths, min_count, max_length, capacity, sizes):
    """Owns the candidate rows counted before the loop, now that every pair is known, and
    lays out each group's heap with room for the rows it owns: the groups."""
    for r in range(sizes[ROWS]):
        if _candidate(rows, r, lengths, min_count, max_length):
            _count_pair(degree, rows[r, LEFT], rows[r, RIGHT], 1)
    per_group = np.zeros(capacity, dtype=np.int64)
    for r in range(sizes[ROWS]):
        if _candidate(rows, r, lengths, min_count, max_length):
            rows[r, OWNER] = _owner(rows[r, LEFT], rows[r, RIGHT], degree)
            per_group[rows[r, OWNER]] += 1
    start = np.zeros(capacity, dtype=np.int64)
    at = 0
    for g in range(capacity):
        start[g] = at
        at += per_group[g]
    sizes[SLOTS] = at
    slots = np.empty(at * 5 // 4 + 64, dtype=np.int64)
    _release(rows, degree, lengths, sizes)
    return slots, start, np.zeros(capacity, dtype=np.int64), per_group


@_inline
def _add_word(r, w, rows, nxt, word, sizes):
    """Word ``w`` put on row ``r``'s list (``nxt``, ``word``: each item's next and word);
    returns them (grown if they had to)."""
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
    ratio = np.zeros(1024, dtype=np.float64)
    word_next, word_of = np.empty(1024, dtype=np.int64), np.empty(1024, dtype=np.int32)  # the rows' word lists
    head = np.full(capacity, NONE, dtype=np.int64)  # the tokens' lists of rows
    nxt, item_row = np.empty(1024, dtype=np.int64), np.empty(1024, dtype=np.int64)
    degree = np.zeros(capacity, dtype=np.int64)  # each token's pairs in the heaps
    sizes = np.zeros(8, dtype=np.int64)
    sizes[FREE] = NONE

    for w in range(n_words):  # the pairs of every word, counted
        for i in range(starts[w], starts[w] + size[w] - 1):
            r, index, rows, ratio = _row(symbols[i], symbols[i + 1], index, rows, ratio, sizes)
            rows[r, COUNT] += counts[w]
            if rows[r, LAST_WORD] != w:
                word_next, word_of = _add_word(r, w, rows, word_next, word_of, sizes)
    slots, start, group_size, cap = _owners(rows, degree, lengths, min_count, max_length, capacity, sizes)
    queue = np.empty(capacity, dtype=np.int64)  # the groups by their top rows' scores
    place = np.full(capacity, NONE, dtype=np.int64)
    keys = np.zeros((capacity, 5), dtype=np.int64)
    score = np.zeros(capacity, dtype=np.float64)
    marked = np.empty(capacity, dtype=np.int64)  # the groups to place again after a merge
    stamp = np.full(capacity, NONE, dtype=np.int64)  # the merge that last marked each group
    sizes[STAMP] = -2
    for r in range(sizes[ROWS]):
        slots, nxt, item_row = _place_row(r, rows, ratio, slots, start, group_size, cap, head, nxt, item_row, degree,
                                          freq, lengths, min_count, max_length, marked, stamp, sizes)
    for g in range(capacity):
        _place_group(g, rows, slots, start, group_size, freq, queue, place, keys, score, sizes)

    merges = np.empty((max(capacity - n_first, 0), 3), dtype=np.int64)
    n_merges = 0
    seen = np.full(n_words, NONE, dtype=np.int64)  # the merge that last merged in each word
    pairs, changes = np.empty((64, 2), dtype=np.int32), np.empty(64, dtype=np.int64)  # a word's pair changes
    changed = np.empty(1024, dtype=np.int64)  # rows to place again after a merge
    moved = np.empty(3, dtype=np.int64)  # the tokens whose counts a merge moves
    while n_tokens < vocab_size and sizes[GROUPS] > 0:
        top = slots[start[queue[0]]]
        a, b = rows[top, LEFT], rows[top, RIGHT]
        new, arena, used = merged_token(lengths, hashes, powers, begin, arena, used, tindex, n_tokens, a, b)
        if new == n_tokens:
            n_tokens += 1
        merges[n_merges, 0], merges[n_merges, 1], merges[n_merges, 2] = a, b, new
        sizes[STAMP], sizes[MARKED] = n_merges, 0
        n_changed = 0
        item = rows[top, WORDS]
        while item != NONE:
            w = word_of[item]
            item = word_next[item]
            if seen[w] == n_merges:
                continue  # on the list twice
            seen[w] = n_merges
            n_deltas, pairs, changes = _merge_word(symbols, starts[w], size, w, counts[w], a, b, new, freq, pairs,
                                                   changes)
            for k in range(n_deltas):
                r, index, rows, ratio = _row(pairs[k, 0], pairs[k, 1], index, rows, ratio, sizes)
                rows[r, COUNT] += changes[k]
                if changes[k] > 0 and rows[r, LAST_WORD] != w:
                    word_next, word_of = _add_word(r, w, rows, word_next, word_of, sizes)
                changed = _push(changed, n_changed, r)
                n_changed += 1
        n_merges += 1
        moved[0], moved[1], moved[2] = a, b, new
        for t in moved:  # the groups of the tokens whose counts moved, and the rows they do not own
            _mark(t, marked, stamp, sizes)
            changed, n_changed = _rows_of(t, head, nxt, item_row, rows, changed, n_changed, sizes)
        for k in range(n_changed):
            slots, nxt, item_row = _place_row(changed[k], rows, ratio, slots, start, group_size, cap, head, nxt,
                                              item_row, degree, freq, lengths, min_count, max_length, marked, stamp,
                                              sizes)
        for k in range(sizes[MARKED]):
            _place_group(marked[k], rows, slots, start, group_size, freq, queue, place, keys, score, sizes)
        state[0] = n_merges
        state[1] = n_tokens
    return merges[:n_merges].copy(), n_tokens


@_inline
def _push(items, n, value):
    if n == len(items):
        items = grown1(items, n + 1)
    items[n] = value
    return items


@_inline
def _merge_word(symbols, start, size, w, weight, a, b, new, freq, pairs, changes):
    """Merges every (a, b) of word ``w`` left to right (HF's Word::merge), in place, and
    moves the tokens' counts. Each merge changes the pairs around it (as in words.py, by
    ``weight``): (a, b) loses one, (x, a) and (b, y) lose one, (x, new) and (new, y) gain
    one, where x is the symbol before it as merged so far (so that "a b a b" gives one
    (new, new)) and y the one after. Written into ``pairs`` and ``changes`` (grown if
    needed); returns their number and them. A pair may be named more than once."""
    end = start + size[w]
    n = 0
    out = start
    i = start
    while i < end:
        if i + 1 < end and symbols[i] == a and symbols[i + 1] == b:
            pairs, changes = _delta(pairs, changes, n, a, b, -weight)
            n += 1
            if out > start:
                pairs, changes = _delta(pairs, changes, n, symbols[out - 1], a, -weight)
                pairs, changes = _delta(pairs, changes, n + 1, symbols[out - 1], new, weight)
                n += 2
            if i + 2 < end:
                pairs, changes = _delta(pairs, changes, n, b, symbols[i + 2], -weight)
                pairs, changes = _delta(pairs, changes, n + 1, new, symbols[i + 2], weight)
                n += 2
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
    _release(symbols, size, freq)
    return n, pairs, changes


@_inline
def _delta(pairs, changes, k, x, y, change):
    if k == len(changes):
        pairs, changes = grown2(pairs), grown1(changes, k + 1)
    pairs[k, 0], pairs[k, 1], changes[k] = x, y, change
    return pairs, changes
