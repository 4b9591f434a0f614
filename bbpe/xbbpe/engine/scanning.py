"""The scan stage: the corpus's parts cut into lists on threads of their own, each distinct
list stored once as a type (``TypeStore``), and the parts put together (``ScannedTypes``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence

import numpy as np

from ...common.blocks import BackwardBlocks, Block
from ...common.progress import ProgressFn
from ...common.threads import on_threads
from ..kernels import kernels as K
from ..kernels import tables as L
from .keytable import KeyTable, _pow2_at_least, _zeros_like_grown
from .tuning import DEFAULT, Tuning


class TypeStore:
    """Distinct training lists ("types"), numbered in first-occurrence order, with
    multiplicity and last occurrence.

    As in ``KeyTable``, the tokens and the per-type arrays are ``np.zeros`` reserved ahead
    (``for_corpus``: as many tokens as the corpus has bytes, a type per 24 bytes), which
    costs no memory until used and spares the copies of growing. The hash index, touched
    all over, starts with room for that many types (at most half full) up to
    ``Tuning.index_start`` entries, and grows beyond with the types actually stored.
    """

    def __init__(self, capacity: int, tokens: int, index_start: int) -> None:
        self.ttoks = np.zeros(tokens, dtype=np.int32)
        self.tstart = np.zeros(capacity + 1, dtype=np.int64)
        self.tmult = np.zeros(capacity, dtype=np.int64)
        self.tlast = np.zeros(capacity, dtype=np.int64)
        self.thash = np.zeros(capacity, dtype=np.uint64)
        self.tslots = np.zeros(_pow2_at_least(min(2 * capacity, index_start)), dtype=np.int32)
        self.tmeta = np.zeros(3, dtype=np.int64)  # types, tokens, lists seen
        # Scanned last list first (``scan_types_backward``): then ``number`` gives each type
        # its number in first-occurrence order, once the scan is over (``finish``)
        self.backward = False
        self.number: np.ndarray | None = None

    @classmethod
    def for_corpus(cls, size: int, tuning: Tuning = DEFAULT) -> TypeStore:
        """Room for a corpus of ``size`` bytes (0: unknown, start small)."""
        if not tuning.stores_for_corpus:
            size = 0
        return cls(max(tuning.store_types, size // 24), max(tuning.store_tokens, size + 1), tuning.index_start)

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


def scan(parts: Sequence[Iterable[Block]], keys: KeyTable, progress: ProgressFn | None = None,
         size_hint: int = 0, tuning: Tuning = DEFAULT) -> ScannedTypes:
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
        return _scan_part(parts[i], part_keys[i], TypeStore.for_corpus(hint, tuning), done, i,
                          report if i == 0 else None)

    part_keys = [keys] + [KeyTable(tuning) for _ in parts[1:]]
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


def _scan_part(blocks: Iterable[Block], keys: KeyTable, types: TypeStore, done: list[int], index: int,
               report: Callable[[], None] | None) -> TypeStore:
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
