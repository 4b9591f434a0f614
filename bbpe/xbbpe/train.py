"""Training: ``XBBPE::Train``'s loop around the engine (QUIRKS Q10-Q12).

The engine (``engine``) turns the corpus into winners; this module applies Train's rules
to them: the vocabulary stops at ``vocabSize - 7`` (uint32, Q11), the first pass's single
words come first (Q7), a winner that is already a key adds nothing (Q9), and the special
prefixes come last (Q12). The tests run the same loop around a simple engine that
recounts every pair on every merge (``tests/reference``), through ``learner``.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterable, Sequence
from functools import partial

import numpy as np

from ..common.blocks import Block
from ..common.progress import ProgressFn
from ..common.resources import training_threads
from ..common.threads import side_by_side
from .engine import DEFAULT, FirstPass, KeyTable, Merger, Tuning, scan
from .map_order import blog_hashes, iteration_order
from .singles import ordered_singles
from .vocab import INITIAL_SIZE, VocabularyBuilder, initial_keys, key_matrix, special_prefixes

UINT32 = 1 << 32
# what learns the winners: (parts, vocabulary, limit, progress, size_hint) -> None
Learner = Callable[[Sequence[Iterable[Block]], VocabularyBuilder, int, "ProgressFn | None", int], None]


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


def train_vocabulary(blocks: Iterable[Block], vocab_size: int, *, progress: ProgressFn | None = None,
                     size_hint: int = 0, parts: Sequence[Iterable[Block]] = (),
                     learner: Learner | None = None, tuning: Tuning = DEFAULT) -> list[bytes]:
    """``XBBPE::Train``: all keys of the vocabulary in id order (Q10-Q12).

    ``blocks`` are UTF-8 training texts, or blocks of them joined by LF (``corpus``);
    ``parts``, if any, are the rest of the corpus in further consecutive parts, each also
    cut after a training delimiter, which the engine scans each on a thread of its own
    (``Corpus.training_parts``); ``size_hint`` is the total size in bytes, for progress.
    ``learner`` replaces the incremental engine (the tests' reference engine); ``tuning``
    sizes and splits the engine's work (``engine.Tuning``: never what it learns). Returns
    the 263 initial keys, the learned keys and the special prefixes.
    """
    limit = vocab_limit(vocab_size)
    vocab = VocabularyBuilder(initial_keys())
    if len(vocab) < limit:
        (learner or partial(_learn_incremental, tuning=tuning))([blocks, *parts], vocab, limit, progress, size_hint)
    for key in special_prefixes():
        vocab.add(key)
    return vocab.keys


def add_singles(vocab: VocabularyBuilder, singles: list[bytes], limit: int) -> None:
    """The first pass's single words, in their order (Q7), until the vocabulary is full."""
    for key in singles:
        if len(vocab) >= limit:
            return
        vocab.add(key)


def _learn_incremental(parts: Sequence[Iterable[Block]], vocab: VocabularyBuilder, limit: int,
                       progress: ProgressFn | None, size_hint: int, *, tuning: Tuning) -> None:
    keys = KeyTable(tuning)
    first = FirstPass(scan(parts, keys, progress, size_hint, tuning), keys, tuning)
    best, rows, counts = first.run(progress)

    def add_first_singles() -> None:
        add_singles(vocab, ordered_singles(*keys.rows(rows), counts), limit)

    merger = None
    if best >= 0 and training_threads() > 1:
        merger = _merger_beside(add_first_singles, first)
    else:
        add_first_singles()
    if best < 0 or len(vocab) >= limit:
        return
    vocab.add(keys.key(best))
    if merger is None:
        merger = Merger(first)
    del first  # its orders and bases are not needed any more (the slots live on in the merger)
    merger.mark_in_vocab(vocab.keys)
    for winner in merger.merges(len(vocab), limit, progress):
        vocab.add(winner)


def _merger_beside(work: Callable[[], None], first: FirstPass) -> Merger:
    """``Merger(first)`` on a thread of its own while this one does ``work``: the merger's
    heap is built by kernels, without the GIL (zh-large: 8 ms beside the 6 ms of putting
    the singles in order), even if the singles then fill the vocabulary."""
    return side_by_side(work, lambda: Merger(first))[1]


def record_order(keys: list[bytes]) -> np.ndarray:
    """Q17: ids in the order ``SaveFile`` writes them (libstdc++ map order, ``InitData`` twice)."""
    rows, lens = key_matrix(keys)
    return iteration_order(blog_hashes(rows, lens), cleared_after=INITIAL_SIZE)
