"""The reference's ``.bin`` vocabulary file: read, validate, write (QUIRKS Q17, docs/format.md).

Layout (x86-64, little-endian; what ``SaveFile`` writes with raw ``fwrite`` of its structs):

    u64 N                      number of vocabulary records
    N x 40-byte record         u8 key[24] (zero padded) | u64 len | i64 id
    u64 M                      number of stored training encodings
    M x (u64 L, L x i64 id)    one encoding per training text

Records are in the iteration order of the C++ ``unordered_map``, not by id; that order is
kept as it is read so a loaded file saves back byte for byte. ``LoadFile`` in the C++
checks nothing; here every field is checked before anything is allocated from it, and a
bad file raises ``FormatError`` naming the file and the byte offset.
"""

from __future__ import annotations

import io
import os
import struct
import sys
from collections.abc import Callable, Iterable
from typing import BinaryIO, NamedTuple

import numpy as np

from ..codec import walk_encodings
from ..common.files import atomic_write
from ..errors import FormatError
from .vocab import KEY_BYTES, key_matrix

RECORD = np.dtype([("key", np.uint8, (KEY_BYTES,)), ("len", "<u8"), ("id", "<i8")])
assert RECORD.itemsize == 40


class BinContents(NamedTuple):  # not a dataclass: importing dataclasses costs 4 ms of every start
    """What a ``.bin`` holds. ``records`` is in file order; ids are 0..N-1, each once."""

    records: np.ndarray  # (N,) RECORD
    encoding_offsets: np.ndarray  # (M + 1,) int64: encoding k is ids[offsets[k]:offsets[k+1]]
    encoding_ids: np.ndarray  # (total,) int64


def read_bin(path: str | os.PathLike[str]) -> BinContents:
    """Read and validate a ``.bin``. Raises FormatError (file, offset) or OSError."""
    name = os.fspath(path)
    with open(name, "rb") as f:
        data = f.read()
    return parse_bin(data, name)


