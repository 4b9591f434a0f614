"""The simple training engine: every merge recounts every pair, as the C++ does.

``MergeMaxPairWord`` step by step on flat arrays (``oracle_kernels.count_pairs`` +
``apply_pass``): O(merges x corpus), exact, and close enough to the C++ to check line by
line. A reference implementation, kept with the tests (as stumpy keeps ``naive.py``):
bbpe trains with the incremental engine (``bbpe.xbbpe.engine``), which the tests compare
with this one (``train_simple``), and this one is checked against the C++ oracle itself
(test_parity.py).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence

import numpy as np

from bbpe.xbbpe.engine import KeyTable
from bbpe.xbbpe.singles import ordered_singles
from bbpe.xbbpe.train import add_singles, train_vocabulary
from bbpe.xbbpe.vocab import VocabularyBuilder
from reference import oracle_kernels as K


def _grown(array: np.ndarray, size: int) -> np.ndarray:
    out = np.zeros(size, dtype=array.dtype)
    out[: array.shape[0]] = array
    return out


class TrainingLists:
    """Every training list, in corpus order, as flat int32 key rows: list i is
    ``toks[bounds[i]:bounds[i + 1]]``; ``keys`` interns the keys (``KeyTable``)."""

    def __init__(self) -> None:
        self.keys = KeyTable()
        self.toks = np.zeros(1 << 12, dtype=np.int32)
        self.bounds = np.zeros(1 << 12, dtype=np.int64)
        self.ntoks = 0
        self.nlists = 0

    def add_texts(self, texts: list[bytes]) -> None:
        """Cut UTF-8 training texts into lists (LF separates them: it is a delimiter, Q3)."""
        buf = np.frombuffer(b"\n".join(texts), dtype=np.uint8)
        n = buf.shape[0]
        self.keys.reserve(n)
        if self.ntoks + n > self.toks.shape[0]:
            self.toks = _grown(self.toks, max(self.ntoks + n, 2 * self.toks.shape[0]))
        if self.nlists + n // 2 + 2 > self.bounds.shape[0]:
            self.bounds = _grown(self.bounds, max(self.nlists + n // 2 + 2, 2 * self.bounds.shape[0]))
        k = self.keys
        self.ntoks, self.nlists = K.segment_lists(buf, k.words, k.slots, k.meta, self.toks, self.ntoks,
                                                  self.bounds, self.nlists)

    def key(self, row: int) -> bytes:
        return self.keys.key(row)

    @property
    def counts(self) -> np.ndarray:
        """The count of every key in the last pass (Q4: occurrences - 1)."""
        return self.keys.per_key("counts", np.int64)


def collect_lists(blocks: Iterable[bytes]) -> TrainingLists:
    """Training lists of blocks of UTF-8 training texts."""
    lists = TrainingLists()
    for block in blocks:
        lists.add_texts([block])
    return lists


def merge_steps(lists: TrainingLists) -> Iterator[tuple[int, list[bytes]]]:
    """Run ``MergeMaxPairWord`` again and again; yield (winner row or -1, singles).

    ``singles`` is non-empty only after the first pass. The caller stops the generator.
    """
    keys = lists.keys
    epoch = 0
    first_pass = True
    while True:
        epoch += 1
        keys.reserve(lists.ntoks)  # counting may intern one new key per pair
        counts, seen = keys.per_key("counts", np.int64), keys.per_key("seen", np.int32)
        single_counts = np.full(keys.capacity if first_pass else 0, -1, dtype=np.int64)
        single_order = np.empty(lists.ntoks if first_pass else 0, dtype=np.int32)
        best, _ = K.count_pairs(lists.toks, lists.bounds, lists.nlists, keys.words, keys.slots, keys.meta,
                                counts, seen, epoch)
        lists.ntoks, lists.nlists, nsingles = K.apply_pass(
            lists.toks, lists.bounds, lists.nlists, best, first_pass, keys.words, keys.slots,
            counts, seen, epoch, single_counts, single_order, 0,
        )
        singles: list[bytes] = []
        if first_pass:
            rows = single_order[:nsingles].astype(np.int64)
            singles = ordered_singles(*keys.rows(rows), single_counts[rows])
        first_pass = False
        yield int(best), singles


def learn_simple(parts: Sequence[Iterable[bytes]], vocab: VocabularyBuilder, limit: int, progress: object = None,
                 size_hint: int = 0) -> None:
    """A ``train.Learner``: the winners of ``merge_steps`` added as Train adds them."""
    lists = collect_lists(itertools.chain(*parts))
    for best, singles in merge_steps(lists):
        add_singles(vocab, singles, limit)
        if best < 0 or len(vocab) >= limit:
            return
        vocab.add(lists.key(best))  # Q9: may already be there; then no id is added


def train_simple(blocks: Iterable[bytes], vocab_size: int) -> list[bytes]:
    """``train_vocabulary`` with the simple engine: the vocabulary the C++ would learn."""
    return train_vocabulary(blocks, vocab_size, learner=learn_simple)
