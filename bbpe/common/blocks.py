"""Cutting a byte stream as the C++ reads it: into blocks that cut no training segment
(each ends right after a one-byte delimiter, QUIRKS Q3), into lines as ``std::getline``
cuts them (Q19), into paragraph texts (Q18), and into parts that threads read at offsets,
from both ends of the corpus. ``Corpus`` (corpus.py) puts these together for each kind of
source; the pieces are here on their own because the trainer's scan and the stored
encodings use them directly.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import threading
from collections.abc import Callable, Iterable, Iterator

CHUNK_BYTES = 1 << 22
# ``training_parts``: two parts that meet take blocks of about this size, one at a time
MEETING_BLOCK_BYTES = 1 << 20
ReadInto = Callable[[int, memoryview], int]  # (offset, buffer) -> bytes read into the buffer from there, 0 at the end
Reader = Callable[[], contextlib.AbstractContextManager[ReadInto]]  # opens the corpus for reading at offsets
Block = bytes | memoryview  # a block of training text: bytes, or a view of a reused buffer
_ONE_BYTE_DELIMITERS = b'\n? !",.'  # Q3


def read_chunks(path: str | os.PathLike[str], chunk_bytes: int = CHUNK_BYTES, start: int = 0,
                stop: int | None = None) -> Iterator[bytes]:
    """The bytes of a file in chunks (from ``start``, to ``stop`` or the end). Raises
    OSError naming the file if it can't be read."""
    with open(path, "rb") as f:
        f.seek(start)
        left = -1 if stop is None else stop - start
        while left != 0 and (chunk := f.read(chunk_bytes if left < 0 else min(chunk_bytes, left))):
            left -= len(chunk) if left > 0 else 0
            yield chunk


def cut_blocks(chunks: Iterable[bytes], last_cut: Callable[[bytes], int]) -> Iterator[bytes]:
    """Re-cut a byte stream into blocks that end where ``last_cut`` says (an offset just
    past the cut, 0 for none); what follows the last cut waits for the next chunk."""
    pending: list[bytes] = []
    for chunk in chunks:
        cut = last_cut(chunk)
        if cut == 0:
            pending.append(chunk)
            continue
        pending.append(chunk[:cut])
        yield b"".join(pending)
        pending = [chunk[cut:]] if cut < len(chunk) else []
    tail = b"".join(pending)
    if tail:
        yield tail


def after_last_delimiter(chunk: bytes | bytearray, end: int | None = None) -> int:
    """Just past the last one-byte delimiter (Q3) in ``chunk[:end]``; 0 when there is none."""
    end = len(chunk) if end is None else end
    return max(chunk.rfind(_DELIMITER_BYTES[d], 0, end) for d in _ONE_BYTE_DELIMITERS) + 1


_DELIMITER_BYTES = {d: bytes([d]) for d in _ONE_BYTE_DELIMITERS}


_FIRST_DELIMITER = re.compile(b"[" + re.escape(_ONE_BYTE_DELIMITERS) + b"]")


def part_cuts(read_into: ReadInto, size: int, parts: int, after: re.Pattern[bytes] = _FIRST_DELIMITER) -> list[int]:
    """Offsets that cut a corpus of ``size`` bytes into up to ``parts`` consecutive parts of
    about equal size: each cut is right after the first match of ``after`` (a one-byte
    class: by default the one-byte delimiters, so no training segment spans two parts) at
    or after an equal share; a share that falls before the previous cut makes none.
    ``[0, cut, ..., size]``."""
    cuts = [0]
    window = memoryview(bytearray(1 << 16))
    for i in range(1, parts):
        start = size * i // parts
        if start < cuts[-1]:
            continue
        cut = _after_first_match(read_into, start, after, window)
        if cut < 0 or cut >= size:
            break  # no match from here on: no later share has one either
        cuts.append(cut)
    return cuts + [size]


def _after_first_match(read_into: ReadInto, start: int, pattern: re.Pattern[bytes], window: memoryview) -> int:
    """The offset just past the first match of a one-byte ``pattern`` at or after
    ``start``, or -1."""
    while n := read_into(start, window):
        found = pattern.search(window[:n])
        if found:
            return start + found.end()
        start += n
    return -1


