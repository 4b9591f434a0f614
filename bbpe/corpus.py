"""A training corpus, read as ``LoadDataFileTrain`` reads it (QUIRKS Q18), in blocks.

The C++ cuts the file into lines the way ``std::getline`` does (a last line without LF
still counts, a final LF makes no extra empty line; CR stays in the line, Q19). Empty lines
separate paragraphs; every non-empty line is one training text, and the last line of each
paragraph gets ``"\\n"`` appended.

Training never needs the texts one by one: LF is a training delimiter (Q3), so any block
of the file that ends right after a one-byte delimiter cuts no segment, and the trainer
reads the raw file in such blocks. The stored encodings need the texts, and get them as
blocks of whole lines plus whether the block's last line ends a paragraph. Only GBK mode
(each text converted on its own, NUL ending it) goes text by text. Nothing holds more than
a block and one line.
"""

from __future__ import annotations

import itertools
import os
import re
import warnings
from collections.abc import Callable, Iterable, Iterator

from .errors import GBKError, GBKWarning
from .gbk import gbk_line_problem, gbk_to_utf8

CHUNK_BYTES = 1 << 22
MIN_PART_BYTES = 1 << 22  # ``training_parts``: smaller parts are not worth a thread (measured on mixed, 6 MB)
RangeReader = Callable[[int, "int | None", int], Iterator[bytes]]  # (start, stop, chunk bytes) -> chunks
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


def _cut_blocks(chunks: Iterable[bytes], last_cut: Callable[[bytes], int]) -> Iterator[bytes]:
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


def _after_last_delimiter(chunk: bytes) -> int:
    return max(chunk.rfind(bytes([d])) for d in _ONE_BYTE_DELIMITERS) + 1


_FIRST_DELIMITER = re.compile(b"[" + re.escape(_ONE_BYTE_DELIMITERS) + b"]")


