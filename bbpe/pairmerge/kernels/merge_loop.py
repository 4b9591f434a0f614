"""The merge loop: HF's ``BpeTrainer::do_train`` from the pair count on, over distinct
words stored once (their symbols in one flat array, rewritten in place as they merge).

1. Count every adjacent pair (count x the word's count) and note the words it is in; each
   pair with a count gets a queue entry holding those words.
2. Take the first entry (``queue``). If its count is stale, it goes back with the current
   one; if the count is 0 or under ``min_frequency``, training stops. Else the pair's
   token is made (or found: ``tokens``), and the pair merges in the entry's words
   (``words``); the changes go into the pair counts, and every pair that gained in some
   word gets a new entry with the words it gained in (HF's ``where_to_update``).
3. Until there are ``vocab_size`` tokens or the queue is empty.

As in HF, a pair's count is never reset (merged, it keeps what its neighbours' changes
leave), and a merge touches only its entry's words: a pair made again by another merge
that spells the same token has entries of its own and can merge again later (the caller
keeps its later rank, as HF's merge map does). Counts are 64-bit (HF's are 32-bit and
wrap past 2**31 - 1).

The words an entry holds live in one int32 arena; a merged entry's words are garbage, and
when the arena is full the live entries' words are moved to its front (``_compacted``).
``progress[0]`` and ``progress[1]`` hold the merges made and the tokens so far, for a
progress bar that polls them.

How the code is laid out is for speed, measured on zh-large.txt at 32000 (byte-level
Chinese, whose first merges touch most words):

* No hot loop holds an array that it may replace (a table that grows): numba then keeps
  reference-count updates and reloads in the loop, which cost several times the loop's own
  work (the first pair count took 0.6 s where it takes 0.27 s now). Room is made before
  the loop (``pt.with_room``, the heap, the events) or the loop stops to let its caller
  grow the array (``_merge_words``); each phase of a merge is a function of its own.
* The inlined helpers have one exit, with ``_release`` of their arrays there (support.py).
* The heap and the pair rows start at a size estimated from the symbols (a fourth of them):
  ``np.empty`` costs no memory until a page is written, and a table that grows by half at
  a time would copy itself a dozen times.
"""

import numpy as np

from bbpe.kernels.support import _inline, _njit, _release, exported, prefetch

from . import pair_table as pt
from . import queue as q
from . import words
from .arrays import grown1, grown2
from .tokens import merged_token, token_tables

START, SIZE, COUNT = 0, 1, 2  # a word's columns
AHEAD = 8  # how many words or pairs ahead the loops ask for what they will read (prefetch)
DENSE_FIRST_TOKENS = 2048  # the first pair count looks rows up in a square of up to 16 MB
COUNT_CHUNK = 1 << 16  # the first pair count makes room for the pairs of this many symbols at a time
# a change code's columns: the merge it was last changed in, its count's change, the words
# it gained in, the last of them, its pair's row, and where its next word goes in the arena
MARK, DELTA, GAINED, LAST, ROW, NEXT = 0, 1, 2, 3, 4, 5
CODE_WIDTH = 6
GARBAGE = -1  # an arena slot of a merged entry's words (_compacted skips it)


@_njit
def _word_table(starts, counts):
    """Each word's start, length (which falls as it merges) and count, side by side (a
    merge reads all three of each word it visits), and the longest word's length."""
    n_words = len(starts) - 1
    meta = np.empty((n_words, 3), dtype=np.int64)
    longest = np.int64(0)
    for w in range(n_words):
        meta[w, START] = starts[w]
        meta[w, SIZE] = starts[w + 1] - starts[w]
        meta[w, COUNT] = counts[w]
        longest = max(longest, meta[w, SIZE])
    return meta, longest


@_inline
def _pair_row(symbols, i, n_first, dense, index, rows, n_pairs):
    """The row of the pair of first tokens at ``symbols[i]``, added if new (room made):
    (row, pairs). Looked up in the ``dense`` square of the first tokens when there is one
    (bytes and chars: up to a few thousand tokens): an array read where the hash index
    costs a probe."""
    cell = symbols[i] * n_first + symbols[i + 1] if len(dense) else 0
    row = np.int64(dense[cell]) if len(dense) else -1
    if row < 0:
        row, n_pairs = pt.row_of(index, rows, n_pairs, pt.pack(symbols[i], symbols[i + 1]))
        if len(dense):
            dense[cell] = row
    _release(symbols, dense, index, rows)
    return row, n_pairs


