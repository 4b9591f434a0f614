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

from bbpe.kernels.support import _inline, _njit

from . import pair_table as pt
from . import queue as q
from .arrays import grown1, grown2
from .tokens import merged_token, token_tables
from .words import merge_word


@_inline
def _row(index, rows, n_pairs, key):
    """The row of the packed pair ``key``, added if new: (row, index, rows, pairs)."""
    row = pt.find(index, rows, key)
    if row < 0:
        if n_pairs == len(rows):
            rows = grown2(rows)
        if 2 * (n_pairs + 1) > len(index):
            index = pt.grown_index(index, rows, n_pairs)
        pt.insert(index, rows, n_pairs, key)
        row = n_pairs
        n_pairs += 1
    return row, index, rows, n_pairs


@_njit
def _compacted(positions, entries, heap, size, needed):
    """The words of the ``size`` entries on the heap copied into a new arena with room for
    ``needed`` more; the entries' starts updated. Returns (arena, its used size)."""
    live = 0
    for i in range(size):
        live += entries[heap[i], q.LENGTH]
    fresh = np.empty(max(2 * (live + needed), 1024), dtype=np.int32)
    used = 0
    for i in range(size):
        e = heap[i]
        start, length = entries[e, q.START], entries[e, q.LENGTH]
        fresh[used:used + length] = positions[start:start + length]
        entries[e, q.START] = used
        used += length
    return fresh, used


