"""Training: corpus texts -> flat key arrays -> numba kernels -> vocabulary (QUIRKS Q3-Q12).

``XBBPE::Train`` and ``MergeMaxPairWord`` step by step: the texts are cut into training
lists (``_kernels.segment_lists``); each merge counts every pair and applies the winner
(``count_pairs`` + ``apply_pass``); after the first pass the deleted single words enter the
vocabulary in the order a libstdc++ ``unordered_map`` gives them (``_umap``); the special
prefixes come last. The loop itself stays in Python: it runs once per merge and only
moves keys into the vocabulary, while every per-token step is a kernel.

Trade-off: each merge rescans the whole corpus, as the C++ does. That is the simple engine,
exact and easy to check against the reference; it costs O(merges x corpus).
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Iterator

import numpy as np

from . import _kernels as K
from ._umap import blog_hashes, iteration_order
from .vocab import INITIAL_SIZE, KEY_BYTES, VocabularyBuilder, initial_keys, key_matrix, special_prefixes

UINT32 = 1 << 32
BATCH_BYTES = 1 << 20


def vocab_limit(vocab_size: int) -> int:
    """Q11: ``Train`` stops at ``vocabSize - 7`` computed in uint32: ``800 -> 793``, ``0 -> 2**32 - 7``."""
    return (vocab_size - 7) % UINT32


def check_vocab_size(vocab_size: int, *, wrap: bool = False) -> int:
    """Validate a vocab size: an int in 0..2**32-1 (the C++ takes a uint32_t).

    Sizes 0..6 mean "no limit" and 7..270 give 270 entries, as in the reference (Q11).
    The reference's driver casts larger values to uint32; that happens only with ``wrap``.
    """
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, numbers.Integral):
        raise TypeError(f"vocab size must be an int, got {vocab_size!r}")
    vocab_size = int(vocab_size)
    if vocab_size < 0:
        raise ValueError(f"vocab size must be >= 0, got {vocab_size}")
    if vocab_size >= UINT32:
        if wrap:
            return vocab_size % UINT32
        raise ValueError(
            f"vocab size {vocab_size} is more than the reference's uint32 holds (max {UINT32 - 1}); "
            "use 0 for no limit (the reference would wrap it modulo 2**32)"
        )
    return vocab_size


def _grown(array: np.ndarray, size: int, fill: int) -> np.ndarray:
    out = np.full((size,) + array.shape[1:], fill, dtype=array.dtype)
    out[: array.shape[0]] = array
    return out


class TrainingLists:
    """The interned keys and the flat training lists of a corpus (layout: ``_kernels``)."""

    def __init__(self) -> None:
        cap = 1 << 12
        self.words = np.zeros((cap, 3), dtype=np.uint64)
        self.lens = np.zeros(cap, dtype=np.uint8)
        self.slots = np.full(2 * cap, -1, dtype=np.int32)
        self.meta = np.zeros(1, dtype=np.int64)  # [number of keys]
        self.counts = np.zeros(cap, dtype=np.int64)
        self.seen = np.zeros(cap, dtype=np.int32)
        self.toks = np.empty(cap, dtype=np.int32)
        self.bounds = np.zeros(cap, dtype=np.int64)
        self.ntoks = 0
        self.nlists = 0

    @property
    def nkeys(self) -> int:
        return int(self.meta[0])

    def reserve_keys(self, extra: int) -> None:
        """Make room for ``extra`` more keys (per-key arrays grow with the table)."""
        need = self.nkeys + extra
        cap = self.lens.shape[0]
        if need <= cap:
            return
        cap = max(need, 2 * cap)
        self.words = _grown(self.words, cap, 0)
        self.lens = _grown(self.lens, cap, 0)
        self.counts = _grown(self.counts, cap, 0)
        self.seen = _grown(self.seen, cap, 0)
        self.slots = np.full(1 << (2 * cap - 1).bit_length(), -1, dtype=np.int32)
        K.reindex(self.words, self.lens, self.nkeys, self.slots)

    def add_texts(self, texts: list[bytes]) -> None:
        """Cut UTF-8 training texts into lists (LF separates them: it is a delimiter, Q3)."""
        buf = np.frombuffer(b"\n".join(texts), dtype=np.uint8)
        n = buf.shape[0]
        self.reserve_keys(n)
        if self.ntoks + n > self.toks.shape[0]:
            self.toks = _grown(self.toks, max(self.ntoks + n, 2 * self.toks.shape[0]), 0)
        if self.nlists + n // 2 + 2 > self.bounds.shape[0]:
            self.bounds = _grown(self.bounds, max(self.nlists + n // 2 + 2, 2 * self.bounds.shape[0]), 0)
        self.ntoks, self.nlists = K.segment_lists(
            buf, self.words, self.lens, self.slots, self.meta, self.toks, self.ntoks, self.bounds, self.nlists
        )

    def key_rows(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(n, 24) uint8`` bytes and ``(n,) uint8`` lengths of these keys."""
        raw = self.words[rows].astype("<u8").view(np.uint8).reshape(-1, KEY_BYTES)
        return raw, self.lens[rows]

    def key(self, row: int) -> bytes:
        raw, lens = self.key_rows(np.array([row]))
        return raw[0, : lens[0]].tobytes()