@_njit
def _count_chunk(symbols, starts, counts, first_w, end_w, n_first, dense, index, rows, n_pairs, nwords, last):
    """Counts the pairs of the words ``first_w:end_w`` (room made for their pairs) and the
    words each is in (``nwords``, ``last``: per row); returns the pairs now."""
    for w in range(first_w, end_w):
        for i in range(starts[w], starts[w + 1] - 1):
            row, n_pairs = _pair_row(symbols, i, n_first, dense, index, rows, n_pairs)
            rows[row, pt.COUNT] += counts[w]
            if last[row] != w:
                last[row] = w
                nwords[row] += 1
    return n_pairs


@_njit
def _count_pairs(symbols, starts, counts, n_first):
    """Pass 1: every pair's row (in the order pairs first appear) and count, and the words
    it is in: (rows, index, pairs, words per row, the dense square). The words go in
    chunks, with room made for each chunk's pairs before it (``pt.with_room``)."""
    n_words = len(starts) - 1
    dense = np.full(n_first * n_first if n_first <= DENSE_FIRST_TOKENS else 0, -1, dtype=np.int32)
    rows = np.empty((max(len(symbols) // 4, 1024), pt.WIDTH), dtype=np.int64)
    index = np.full(2048, pt.EMPTY, dtype=np.int64)
    nwords = np.zeros(1024, dtype=np.int64)
    last = np.full(1024, -1, dtype=np.int64)
    n_pairs = 0
    w = 0
    while w < n_words:
        end = w + 1
        while end < n_words and starts[end + 1] - starts[w] <= COUNT_CHUNK:
            end += 1
        more = starts[end] - starts[w]  # at most as many new pairs as symbols
        index, rows = pt.with_room(index, rows, n_pairs, more)
        if n_pairs + more > len(nwords):
            old = len(nwords)
            nwords, last = grown1(nwords, n_pairs + more), grown1(last, n_pairs + more)
            nwords[old:] = 0
            last[old:] = -1
        n_pairs = _count_chunk(symbols, starts, counts, w, end, n_first, dense, index, rows, n_pairs, nwords, last)
        w = end
    return rows, index, n_pairs, nwords, dense


@_njit
def _list_words(symbols, starts, n_first, dense, index, rows, n_pairs, nwords):
    """Pass 2: each row's words, in order, one row after the other in a new arena: (arena,
    its used size, where each row's words start)."""
    first = np.empty(n_pairs, dtype=np.int64)
    n_positions = 0
    for row in range(n_pairs):
        first[row] = n_positions
        n_positions += nwords[row]
    positions = np.empty(max(n_positions * 9 // 8, 1024), dtype=np.int32)
    fill = first.copy()
    last = np.full(n_pairs, -1, dtype=np.int64)
    for w in range(len(starts) - 1):
        for i in range(starts[w], starts[w + 1] - 1):
            row, _ = _pair_row(symbols, i, n_first, dense, index, rows, n_pairs)
            if last[row] != w:
                last[row] = w
                positions[fill[row]] = w
                fill[row] += 1
    return positions, n_positions, first


@_njit
def _first_count(symbols, starts, counts, n_first, tie):
    """1. the pair count, and the words of each pair: (rows, index, pairs, arena, its
    used size, heap, its size). Each pair with a count gets an entry, in row order."""
    rows, index, n_pairs, nwords, dense = _count_pairs(symbols, starts, counts, n_first)
    positions, n_positions, first = _list_words(symbols, starts, n_first, dense, index, rows, n_pairs, nwords)
    heap = np.empty((max(n_pairs * 3 // 2, len(symbols) // 4, 1024), q.WIDTH), dtype=np.int64)
    size = 0
    for row in range(n_pairs):
        if rows[row, pt.COUNT] > 0:
            q.push(heap, size, rows[row, pt.COUNT], q.order_key(tie, rows[row, pt.KEY], row), first[row],
                   (row << 32) | nwords[row])
            size += 1
    return rows, index, n_pairs, positions, n_positions, heap, size


@_njit
def _compacted(positions, n_positions, heap, size, needed):
    """The words of the ``size`` entries on the heap moved to the front of the arena, the
    entries' starts updated, in one sweep of the arena's ``n_positions`` used slots: the
    words of merged entries are GARBAGE there (the merge loop wrote it), and each entry's
    first slot is made to name the entry while the sweep runs (its word kept in the
    entry), so ranges move in the order they lie and none is overwritten before it moves.
    Only when the live words and ``needed`` more would leave less than a third of the arena
    free is it copied into a new one with half as much room again as they need (so that,
    either way, it fills again only after many merges): two arenas side by side were the
    engine's peak memory. Returns (arena, used size)."""
    for i in range(size):
        start = heap[i, q.START]
        heap[i, q.START] = positions[start]
        positions[start] = -2 - i
    used = 0
    p = 0
    while p < n_positions:
        mark = positions[p]
        if mark == GARBAGE:
            p += 1
            continue
        i = -2 - mark
        length = q.length_of(heap, i)
        positions[used] = heap[i, q.START]
        for j in range(1, length):
            positions[used + j] = positions[p + j]
        heap[i, q.START] = used
        used += length
        p += length
    if (used + needed) * 3 // 2 > len(positions):
        fresh = np.empty(max((used + needed) * 3 // 2, 1024), dtype=np.int32)
        fresh[:used] = positions[:used]
        positions = fresh
    return positions, used


@_njit
def _merge_words(symbols, meta, positions, k, end_k, a, b, new, lengths, max_length, changes, state, touched,
                 n_touched, events, n_events, epoch):
    """Merges (a, b) into ``new`` in the words ``positions[k:end_k]`` and adds up their
    changes by change code (words.py): each code's delta and the words it gained in (an
    event (code, word) for each), ``touched`` listing the codes in the order they were
    first changed, which is the order their pairs get rows in. Stops early when ``events``
    may have no room for a word's events (``changes`` has room for any word's). Returns
    (where it stopped, codes touched, events)."""
    while k < end_k and n_events + len(changes) <= len(events):
        # the words ahead: their row of ``meta`` some visits before, their symbols after
        if k + 2 * AHEAD < end_k:
            prefetch(meta, positions[k + 2 * AHEAD])
        if k + AHEAD < end_k:
            ahead = positions[k + AHEAD]
            prefetch(symbols, meta[ahead, START])
            prefetch(symbols, meta[ahead, START] + meta[ahead, SIZE] - 1)
        w = positions[k]
        meta[w, SIZE], n_changes = words.merge_word(symbols, meta[w, START], meta[w, SIZE], a, b, new, lengths,
                                                    max_length, changes)
        count = meta[w, COUNT]
        for j in range(n_changes):
            code = changes[j]
            if state[code, MARK] != epoch:
                state[code, MARK] = epoch
                state[code, DELTA] = 0
                state[code, GAINED] = 0
                state[code, LAST] = -1
                touched[n_touched] = code
                n_touched += 1
            kind = words.kind_of(code)
            if kind == words.LEFT_OLD or kind == words.RIGHT_OLD:
                state[code, DELTA] -= count
            elif state[code, LAST] != w:
                state[code, DELTA] += count
                state[code, LAST] = w
                state[code, GAINED] += 1
                events[n_events, 0] = code
                events[n_events, 1] = w
                n_events += 1
            else:
                state[code, DELTA] += count
        k += 1
    return k, n_touched, n_events


@_inline
def _gains_entry(state, rows, code):
    """Whether the touched code's pair gets a new entry: it gained in some word and has a
    count (HF pushes only a positive count)."""
    gains = state[code, GAINED] > 0 and rows[state[code, ROW], pt.COUNT] > 0
    _release(state, rows)
    return gains


@_njit
def _count_changes(state, touched, n_touched, index, rows, n_pairs, a, b, new):
    """Adds each touched code's delta to its pair's count, in the order the codes were
    first changed (a new pair gets the next row; room made), and notes the row. Returns
    (pairs, the words the new entries will hold)."""
    for t in range(n_touched):
        if t + 2 * AHEAD < n_touched:  # the index slot of the pair some lookups ahead
            x, y = words.pair_of(touched[t + 2 * AHEAD], a, b, new)
            pt.prefetch_slot(index, pt.pack(x, y))
        if t + AHEAD < n_touched:  # and its row, nearer
            x, y = words.pair_of(touched[t + AHEAD], a, b, new)
            pt.prefetch_row(index, rows, pt.pack(x, y))
        code = touched[t]
        x, y = words.pair_of(code, a, b, new)
        row, n_pairs = pt.row_of(index, rows, n_pairs, pt.pack(x, y))
        rows[row, pt.COUNT] += state[code, DELTA]
        state[code, ROW] = row
    needed = 0
    for t in range(n_touched):
        if _gains_entry(state, rows, touched[t]):
            needed += state[touched[t], GAINED]
    return n_pairs, needed


@_njit
def _add_entries(state, touched, n_touched, events, n_events, rows, positions, n_positions, heap, size, tie):
    """A new entry for each touched code whose pair gains one, holding the words it gained
    in (in the order they were merged), pushed in the order the codes were first changed.
    The arena and the heap have room. Returns (arena's used size, heap's size)."""
    for t in range(n_touched):
        code = touched[t]
        if _gains_entry(state, rows, code):
            state[code, NEXT] = n_positions
            n_positions += state[code, GAINED]
        else:
            state[code, NEXT] = -1
    for i in range(n_events):
        code = events[i, 0]
        if state[code, NEXT] >= 0:
            positions[state[code, NEXT]] = events[i, 1]
            state[code, NEXT] += 1
    for t in range(n_touched):
        code = touched[t]
        if state[code, NEXT] >= 0:
            row, gained = state[code, ROW], state[code, GAINED]
            q.push(heap, size, rows[row, pt.COUNT], q.order_key(tie, rows[row, pt.KEY], row),
                   state[code, NEXT] - gained, (row << 32) | gained)
            size += 1
    return n_positions, size


@exported(lambda t: t.Tuple((t.I8_2, t.i8))(t.I4, t.I8, t.I8, t.I4, t.I8, t.i8, t.i8, t.i8, t.i8, t.I8))
@_njit
def train_merges(symbols, starts, counts, content, content_starts, vocab_size, min_frequency, max_length, tie,
                 progress):
    """Trains on the words ``symbols[starts[w]:starts[w + 1]]`` (token ids, rewritten in
    place) with ``counts``; the first tokens spell ``content[content_starts[t]:
    content_starts[t + 1]]`` (code points). Returns (the merges made, in order, as rows
    (a, b, new token), the number of tokens)."""
    n_tokens = len(content_starts) - 1
    # each new token merges at least one occurrence away, so the words' symbols bound the
    # tokens there can be, whatever vocab_size asks (the tables are sized by it)
    limit = min(vocab_size, n_tokens + len(symbols))
    capacity = max(limit, n_tokens) + 1
    lengths, hashes, powers, begin, arena, used, token_index = token_tables(content, content_starts, capacity)
    meta, longest = _word_table(starts, counts)
    rows, index, n_pairs, positions, n_positions, heap, size = _first_count(symbols, starts, counts, n_tokens, tie)

    # 2. the merges
    state = np.empty((words.KINDS * capacity, CODE_WIDTH), dtype=np.int64)
    state[:, MARK] = -1
    touched = np.empty(len(state), dtype=np.int64)
    changes = np.empty(2 * longest + 4, dtype=np.int64)
    events = np.empty((1024, 2), dtype=np.int32)  # (code, word) of each gain, once per word
    merges = np.empty((1024, 3), dtype=np.int64)
    n_merges = 0
    while n_tokens < limit and size > 0:
        count, order, first_k = heap[0, q.COUNT], heap[0, q.ORDER], heap[0, q.START]
        row, length = q.row_of(heap, 0), q.length_of(heap, 0)
        q.pop(heap, size)
        size -= 1
        current = rows[row, pt.COUNT]
        if count != current:  # stale: back with the current count (HF's `as u64`)
            q.push(heap, size, current, order, first_k, (row << 32) | length)
            size += 1
            continue
        if current == 0 or q.unsigned_less(current, min_frequency):
            break
        key = rows[row, pt.KEY]
        a, b = pt.first_of(key), pt.second_of(key)
        new, arena, used = merged_token(lengths, hashes, powers, begin, arena, used, token_index, n_tokens, a, b)
        if new == n_tokens:
            n_tokens += 1
        if n_merges == len(merges):
            merges = grown2(merges)
        merges[n_merges, 0] = a
        merges[n_merges, 1] = b
        merges[n_merges, 2] = new
        n_merges += 1

        k, n_touched, n_events = first_k, 0, 0
        while k < first_k + length:
            if n_events + len(changes) > len(events):
                events = grown2(events, n_events + len(changes))
            k, n_touched, n_events = _merge_words(symbols, meta, positions, k, first_k + length, a, b, new, lengths,
                                                  max_length, changes, state, touched, n_touched, events, n_events,
                                                  n_merges)
        positions[first_k:first_k + length] = GARBAGE
        index, rows = pt.with_room(index, rows, n_pairs, n_touched)
        n_pairs, needed = _count_changes(state, touched, n_touched, index, rows, n_pairs, a, b, new)
        if n_positions + needed > len(positions):
            positions, n_positions = _compacted(positions, n_positions, heap, size, needed)
        if size + n_touched > len(heap):
            heap = grown2(heap, size + n_touched)
        n_positions, size = _add_entries(state, touched, n_touched, events, n_events, rows, positions, n_positions,
                                         heap, size, tie)
        progress[0] = n_merges
        progress[1] = n_tokens
    return merges[:n_merges].copy(), n_tokens