def part_cuts(read_range: RangeReader, size: int, parts: int) -> list[int]:
    """Offsets that cut a corpus of ``size`` bytes into up to ``parts`` consecutive parts of
    about equal size: each cut is right after the first one-byte delimiter at or after an
    equal share, so no training segment spans two parts. ``[0, cut, ..., size]``."""
    cuts = [0]
    for i in range(1, parts):
        start = max(size * i // parts, cuts[-1])
        for chunk in read_range(start, size, 1 << 16):
            found = _FIRST_DELIMITER.search(chunk)
            if found:
                if start + found.end() < size:
                    cuts.append(start + found.end())
                break
            start += len(chunk)
    return cuts + [size]


def _after_last_lf(chunk: bytes) -> int:
    return chunk.rfind(b"\n") + 1


def block_lines(block: bytes) -> list[bytes]:
    """``std::getline`` over a block of whole lines: ``b'a\\n\\nb\\n' -> [b'a', b'', b'b']``."""
    lines = block.split(b"\n")
    if lines[-1] == b"":
        lines.pop()  # the LF ends the last line; it starts no new one
    return lines


def split_lines(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """``std::getline`` over a byte stream: ``[b'a\\nb', b'c\\n'] -> b'a', b'bc'``."""
    for block in _cut_blocks(chunks, _after_last_lf):
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


class Corpus:
    """A corpus file or in-memory lines; every method starts a fresh pass over it.

    In GBK mode (Q19) every text is converted as the reference converts it; a text that
    conversion changes (bytes that are not GBK become U+FFFD, a NUL ends the text) is
    reported with its line number: a ``GBKWarning`` (the first few, then a count), or a
    ``GBKError`` when ``strict``.
    """

    WARN_LINES = 5

    def __init__(self, chunks: Callable[[int], Iterator[bytes]], *, gbk: bool = False, size: int = 0,
                 name: str = "<lines>", strict: bool = False, read_range: RangeReader | None = None) -> None:
        self._chunks = chunks  # chunk bytes -> the raw bytes in chunks of about that size
        self._read_range = read_range  # random access to the raw bytes, if the corpus has it
        self.gbk = gbk
        self.size = size  # in bytes, for progress (0 if unknown)
        self.name = name
        self.strict = strict
        self._reported = False

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], *, gbk: bool = False, missing_is_empty: bool = False,
                  windows: bool = False, strict: bool = False) -> Corpus:
        """A corpus file. The reference trains on nothing when the file cannot be opened
        (Q18); that only happens with ``missing_is_empty`` (``--bug-compat``), otherwise
        OSError names the file now, not halfway through training. ``windows``: read it as
        MSVC's text mode does (``windows_text``)."""
        path = os.fspath(path)
        if os.path.isdir(path):
            raise IsADirectoryError(f"{path}: is a directory, not a corpus file")
        if not os.path.exists(path) and missing_is_empty:
            return cls(lambda _: iter(()), gbk=gbk, name=path)
        with open(path, "rb"):
            pass
        if windows:  # text mode changes offsets, and a Ctrl-Z ends everything after it
            return cls(lambda chunk_bytes: windows_text(read_chunks(path, chunk_bytes)), gbk=gbk,
                       size=os.path.getsize(path), name=path, strict=strict)
        return cls(lambda chunk_bytes: read_chunks(path, chunk_bytes), gbk=gbk, size=os.path.getsize(path), name=path,
                   strict=strict, read_range=lambda start, stop, chunk_bytes: read_chunks(path, chunk_bytes, start, stop))

    @classmethod
    def from_lines(cls, lines: Iterable[str | bytes], *, gbk: bool = False, strict: bool = False) -> Corpus:
        """Lines given one by one, as the lines of a file (an item holding LF is several
        lines; a ``str`` is UTF-8 encoded). They are kept, joined, since training reads
        the corpus twice."""
        data = b"\n".join(line.encode("utf-8", "surrogatepass") if isinstance(line, str) else bytes(line)
                          for line in lines)

        def read_range(start: int, stop: int | None, chunk_bytes: int) -> Iterator[bytes]:
            end = len(data) if stop is None else stop
            return (data[i : min(i + chunk_bytes, end)] for i in range(start, end, chunk_bytes))

        return cls(lambda chunk_bytes: read_range(0, None, chunk_bytes), gbk=gbk, size=len(data), strict=strict,
                   read_range=read_range)

    def chunks(self, chunk_bytes: int | None = None) -> Iterator[bytes]:
        """The raw bytes, in chunks of ``chunk_bytes`` (default ``CHUNK_BYTES``)."""
        return self._chunks(chunk_bytes or CHUNK_BYTES)

    def texts(self) -> Iterator[bytes]:
        """The training texts as ``Train`` and ``Encode`` see them (after ``ToUTF8``)."""
        if not self.gbk:
            return paragraph_texts(split_lines(self.chunks()))
        return self._gbk_texts()

    def _gbk_texts(self) -> Iterator[bytes]:
        report = not self._reported  # the corpus is read twice: report once
        self._reported = True
        problems = 0
        for lineno, text in numbered_texts(split_lines(self.chunks())):
            message = gbk_line_problem(self.name, lineno, text) if report else None
            if message:
                problems += 1
                if self.strict:
                    raise GBKError(message)
                if problems <= self.WARN_LINES:
                    warnings.warn(message, GBKWarning, stacklevel=2)
            yield gbk_to_utf8(text)
        if problems > self.WARN_LINES:
            warnings.warn(f"{self.name}: {problems - self.WARN_LINES} more lines are not GBK", GBKWarning,
                          stacklevel=2)

    def training_blocks(self) -> Iterator[bytes]:
        """UTF-8 blocks that cut no training segment (the trainer's input)."""
        if not self.gbk:
            return _cut_blocks(self.chunks(), _after_last_delimiter)
        return _joined(self.texts())

    def training_parts(self, parts: int) -> list[Iterator[bytes]]:
        """``training_blocks`` in up to ``parts`` consecutive parts of about equal size (at
        least ``MIN_PART_BYTES``), each an iterator of blocks, for a scan on that many
        threads (``part_cuts``). One part in GBK mode, in Windows text mode, or for a
        corpus without random access."""
        parts = min(parts, self.size // MIN_PART_BYTES)
        if self.gbk or self._read_range is None or parts < 2:
            return [self.training_blocks()]
        read_range = self._read_range
        cuts: list[int | None] = list(part_cuts(read_range, self.size, parts))
        cuts[-1] = None  # the last part reads to the end, whatever the size was
        return [_cut_blocks(read_range(start, stop, CHUNK_BYTES), _after_last_delimiter)
                for start, stop in itertools.pairwise(cuts)]

    def line_blocks(self, block_bytes: int | None = None) -> Iterator[tuple[bytes, bool]]:
        """UTF-8 mode: blocks of whole lines (about ``block_bytes`` each, default
        ``CHUNK_BYTES``; a longer line is a block of its own), and whether the block's last
        line ends a paragraph (the next line is empty, or there is none)."""
        previous = None
        for block in _cut_blocks(self.chunks(block_bytes), _after_last_lf):
            if previous is not None:
                yield previous, block.startswith(b"\n")
            previous = block
        if previous is not None:
            yield previous, True


def _joined(texts: Iterable[bytes], block_bytes: int = CHUNK_BYTES) -> Iterator[bytes]:
    batch: list[bytes] = []
    size = 0
    for text in texts:
        batch.append(text)
        size += len(text) + 1
        if size >= block_bytes:
            yield b"\n".join(batch)
            batch, size = [], 0
    if batch:
        yield b"\n".join(batch)