@contextlib.contextmanager
def file_reader(path: str) -> Iterator[ReadInto]:
    """A corpus file opened for reads at offsets, safe from several threads at once."""
    with open(path, "rb", buffering=0) as f:
        if hasattr(os, "preadv"):
            fd = f.fileno()
            yield lambda offset, view: os.preadv(fd, [view], offset)
            return
        lock = threading.Lock()  # no pread (Windows): one seek and read at a time

        def read_into(offset: int, view: memoryview) -> int:
            with lock:
                f.seek(offset)
                return f.readinto(view) or 0

        yield read_into


@contextlib.contextmanager
def memory_reader(data: bytes) -> Iterator[ReadInto]:
    """Lines given in memory, read at offsets as a file would be."""
    whole = memoryview(data)

    def read_into(offset: int, view: memoryview) -> int:
        piece = whole[offset : offset + len(view)]
        view[: len(piece)] = piece
        return len(piece)

    yield read_into


def read_fully(read_into: ReadInto, offset: int, view: memoryview) -> int:
    """Fill ``view`` from ``offset`` (fewer bytes only at the end of the corpus)."""
    done = 0
    while done < len(view) and (n := read_into(offset + done, view[done:])):
        done += n
    return done


def reused_blocks(reader: Reader, start: int, stop: int | None, block_bytes: int,
                  last_cut: Callable[[bytearray, int], int]) -> Iterator[memoryview]:
    """The corpus bytes from ``start`` to ``stop`` (or the end) in blocks of about
    ``block_bytes`` that end where ``last_cut(buffer, end)`` says (the offset just past the
    last cut in ``buffer[:end]``, 0 for none; a block without one grows until it has one or
    the bytes end). All blocks are views of one buffer, read into again for the next
    block, so each is valid only until the next is asked for: the reads make no fresh
    memory, where bytes objects would for every block.
    """
    buf = bytearray(block_bytes)
    held = 0  # bytes at the start of buf that the last block left over
    with reader() as read_into:
        while True:
            want = len(buf) - held if stop is None else min(len(buf) - held, stop - start)
            n = read_fully(read_into, start, memoryview(buf)[held : held + want]) if want > 0 else 0
            start += n
            filled = held + n
            if n == 0:
                if filled:
                    yield memoryview(buf)[:filled]
                return
            cut = last_cut(buf, filled)
            if cut == 0:
                if filled == len(buf):  # no cut in a whole buffer: a longer block
                    buf = buf + bytes(len(buf))
                held = filled
                continue
            yield memoryview(buf)[:cut]
            buf[: filled - cut] = buf[cut:filled]  # same length: allowed while views exist
            held = filled - cut


class BackwardBlocks:
    """The blocks of a part of the corpus that come last to first (the scan then goes
    through each block from its end, ``scan_types_backward``)."""

    def __init__(self, blocks: Iterable[Block]) -> None:
        self._blocks = blocks

    def __iter__(self) -> Iterator[Block]:
        return iter(self._blocks)