def collect_lists(texts: Iterable[bytes]) -> TrainingLists:
    """Training lists of UTF-8 texts, read in batches of about ``BATCH_BYTES``."""
    lists = TrainingLists()
    batch: list[bytes] = []
    size = 0
    for text in texts:
        batch.append(text)
        size += len(text) + 1
        if size >= BATCH_BYTES:
            lists.add_texts(batch)
            batch, size = [], 0
    if batch:
        lists.add_texts(batch)
    return lists


def ordered_singles(lists: TrainingLists, rows: np.ndarray, counts: np.ndarray) -> list[bytes]:
    """Q7: the single words in the order ``Train`` adds them.

    ``rows``/``counts``: the deleted keys in first-deletion order (the insertion order of
    the C++ map ``single``) and their counts (first deletion 0). Keys shorter than 3 bytes
    are in the map but never added. ``keyId = count * 10 * size + index``, ``index``
    counting only keys of 3+ bytes in the map's iteration order; added from the highest.
    """
    raw, lens = lists.key_rows(rows)
    order = iteration_order(blog_hashes(raw, lens))
    long_keys = order[lens[order] >= 3]
    key_ids = counts[long_keys] * (10 * rows.shape[0]) + np.arange(long_keys.shape[0])
    chosen = long_keys[np.argsort(-key_ids, kind="stable")]
    return [raw[i, : lens[i]].tobytes() for i in chosen]


def merge_steps(lists: TrainingLists) -> Iterator[tuple[int, list[bytes]]]:
    """Run ``MergeMaxPairWord`` again and again; yield (winner row or -1, singles).

    ``singles`` is non-empty only after the first pass. The caller stops the generator.
    """
    epoch = 0
    first_pass = True
    while True:
        epoch += 1
        lists.reserve_keys(lists.ntoks)  # counting may intern one new key per pair
        single_counts = np.full(lists.lens.shape[0] if first_pass else 0, -1, dtype=np.int64)
        single_order = np.empty(lists.ntoks if first_pass else 0, dtype=np.int32)
        best, _ = K.count_pairs(
            lists.toks, lists.bounds, lists.nlists, lists.words, lists.lens, lists.slots, lists.meta,
            lists.counts, lists.seen, epoch,
        )
        lists.ntoks, lists.nlists, nsingles = K.apply_pass(
            lists.toks, lists.bounds, lists.nlists, best, first_pass, lists.words, lists.lens, lists.slots,
            lists.counts, lists.seen, epoch, single_counts, single_order, 0,
        )
        singles: list[bytes] = []
        if first_pass:
            rows = single_order[:nsingles].astype(np.int64)
            singles = ordered_singles(lists, rows, single_counts[rows])
        first_pass = False
        yield int(best), singles


def train_vocabulary(texts: Iterable[bytes], vocab_size: int) -> list[bytes]:
    """``XBBPE::Train``: all keys of the vocabulary in id order (Q10-Q12).

    ``texts`` are UTF-8 training texts (``corpus.paragraph_texts``). Returns the 263
    initial keys, the learned keys and the special prefixes.
    """
    limit = vocab_limit(vocab_size)
    vocab = VocabularyBuilder(initial_keys())
    if len(vocab) < limit:
        lists = collect_lists(texts)
        for best, singles in merge_steps(lists):
            for key in singles:
                if len(vocab) >= limit:
                    break
                vocab.add(key)
            if best < 0 or len(vocab) >= limit:
                break
            vocab.add(lists.key(best))  # Q9: may already be there; then no id is added
    for key in special_prefixes():
        vocab.add(key)
    return vocab.keys


def record_order(keys: list[bytes]) -> np.ndarray:
    """Q17: ids in the order ``SaveFile`` writes them (libstdc++ map order, ``InitData`` twice)."""
    rows, lens = key_matrix(keys)
    return iteration_order(blog_hashes(rows, lens), cleared_after=INITIAL_SIZE)
