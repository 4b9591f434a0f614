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
when the arena is full the live entries are copied into a new one (twice what they need).
``progress[0]`` and ``progress[1]`` hold the merges made and the tokens so far, for a
progress bar that polls them.
"""

import numpy as np

from bbpe.kernels.support import _inline, _njit, prefetch

from . import pair_table as pt
from . import queue as q
from .arrays import grown1, grown2
from .tokens import merged_token, token_tables

START, SIZE, COUNT = 0, 1, 2  # a word's columns
AHEAD = 8  # how many words or pairs ahead the loops ask for what they will read (prefetch)
DENSE_FIRST_TOKENS = 2048  # the first pair count looks rows up in a square of up to 16 MB
MARK, DELTA, GAINED, LAST, PLACE = 0, 1, 2, 3, 4  # a change code's columns (PLACE: its row, then its entry)
from . import words


@_inline
def _row(index, rows, n_pairs, key):
    """The row of the packed pair ``key``, added if new: (row, index, rows, pairs)."""
    row = np.int64(pt.find(index, rows, key))
    if row < 0:
        if n_pairs == len(rows):
            rows = grown2(rows)
        if pt.full(index, n_pairs):
            index = pt.grown_index(index, rows, n_pairs)
        pt.insert(index, rows, n_pairs, key)
        row = n_pairs
        n_pairs += 1
    return row, index, rows, n_pairs


@_njit
def _compacted(positions, entries, heap, size, needed):
    """The words of the ``size`` entries on the heap copied into a new arena with room for
    ``needed`` more and an eighth as much again; the entries' starts updated. Returns (arena,
    its used size)."""
    live = 0
    for i in range(size):
        live += q.length_of(entries, heap[i])
    fresh = np.empty(max((live + needed) * 9 // 8, 1024), dtype=np.int32)
    used = 0
    for i in range(size):
        e = heap[i]
        start, length = entries[e, q.START], q.length_of(entries, e)
        fresh[used:used + length] = positions[start:start + length]
        entries[e, q.START] = used
        used += length
    return fresh, used


@_inline
def _new_entry(entries, heap, free, n_free, n_entries):
    """A free entry's number: (entry, entries, heap, free, free count, entries made)."""
    if n_free > 0:
        n_free -= 1
        return free[n_free], entries, heap, free, n_free, n_entries
    if n_entries == len(entries):
        entries = grown2(entries)
        heap = grown1(heap, len(entries))
        free = grown1(free, len(entries))
    return n_entries, entries, heap, free, n_free, n_entries + 1


