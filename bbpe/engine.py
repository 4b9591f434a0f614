"""The scalable training engine: the arrays the kernels work on, and how they grow.

Three stages, each a few numba kernels (``_kernels``): **scan** cuts the corpus into
lists and stores each distinct list once, as a type with its multiplicity and last
occurrence, numbered in first-occurrence order (a large corpus in consecutive parts, a
thread and a type store each, which the kernels allow by releasing the GIL); **first
pass** lays the types out as slots, counts the pairs, runs the C++ first pass (Q6) on
them and links the surviving pairs into occurrence lists (the first pass on a thread of
its own, a piece ahead of the linking); **merges** applies one merge after the other,
updating counts only around the merged positions, with a lazy heap choosing the winner
(Q5).
Growth: what is touched all over as it fills (the key index, the pair table, the heap)
grows inside the kernels; the rest is reserved here, as ``np.zeros`` whose pages cost no
memory until used, and a kernel that might outgrow it stops and reports, so that the
arrays grow here before it is called again. The kernels come from ``_compiled`` (compiled
ahead of time, or numba's JIT).

Trade-off: exact C++ results with memory proportional to the *distinct* lists: a slot
costs 16 bytes (20 during the merges), a key about 50 (docs/training.md has the measured
figures).
"""

from __future__ import annotations

import bisect
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext

import numpy as np

from . import _layout as L
from ._compiled import kernels as K
from ._threads import on_threads, pipelined
from .corpus import BackwardBlocks
from .progress import ProgressFn
from .resources import training_threads
from .vocab import KEY_BYTES, key_matrix


def _zeros_like_grown(array: np.ndarray, size: int, used: int | None = None) -> np.ndarray:
    """``array`` with room for ``size`` rows; only its first ``used`` rows are copied, so
    rows it never touched stay untouched (no memory) in the copy too."""
    used = array.shape[0] if used is None else used
    out = np.zeros((size,) + array.shape[1:], dtype=array.dtype)
    out[:used] = array[:used]
    return out


def fill_rows(array: np.ndarray, fill: int | tuple[int, ...], n: int) -> None:
    """Set the first ``n`` rows of a fresh ``np.zeros`` array to ``fill`` (zeros stay
    untouched: writing them would only cost the pages)."""
    if np.any(np.asarray(fill) != 0):
        array[:n] = fill


