"""A merge inside one word: Word::merge of HF's word.rs on a word stored as a run of
symbol ids (``symbols[start:start + length]``), rewritten in place.

Occurrences of (a, b) merge left to right without overlapping ("a a a" with (a, a) gives
"aa a"). Each merge changes four pairs, each named by the neighbour it involves: the pair
before it loses one (``LEFT_OLD``, (x, a)) and the left neighbour's pair with the new token
gains one (``LEFT_NEW``, (x, new)); the pair after it loses one (``RIGHT_OLD``, (b, y)) and
the new token's pair with its right neighbour gains one (``RIGHT_NEW``, (new, y)), in HF's
order. A gain counts only when the two tokens together stay shorter than ``max_length``
characters, while the loss always counts (HF's rule, so a pair whose gain was not counted
can go negative).

A change is written as one number, ``neighbour << KIND_BITS | kind``, so that the merge
loop can add up a merge's changes in arrays indexed by it rather than look each pair up
(the kind in the low bits: reading it back is a mask, where a kind above the neighbour
would cost a division by a stride). (new, new) is one pair whichever side it is seen from:
it is always ``LEFT_NEW`` with neighbour ``new``.

``merge_word`` has one exit, with ``_release`` of its arrays there (support.py): an early
return would leave atomic reference-count updates in the loop over the words.
"""

import numpy as np

from bbpe.kernels.support import _inline, _release

LEFT_OLD, LEFT_NEW, RIGHT_OLD, RIGHT_NEW = 0, 1, 2, 3
KIND_BITS = 2
KINDS = 1 << KIND_BITS


@_inline
def _code(kind, neighbour):
    """The change of this kind involving ``neighbour``."""
    return (np.int64(neighbour) << KIND_BITS) | kind


@_inline
def kind_of(code):
    return code & (KINDS - 1)


@_inline
def merge_word(symbols, start, length, a, b, new, lengths, max_length, changes):
    """Merges (a, b) into ``new`` in the word; writes its changes into ``changes`` (room
    for 2 per symbol) and returns (new length, number of changes)."""
    n = 0
    end = start + length
    r = start
    while r + 1 < end and not (symbols[r] == a and symbols[r + 1] == b):
        r += 1  # nothing to rewrite before the first occurrence
    out = r
    while r < end:
        if symbols[r] == a and r + 1 < end and symbols[r + 1] == b:
            if out > start:
                before = symbols[out - 1]
                changes[n] = _code(LEFT_OLD, before)
                n += 1
                if lengths[before] + lengths[new] < max_length:
                    changes[n] = _code(LEFT_NEW, before)
                    n += 1
            symbols[out] = new
            out += 1
            r += 2
            if r < end:
                after = symbols[r]
                changes[n] = _code(RIGHT_OLD, after)
                n += 1
                if lengths[after] + lengths[new] < max_length:
                    changes[n] = _code(LEFT_NEW, new) if after == new else _code(RIGHT_NEW, after)
                    n += 1
        else:
            symbols[out] = symbols[r]
            out += 1
            r += 1
    _release(symbols, lengths, changes)
    return np.int64(out - start), n


@_inline
def pair_of(code, a, b, new):
    """The pair (first, second) that a change names."""
    kind, x = kind_of(code), code >> KIND_BITS
    if kind == LEFT_OLD:
        return x, a
    if kind == LEFT_NEW:
        return x, new
    if kind == RIGHT_OLD:
        return b, x
    return new, x
