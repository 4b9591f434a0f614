"""A merge inside one word: Word::merge of HF's word.rs on a word stored as a run of
symbol ids (``symbols[start:start + length]``), rewritten in place.

Occurrences of (a, b) merge left to right without overlapping ("a a a" with (a, a) gives
"aa a"). Each merge reports the pairs it changes, in HF's order: the pair before it loses
one and the pair of its left neighbour with the new token gains one, then the pair after
it loses one and the new token's pair with its right neighbour gains one. A gain counts
only when the two tokens together stay shorter than ``max_length`` characters, while the
loss always counts (HF's rule, so a pair whose gain was not counted can go negative).
"""

import numpy as np

from bbpe.kernels.support import _inline

from .pair_table import pack


@_inline
def merge_word(symbols, start, length, a, b, new, lengths, max_length, changes):
    """Merges (a, b) into ``new`` in the word; writes the changes as rows (packed pair,
    +1 or -1) of ``changes`` (room for 4 per symbol) and returns (new length, number of
    changes)."""
    n = 0
    out = start
    r = start
    end = start + length
    while r < end:
        if symbols[r] == a and r + 1 < end and symbols[r + 1] == b:
            if out > start:
                before = symbols[out - 1]
                changes[n, 0] = pack(before, a)
                changes[n, 1] = -1
                n += 1
                if lengths[before] + lengths[new] < max_length:
                    changes[n, 0] = pack(before, new)
                    changes[n, 1] = 1
                    n += 1
            symbols[out] = new
            out += 1
            r += 2
            if r < end:
                after = symbols[r]
                changes[n, 0] = pack(b, after)
                changes[n, 1] = -1
                n += 1
                if lengths[after] + lengths[new] < max_length:
                    changes[n, 0] = pack(new, after)
                    changes[n, 1] = 1
                    n += 1
        else:
            symbols[out] = symbols[r]
            out += 1
            r += 1
    return np.int64(out - start), n
