"""The scalable training engine: the arrays the kernels work on, and how they grow.

Three stages, each a few numba kernels (``_kernels``): **scan** cuts the corpus into lists
and stores each distinct list once, as a type with its multiplicity and first/last
occurrence; **first pass** counts the pairs and runs the C++ first pass (Q6) on the types;
**merges** lays the surviving types out as linked slots and applies one merge after the
other, updating counts only around the merged positions, with a lazy heap choosing the
winner (Q5). Kernels never allocate what they might outgrow: they stop and report, and the
arrays here grow (doubling) before they are called again. Arrays that start empty are
``np.zeros``, whose pages cost no memory until used.

Trade-off: exact C++ results with memory proportional to the *distinct* lists; a slot
costs 16 bytes and a pair key about 60 (docs/training.md has the measured figures).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np

from . import _kernels as K
from .progress import ProgressFn
from .vocab import KEY_BYTES



def _zeros_like_grown(array: np.ndarray, size: int) -> np.ndarray:
    out = np.zeros((size,) + array.shape[1:], dtype=array.dtype)
    out[: array.shape[0]] = array
    return out


def _pow2_at_least(n: int) -> int:
    return 1 << max(4, (n - 1).bit_length())


class KeyTable:
    """Interned keys (``_kernels`` layout) plus per-key arrays that grow with the table."""

    def __init__(self, capacity: int = 1 << 14) -> None:
        self.words = np.zeros((capacity, 3), dtype=np.uint64)
        self.lens = np.zeros(capacity, dtype=np.uint8)
        self.slots = np.zeros(2 * capacity, dtype=np.int32)
        self.meta = np.zeros(1, dtype=np.int64)
        self._extra: dict[str, np.ndarray] = {}
        self._fill: dict[str, int] = {}

    @property
    def capacity(self) -> int:
        return self.lens.shape[0]

    @property
    def nkeys(self) -> int:
        return int(self.meta[0])

    def per_key(self, name: str, dtype: type, fill: int = 0) -> np.ndarray:
        """A per-key array that keeps its size equal to the table's capacity."""
        if name not in self._extra:
            self._extra[name] = np.full(self.capacity, fill, dtype=dtype) if fill else np.zeros(self.capacity, dtype)
            self._fill[name] = fill
        return self._extra[name]

    def drop(self, name: str) -> None:
        self._extra.pop(name, None)

    def reserve(self, extra: int) -> None:
        """Room for ``extra`` more keys."""
        need = self.nkeys + extra
        if need <= self.capacity:
            return
        cap = max(need, 2 * self.capacity)
        self.words = _zeros_like_grown(self.words, cap)
        self.lens = _zeros_like_grown(self.lens, cap)
        self.slots = np.zeros(_pow2_at_least(2 * cap), dtype=np.int32)
        K.reindex(self.words, self.lens, self.nkeys, self.slots)
        for name, array in self._extra.items():
            grown = np.full(cap, self._fill[name], dtype=array.dtype) if self._fill[name] else np.zeros(cap, array.dtype)
            grown[: array.shape[0]] = array
            self._extra[name] = grown

    def key(self, row: int) -> bytes:
        raw = self.words[row].astype("<u8").tobytes()
        return raw[: int(self.lens[row])]

    def rows(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(n, 24) uint8`` bytes and ``(n,) uint8`` lengths of these keys."""
        raw = self.words[rows].astype("<u8").view(np.uint8).reshape(-1, KEY_BYTES)
        return raw, self.lens[rows]

    def find(self, key: bytes) -> int:
        """Row of a key, or -1."""
        if not 0 < len(key) < KEY_BYTES + 1:
            return -1
        w = np.frombuffer(key.ljust(KEY_BYTES, b"\0"), dtype="<u8").astype(np.uint64)
        _, row = K._find(self.words, self.lens, self.slots, w[0], w[1], w[2], len(key))
        return int(row)


class TypeStore:
    """Distinct training lists ("types") with multiplicity and first/last occurrence."""

    def __init__(self, capacity: int = 1 << 12, tokens: int = 1 << 16) -> None:
        self.ttoks = np.zeros(tokens, dtype=np.int32)
        self.tstart = np.zeros(capacity + 1, dtype=np.int64)
        self.tmult = np.zeros(capacity, dtype=np.int64)
        self.tfirst = np.zeros(capacity, dtype=np.int64)
        self.tlast = np.zeros(capacity, dtype=np.int64)
        self.thash = np.zeros(capacity, dtype=np.uint64)
        self.tslots = np.zeros(2 * capacity, dtype=np.int32)
        self.tmeta = np.zeros(3, dtype=np.int64)  # types, tokens, lists seen

    @property
    def ntypes(self) -> int:
        return int(self.tmeta[0])

    @property
    def nlists(self) -> int:
        return int(self.tmeta[2])

    def grow(self, tokens_needed: int) -> None:
        ntypes, ntoks = self.ntypes, int(self.tmeta[1])
        if ntoks + tokens_needed > self.ttoks.shape[0]:
            self.ttoks = _zeros_like_grown(self.ttoks, max(2 * self.ttoks.shape[0], ntoks + tokens_needed))
        if ntypes + 2 > self.tmult.shape[0] or 2 * (ntypes + 1) > self.tslots.shape[0]:
            cap = 2 * self.tmult.shape[0]
            self.tstart = _zeros_like_grown(self.tstart, cap + 1)
            for name in ("tmult", "tfirst", "tlast", "thash"):
                setattr(self, name, _zeros_like_grown(getattr(self, name), cap))
            self.tslots = np.zeros(_pow2_at_least(2 * cap), dtype=np.int32)
            K.reindex_types(self.thash, ntypes, self.tslots)


def scan(blocks: Iterable[bytes], keys: KeyTable, progress: ProgressFn | None = None, size_hint: int = 0) -> TypeStore:
    """Cut blocks of UTF-8 training texts (whole segments only) into the type store."""
    types = TypeStore()
    done = 0
    for block in blocks:
        buf = np.frombuffer(block, dtype=np.uint8)
        pos = 0
        while True:
            pos, need = K.scan_types(buf, pos, keys.words, keys.lens, keys.slots, keys.meta, keys.capacity,
                                     types.ttoks, types.tstart, types.tmult, types.tfirst, types.tlast, types.thash,
                                     types.tslots, types.tmeta)
            if pos >= buf.shape[0]:
                break
            keys.reserve(need + 1024)
            types.grow(need + 1024)
        done += len(block)
        if progress:
            progress("scan", done, size_hint)
    return types


class FirstPass:
    """Q6 on the types: returns the winner and the singles, leaves the types rewritten."""

    def __init__(self, types: TypeStore, keys: KeyTable) -> None:
        self.types = types
        self.keys = keys
        n = types.ntypes
        self.order_last = np.argsort(types.tlast[:n], kind="stable")
        self.order_first = np.argsort(types.tfirst[:n], kind="stable")

    def run(self, progress: ProgressFn | None = None) -> tuple[int, np.ndarray, np.ndarray]:
        """(winner row or -1, single rows in first-deletion order, their counts)."""
        types, keys = self.types, self.keys
        occ = keys.per_key("occ", np.int64)
        lastpos = keys.per_key("lastpos", np.int64)
        start, pos = 0, 0
        n = self.order_last.shape[0]
        while start < n:
            start, pos = K.count_types(self.order_last, start, types.ttoks, types.tstart, types.tmult, keys.words,
                                       keys.lens, keys.slots, keys.meta, keys.capacity, occ, lastpos, pos)
            if start < n:
                t = self.order_last[start]
                keys.reserve(int(types.tstart[t + 1] - types.tstart[t]) + (1 << 16))
                occ, lastpos = keys.per_key("occ", np.int64), keys.per_key("lastpos", np.int64)
            if progress:
                progress("count", start, n)
        best = int(K.best_pair(occ, lastpos, keys.nkeys))
        keys.drop("lastpos")
        single_counts = np.full(keys.nkeys, -1, dtype=np.int64)
        single_order = np.empty(int(types.tmeta[1]), dtype=np.int32)
        self.tlen = np.zeros(types.ntypes, dtype=np.int64)
        nsingles = K.first_pass_types(self.order_first, types.ttoks, types.tstart, types.tmult, self.tlen, best,
                                      keys.words, keys.lens, keys.slots, occ, single_counts, single_order)
        keys.drop("occ")
        rows = single_order[:nsingles].astype(np.int64)
        return best, rows, single_counts[rows]


class Merger:
    """The incremental state: slots, occurrence lists, the heap; ``merges`` drives it."""

    STEPS_PER_CALL = 256

    def __init__(self, first: FirstPass) -> None:
        types, keys = first.types, first.keys
        tlen = first.tlen
        order = first.order_last
        alive = tlen[order] >= 2
        nslots = int(tlen[order][alive].sum() + alive.sum())
        self.keys = keys
        self.tok = np.empty(nslots + 1, dtype=np.int32)
        self.pk = np.empty(nslots + 1, dtype=np.int32)
        self.onext = np.empty(nslots + 1, dtype=np.int32)
        self.oprev = np.empty(nslots + 1, dtype=np.int32)
        self.ntypes = int(alive.sum())
        self.sstart = np.empty(self.ntypes + 1, dtype=np.int64)
        self.smult = np.empty(self.ntypes, dtype=np.int64)
        oi, s, ti = 0, 0, 0
        while oi < order.shape[0]:
            g = keys.per_key
            oi, s, ti = K.build_slots(order, oi, s, ti, types.ttoks, types.tstart, tlen, types.tmult, keys.words,
                                      keys.lens, keys.slots, keys.meta, keys.capacity, self.tok, self.pk, self.onext,
                                      self.oprev, self.sstart, self.smult, g("occ", np.int64),
                                      g("head", np.int32, -1), g("tail", np.int32, -1))
            if oi < order.shape[0]:
                keys.reserve(int(tlen[order[oi]]) + (1 << 16))
        self.tok[nslots] = K.SENTINEL
        occ, tail = keys.per_key("occ", np.int64), keys.per_key("tail", np.int32, -1)
        keys.per_key("dirty", np.uint8)
        keys.per_key("in_vocab", np.uint8)
        candidates = int((occ[: keys.nkeys] >= 2).sum())
        self._heap_arrays(2 * candidates + 1024)
        K.heap_rebuild(self.hocc, self.htail, self.hkey, self.hmeta, occ, tail, keys.nkeys)

    def _heap_arrays(self, capacity: int) -> None:
        self.hocc = np.empty(capacity, dtype=np.int64)
        self.htail = np.empty(capacity, dtype=np.int32)
        self.hkey = np.empty(capacity, dtype=np.int32)
        self.hmeta = np.zeros(1, dtype=np.int64)

    def mark_in_vocab(self, key: bytes) -> None:
        row = self.keys.find(key)
        if row >= 0:
            self.keys.per_key("in_vocab", np.uint8)[row] = 1

    def merges(self, size: int, limit: int, progress: ProgressFn | None = None) -> Iterator[int]:
        """Winner rows, one per merge, until the vocabulary reaches ``limit`` or no pair
        occurs twice; ``size`` is the vocabulary size before the first of them."""
        keys = self.keys
        winners = np.empty(self.STEPS_PER_CALL, dtype=np.int32)
        done = 0
        total = limit - size if limit - size < 1 << 24 else 0  # 0: no limit
        while size < limit:
            g = keys.per_key
            status, steps, size = K.run_merges(
                self.STEPS_PER_CALL, size, limit, g("in_vocab", np.uint8), winners, self.tok, self.pk, self.onext,
                self.oprev, self.sstart, self.smult, self.ntypes, keys.words, keys.lens, keys.slots, keys.meta,
                keys.capacity, g("occ", np.int64), g("head", np.int32, -1), g("tail", np.int32, -1),
                g("dirty", np.uint8), self.hocc, self.htail, self.hkey, self.hmeta)
            yield from winners[:steps].tolist()
            done += steps
            if progress:
                progress("merge", done, total)
            if status == K.NO_WINNER or status == 1:
                return
            if status == K.NEED_ROOM:
                self._make_room()

    def _make_room(self) -> None:
        keys = self.keys
        keys.reserve(keys.capacity)  # doubles
        occ, tail = keys.per_key("occ", np.int64), keys.per_key("tail", np.int32, -1)
        live = int((occ[: keys.nkeys] >= 2).sum())
        # the heap has room for one entry per candidate and as many new ones again
        if 2 * live + 1024 > self.hocc.shape[0] // 2:
            self._heap_arrays(max(2 * self.hocc.shape[0], 4 * live + 1024))
        K.heap_rebuild(self.hocc, self.htail, self.hkey, self.hmeta, occ, tail, keys.nkeys)