@_njit
def train_merges(symbols, starts, counts, content, content_starts, vocab_size, min_frequency, max_length, tie,
                 progress):
    """Trains on the words ``symbols[starts[w]:starts[w + 1]]`` (token ids, rewritten in
    place) with ``counts``; the first tokens spell ``content[content_starts[t]:
    content_starts[t + 1]]`` (code points). Returns (the merges made, in order, as rows
    (a, b, new token), the number of tokens)."""
    n_words = len(starts) - 1
    n_tokens = len(content_starts) - 1
    capacity = max(vocab_size, n_tokens) + 1
    lengths, hashes, powers, begin, arena, used, token_index = token_tables(content, content_starts, capacity)
    sizes = starts[1:] - starts[:-1]
    longest = np.int64(0)
    for w in range(n_words):
        longest = max(longest, sizes[w])

    # 1. the pair count, and the words of each pair
    rows = np.empty((1024, pt.WIDTH), dtype=np.int64)
    index = np.full(2048, pt.EMPTY, dtype=np.int64)
    n_pairs = 0
    for w in range(n_words):
        for i in range(starts[w], starts[w] + sizes[w] - 1):
            row, index, rows, n_pairs = _row(index, rows, n_pairs, pt.pack(symbols[i], symbols[i + 1]))
            rows[row, pt.COUNT] += counts[w]
            if rows[row, pt.LAST] != w:
                rows[row, pt.LAST] = w
                rows[row, pt.NWORDS] += 1
    n_positions = 0
    for row in range(n_pairs):
        rows[row, pt.START] = n_positions
        n_positions += rows[row, pt.NWORDS]
        rows[row, pt.NWORDS] = 0  # refilled below
        rows[row, pt.LAST] = -1
    positions = np.empty(max(2 * n_positions, 1024), dtype=np.int32)
    for w in range(n_words):
        for i in range(starts[w], starts[w] + sizes[w] - 1):
            row = pt.find(index, rows, pt.pack(symbols[i], symbols[i + 1]))
            if rows[row, pt.LAST] != w:
                rows[row, pt.LAST] = w
                positions[rows[row, pt.START] + rows[row, pt.NWORDS]] = w
                rows[row, pt.NWORDS] += 1
    entries = np.empty((max(2 * n_pairs, 1024), q.WIDTH), dtype=np.int64)
    heap = np.empty(len(entries), dtype=np.int64)
    free = np.empty(len(entries), dtype=np.int64)
    n_entries = 0
    n_free = 0
    size = 0
    for row in range(n_pairs):
        if rows[row, pt.COUNT] > 0:
            e = n_entries
            n_entries += 1
            entries[e, q.COUNT] = rows[row, pt.COUNT]
            entries[e, q.ROW] = row
            entries[e, q.START] = rows[row, pt.START]
            entries[e, q.LENGTH] = rows[row, pt.NWORDS]
            q.push(heap, size, entries, rows, e, tie)
            size += 1

    # 2. the merges
    merges = np.empty((1024, 3), dtype=np.int64)
    n_merges = 0
    changes = np.empty((2 * longest + 4, 2), dtype=np.int64)
    event_rows = np.empty(1024, dtype=np.int64)
    event_words = np.empty(1024, dtype=np.int64)
    epoch = np.int64(0)
    while n_tokens < vocab_size and size > 0:
        e = q.pop(heap, size, entries, rows, tie)
        size -= 1
        row = entries[e, q.ROW]
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

        # merge in the entry's words; the gains, as (pair's row, word) events
        n_events = 0
        for k in range(entries[e, q.START], entries[e, q.START] + entries[e, q.LENGTH]):
            w = positions[k]
            sizes[w], n_changes = merge_word(symbols, starts[w], sizes[w], a, b, new, lengths, max_length, changes)
            for j in range(n_changes):
                changed, index, rows, n_pairs = _row(index, rows, n_pairs, changes[j, 0])
                rows[changed, pt.COUNT] += changes[j, 1] * counts[w]
                if changes[j, 1] > 0:
                    if n_events == len(event_rows):
                        event_rows = grown1(event_rows, 0)
                        event_words = grown1(event_words, 0)
                    event_rows[n_events] = changed
                    event_words[n_events] = w
                    n_events += 1
        free[n_free] = e
        n_free += 1

        # a new entry for each pair that gained and has a count: the distinct words it
        # gained in (a word's events come together, so a repeat follows its first)
        counted, placed, pushed = 3 * epoch, 3 * epoch + 1, 3 * epoch + 2
        epoch += 1
        needed = 0
        for i in range(n_events):
            changed, w = event_rows[i], event_words[i]
            if rows[changed, pt.MARK] != counted:
                rows[changed, pt.MARK] = counted
                rows[changed, pt.NWORDS] = 0
                rows[changed, pt.LAST] = -1
            if rows[changed, pt.LAST] != w:
                rows[changed, pt.LAST] = w
                rows[changed, pt.NWORDS] += 1
                needed += 1
        if n_positions + needed > len(positions):
            positions, n_positions = _compacted(positions, entries, heap, size, needed)
        for i in range(n_events):
            changed, w = event_rows[i], event_words[i]
            if rows[changed, pt.MARK] == counted:
                if rows[changed, pt.COUNT] <= 0:
                    rows[changed, pt.MARK] = pushed  # HF pushes only a positive count
                    continue
                rows[changed, pt.MARK] = placed
                rows[changed, pt.START] = n_positions
                n_positions += rows[changed, pt.NWORDS]
                rows[changed, pt.NWORDS] = 0
                rows[changed, pt.LAST] = -1
            if rows[changed, pt.MARK] == placed and rows[changed, pt.LAST] != w:
                rows[changed, pt.LAST] = w
                positions[rows[changed, pt.START] + rows[changed, pt.NWORDS]] = w
                rows[changed, pt.NWORDS] += 1
        for i in range(n_events):
            changed = event_rows[i]
            if rows[changed, pt.MARK] != placed:
                continue
            rows[changed, pt.MARK] = pushed
            if n_free > 0:
                n_free -= 1
                e = free[n_free]
            else:
                if n_entries == len(entries):
                    entries = grown2(entries)
                    heap = grown1(heap, len(entries))
                    free = grown1(free, len(entries))
                e = n_entries
                n_entries += 1
            entries[e, q.COUNT] = rows[changed, pt.COUNT]
            entries[e, q.ROW] = changed
            entries[e, q.START] = rows[changed, pt.START]
            entries[e, q.LENGTH] = rows[changed, pt.NWORDS]
            q.push(heap, size, entries, rows, e, tie)
            size += 1
        progress[0] = n_merges
        progress[1] = n_tokens
    return merges[:n_merges].copy(), n_tokens
