"""Counting the words of a corpus on threads: the model cuts the text into pieces (a
function that writes the pieces' ends, without the GIL), and the distinct pieces are
counted in tables of the ``counting`` kernels. A buffer is cut into one contiguous part per
thread where the model's texts end (HF's: after a newline); each thread counts its part a block at a time into a table of its
own, and the tables are added up in the order of the parts, so the words come out in the
order they first occur, whatever the threads' timing.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping

import numpy as np

from ..common.resources import training_threads
from ..common.threads import on_threads
from .train import offsets

# (data, start, stop, out) -> ends written; a gap's end (text that is no word) negated
PieceEnds = Callable[[np.ndarray, int, int, np.ndarray], int]
BLOCK = 1 << 20  # the most piece ends asked for at a time (8 MB of them)


class WordTable:
    """Distinct words (byte strings) with their counts, in the order first seen."""

    def __init__(self) -> None:
        from .kernels import kernels as K

        self._k = K
        self.index, self.words, self.arena, self.sizes = K.new_table()

    def __len__(self) -> int:
        return int(self.sizes[0])

    def count(self, data: np.ndarray, start: int, stop: int, piece_ends: PieceEnds,
              progress: Callable[[int], None] | None = None) -> None:
        """Counts the pieces of ``data[start:stop]`` (uint8; ``start`` and ``stop`` where
        texts begin and end) as ``piece_ends`` cuts them."""
        ends = np.empty(min(BLOCK, max(stop - start, 1)), dtype=np.int64)
        while start < stop:
            n = piece_ends(data, start, stop, ends)
            self.index, self.words, self.arena = self._k.count_pieces(self.index, self.words, self.arena, self.sizes,
                                                                     data, start, ends, n)
            start = abs(int(ends[n - 1]))  # (a gap's end is negated)
            if progress is not None:
                progress(start)

    def add(self, other: WordTable) -> None:
        """Adds ``other``'s words and counts, in its order."""
        self.index, self.words, self.arena = self._k.merge_tables(self.index, self.words, self.arena, self.sizes,
                                                                 other.words, other.arena, len(other))

    def add_counts(self, counts: Mapping[bytes, int]) -> None:
        """Adds words counted elsewhere (a dict of bytes to counts), in its order."""
        arena, starts, word_counts = flat_words(counts)
        other = WordTable()
        other.arena = arena.copy()
        other.words = np.column_stack([self._k.word_hashes(other.arena, starts), starts[:-1], np.diff(starts),
                                       word_counts])
        other.sizes[:] = (len(counts), starts[-1])
        self.add(other)

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(bytes of the words one after the other, each word's start (one more at the
        end), counts)."""
        n, used = len(self), int(self.sizes[1])
        starts = np.empty(n + 1, dtype=np.int64)
        starts[:n] = self.words[:n, 1]
        starts[n] = used
        return self.arena[:used], starts, self.words[:n, 3].copy()


def flat_words(counts: Mapping[bytes, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A dict of words (bytes) to counts as ``WordTable.arrays`` gives a table's: (the words'
    bytes one after the other, each word's start and one more, counts)."""
    return (np.frombuffer(b"".join(counts), dtype=np.uint8), offsets(map(len, counts), len(counts)),
            np.fromiter(counts.values(), dtype=np.int64, count=len(counts)))


def _parts(data: np.ndarray, n: int, text_end: bytes) -> list[tuple[int, int]]:
    """``data`` cut into ``n`` parts or fewer, each cut just after a ``text_end``."""
    start, stop = 0, len(data)
    bounds = [start]
    for k in range(1, n):
        at = start + (stop - start) * k // n
        found = data[at:stop].tobytes().find(text_end) if at < stop else -1
        cut = stop if found < 0 else at + found + len(text_end)
        if cut > bounds[-1]:
            bounds.append(cut)
    if bounds[-1] != stop:
        bounds.append(stop)
    return list(itertools.pairwise(bounds))


def count_words(table: WordTable, data: np.ndarray, piece_ends: PieceEnds, text_end: bytes,
                threads: int | None = None, progress: Callable[[int], None] | None = None) -> None:
    """Counts the words of ``data`` (uint8) into ``table``, on ``threads`` threads (default:
    those training may use); ``progress`` gets the bytes done so far. The model's corpus
    rule says where its texts end (``text_end``: HF's lines end after ``b"\\n"``), so that
    the threads' parts hold whole texts; ``piece_ends`` cuts them into words."""
    threads = training_threads() if threads is None else threads
    parts = _parts(data, max(1, threads), text_end)
    if len(parts) <= 1:
        for start, stop in parts:
            table.count(data, start, stop, piece_ends, progress)
        return
    done = [0] * len(parts)

    def run(k: int) -> WordTable:
        start, stop = parts[k]

        def report(at: int) -> None:
            done[k] = at - start
            if progress is not None and k == 0:
                progress(sum(done))

        part = WordTable()
        part.count(data, start, stop, piece_ends, report)
        return part

    for part in on_threads(run, len(parts)):
        if len(table) == 0:  # the first part's table becomes the table: nothing to add up
            table.index, table.words, table.arena, table.sizes = part.index, part.words, part.arena, part.sizes
        else:
            table.add(part)
    if progress is not None:
        progress(len(data))
