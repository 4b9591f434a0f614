"""The pair-merge engine under the likelihood score (``score="likelihood"``, WordPiece's,
seed 002) against the plain-Python reference of the seed's training
(tests/reference/likelihood.py): the same merges in the same order on random words with
many ties, counts large enough that the scores' products pass 64 bits and their float
quotients tie, min_frequency and max_token_length; and each merge is a pair of the highest
score at its step, replayed naively."""

from __future__ import annotations

import itertools
import random
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest
from reference import likelihood as reference

from bbpe.pairmerge import kernels as compiled
from bbpe.pairmerge.train import WordTypes, spellings, train_merges


def _random_case(rng: random.Random) -> dict:
    alphabet = [chr(ord("a") + i) for i in range(rng.randint(1, 6))]
    counts: dict[str, int] = {}
    for _ in range(rng.randint(1, 40)):
        word = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        counts[word] = counts.get(word, 0) + rng.choice([1, 1, 2, 3, 7, 10**12, 3 * 10**15])
    tokens = sorted(set("".join(counts)) | {alphabet[0]})
    ids = {t: i for i, t in enumerate(tokens)}
    return {"words": [[ids[c] for c in w] for w in counts], "counts": list(counts.values()), "tokens": tokens,
            "vocab_size": rng.randint(1, 60), "min_frequency": rng.choice([0, 0, 2, 5]),
            "max_token_length": rng.choice([None, None, 2, 3, 5])}


def _engine(case: dict, kernels=None) -> list[tuple[int, int, int]]:
    words = WordTypes.from_lists(case["words"], case["counts"])
    merges, _ = train_merges(words, case["tokens"], case["vocab_size"], min_frequency=case["min_frequency"],
                             max_token_length=case["max_token_length"], score="likelihood")
    return [tuple(m) for m in merges.tolist()]


def test_engine_is_the_reference():
    rng = random.Random(21)
    seen = Counter()
    for _ in range(500):
        case = _random_case(rng)
        expected = reference.likelihood_merges([list(w) for w in case["words"]], case["counts"],
                                               list(case["tokens"]), case["vocab_size"], case["min_frequency"],
                                               case["max_token_length"])
        assert _engine(case) == expected, case
        seen["past 64 bits"] += max(case["counts"]) >= 10**12 and bool(expected)
        seen["merged"] += bool(expected)
    assert seen["past 64 bits"] > 50 and seen["merged"] > 300, seen


def test_engine_is_the_reference_on_a_larger_corpus():
    """Enough words and merges that pairs leave the heaps and come back under another
    owner, tokens' lists are walked and thinned, and the owners' heaps outgrow their room."""
    rng = random.Random(8)
    alphabet = "abcdefghijkl"
    weights = [1 / (i + 1) for i in range(len(alphabet))]  # Zipf-like letters, so degrees differ
    counts: Counter = Counter()
    for _ in range(3000):
        word = "".join(rng.choices(alphabet, weights, k=rng.randint(1, 9)))
        counts[word] += rng.choice([1, 1, 1, 2, 3, 5, 40])
    tokens = sorted(set("".join(counts)))
    ids = {t: i for i, t in enumerate(tokens)}
    case = {"words": [[ids[c] for c in w] for w in counts], "counts": list(counts.values()), "tokens": tokens,
            "vocab_size": 400, "min_frequency": 2, "max_token_length": None}
    expected = reference.likelihood_merges([list(w) for w in case["words"]], case["counts"], list(tokens), 400, 2)
    assert len(expected) > 300
    assert _engine(case) == expected


def test_every_merge_has_the_best_score():
    """Replayed over the words, each merge is a pair of the highest score at its step, and
    equal scores go to the smaller pair of ids."""
    rng = random.Random(5)
    text = "".join(rng.choice(["the ", "then ", "they ", "hat ", "that ", "a ", "at ", "tea ", "eat "])
                   for _ in range(3000))
    counts = Counter(text.split())
    tokens = sorted(set("".join(counts)))
    ids = {t: i for i, t in enumerate(tokens)}
    words = [[ids[c] for c in w] for w in counts]
    case = {"words": words, "counts": list(counts.values()), "tokens": tokens, "vocab_size": 40,
            "min_frequency": 0, "max_token_length": None}
    merges = _engine(case)
    assert len(merges) > 10
    current = [list(w) for w in words]
    for a, b, new in merges:
        freq: Counter = Counter()
        pairs: Counter = Counter()
        for word, count in zip(current, case["counts"], strict=True):
            freq.update({t: count * word.count(t) for t in set(word)})
            for pair in itertools.pairwise(word):
                pairs[pair] += count
        best = max(pairs, key=lambda p: (Fraction(pairs[p], freq[p[0]] * freq[p[1]]), -p[0], -p[1]))
        assert (a, b) == best
        for word in current:
            i = 0
            while i < len(word) - 1:
                if word[i] == a and word[i + 1] == b:
                    word[i:i + 2] = [new]
                i += 1


def test_jit_kernels_agree_with_compiled_ones():
    rng = random.Random(12)
    jit = compiled.jit_kernels()
    for _ in range(30):
        case = _random_case(rng)
        words = WordTypes.from_lists(case["words"], case["counts"])
        content, starts = spellings(case["tokens"])
        results = []
        for kernels in (compiled.kernels, jit):
            symbols = words.symbols.copy()
            merges, n = kernels.likelihood_merges(symbols, words.starts, words.counts, content, starts,
                                                  case["vocab_size"], case["min_frequency"], 1 << 62,
                                                  np.zeros(2, dtype=np.int64))
            results.append((merges.tolist(), n, symbols.tolist()))
        assert results[0] == results[1]


def test_bad_score():
    with pytest.raises(ValueError, match="score"):
        train_merges(WordTypes.from_lists([[0, 1]], [1]), ["a", "b"], 10, score="entropy")
