"""The first-pass stage (``FirstPass``): the types laid out as slots, the pairs counted, the
C++ first pass (Q6) run and the surviving pairs linked into their occurrence lists.
"""

from __future__ import annotations

import bisect

import numpy as np

from ...common.progress import ProgressFn
from ...common.resources import training_threads
from ...common.threads import on_threads, pipelined, side_by_side
from ..kernels import kernels as K
from ..kernels import tables as L
from .keytable import _NO_KEY_STATE, KeyTable, _pow2_at_least, fill_rows, key_states
from .scanning import ScannedTypes
from .tuning import DEFAULT, Tuning


def _pair_table(nslots: int) -> np.ndarray:
    """An empty pair table (``kernels.first_pass``) for the pairs of ``nslots`` slots.
    It grows in the kernels; sized for a pair per 8 slots, it does not grow on zh-large
    (0.6 million pairs in 6 million slots)."""
    return np.zeros((_pow2_at_least(max(1 << 16, nslots // 8)), 4), dtype=np.int64)


class FirstPass:
    """Lays the types out as slots (dropping the type store) and runs the C++ first pass
    (Q6) on them; ``run`` returns the winner and the singles."""

    def __init__(self, types: ScannedTypes, keys: KeyTable, tuning: Tuning = DEFAULT) -> None:
        self.keys = keys
        self.tuning = tuning
        self.nchars = keys.nkeys  # the scan interns chars only
        self.tlen = types.tlen
        self.tmult = types.tmult
        self.order, self.base = types.order, types.base  # the slot order, the first slot of each type
        nslots = types.nslots
        self.S = np.empty((nslots + 1, 4), dtype=np.int32)
        types.layout(self.base, self.S)
        self.S[nslots] = (L.SENTINEL, -1, -1, -1)
        self.best = -1
        self.smul: np.ndarray | None = None  # set by ``run`` when it links the lists
        self.classes = 2 if training_threads() > 1 and nslots >= self.tuning.parallel_merges_at else 1

    def run(self, progress: ProgressFn | None = None) -> tuple[int, np.ndarray, np.ndarray]:
        """(winner row or -1, single rows in first-deletion order, their counts).

        Counts the pairs, runs the first pass and links the pairs into the occurrence
        lists the merges start from (when there is a winner: no merge can follow
        otherwise): ``_walk_and_link``, or with two classes ``_walk_then_link_classes``.
        """
        keys = self.keys
        if self.tuning.reserve_rows:
            keys.reserve_rows(int(self.tlen.sum()))  # a new key per pair at most
        table = self._count(progress)  # and the pair keys, appended as rows and indexed
        occ, lastpos = keys.per_key("occ", np.int64), keys.per_key("lastpos", np.int64)
        # each entry is one key's, so the table's halves scatter on two threads side by
        # side (zh-large: 6-10 ms on one)
        halves = np.array_split(table, min(2, training_threads()))
        del table
        on_threads(lambda i: K.pair_counts(halves[i], occ, lastpos), len(halves))
        halves.clear()  # the table's memory goes with its last view
        self.best = int(K.best_pair(occ, lastpos, keys.nkeys))
        keys.drop("lastpos")
        if self.best >= 0:
            self._check_counters()
        link = self.best >= 0
        if link:
            # the multiplicity of each slot's type (a site's weight); np.empty: the pages
            # of slots the first pass emptied are never touched
            self.smul = np.empty(self.S.shape[0], dtype=np.int32)
        if link and self.classes == 2:
            single_counts, single_first = self._walk_then_link_classes(occ)
        else:
            single_counts, single_first = self._walk_and_link(occ, link)
        keys.drop("occ")
        rows = np.flatnonzero(single_counts)
        rows = rows[np.argsort(single_first[rows], kind="stable")]
        return self.best, rows, single_counts[rows] - 1  # Q4: the first deletion counts 0

    def _singles(self) -> tuple[np.ndarray, np.ndarray]:
        """What the first pass records of its deletions: per char (only chars are ever
        deleted, a merged element is not looked at again, Q6), how many, and the first."""
        return np.zeros(self.nchars, dtype=np.int64), np.full(self.nchars, np.iinfo(np.int64).max, dtype=np.int64)

    def _walk_and_link(self, occ: np.ndarray, link: bool) -> tuple[np.ndarray, np.ndarray]:
        """The first pass in pieces of the slot order, on a thread of its own
        (``training_threads`` > 1) while this one links each piece walked, if ``link``;
        returns the singles (``_singles``)."""
        keys = self.keys
        single_counts, single_first = self._singles()
        # The first pass looks keys up while the linking adds keys to the index and may
        # replace it (and the rows): it keeps a copy of the index and the rows as they are
        # now, which hold every key it can find (chars and pairs of two)
        lookup = keys.slots.copy() if link else keys.slots
        words = keys.words

        def walk(piece: np.ndarray) -> None:
            K.first_pass(piece, self.base, self.tlen, self.tmult, self.best, self.S, words, lookup, occ,
                         single_counts, single_first)

        pieces = np.array_split(self.order, min(self.tuning.pieces, max(1, self.order.shape[0])))
        for piece in pipelined(walk, pieces, threaded=link and training_threads() > 1):
            if link:
                self._link(piece)
        return single_counts, single_first

    def _walk_then_link_classes(self, occ: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """With two classes: the first pass on two threads, a half of the slot order each,
        then each thread links the types of one class, making new keys under a lock
        (``link_slots``), once there is room for every pair the first pass left without
        a key. Nothing adds keys while the first pass looks them up, so it needs no copy
        of the index. Returns the singles, both halves' together."""
        keys = self.keys
        halves = np.array_split(self.order, 2)
        singles = [self._singles() for _ in halves]

        def walk(i: int) -> int:
            return K.first_pass(halves[i], self.base, self.tlen, self.tmult, self.best, self.S, keys.words, keys.slots,
                                occ, *singles[i])

        keys.reserve(sum(on_threads(walk, 2)))
        kst, kst1 = key_states(keys, 2, now=False)
        lock = np.zeros(1, dtype=np.int64)
        nkeys = keys.nkeys

        def link(c: int) -> None:
            # each thread sets the states of its class's keys first; the keys made while
            # linking come after them, their states set by the thread that makes them
            fill_rows((kst, kst1)[c], _NO_KEY_STATE, nkeys)
            K.link_slots(self.order, 0, self.base, self.tlen, self.tmult, self.S, keys.words, keys.slots, keys.meta,
                         keys.room, self.smul, (kst, kst1)[c], kst, kst1, 2, self.tuning.class_shift, c, lock)

        on_threads(link, 2)
        (counts, firsts), (later_counts, later_firsts) = singles
        return counts + later_counts, np.minimum(firsts, later_firsts)

    def _count(self, progress: ProgressFn | None) -> np.ndarray:
        """Count the pairs (``count_slots``): the pair table, and the pair keys as new rows.

        On a large corpus with a thread to spare, the later half of the slot order is
        counted on a thread of its own (``count_codes``), with numbers for its pairs
        instead of rows, and folded in afterwards (``merge_counts``, ``renumber_pairs``):
        the rows, counts and last slots come out as one count of the whole makes them.
        """
        order = self.order
        split = order.shape[0]
        if training_threads() > 1 and self.S.shape[0] >= self.tuning.split_count_at:
            # the first type from that share of the slots on (base[order] rises; a bisection
            # through it, not a gather of it: no 4 MB temporary on zh-large)
            split = bisect.bisect_left(range(order.shape[0]), int(self.S.shape[0] * self.tuning.first_share),
                                       key=lambda i: int(self.base[order[i]]))
        first, later = order[:split], order[split:]
        if later.shape[0] == 0:
            table, _ = self._count_slots(first, progress)
            self.keys.index_all()  # count_slots appends the pair keys without indexing them
        else:
            (table, tmeta), pairs = side_by_side(lambda: self._count_slots(first, progress),
                                                 lambda: self._count_codes(later))
            table = self._fold(later, pairs, table, tmeta)
        if progress:
            progress("count", order.shape[0], order.shape[0])
        return table

    def _count_codes(self, later: np.ndarray) -> np.ndarray:
        """``count_codes`` over these types: their pairs by number (``numbered_pairs``)."""
        tmeta = np.zeros(1, dtype=np.int64)
        # their tokens: the slots from the first of them to the end, less a sentinel each
        tokens = self.S.shape[0] - 1 - int(self.base[later[0]]) - later.shape[0]
        table = K.count_codes(later, self.base, self.tlen, self.tmult, self.S, _pair_table(tokens), tmeta)
        return K.numbered_pairs(table, int(tmeta[0]))

    def _fold(self, later: np.ndarray, pairs: np.ndarray, table: np.ndarray, tmeta: np.ndarray) -> np.ndarray:
        """Fold the later types' numbered pairs into ``table`` (``merge_counts``) while the
        other thread indexes the keys of the first half, then give the later half's slots
        their rows while the keys the fold added are indexed; returns the table. The index
        is sized for the guess ``Tuning.new_in_later`` and made again if the guess was short."""
        keys = self.keys
        indexed, words = keys.nkeys, keys.words  # the fold may grow the rows: these stay as they are
        index = np.zeros(keys.index_size(indexed + int(self.tuning.new_in_later * pairs.shape[0])), dtype=np.int32)
        rows = np.empty(pairs.shape[0], dtype=np.int32)
        table = side_by_side(lambda: K.index_rows(words, 0, indexed, index),
                             lambda: self._fold_pairs(pairs, table, tmeta, rows))[1]
        short = index.shape[0] < keys.index_size(keys.nkeys)
        if not short:
            keys.slots = index

        # both threads renumber the later slots, this one fewer: it indexes the new keys
        # first (zh-large: 168,000 keys in about 2 ms, beside 6-10 ms of renumbering)
        cut = int(self.tuning.renumber_here * later.shape[0])

        def finish(i: int) -> None:
            if i == 1:
                K.renumber_pairs(later[cut:], self.base, self.tlen, self.S, rows)
                return
            if short:
                keys.index_all()
            else:
                K.index_rows(keys.words, indexed, keys.nkeys, index)
            K.renumber_pairs(later[:cut], self.base, self.tlen, self.S, rows)

        on_threads(finish, 2)
        return table

    def _fold_pairs(self, pairs: np.ndarray, table: np.ndarray, tmeta: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """``merge_counts`` of every pair, growing the key rows as it asks; the table."""
        keys = self.keys
        start = 0
        while start < pairs.shape[0]:
            start, table = K.merge_counts(pairs, start, table, keys.words, keys.meta, keys.capacity, tmeta, rows)
            if start < pairs.shape[0]:
                keys.reserve_rows(pairs.shape[0] - start)  # a new key per pair left at most
        return table

    def _count_slots(self, order: np.ndarray, progress: ProgressFn | None) -> tuple[np.ndarray, np.ndarray]:
        """``count_slots`` over these types, growing the key rows as it asks: (table, tmeta)."""
        keys = self.keys
        table = _pair_table(self.S.shape[0])  # it takes the later half's pairs too
        tmeta = np.zeros(1, dtype=np.int64)
        start, n = 0, order.shape[0]
        while start < n:
            start, table = K.count_slots(order, start, self.base, self.tlen, self.tmult, self.S, keys.words,
                                         keys.meta, keys.capacity, table, tmeta)
            if start < n:
                keys.reserve_rows(int(self.tlen[order[start]]) + int(keys.growth * keys.nkeys))
            if progress:
                progress("count", start, self.order.shape[0])
        return table, tmeta

    def _check_counters(self) -> None:
        """The linking and the merges count in int32 (before the first pass: its deletions
        only lower the count)."""
        tokens = int(np.dot(self.tlen, self.tmult))  # int64, and no temporary
        if tokens >= 2**31:
            raise ValueError(f"the corpus has {tokens:,} chars in training lists; the merge counters hold 2**31")

    def _link(self, piece: np.ndarray) -> None:
        """Link the pairs of these types (walked by the first pass, in slot order after the
        ones linked before) into their keys' occurrence lists (one class)."""
        keys = self.keys
        start = 0
        while start < piece.shape[0]:
            kst, kst1 = key_states(keys, 1)
            start = K.link_slots(piece, start, self.base, self.tlen, self.tmult, self.S, keys.words, keys.slots,
                                 keys.meta, keys.room, self.smul, kst, kst, kst1, 1, self.tuning.class_shift, 0, _NO_LOCK)
            if start < piece.shape[0]:
                keys.reserve(int(self.tlen[piece[start]]))


_NO_LOCK = np.zeros(1, dtype=np.int64)  # for link_slots on one thread (it takes no lock then)
