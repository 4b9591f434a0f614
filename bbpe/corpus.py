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

import os
import warnings
from collections.abc import Callable, Iterable, Iterator

from .errors import GBKError, GBKWarning
from .gbk import gbk_line_problem, gbk_to_utf8

CHUNK_BYTES = 1 << 22
_ONE_BYTE_DELIMITERS = b'\n? !",.'  # Q3


def read_chunks(path: str | os.PathLike[str], chunk_bytes: int = CHUNK_BYTES) -> Iterator[bytes]:
    """The bytes of a file in chunks. Raises OSError naming the file if it can't be read."""
    with open(path, "rb") as f:
        while chunk := f.read(chunk_bytes):
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

    def __init__(self, chunks: Callable[[], Iterator[bytes]], *, gbk: bool = False, size: int = 0,
                 name: str = "<lines>", strict: bool = False) -> None:
        self._chunks = chunks
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
            return cls(lambda: iter(()), gbk=gbk, name=path)
        with open(path, "rb"):
            pass
        chunks = (lambda: windows_text(read_chunks(path))) if windows else (lambda: read_chunks(path))
        return cls(chunks, gbk=gbk, size=os.path.getsize(path), name=path, strict=strict)

    @classmethod
    def from_lines(cls, lines: Iterable[str | bytes], *, gbk: bool = False, strict: bool = False) -> Corpus:
        """Lines given one by one, as the lines of a file (an item holding LF is several
        lines; a ``str`` is UTF-8 encoded). They are kept, joined, since training reads
        the corpus twice."""
        data = b"\n".join(line.encode("utf-8", "surrogatepass") if isinstance(line, str) else bytes(line)
                          for line in lines)
        return cls(lambda: iter((data,)), gbk=gbk, size=len(data), strict=strict)

    def chunks(self) -> Iterator[bytes]:
        """The raw bytes, in chunks."""
        return self._chunks()

    def texts(self) -> Iterator[bytes]:
        """The training texts as ``Train`` and ``Encode`` see them (after ``ToUTF8``)."""
        if not self.gbk:
            return paragraph_texts(split_lines(self._chunks()))
        return self._gbk_texts()

    def _gbk_texts(self) -> Iterator[bytes]:
        report = not self._reported  # the corpus is read twice: report once
        self._reported = True
        problems = 0
        for lineno, text in numbered_texts(split_lines(self._chunks())):
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
            return _cut_blocks(self._chunks(), _after_last_delimiter)
        return _joined(self.texts())

    def line_blocks(self) -> Iterator[tuple[bytes, bool]]:
        """UTF-8 mode: blocks of whole lines, and whether the block's last line ends a
        paragraph (the next line is empty, or there is none)."""
        previous = None
        for block in _cut_blocks(self._chunks(), _after_last_lf):
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