def meeting_parts(reader: Reader, cuts: list[int], parts: int) -> list[Iterable[Block]]:
    """The blocks between ``cuts`` in ``parts`` parts (``Corpus.training_parts``): a range
    of consecutive blocks for each pair of parts, which meet in it, and for an odd part
    out a range of half the size, all its own; the last block reads on to the end."""
    nblocks = len(cuts) - 1
    threads = [2] * (parts // 2) + [1] * (parts % 2)
    bounds = [nblocks * done // parts for done in itertools.accumulate(threads, initial=0)]
    out: list[Iterable[Block]] = []
    for pair, lo, hi in zip(threads, bounds, bounds[1:]):
        meeting = _Meeting(reader, cuts[lo : hi + 1], to_end=hi == nblocks)
        out.append(meeting.blocks(front=True))
        if pair == 2:
            out.append(BackwardBlocks(meeting.blocks(front=False)))
    return out


class _Meeting:
    """Blocks of the corpus (between consecutive ``cuts``) taken one at a time by two
    readers, one from the first block on and one from the last block back, until they
    meet; each reads its blocks into a buffer of its own, reused (a block is valid until
    the reader's next one is asked for). ``to_end``: the last block reads on to the end of
    the corpus, wherever that is now."""

    def __init__(self, reader: Reader, cuts: list[int], *, to_end: bool) -> None:
        self._reader, self._cuts, self._to_end = reader, cuts, to_end
        self._lock = threading.Lock()
        self._next, self._last = 0, len(cuts) - 2  # the first and last blocks not yet taken

    def _take(self, front: bool) -> int:
        """A block not taken yet (from the front or the back), or -1."""
        with self._lock:
            if self._next > self._last:
                return -1
            if front:
                self._next += 1
                return self._next - 1
            self._last -= 1
            return self._last + 1

    def blocks(self, *, front: bool) -> Iterator[memoryview]:
        buf = bytearray(0)
        with self._reader() as read_into:
            while (i := self._take(front)) >= 0:
                start, stop = self._cuts[i], self._cuts[i + 1]
                to_end = self._to_end and i == len(self._cuts) - 2
                want = stop - start + (1 if to_end else 0)  # a byte more: has the corpus grown?
                n = 0
                while True:
                    if len(buf) < want:
                        buf = bytearray(want)  # a new buffer: the last block's view stays valid
                        n = 0  # (and is read again into it)
                    n += read_fully(read_into, start + n, memoryview(buf)[n:want])
                    if not to_end or n < want:
                        break
                    want *= 2  # the corpus has grown since its size was taken: read on
                if n:
                    yield memoryview(buf)[:n]


def after_last_lf(chunk: bytes | bytearray, end: int | None = None) -> int:
    """Just past the last LF in ``chunk[:end]``; 0 when there is none."""
    return chunk.rfind(b"\n", 0, len(chunk) if end is None else end) + 1


FIRST_LF = re.compile(b"\n")


def block_lines(block: bytes) -> list[bytes]:
    """``std::getline`` over a block of whole lines: ``b'a\\n\\nb\\n' -> [b'a', b'', b'b']``."""
    lines = block.split(b"\n")
    if lines[-1] == b"":
        lines.pop()  # the LF ends the last line; it starts no new one
    return lines


def split_lines(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """``std::getline`` over a byte stream: ``[b'a\\nb', b'c\\n'] -> b'a', b'bc'``."""
    for block in cut_blocks(chunks, after_last_lf):
        yield from block_lines(block)


def windows_text(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """What MSVC's text mode reads (Q19): CRLF becomes LF, and Ctrl-Z (0x1A) ends the file.

    ``[b'a\r', b'\nb\x1ac'] -> b'a', b'\nb'``; a CR on its own stays.
    """
    held = b""
    for chunk in chunks:
        chunk = held + chunk
        end = chunk.find(b"\x1a")
        if end >= 0:
            yield chunk[:end].replace(b"\r\n", b"\n")
            return
        held = b"\r" if chunk.endswith(b"\r") else b""  # its LF may start the next chunk
        yield chunk[: len(chunk) - len(held)].replace(b"\r\n", b"\n")
    if held:
        yield held


def paragraph_texts(lines: Iterable[bytes]) -> Iterator[bytes]:
    """Q18: non-empty lines, with ``\\n`` on the last line of each paragraph.

    ``[b'', b'a', b'b', b'', b'c'] -> b'a', b'b\\n', b'c\\n'``
    """
    return (text for _, text in numbered_texts(lines))


def numbered_texts(lines: Iterable[bytes]) -> Iterator[tuple[int, bytes]]:
    """``paragraph_texts``, with the (1-based) line number of each text."""
    pending: tuple[int, bytes] | None = None
    for lineno, line in enumerate(lines, 1):
        if not line:
            if pending is not None:
                yield pending[0], pending[1] + b"\n"
                pending = None
            continue
        if pending is not None:
            yield pending
        pending = (lineno, line)
    if pending is not None:
        yield pending[0], pending[1] + b"\n"
