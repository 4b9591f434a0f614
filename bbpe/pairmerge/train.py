"""The engine's driver: word types in, merges out, with the merge kernel running on a
thread of its own (it releases the GIL) while this one reports its progress."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from ..common.progress import ProgressFn

TIES = {"ids": 0, "first_seen": 1}  # queue.TIE_IDS, queue.TIE_FIRST_SEEN
SCORES = ("frequency", "likelihood")
NO_LIMIT = 1 << 62  # max_token_length=None
_POLL_SECONDS = 0.1


def offsets(lengths: Iterable[int] | np.ndarray, count: int) -> np.ndarray:
    """Where each of ``count`` runs of these lengths starts when laid end to end, and one
    more: where the last ends (int64)."""
    starts = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(np.fromiter(lengths, dtype=np.int64, count=count), out=starts[1:])
    return starts


@dataclass
class WordTypes:
    """Distinct words, each stored once: ``symbols[starts[w]:starts[w + 1]]`` are word
    ``w``'s symbol ids (int32), ``counts[w]`` its count (int64, at least 1)."""

    symbols: np.ndarray
    starts: np.ndarray
    counts: np.ndarray

    @classmethod
    def from_lists(cls, words: Sequence[Sequence[int]], counts: Sequence[int]) -> WordTypes:
        starts = offsets(map(len, words), len(words))
        symbols = np.fromiter((s for w in words for s in w), dtype=np.int32, count=int(starts[-1]))
        return cls(symbols, starts, np.asarray(counts, dtype=np.int64))

    def __len__(self) -> int:
        return len(self.starts) - 1

    def check(self, n_tokens: int) -> None:
        """ValueError unless these are words the kernels can take (they trust their input):
        starts from 0 to the symbols' end, never going back; symbols ids of the ``n_tokens``
        first tokens; counts of at least 1."""
        starts, symbols, counts = self.starts, self.symbols, self.counts
        if len(starts) == 0 or starts[0] != 0 or starts[-1] != len(symbols) or (np.diff(starts) < 0).any():
            raise ValueError("words: starts must go from 0 to the number of symbols without going back")
        if len(counts) != len(self):
            raise ValueError(f"words: {len(counts)} counts for {len(self)} words")
        if len(counts) and counts.min() < 1:
            raise ValueError(f"words: word {int(np.argmin(counts))} has the count {int(counts.min())} (at least 1)")
        if len(symbols) and (symbols.min() < 0 or symbols.max() >= n_tokens):
            bad = int(symbols.min()) if symbols.min() < 0 else int(symbols.max())
            raise ValueError(f"words: the symbol {bad} is not one of the {n_tokens} first tokens' ids")


def spellings(tokens: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(code points, starts): what each token spells, as the kernel takes it."""
    joined = "".join(tokens)
    content = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.int32).copy()
    return content, offsets(map(len, tokens), len(tokens))


def train_merges(words: WordTypes, tokens: Sequence[str] | tuple[np.ndarray, np.ndarray], vocab_size: int, *,
                 min_frequency: int = 0, max_token_length: int | None = None, tie: str = "ids",
                 score: str = "frequency", progress: ProgressFn | None = None) -> tuple[np.ndarray, int]:
    """The merges of ``words`` until there are ``vocab_size`` tokens (or no pair has a count
    reaching ``min_frequency``, at least 1): rows (a, b, new token id), in order, and the
    number of tokens. ``tokens`` spell the first ids (their text, or what ``spellings``
    gives: code points and starts, for a model whose tokens are spelled otherwise, such as
    WordPiece's, which marks word-initial tokens); a merge spelling one of them, or an
    earlier merge's token, gives that id (so ``new`` is either an old id or the next one).

    ``score``: "frequency" (BPE, HF's BpeTrainer: the pair of the greatest count; a pair
    whose token would pass ``max_token_length`` chars gains no count, as in HF) or
    "likelihood" (WordPiece, seed 002: the pair of the greatest ``count(ab) / (count(a) *
    count(b))``, compared exactly; a pair whose token would pass ``max_token_length`` is
    never merged). ``tie`` orders pairs of equal score: "ids" (HF's: the smaller (a, b)) or,
    by frequency only, "first_seen".

    The symbols of ``words`` are rewritten: each word ends as the tokens it trained into."""
    from .kernels import kernels as K

    if score not in SCORES:
        raise ValueError(f"score: {score!r} is not one of {', '.join(SCORES)}")
    if tie not in TIES or (score == "likelihood" and tie != "ids"):
        allowed = ["ids"] if score == "likelihood" else sorted(TIES)
        raise ValueError(f"tie: {tie!r} is not one of {allowed} (with score {score!r})")
    words.symbols = np.ascontiguousarray(words.symbols, dtype=np.int32)
    words.starts = np.ascontiguousarray(words.starts, dtype=np.int64)
    words.counts = np.ascontiguousarray(words.counts, dtype=np.int64)
    content, starts = tokens if isinstance(tokens, tuple) else spellings(tokens)
    words.check(len(starts) - 1)
    n_first = len(starts) - 1
    state = np.array([0, n_first], dtype=np.int64)  # merges made, tokens: the kernel updates them
    limit = NO_LIMIT if max_token_length is None else int(max_token_length)
    common = (words.symbols, words.starts, words.counts, content, starts, int(vocab_size), int(min_frequency), limit)
    kernel, args = ((K.train_merges, (*common, TIES[tie], state)) if score == "frequency" else
                    (K.likelihood_merges, (*common, state)))
    if progress is None:
        return kernel(*args)
    total = max(min(int(vocab_size), n_first + len(words.symbols)) - n_first, 0)  # the kernel's limit
    progress("merge", 0, total)
    result: list = []

    def run() -> None:
        try:
            result.append(kernel(*args))
        except BaseException as err:  # noqa: BLE001 - raised again on the caller's thread
            result.append(err)

    worker = threading.Thread(target=run, name="bbpe-merges", daemon=True)
    worker.start()
    while worker.is_alive():
        worker.join(_POLL_SECONDS)
        progress("merge", int(state[1]) - n_first, total)
    if isinstance(result[0], BaseException):
        raise result[0]
    merges, n_tokens = result[0]
    progress("merge", n_tokens - n_first, n_tokens - n_first)
    return merges, n_tokens