def _pair_table(nslots: int) -> np.ndarray:
    """An empty pair table (``_kernels``, the first pass) for the pairs of ``nslots`` slots.
    It grows in the kernels; sized for a pair per 8 slots, it does not grow on zh-large
    (0.6 million pairs in 6 million slots)."""
    return np.zeros((_pow2_at_least(max(1 << 16, nslots // 8)), 4), dtype=np.int64)


def _pow2_at_least(n: int) -> int:
    return 1 << max(4, (n - 1).bit_length())


class KeyTable:
    """Interned keys (``_kernels`` layout) plus per-key arrays that grow with the table.

    Rows and index grow apart. Rows (``words`` and the per-key arrays) are ``np.zeros``,
    whose pages cost no memory until a key is stored in them, so they can be reserved
    generously up front and are rarely copied; the hash index ``slots`` is touched all
    over, so it grows with the keys actually stored (at most half full). ``room`` is how
    many keys fit before either must grow: the ``key_limit`` of the kernels.
    """

    GROWTH = 0.5

    def __init__(self, capacity: int = 1 << 14) -> None:
        self.words = np.zeros((capacity, 3), dtype=np.uint64)
        self.slots = np.zeros(_pow2_at_least(2 * capacity), dtype=np.int32)
        self.meta = np.zeros(1, dtype=np.int64)
        self._extra: dict[str, np.ndarray] = {}

    @property
    def capacity(self) -> int:
        return self.words.shape[0]

    @property
    def room(self) -> int:
        return min(self.capacity, self.slots.shape[0] // 2)

    @property
    def nkeys(self) -> int:
        return int(self.meta[0])

    def per_key(self, name: str, dtype: type, fill: int | tuple[int, ...] = 0, *, now: bool = True) -> np.ndarray:
        """A per-key array that grows with the table, ``(capacity,)`` or, for a tuple
        ``fill``, ``(capacity, len(fill))``. The rows of the keys there are now are set to
        ``fill`` (unless ``now`` is False: the caller does it, ``fill_rows``); all others
        are zero (no memory until used): the kernel that creates a key sets its row."""
        if name not in self._extra:
            row = np.array(fill, dtype=dtype)
            array = np.zeros((self.capacity,) + row.shape, dtype=dtype)
            if now:
                fill_rows(array, fill, self.nkeys)
            self._extra[name] = array
        return self._extra[name]

    def drop(self, name: str) -> None:
        self._extra.pop(name, None)

    def reserve_rows(self, extra: int) -> None:
        """Rows for ``extra`` more keys (memory only once they are used)."""
        rows = self.nkeys + extra
        if rows > self.capacity:
            self.words = _zeros_like_grown(self.words, rows, self.nkeys)
            for name, array in self._extra.items():
                self._extra[name] = _zeros_like_grown(array, rows, self.nkeys)

    def reserve(self, extra: int) -> None:
        """Room for ``extra`` more keys; what has to grow grows by ``GROWTH`` times the
        keys there are as well, so that growing stays rare."""
        need = self.nkeys + extra
        if need <= self.room:
            return
        target = need + int(self.GROWTH * self.nkeys)
        if need > self.capacity:
            self.reserve_rows(target - self.nkeys)
        if need > self.slots.shape[0] // 2:
            self.slots = np.zeros(_pow2_at_least(2 * target), dtype=np.int32)
            K.reindex(self.words, self.nkeys, self.slots)

    def index_size(self, nkeys: int) -> int:
        """The size of an index of ``nkeys`` keys with room for ``GROWTH`` times as many
        more, at most half full, as ``reserve`` leaves it."""
        return _pow2_at_least(2 * (nkeys + int(self.GROWTH * nkeys)))

    def index_all(self) -> None:
        """Index every row, after a kernel appended keys without indexing them
        (``index_size``). The index is sized for the keys there are, not for what a long
        segment of the scan once made room for: the first pass works on a copy of it
        (``FirstPass.run``)."""
        self.slots = np.zeros(self.index_size(self.nkeys), dtype=np.int32)
        K.reindex(self.words, self.nkeys, self.slots)

    def rows(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(n, 24) uint8`` zero-padded bytes and ``(n,) uint8`` lengths of these keys."""
        words = self.words[rows]
        lens = (words[:, 2] >> np.uint64(56)).astype(np.uint8)
        words[:, 2] &= np.uint64((1 << 56) - 1)
        return words.astype("<u8").view(np.uint8).reshape(-1, KEY_BYTES), lens

    def key(self, row: int) -> bytes:
        raw, lens = self.rows(np.array([row]))
        return raw[0, : lens[0]].tobytes()

    def find(self, key: bytes) -> int:
        """Row of a key, or -1."""
        return int(self.find_all([key])[0])

    def find_all(self, keys: list[bytes]) -> np.ndarray:
        """Rows of these keys (int64), -1 for those not in the table."""
        raw, lens = key_matrix([key if len(key) <= KEY_BYTES else b"" for key in keys])
        query = raw.view("<u8").astype(np.uint64)  # the table's packing: 3 words, the length in the top byte
        query[:, 2] |= lens.astype(np.uint64) << np.uint64(56)
        rows = np.empty(len(keys), dtype=np.int64)
        K.find_rows(self.words, self.slots, query, rows)
        rows[(lens == 0) | (lens >= KEY_BYTES)] = -1  # never a key of the table (it holds 1..23 bytes)
        return rows


class TypeStore:
    """Distinct training lists ("types"), numbered in first-occurrence order, with
    multiplicity and last occurrence.

    As in ``KeyTable``, the tokens and the per-type arrays are ``np.zeros`` reserved ahead
    (``for_corpus``: as many tokens as the corpus has bytes, a type per 24 bytes), which
    costs no memory until used and spares the copies of growing. The hash index, touched
    all over, starts with room for that many types (at most half full) up to
    ``INDEX_START`` entries, and grows beyond with the types actually stored.
    """

    # The largest index a store starts with (4 MB). Grown from 8,192 entries, the index of
    # half of zh-large (273,000 types) was rebuilt four times, the last near the end of the
    # part: 348,000 reinsertions, 7 ms of the scan's 0.125 s (medians of 8 processes;
    # en-large's scan did not slow down with its larger index: 0.1385 s -> 0.1348 s)
    INDEX_START = 1 << 20

    def __init__(self, capacity: int = 1 << 12, tokens: int = 1 << 16) -> None:
        self.ttoks = np.zeros(tokens, dtype=np.int32)
        self.tstart = np.zeros(capacity + 1, dtype=np.int64)
        self.tmult = np.zeros(capacity, dtype=np.int64)
        self.tlast = np.zeros(capacity, dtype=np.int64)
        self.thash = np.zeros(capacity, dtype=np.uint64)
        self.tslots = np.zeros(_pow2_at_least(min(2 * capacity, self.INDEX_START)), dtype=np.int32)
        self.tmeta = np.zeros(3, dtype=np.int64)  # types, tokens, lists seen
        # Scanned last list first (``scan_types_backward``): then ``number`` gives each type
        # its number in first-occurrence order, once the scan is over (``finish``)
        self.backward = False
        self.number: np.ndarray | None = None

    @classmethod
    def for_corpus(cls, size: int) -> TypeStore:
        """Room for a corpus of ``size`` bytes (0: unknown, start small)."""
        return cls(capacity=max(1 << 12, size // 24), tokens=max(1 << 16, size + 1))

    @property
    def ntypes(self) -> int:
        return int(self.tmeta[0])

    @property
    def nlists(self) -> int:
        return int(self.tmeta[2])

    @property
    def nslots(self) -> int:
        """The slots its types take when laid out: their tokens and a sentinel after each."""
        return int(self.tmeta[1]) + self.ntypes

    def finish(self, first: int, slot_offset: int, order: np.ndarray, base: np.ndarray, tlen: np.ndarray,
               mult: np.ndarray) -> None:
        """Write the part's share of the slot order into its slices of the whole's arrays
        (``ScannedTypes``), on the thread that scanned it, once every part has its last
        list: ``order`` (its types by last occurrence, numbered from ``first``), ``base``
        (the first slot of each, from ``slot_offset``), ``tlen`` and ``mult``. A part's
        lists all come before the next part's, so the slot order of the whole is the
        parts' orders one after the other. Then all goes but the tokens and where each
        type starts (what the layout reads); the store takes no more lists."""
        n = self.ntypes
        args = (self.tlast[:n], self.tstart[: n + 1], self.tmult[:n], self.nlists, first, slot_offset, order, base,
                tlen, mult)
        if self.backward:
            # Types were made latest last occurrence first: they are given in first-occurrence
            # numbers, as a forward scan numbers its types; only the tokens stay by the
            # scan's own numbers, which ``number`` maps (``ScannedTypes.layout``)
            self.number = K.backward_slot_order(*args)
        else:
            K.slot_order(*args)
        self.tmult = self.tlast = np.zeros(0, dtype=np.int64)
        self.thash = np.zeros(0, dtype=np.uint64)
        self.tslots = np.zeros(0, dtype=np.int32)

    def grow(self, tokens_needed: int) -> None:
        """Room for a list of ``tokens_needed`` tokens (what ``scan_types`` stopped for)."""
        ntypes, ntoks = self.ntypes, int(self.tmeta[1])
        if ntoks + tokens_needed > self.ttoks.shape[0]:
            self.ttoks = _zeros_like_grown(self.ttoks, max(2 * self.ttoks.shape[0], ntoks + tokens_needed), ntoks)
        if ntypes + 2 > self.tmult.shape[0]:
            cap = 2 * self.tmult.shape[0]
            self.tstart = _zeros_like_grown(self.tstart, cap + 1, ntypes + 1)
            for name in ("tmult", "tlast", "thash"):
                setattr(self, name, _zeros_like_grown(getattr(self, name), cap, ntypes))
        if 2 * (ntypes + 1) > self.tslots.shape[0]:
            self.tslots = np.zeros(_pow2_at_least(4 * (ntypes + 1)), dtype=np.int32)
            K.reindex_types(self.thash, ntypes, self.tslots)


class ScannedTypes:
    """The type stores of a corpus scanned in consecutive parts, seen as one.

    Types are numbered part after part, so still in first-occurrence order (a part
    scanned backwards by its ``number``), and laid out part after part in the slot order,
    each part's by last occurrence, which is the order of their last occurrences in the
    whole corpus. A list that occurs in
    two parts is a type in each: both copies are rewritten alike by the first pass and by
    every merge, as equal lists of one part are (docs/training.md), so the result is the
    one of a single store. Each part interned its chars in a key table of its own;
    ``rowmaps[i]`` maps them to the rows of the table all parts share.
    """

    def __init__(self, stores: list[TypeStore]) -> None:
        """The arrays of the whole for the parts' scanned stores; each part writes its
        share into them (``put``), so nothing is copied from part to whole."""
        self.stores = stores
        self.rowmaps: list[np.ndarray] = []  # set by ``scan`` once the parts' chars are interned
        self.firsts = np.cumsum([0] + [store.ntypes for store in stores]).tolist()
        self.slot_offsets = np.cumsum([0] + [store.nslots for store in stores]).tolist()
        self.nslots = self.slot_offsets[-1]
        ntypes = self.firsts[-1]
        self.tmult = np.empty(ntypes, dtype=np.int64)
        self.tlen = np.empty(ntypes, dtype=np.int64)
        self.order = np.empty(ntypes, dtype=np.int64)
        self.base = np.empty(ntypes, dtype=np.int64)

    def put(self, i: int) -> None:
        """Part i's share (``TypeStore.finish``), on its own thread."""
        part = slice(self.firsts[i], self.firsts[i + 1])
        self.stores[i].finish(self.firsts[i], self.slot_offsets[i], self.order[part], self.base[part],
                              self.tlen[part], self.tmult[part])

    @property
    def ntypes(self) -> int:
        return self.tmult.shape[0]

    def layout(self, base: np.ndarray, S: np.ndarray) -> None:
        """Copy every type's tokens (as key rows) into the slots from base[type], each
        part on a thread (the first touch of the fresh slot table's pages is most of it)."""
        firsts = self.firsts

        def lay_out(i: int) -> None:
            store = self.stores[i]
            bases = base[firsts[i] : firsts[i + 1]]
            if store.number is None:
                K.layout_types(store.ttoks, store.tstart, store.ntypes, self.rowmaps[i], bases, S)
            else:  # the tokens are by the backward scan's own numbers
                K.layout_types_backward(store.ttoks, store.tstart, store.number, self.rowmaps[i], bases, S)

        on_threads(lay_out, len(self.stores))


def scan(parts: Sequence[Iterable[bytes]], keys: KeyTable, progress: ProgressFn | None = None,
         size_hint: int = 0) -> ScannedTypes:
    """Cut consecutive parts of the UTF-8 training texts, each an iterable of blocks
    (whole segments only; a ``BackwardBlocks`` part gives its blocks last first, and is
    scanned from its end), into type stores: the first on this thread, the others each on
    a thread of its own (the compiled kernels release the GIL). ``keys`` gets every char
    of every part, part after part (a part scanned backwards interns its chars in the
    order it meets them)."""
    if not parts:
        parts = [()]
    done = [0] * len(parts)

    def report() -> None:
        if progress:
            progress("scan", sum(done), size_hint)

    def scan_part(i: int) -> TypeStore:
        # two parts that meet (the second a ``BackwardBlocks``) may each take both shares
        paired = isinstance(parts[i], BackwardBlocks) or i + 1 < len(parts) and isinstance(parts[i + 1], BackwardBlocks)
        hint = size_hint * (2 if paired else 1) // len(parts)
        return _scan_part(parts[i], part_keys[i], hint, done, i, report if i == 0 else None)

    part_keys = [keys] + [KeyTable() for _ in parts[1:]]
    stores: list = [None] * len(parts)  # each part's, once scanned
    whole: list[ScannedTypes] = []
    # Once every part has its last list, the arrays of the whole are made and each part's
    # thread writes its share into them: the part that ends first waits, but the whole is
    # not copied together after (zh-large: 7-8 ms on two threads)
    scanned = threading.Barrier(len(parts), action=lambda: whole.append(ScannedTypes(stores)))

    def scan_part_and_put(i: int) -> None:
        try:
            stores[i] = scan_part(i)
            scanned.wait()
        except threading.BrokenBarrierError:
            return  # another part failed: on_threads raises its error
        except BaseException:
            scanned.abort()
            raise
        whole[0].put(i)

    on_threads(scan_part_and_put, len(parts))
    types = whole[0]
    types.rowmaps.append(np.arange(keys.nkeys, dtype=np.int32))
    # in part order; which rows the chars get changes no result (singles go by their first
    # deletions, pairs by their slots), so a part scanned backwards may intern its own way
    for other in part_keys[1:]:
        keys.reserve(other.nkeys)
        types.rowmaps.append(np.empty(other.nkeys, dtype=np.int32))
        K.intern_rows(other.words, other.nkeys, keys.words, keys.slots, keys.meta, types.rowmaps[-1])
    report()
    return types


def _scan_part(blocks: Iterable[bytes], keys: KeyTable, size_hint: int, done: list[int], index: int,
               report: Callable[[], None] | None) -> TypeStore:
    types = TypeStore.for_corpus(size_hint)
    types.backward = isinstance(blocks, BackwardBlocks)
    memo = np.zeros(L.CHAR_MEMO_SIZE, dtype=np.int32)  # rows never move, so it stays valid
    scan = K.scan_types_backward if types.backward else K.scan_types
    for block in blocks:
        buf = np.frombuffer(block, dtype=np.uint8)
        buf.flags.writeable = False  # what the compiled scan takes, whatever buffer came in
        # forwards from pos, or backwards from pos (to the block's start)
        pos = buf.shape[0] if types.backward else 0
        while True:
            pos, need = scan(buf, pos, keys.words, keys.slots, keys.meta, keys.room, types.ttoks, types.tstart,
                             types.tmult, types.tlast, types.thash, types.tslots, types.tmeta, memo)
            if (pos < 0) if types.backward else (pos >= buf.shape[0]):
                break
            keys.reserve(need)
            types.grow(need + 1024)
        done[index] += len(block)
        if report:
            report()
    return types


class FirstPass:
    """Lays the types out as slots (dropping the type store) and runs the C++ first pass
    (Q6) on them; ``run`` returns the winner and the singles."""

    RESERVE_ROWS = True  # key rows for every pair up front (lazily zeroed: no memory until used)
    PIECES = 16  # of the slot order: the first pass hands them to the linking one by one
    # Slots from which the pairs are counted in two halves on two threads (``_count``). The
    # second half's table costs memory and folding it in costs time: on zh-large (6 million
    # slots) the count gained 0.03 s with the same peak RSS; on mixed (1.4 million), en-large
    # (2.2 million) and half of zh-large (3 million) nothing measurable, for 5-15 MB more peak.
    SPLIT_COUNT_AT = 1 << 22
    # The first thread's share of the slots then, under half: it also appends its pairs'
    # keys as rows, where the other thread only numbers its pairs (zh-large at 8000, the
    # count, medians of 5 alternating runs: 0.108 s, against 0.111 s at 0.5 and 0.116 s
    # at 0.42)
    FIRST_SHARE = 0.46
    # Slots from which the merges run on two threads, two classes of slots (``_kernels``,
    # "incremental merges"): blocks of 2**CLASS_SHIFT slots (64 KB of the slot table)
    # alternate between them, small enough that the occurrences of nearly every pair fall
    # about evenly into both, large enough that the two threads rarely write one cache line.
    PARALLEL_MERGES_AT = 1 << 22
    CLASS_SHIFT = 12

    def __init__(self, types: ScannedTypes, keys: KeyTable) -> None:
        self.keys = keys
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
        self.classes = 2 if training_threads() > 1 and nslots >= self.PARALLEL_MERGES_AT else 1

    def run(self, progress: ProgressFn | None = None) -> tuple[int, np.ndarray, np.ndarray]:
        """(winner row or -1, single rows in first-deletion order, their counts).

        Counts the pairs, runs the first pass and links the pairs into the occurrence
        lists the merges start from (when there is a winner: no merge can follow
        otherwise): ``_walk_and_link``, or with two classes ``_walk_then_link_classes``.
        """
        keys = self.keys
        if self.RESERVE_ROWS:
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

        pieces = np.array_split(self.order, min(self.PIECES, max(1, self.order.shape[0])))
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
                         keys.room, self.smul, (kst, kst1)[c], kst, kst1, 2, self.CLASS_SHIFT, c, lock)

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
        if training_threads() > 1 and self.S.shape[0] >= self.SPLIT_COUNT_AT:
            # the first type from that share of the slots on (base[order] rises; a bisection
            # through it, not a gather of it: no 4 MB temporary on zh-large)
            split = bisect.bisect_left(range(order.shape[0]), int(self.S.shape[0] * self.FIRST_SHARE),
                                       key=lambda i: int(self.base[order[i]]))
        first, later = order[:split], order[split:]
        if later.shape[0] == 0:
            table, _ = self._count_slots(first, progress)
            self.keys.index_all()  # count_slots appends the pair keys without indexing them
        else:
            (table, tmeta), pairs = on_threads(
                lambda i: self._count_slots(first, progress) if i == 0 else self._count_codes(later), 2)
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

    # The share of the later half's pairs that are new keys, guessed (zh-large: 168,000 of
    # 285,000) to size the key index before they are folded in
    NEW_IN_LATER = 0.6
    # The share of the later types whose slots the indexing thread renumbers after the fold
    RENUMBER_HERE = 0.4

    def _fold(self, later: np.ndarray, pairs: np.ndarray, table: np.ndarray, tmeta: np.ndarray) -> np.ndarray:
        """Fold the later types' numbered pairs into ``table`` (``merge_counts``) while the
        other thread indexes the keys of the first half, then give the later half's slots
        their rows while the keys the fold added are indexed; returns the table. The index
        is sized for the guess ``NEW_IN_LATER`` and made again if the guess was short."""
        keys = self.keys
        indexed, words = keys.nkeys, keys.words  # the fold may grow the rows: these stay as they are
        index = np.zeros(keys.index_size(indexed + int(self.NEW_IN_LATER * pairs.shape[0])), dtype=np.int32)
        rows = np.empty(pairs.shape[0], dtype=np.int32)
        table = on_threads(lambda i: K.index_rows(words, 0, indexed, index) if i == 0 else
                           self._fold_pairs(pairs, table, tmeta, rows), 2)[1]
        short = index.shape[0] < keys.index_size(keys.nkeys)
        if not short:
            keys.slots = index

        # both threads renumber the later slots, this one fewer: it indexes the new keys
        # first (zh-large: 168,000 keys in about 2 ms, beside 6-10 ms of renumbering)
        cut = int(self.RENUMBER_HERE * later.shape[0])

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
                keys.reserve_rows(int(self.tlen[order[start]]) + int(keys.GROWTH * keys.nkeys))
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
                                 keys.meta, keys.room, self.smul, kst, kst, kst1, 1, self.CLASS_SHIFT, 0, _NO_LOCK)
            if start < piece.shape[0]:
                keys.reserve(int(self.tlen[piece[start]]))


_NO_KEY_STATE = (0, -1, -1, 0)  # OCC, HEAD, TAIL, FLAGS of a key that does not occur


def key_states(keys: KeyTable, classes: int, *, now: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """The key states (OCC, HEAD, TAIL, FLAGS) of slot class 0 and of class 1 (with one
    class, a placeholder that is never read); fetched again after the table grows.
    ``now``: see ``KeyTable.per_key``."""
    kst = keys.per_key("kst", np.int32, _NO_KEY_STATE, now=now)
    return kst, (keys.per_key("kst1", np.int32, _NO_KEY_STATE, now=now) if classes == 2 else _NO_CLASS_1[0])


_NO_LOCK = np.zeros(1, dtype=np.int64)  # for link_slots on one thread (it takes no lock then)

# What the kernels get for the arrays of class 1 when there is one class
_NO_CLASS_1 = (np.zeros((1, 4), dtype=np.int32), np.zeros(1, dtype=np.int32), np.zeros(1, dtype=np.int64),
               np.zeros(1, dtype=np.int32))


class _Bench:
    """When the merges' follower sits out. A call of the merge kernel in which the
    follower kept the leader waiting a quarter of the time or more (``too_slow``: its CPU
    is taken by other work, another training, a busy process) is followed by calls
    without it, twice as many each time it is found slow again, up to ``most``; a call
    in which it kept up brings it back to ``first``. So a loaded machine costs a few
    slow hand-overs per try, an idle one nothing, and a load that goes away gives the
    thread back."""

    def __init__(self, first: int, most: int) -> None:
        self.first, self.most = first, most
        self.length = first  # calls it sits out when next found slow
        self.left = 0  # calls it still sits out

    def follower_plays(self) -> bool:
        if self.left:
            self.left -= 1
            return False
        return True

    def played(self, too_slow: bool) -> None:
        if too_slow:
            self.left, self.length = self.length, min(2 * self.length, self.most)
        else:
            self.length = self.first


class Merger:
    """The incremental state: slots, occurrence lists, the heap; ``merges`` drives it.

    With two classes of slots (``FirstPass.classes``) and a thread to spare, each call of
    the merge kernel has a follower on a thread of its own (``follow_merges``), which
    applies each step's winner in class 1 while this thread does class 0.
    """

    STEPS_PER_CALL = 256
    COMPACT_AT = 2  # squeeze the slots once half of them are merged away
    HEAP_SPARE = 1024  # the heap starts with room for two entries per live key, plus this
    FOLLOWER = True  # with two classes, use the follower (tests turn it off)
    PARALLEL_FROM = 32  # a step goes to both threads from this many occurrences of its winner
    SLOW_SHARE = 4  # the follower is too slow once the leader waits 1/this of its time (``too_slow``; 0: never)
    BENCH_FIRST = 2  # calls without the follower after one in which it was too slow (``_Bench``)
    BENCH_MOST = 64  # at most this many in a row

    def __init__(self, first: FirstPass) -> None:
        """The state after ``first.run()``, which linked the lists when it found a winner."""
        keys = self.keys = first.keys
        self.S = first.S
        self.nslots = self.S.shape[0]
        self.smul = first.smul
        self.classes = first.classes
        self.smeta = np.zeros(2, dtype=np.int64)  # slots merged away since the last compaction, steps
        self.fmeta = np.zeros(2, dtype=np.int64)  # rows in the free list, tombstones in the index
        kst, kst1 = key_states(keys, self.classes)
        kst[: first.nchars, L.FLAGS] |= L.TOKEN
        if first.best >= 0:
            kst[first.best, L.FLAGS] |= L.TOKEN
        self._heap_arrays(2 * K.count_live(kst, kst1, self.classes, keys.nkeys) + self.HEAP_SPARE)
        K.heap_rebuild(self.hocc, self.htail, self.hkey, self.hmeta, kst, kst1, self.classes, keys.nkeys)
        # The keys each step changed, per class. A step hands class 1's list to the
        # follower only if it has room for the step (four per site): it starts with room
        # for the key that occurs most there now (np.empty: only what is written costs).
        self.dirty = np.empty(1024, dtype=np.int32)
        self.dirty1, self.pvals1, self.frees0 = _NO_CLASS_1[1:]
        if self.classes == 2:
            self.dirty1 = np.empty(4 * int(kst1[: keys.nkeys, L.OCC].max(initial=0)) + 1024, dtype=np.int32)
            self.pvals1 = np.empty(self.dirty1.shape[0], dtype=np.int64)  # class 1's keys for the heap
            # class 0's keys whose rows the follower frees
            self.frees0 = np.empty(4 * int(kst[: keys.nkeys, L.OCC].max(initial=0)) + 1024, dtype=np.int32)
        self.sync = np.zeros(L.SYNC_SIZE, dtype=np.int64)  # how the kernel and its follower talk
        self.sync[L.SYNC_SLOW_SHARE] = self.SLOW_SHARE
        self.lock = np.zeros(1, dtype=np.int64)  # held while either of them makes a key

    def _heap_arrays(self, capacity: int) -> None:
        self.hocc = np.empty(capacity, dtype=np.int32)
        self.htail = np.empty(capacity, dtype=np.int32)
        self.hkey = np.empty(capacity, dtype=np.int32)
        self.hmeta = np.zeros(2, dtype=np.int64)  # size, and the keys a step asked room for

    def mark_in_vocab(self, keys: list[bytes]) -> None:
        """Flag these keys (those in the table) as in the vocabulary."""
        rows = self.keys.find_all(keys)
        key_states(self.keys, self.classes)[0][rows[rows >= 0], L.FLAGS] |= L.IN_VOCAB

    def merges(self, size: int, limit: int, progress: ProgressFn | None = None) -> Iterator[bytes]:
        """The winners' keys, one per merge, until the vocabulary reaches ``limit`` or no
        pair occurs twice; ``size`` is the vocabulary size before the first of them."""
        keys = self.keys
        winners = np.empty(self.STEPS_PER_CALL, dtype=np.int32)
        done = 0
        total = limit - size if limit - size < 1 << 24 else 0  # 0: no limit
        if progress:
            progress("merge", 0, total)
        threaded = self.classes == 2 and self.FOLLOWER and training_threads() > 1
        bench = _Bench(self.BENCH_FIRST, self.BENCH_MOST)
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="bbpe-merges") if threaded else nullcontext() as pool:
            while size < limit:
                with_follower = pool is not None and bench.follower_plays()
                waited, start = int(self.sync[L.SYNC_WAITED]), time.perf_counter_ns()
                status, steps, size = self._run(winners, size, limit, pool if with_follower else None)
                if with_follower:
                    bench.played(K.too_slow(int(self.sync[L.SYNC_WAITED]) - waited, time.perf_counter_ns() - start,
                                            self.SLOW_SHARE))
                raw, lens = keys.rows(winners[:steps])
                yield from (row[:n].tobytes() for row, n in zip(raw, lens.tolist()))
                done += steps
                if progress:
                    progress("merge", done, total)
                if status == L.NEED_ROWS:
                    keys.reserve_rows(int(self.hmeta[1]) + keys.nkeys // 2)
                elif status not in (0, L.RESTART):
                    return
                if self.COMPACT_AT * self.smeta[0] > self.nslots:
                    self._compact()

    def _run(self, winners: np.ndarray, size: int, limit: int,
             pool: ThreadPoolExecutor | None) -> tuple[int, int, int]:
        """One call of the merge kernel, with its follower on the pool's thread if there is
        a pool: (status, steps, vocabulary size)."""
        keys = self.keys
        kst, kst1 = key_states(keys, self.classes)
        finger = keys.per_key("finger", np.int32)
        finger1 = keys.per_key("finger1", np.int32) if self.classes == 2 else _NO_CLASS_1[1]
        free = keys.per_key("free", np.int32)
        follower = None
        if pool is not None:
            self.sync[L.SYNC_STOPPED] = 0
            follower = pool.submit(self._follow, int(self.sync[L.SYNC_CMD]), keys.slots, kst, kst1, finger1,
                                   self.dirty1, self.pvals1, free)
        try:
            (status, steps, size, keys.slots, self.hocc, self.htail, self.hkey, self.dirty, self.dirty1,
             self.pvals1) = K.run_merges(
                self.STEPS_PER_CALL, size, limit, winners, self.S, self.smul, keys.words, keys.slots, keys.meta, kst,
                kst1, self.classes, finger, finger1, free, self.fmeta, self.hocc, self.htail, self.hkey, self.hmeta,
                self.smeta, self.dirty, self.dirty1, self.pvals1, self.frees0, self.sync, self.lock,
                follower is not None, self.PARALLEL_FROM)
        finally:
            if follower is not None:
                K.stop_follower(self.sync)  # wakes it if it sleeps
                follower.result()  # its error, if it had one
        if status == L.FOLLOWER_FAILED:  # and it had none
            raise RuntimeError("bbpe: the merges' follower stopped before the leader was done")
        return status, steps, size

    def _follow(self, seen: int, slots: np.ndarray, kst: np.ndarray, kst1: np.ndarray, finger1: np.ndarray,
                dirty1: np.ndarray, pvals1: np.ndarray, free: np.ndarray) -> None:
        """The follower (``follow_merges``) on the arrays the kernel gets; once it stops,
        for whatever reason, the kernel is told so (a kernel still waiting for it gives up)."""
        keys = self.keys
        try:
            K.follow_merges(seen, self.sync, self.S, self.smul, keys.words, slots, keys.meta, kst, kst1, finger1,
                            dirty1, pvals1, self.frees0, free, self.fmeta, self.lock)
        finally:
            K.follower_stopped(self.sync)

    def _compact(self) -> None:
        """Drop the slots merged away: less memory, denser walks."""
        keys = self.keys
        kst, kst1 = key_states(keys, self.classes)
        n = K.compact_slots(self.S, self.nslots, self.smul, kst, kst1, self.classes, keys.nkeys)
        self.S.resize((n, 4), refcheck=False)
        self.smul.resize(n, refcheck=False)
        self.nslots = n
        self.smeta[0] = 0
        K.heap_rebuild(self.hocc, self.htail, self.hkey, self.hmeta, kst, kst1, self.classes, keys.nkeys)