@_njit
def train_merges(symbols, starts, counts, content, content_starts, vocab_size, min_frequency, max_length, tie,
                 progress):
    """Trains on the words ``symbols[starts[w]:starts[w + 1]]`` (token ids, rewritten in
    place) with ``counts``; the first tokens spell ``content[content_starts[t]:
    content_starts[t + 1]]`` (code points). Returns (the merges made, in order, as rows
    (a, b, new token), the number of tokens)."""
    n_words = len(starts) - 1
    n_tokens = len(content_starts) - 1
    # each new token merges at least one occurrence away, so the words' symbols bound the
    # tokens there can be, whatever vocab_size asks (the tables are sized by it)
    limit = min(vocab_size, n_tokens + len(symbols))
    capacity = max(limit, n_tokens) + 1
    lengths, hashes, powers, begin, arena, used, token_index = token_tables(content, content_starts, capacity)
    # each word's start, length (which falls as it merges) and count, side by side: a merge
    # reads all three of each word it visits
    meta = np.empty((n_words, 3), dtype=np.int64)
    longest = np.int64(0)
    for w in range(n_words):
        meta[w, START] = starts[w]
        meta[w, SIZE] = starts[w + 1] - starts[w]
        meta[w, COUNT] = counts[w]
        longest = max(longest, meta[w, SIZE])

    # 1. the pair count, and the words of each pair (``nwords``, ``last``: per row). The
    # words hold only the first tokens, so a pair's row is looked up in a dense square of
    # them when that is small (bytes and chars: up to a few thousand tokens), which costs
    # an array read where the hash index costs a probe
    rows = np.empty((1024, pt.WIDTH), dtype=np.int64)
    index = np.full(2048, pt.EMPTY, dtype=np.int32)
    n_pairs = 0
    nwords = np.zeros(1024, dtype=np.int64)
    last = np.full(1024, -1, dtype=np.int64)
    first_tokens = np.int64(len(content_starts) - 1)
    dense = np.full(first_tokens * first_tokens if first_tokens <= DENSE_FIRST_TOKENS else 0, -1, dtype=np.int32)
    for w in range(n_words):
        for i in range(starts[w], starts[w + 1] - 1):
            if len(dense):
                cell = symbols[i] * first_tokens + symbols[i + 1]
                row = np.int64(dense[cell])
                if row < 0:
                    row, index, rows, n_pairs = _row(index, rows, n_pairs, pt.pack(symbols[i], symbols[i + 1]))
                    dense[cell] = row
            else:
                row, index, rows, n_pairs = _row(index, rows, n_pairs, pt.pack(symbols[i], symbols[i + 1]))
            rows[row, pt.COUNT] += counts[w]
            if row == len(nwords):
                nwords = grown1(nwords, 0)
                last = grown1(last, 0)
                nwords[row:] = 0
                last[row:] = -1
            if last[row] != w:
                last[row] = w
                nwords[row] += 1
    first = np.empty(n_pairs, dtype=np.int64)  # where each row's words start
    n_positions = 0
    for row in range(n_pairs):
        first[row] = n_positions
        n_positions += nwords[row]
        nwords[row] = 0  # refilled below
        last[row] = -1
    positions = np.empty(max(n_positions * 9 // 8, 1024), dtype=np.int32)
    for w in range(n_words):
        for i in range(starts[w], starts[w + 1] - 1):
            if len(dense):
                row = np.int64(dense[symbols[i] * first_tokens + symbols[i + 1]])
            else:
                row = np.int64(pt.find(index, rows, pt.pack(symbols[i], symbols[i + 1])))
            if last[row] != w:
                last[row] = w
                positions[first[row] + nwords[row]] = w
                nwords[row] += 1
    entries = np.empty((max(n_pairs * 3 // 2, 1024), q.WIDTH), dtype=np.int64)
    heap = np.empty(len(entries), dtype=np.int32)
    free = np.empty(len(entries), dtype=np.int32)
    n_entries = 0
    n_free = 0
    size = 0
    for row in range(n_pairs):
        if rows[row, pt.COUNT] > 0:
            e = n_entries
            n_entries += 1
            entries[e, q.COUNT] = rows[row, pt.COUNT]
            entries[e, q.START] = first[row]
            entries[e, q.ROW_LENGTH] = (row << 32) | nwords[row]
            q.push(heap, size, entries, rows, e, tie)
            size += 1
    nwords = np.empty(0, dtype=np.int64)  # freed
    last = np.empty(0, dtype=np.int64)
    first = np.empty(0, dtype=np.int64)
    dense = np.empty(0, dtype=np.int32)

    # 2. the merges. A merge's changes add up by change code (words.py): its delta, the
    # words it gained in, in arrays indexed by the code; ``touched`` lists the codes in the
    # order they were first changed, which is the order their pairs get rows in.
    stride = capacity
    state = np.empty((words.KINDS * stride, 5), dtype=np.int64)  # by code: MARK, DELTA, GAINED, LAST, PLACE
    state[:, MARK] = -1
    touched = np.empty(len(state), dtype=np.int64)
    changes = np.empty(2 * longest + 4, dtype=np.int64)
    events = np.empty((1024, 2), dtype=np.int32)  # (code, word) of each gain, once per word
    merges = np.empty((1024, 3), dtype=np.int64)
    n_merges = 0
    epoch = np.int64(0)
    while n_tokens < limit and size > 0:
        e = q.pop(heap, size, entries, rows, tie)
        size -= 1
        row = q.row_of(entries, e)
        current = rows[row, pt.COUNT]
        if entries[e, q.COUNT] != current:  # stale: back with the current count (HF's `as u64`)
            entries[e, q.COUNT] = current
            q.push(heap, size, entries, rows, e, tie)
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

        # merge in the entry's words, adding up the changes
        epoch += 1
        n_touched = 0
        n_events = 0
        first_k, end_k = entries[e, q.START], entries[e, q.START] + q.length_of(entries, e)
        for k in range(first_k, end_k):
            # the words ahead: their row of ``meta`` some visits before, their symbols after
            if k + 2 * AHEAD < end_k:
                prefetch(meta, positions[k + 2 * AHEAD])
            if k + AHEAD < end_k:
                prefetch(symbols, meta[positions[k + AHEAD], START])
            w = positions[k]
            meta[w, SIZE], n_changes = words.merge_word(symbols, meta[w, START], meta[w, SIZE], a, b, new, lengths,
                                                        max_length, stride, changes)
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
                kind = code // stride
                if kind == words.LEFT_OLD or kind == words.RIGHT_OLD:
                    state[code, DELTA] -= count
                else:
                    state[code, DELTA] += count
                    if state[code, LAST] != w:
                        state[code, LAST] = w
                        state[code, GAINED] += 1
                        if n_events == len(events):
                            events = grown2(events)
                        events[n_events, 0] = code
                        events[n_events, 1] = w
                        n_events += 1
        free[n_free] = e
        n_free += 1

        # the counts, in the order the pairs were first changed
        needed = 0
        for t in range(n_touched):
            if t + AHEAD < n_touched:  # the index slot of the pair some lookups ahead
                x, y = words.pair_of(touched[t + AHEAD], stride, a, b, new)
                pt.prefetch_slot(index, pt.pack(x, y))
            code = touched[t]
            x, y = words.pair_of(code, stride, a, b, new)
            changed, index, rows, n_pairs = _row(index, rows, n_pairs, pt.pack(x, y))
            rows[changed, pt.COUNT] += state[code, DELTA]
            state[code, PLACE] = changed
            if state[code, GAINED] > 0 and rows[changed, pt.COUNT] > 0:  # HF pushes only a positive count
                needed += state[code, GAINED]
        # a new entry for each pair that gained and has a count: the words it gained in
        if n_positions + needed > len(positions):
            positions, n_positions = _compacted(positions, entries, heap, size, needed)
        for t in range(n_touched):
            code = touched[t]
            changed = state[code, PLACE]
            if state[code, GAINED] > 0 and rows[changed, pt.COUNT] > 0:
                e, entries, heap, free, n_free, n_entries = _new_entry(entries, heap, free, n_free, n_entries)
                entries[e, q.COUNT] = rows[changed, pt.COUNT]
                entries[e, q.START] = n_positions
                entries[e, q.ROW_LENGTH] = changed << 32  # its words: counted in below
                n_positions += state[code, GAINED]
                state[code, PLACE] = e
            else:
                state[code, PLACE] = -1
        for i in range(n_events):
            e = state[events[i, 0], PLACE]
            if e >= 0:
                positions[entries[e, q.START] + q.length_of(entries, e)] = events[i, 1]
                entries[e, q.ROW_LENGTH] += 1
        for t in range(n_touched):
            e = state[touched[t], PLACE]
            if e >= 0:
                q.push(heap, size, entries, rows, e, tie)
                size += 1
        progress[0] = n_merges
        progress[1] = n_tokens
    return merges[:n_merges].copy(), n_tokens
