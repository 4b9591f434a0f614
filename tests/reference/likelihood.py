"""The seed's WordPiece training (``002_…``: merge the pair of the highest
``count(ab) / (count(a) * count(b))``) in plain Python, naively: every step counts the
tokens and the pairs of the words as they are segmented now, and takes the best pair. The
engine's likelihood loop (``bbpe.pairmerge.kernels.likelihood``) is checked against it.

What the seed leaves open, as this reference (and the engine) settles it:

- ``count(x)`` is how often token ``x`` occurs in the words as segmented now, each word
  weighted by its count; ``count(ab)`` how often a and b are adjacent. (The seed's sketch
  adds a merge's count to ``ab`` without taking it from a and b; counting the segmentation
  is what the likelihood it describes means.)
- pairs whose count is under ``min_frequency`` (at least 1) are no candidates, nor pairs
  whose token would be longer than ``max_token_length`` chars;
- equal scores: the smaller pair of ids (a, b) first;
- a merge replaces (a, b) left to right in each word; a merge that spells an existing
  token takes its id.
"""

from __future__ import annotations

import itertools
from collections import Counter
from fractions import Fraction


def likelihood_merges(words: list[list[int]], counts: list[int], tokens: list[str], vocab_size: int,
                      min_frequency: int = 0, max_token_length: int | None = None) -> list[tuple[int, int, int]]:
    """The merges (a, b, new id) in order; ``words`` are rewritten and ``tokens`` grow."""
    ids = {t: i for i, t in enumerate(tokens)}
    merges = []
    while len(tokens) < vocab_size:
        freq: Counter[int] = Counter()
        pairs: Counter[tuple[int, int]] = Counter()
        for word, count in zip(words, counts, strict=True):
            for t in word:
                freq[t] += count
            for pair in itertools.pairwise(word):
                pairs[pair] += count
        best = None
        for (a, b), c in pairs.items():
            if c < max(min_frequency, 1):
                continue
            if max_token_length is not None and len(tokens[a]) + len(tokens[b]) > max_token_length:
                continue
            key = (Fraction(c, freq[a] * freq[b]), -a, -b)
            if best is None or key > best[0]:
                best = (key, a, b)
        if best is None:
            break
        _, a, b = best
        text = tokens[a] + tokens[b]
        if text not in ids:
            ids[text] = len(tokens)
            tokens.append(text)
        new = ids[text]
        merges.append((a, b, new))
        for word in words:
            i = 0
            while i < len(word) - 1:
                if word[i] == a and word[i + 1] == b:
                    word[i:i + 2] = [new]
                i += 1
    return merges
