"""The key table of the incremental engine (``KeyTable``): every distinct key interned once,
with the per-key arrays that grow with it, and the key states of the merges' classes.
"""

from __future__ import annotations

import numpy as np

from ..kernels import kernels as K
from ..vocab import KEY_BYTES, key_matrix
from .tuning import DEFAULT, Tuning


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


def _pow2_at_least(n: int) -> int:
    return 1 << max(4, (n - 1).bit_length())


class KeyTable:
    """Interned keys (``kernels.keys`` layout) plus per-key arrays that grow with the table.

    Rows and index grow apart. Rows (``words`` and the per-key arrays) are ``np.zeros``,
    whose pages cost no memory until a key is stored in them, so they can be reserved
    generously up front and are rarely copied; the hash index ``slots`` is touched all
    over, so it grows with the keys actually stored (at most half full). ``room`` is how
    many keys fit before either must grow: the ``key_limit`` of the kernels.
    """

    def __init__(self, tuning: Tuning = DEFAULT) -> None:
        capacity = tuning.key_capacity
        self.growth = tuning.growth
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
            row: np.ndarray = np.array(fill, dtype=dtype)
            array: np.ndarray = np.zeros((self.capacity,) + row.shape, dtype=dtype)
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
        """Room for ``extra`` more keys; what has to grow grows by ``growth`` times the
        keys there are as well, so that growing stays rare."""
        need = self.nkeys + extra
        if need <= self.room:
            return
        target = need + int(self.growth * self.nkeys)
        if need > self.capacity:
            self.reserve_rows(target - self.nkeys)
        if need > self.slots.shape[0] // 2:
            self.slots = np.zeros(_pow2_at_least(2 * target), dtype=np.int32)
            K.reindex(self.words, self.nkeys, self.slots)

    def index_size(self, nkeys: int) -> int:
        """The size of an index of ``nkeys`` keys with room for ``growth`` times as many
        more, at most half full, as ``reserve`` leaves it."""
        return _pow2_at_least(2 * (nkeys + int(self.growth * nkeys)))

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


_NO_KEY_STATE = (0, -1, -1, 0)  # OCC, HEAD, TAIL, FLAGS of a key that does not occur


def key_states(keys: KeyTable, classes: int, *, now: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """The key states (OCC, HEAD, TAIL, FLAGS) of slot class 0 and of class 1 (with one
    class, a placeholder that is never read); fetched again after the table grows.
    ``now``: see ``KeyTable.per_key``."""
    kst = keys.per_key("kst", np.int32, _NO_KEY_STATE, now=now)
    return kst, (keys.per_key("kst1", np.int32, _NO_KEY_STATE, now=now) if classes == 2 else _NO_CLASS_1[0])

# What the kernels get for the arrays of class 1 when there is one class
_NO_CLASS_1 = (np.zeros((1, 4), dtype=np.int32), np.zeros(1, dtype=np.int32), np.zeros(1, dtype=np.int64),
               np.zeros(1, dtype=np.int32))