def parse_bin(data: bytes, name: str = "<bytes>") -> BinContents:
    """Validate and decode the bytes of a ``.bin`` (see the module docstring)."""
    size = len(data)

    def fail(offset: int, message: str) -> FormatError:
        return FormatError(name, offset, message)

    if size < 8:
        raise fail(0, f"file too short for the vocabulary count ({size} bytes, need 8)")
    (n,) = struct.unpack_from("<Q", data, 0)
    if n > (size - 16) // RECORD.itemsize:
        if _looks_like_text(data):
            raise fail(0, "this is a text file, not a .bin model (a corpus? `bbpe train` makes a model from one)")
        raise fail(0, f"vocabulary count {n} needs {8 + 40 * n + 8} bytes or more, the file has {size}")
    records = np.frombuffer(data, dtype=RECORD, count=n, offset=8).copy()
    _check_records(records, fail)

    offset = 8 + RECORD.itemsize * n
    (m,) = struct.unpack_from("<Q", data, offset)
    if m > (size - offset - 8) // 8:
        raise fail(offset, f"encoding count {m} needs {8 * m} bytes or more after offset {offset + 8}, "
                           f"the file has {size - offset - 8}")
    offset += 8
    starts = np.empty(m, dtype=np.int64)  # file offset of each encoding's first id
    lengths = np.empty(m, dtype=np.int64)
    offset, k, length = walk_encodings(data, offset, starts, lengths)
    if k >= 0 and length < 0:
        raise fail(offset, f"file ends inside encoding {k} of {m} (no length field)")
    if k >= 0:
        raise fail(offset, f"encoding {k} has length {length}, but only {size - offset - 8} bytes follow")
    if offset != size:
        raise fail(offset, f"{size - offset} bytes of trailing data after the last encoding")
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    # every field is 8-byte aligned, so all ids are one int64 view of the file, gathered
    words = np.frombuffer(data, dtype="<i8", count=size // 8)
    ids = words[np.repeat(starts // 8 - offsets[:-1], lengths) + np.arange(int(offsets[-1]))].astype(np.int64)
    bad = np.flatnonzero((ids < 0) | (ids >= n))
    if bad.size:
        pos = int(bad[0])
        k = int(np.searchsorted(offsets, pos, side="right") - 1)
        at = int(starts[k]) + 8 * (pos - int(offsets[k]))
        raise fail(at, f"encoding {k} holds id {int(ids[pos])}, which is not in the vocabulary (0..{n - 1})")
    return BinContents(records, offsets, ids)


def _looks_like_text(data: bytes) -> bool:
    """A file that starts as text does: no NUL and valid UTF-8 (or GBK) in its first
    kilobytes. A .bin's count field holds NUL bytes for any count below 2**56."""
    head = data[:4096]
    if b"\0" in head:
        return False
    for encoding in ("utf-8", "gbk"):
        try:
            head.decode(encoding)
            return True
        except UnicodeDecodeError as err:
            if err.start >= len(head) - 3:  # cut at the end of the sample
                return True
    return False


def records(keys: list[bytes], record_order: np.ndarray) -> np.ndarray:
    """The vocabulary records of a ``.bin`` for these keys (in id order), in file order
    (``record_order``: the ids as ``SaveFile`` writes them, Q17)."""
    rows, lens = key_matrix(keys)
    out = np.zeros(len(keys), dtype=RECORD)
    out["key"] = rows[record_order]
    out["len"] = lens[record_order]
    out["id"] = record_order
    return out


def _check_records(records: np.ndarray, fail) -> None:
    n = records.shape[0]
    lens = records["len"]
    ids = records["id"]

    def at(index: int, field: int) -> int:
        return 8 + RECORD.itemsize * index + field

    bad = np.flatnonzero((lens == 0) | (lens > KEY_BYTES))
    if bad.size:
        i = int(bad[0])
        raise fail(at(i, 24), f"record {i}: key length {int(lens[i])} is not in 1..{KEY_BYTES}")
    padding = np.arange(KEY_BYTES)[None, :] >= lens[:, None].astype(np.int64)
    bad = np.flatnonzero((records["key"] * padding).any(axis=1))
    if bad.size:
        i = int(bad[0])
        j = int(np.flatnonzero(records["key"][i] * padding[i])[0])
        raise fail(at(i, j), f"record {i}: nonzero byte after the key's {int(lens[i])} bytes")
    bad = np.flatnonzero((ids < 0) | (ids >= n))
    if bad.size:
        i = int(bad[0])
        raise fail(at(i, 32), f"record {i}: id {int(ids[i])} is outside 0..{n - 1}")
    dup = _first_repeat(ids)
    if dup is not None:
        i, j = dup
        raise fail(at(i, 32), f"record {i}: id {int(ids[i])} is already the id of record {j}")
    # a key is its 24 zero-padded bytes plus its length (never 0, so no trailing NUL is lost)
    rows = np.concatenate([records["key"], lens.astype(np.uint8)[:, None]], axis=1)
    dup = _first_repeat(np.ascontiguousarray(rows).view(f"S{KEY_BYTES + 1}").ravel())
    if dup is not None:
        i, j = dup
        key = records["key"][i][: int(lens[i])].tobytes()
        raise fail(at(i, 0), f"record {i}: key {key.hex()} is already the key of record {j}")
    keys = set(rows[lens == 1, 0].tolist())
    for b in range(256):
        if b not in keys:
            raise fail(8, f"no record for the byte 0x{b:02x} (every vocabulary holds all 256 bytes)")


def _first_repeat(values: np.ndarray) -> tuple[int, int] | None:
    """The first index i (in order) whose value occurs at an earlier index j, as (i, j)."""
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    repeats = np.flatnonzero(ordered[1:] == ordered[:-1]) + 1
    if not repeats.size:
        return None
    # within a run of equal values the stable order is by index: the run's head is first
    heads = np.maximum.accumulate(np.where(np.r_[True, ordered[1:] != ordered[:-1]], np.arange(len(values)), 0))
    pick = repeats[np.argmin(order[repeats])]
    return int(order[pick]), int(order[heads[pick]])


def write_contents(f: BinaryIO, contents: BinContents, chunk_ids: int = 1 << 20) -> None:
    """Write the file image of ``contents`` to ``f``, the encodings a chunk at a time."""
    f.write(struct.pack("<Q", contents.records.shape[0]))
    f.write(np.ascontiguousarray(contents.records.astype(RECORD, copy=False)).data)
    offsets = contents.encoding_offsets
    m = offsets.shape[0] - 1
    f.write(struct.pack("<Q", m))
    k = 0
    while k < m:
        # encodings k..stop-1: about chunk_ids ids, and at least one encoding
        stop = max(k + 1, int(np.searchsorted(offsets, offsets[k] + chunk_ids, side="right")) - 1)
        stop = min(stop, m)
        lengths = np.diff(offsets[k : stop + 1])
        f.write(interleaved(lengths, contents.encoding_ids[offsets[k] : offsets[stop]]).data)
        k = stop


def interleaved(lengths: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Encodings in the file's layout, as little-endian int64: each length, then that
    many of ``ids`` (which holds them one after the other)."""
    out = np.empty(int(lengths.sum()) + lengths.shape[0], dtype="<i8")
    length_at = np.cumsum(lengths + 1) - (lengths + 1)  # each L field, then its L ids
    is_id = np.ones(out.shape[0], dtype=bool)
    is_id[length_at] = False
    out[length_at] = lengths
    out[is_id] = ids
    return out


def bin_bytes(contents: BinContents) -> bytes:
    """The file image of ``contents``."""
    buffer = io.BytesIO()
    write_contents(buffer, contents)
    return buffer.getvalue()


def encoding_count(path: str | os.PathLike[str]) -> int:
    """``M``, the number of stored encodings, read from the file's two count fields."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        f.seek(8 + RECORD.itemsize * n)
        (m,) = struct.unpack("<Q", f.read(8))
    return m


def write_bin_streamed(path: str | os.PathLike[str], records: np.ndarray,
                       encodings: Iterable[tuple[int, np.ndarray]]) -> int:
    """Write a ``.bin`` atomically whose stored encodings come block by block, each as
    (texts, int64 words already in the file layout: a length, then the ids), so they are
    never all in memory. Returns the number of encodings, ``M``, which is written last,
    into the place left for it."""
    count = 0

    def write(f: BinaryIO) -> None:
        nonlocal count
        f.write(struct.pack("<Q", records.shape[0]))
        f.write(np.ascontiguousarray(records.astype(RECORD, copy=False)).data)
        at = f.tell()
        f.write(bytes(8))
        writeback = _Writeback(f)
        for texts, words in encodings:
            f.write(words.astype("<i8", copy=False).data)
            writeback.written()
            count += texts
        f.seek(at)
        f.write(struct.pack("<Q", count))
        f.seek(0, io.SEEK_END)

    atomic_write(path, write)
    return count


class _Writeback:
    """Has the kernel start writing a file being written in steps to disk as it goes, so
    that the ``fsync`` before it is renamed into place (``atomic_write``) waits for little
    rather than for the whole file. Linux's ``sync_file_range(SYNC_FILE_RANGE_WRITE)``,
    which does not wait; elsewhere, or if it fails, nothing (the fsync does it all)."""

    STEP = 8 << 20  # bytes written between two calls
    _SYNC_FILE_RANGE_WRITE = 2  # <fcntl.h>

    def __init__(self, f: BinaryIO) -> None:
        self._f = f
        self._done = f.tell()
        self._start = self._function()

    @staticmethod
    def _function() -> Callable[..., int] | None:
        if not sys.platform.startswith("linux"):
            return None
        import ctypes  # here: only a streamed write needs it

        try:
            function = ctypes.CDLL(None).sync_file_range
        except (OSError, AttributeError):
            return None
        function.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
        function.restype = ctypes.c_int
        return function

    def written(self) -> None:
        """Call after each write: every ``STEP`` bytes, what is new is flushed to the kernel
        and its writing started."""
        if self._start is None:
            return
        end = self._f.tell()
        if end - self._done >= self.STEP:
            self._f.flush()
            if self._start(self._f.fileno(), self._done, end - self._done, self._SYNC_FILE_RANGE_WRITE) != 0:
                self._start = None  # a filesystem without it: stop asking
            self._done = end


def write_bin(path: str | os.PathLike[str], contents: BinContents) -> None:
    """Write atomically: a temporary file in the same directory, fsync, then rename."""
    atomic_write(path, lambda f: write_contents(f, contents))
