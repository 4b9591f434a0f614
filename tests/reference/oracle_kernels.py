"""The C++'s merge step as numba kernels, for the simple engine (``simple_engine``): the
pair count of ``MergeMaxPairWord`` over every list, and its merge pass. Test-only: bbpe
trains with the incremental engine, which these check (through the simple engine)."""

from bbpe.kernels.support import _inline, _njit
from bbpe.xbbpe.kernels.keys import _U64_0, _pair_key_lookup, intern, pair_key
from bbpe.xbbpe.kernels.text import _char_key, delimiter_len


@_njit
def count_pairs(toks, bounds, nlists, words, slots, meta, counts, seen, epoch):
    """The counting loop of MergeMaxPairWord; returns (winner row or -1, its count).

    Q4: a pair seen once counts 0, seen n times n - 1 (``emplace(m, 0)`` then ``++``).
    Q5: the maximum is replaced only by a strictly greater count, so the winner is the pair
    that reaches the final maximum first in scan order. ``seen[row] == epoch`` marks keys
    counted in this pass, so the counts need no clearing between passes.
    """
    best = -1
    best_count = 0
    for li in range(nlists):
        for i in range(bounds[li], bounds[li + 1] - 1):
            p = pair_key(words, slots, meta, toks[i], toks[i + 1])
            if seen[p] != epoch:
                seen[p] = epoch
                counts[p] = 0
            else:
                counts[p] += 1
                if counts[p] > best_count:
                    best_count = counts[p]
                    best = p
    return best, best_count


@_njit
def _count_of(row, counts, seen, epoch):
    # merge[m] through operator[]: a key not counted in this pass reads as 0
    if row < 0 or seen[row] != epoch:
        return 0
    return counts[row]


@_njit
def apply_pass(toks, bounds, nlists, best, first_pass, words, slots, counts, seen, epoch,
               single_counts, single_order, nsingles):
    """The second loop of MergeMaxPairWord, in place; returns (ntoks, nlists, nsingles).

    Walks each list as the C++ does with its index i, keeping the already-walked part in
    toks[start:w] (so toks[w - 1] is the *current* left neighbour) and the rest in toks[r:].
    First pass only (Q6): an element whose current left pair and right pair both count 0 is
    deleted and becomes a single (first deletion counts 0, then +1 each); the next element
    is then judged against the same left neighbour, so deletions cascade. The last element
    is never looked at. Every pass (Q8): where the right pair's key is the winner, the
    element becomes the winner and its right neighbour is erased (Q9: for a truncated key
    the element stays as it is and the neighbour just disappears). After the first pass,
    lists of one element are dropped.
    """
    w = 0
    kept = 0
    start = bounds[0]
    for li in range(nlists):
        end = bounds[li + 1]
        out_start = w
        r = start
        while r + 1 < end:
            cur = toks[r]
            right = _pair_key_lookup(words, slots, cur, toks[r + 1])
            if first_pass:
                left = 0
                if w > out_start:
                    left = _count_of(_pair_key_lookup(words, slots, toks[w - 1], cur), counts, seen, epoch)
                if left == 0 and _count_of(right, counts, seen, epoch) == 0:
                    if single_counts[cur] < 0:
                        single_counts[cur] = 0
                        single_order[nsingles] = cur
                        nsingles += 1
                    else:
                        single_counts[cur] += 1
                    r += 1
                    continue
            if right == best:
                toks[w] = best
                w += 1
                r += 2
                continue
            toks[w] = cur
            w += 1
            r += 1
        while r < end:
            toks[w] = toks[r]
            w += 1
            r += 1
        start = end
        if first_pass and w - out_start <= 1:
            w = out_start
        else:
            kept += 1
            bounds[kept] = w
    return w, kept, nsingles


@_inline
def _cut_segment(buf, start, end, words, slots, meta, out, pos):
    """Cut buf[start:end] into chars (Q2), intern each, write their rows from out[pos];
    returns the position after the last one."""
    j = start
    while j < end:
        w0, w2, length = _char_key(buf, j, end)
        out[pos] = intern(words, slots, meta, w0, _U64_0, w2)
        pos += 1
        j += length
    return pos


@_njit
def segment_lists(buf, words, slots, meta, toks, ntoks, bounds, nlists):
    """Cut ``buf`` (training texts joined by LF) into training lists, appending to the arrays.

    buf : (n,) uint8. Each run between delimiters is cut into chars (Q2); a run of one char
    is dropped (Q3); the others are appended to ``toks`` (int32 key rows) and end at
    ``bounds[1 + list index]``. Needs room for n more toks, n // 2 more lists and n more
    keys. Returns (ntoks, nlists).
    """
    n = buf.shape[0]
    seg_start = 0
    i = 0
    while i <= n:
        dlen = delimiter_len(buf, i, n) if i < n else 1
        if dlen == 0:
            i += 1
            continue
        first = ntoks
        ntoks = _cut_segment(buf, seg_start, i, words, slots, meta, toks, ntoks)
        if ntoks - first >= 2:
            nlists += 1
            bounds[nlists] = ntoks
        else:
            ntoks = first
        i += dlen
        seg_start = i
    return ntoks, nlists
