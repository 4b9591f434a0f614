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

import contextlib
import itertools
import os
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import BinaryIO, Protocol

from ..errors import CorpusError, CorpusWarning, GBKError, GBKWarning
from .blocks import (
    CHUNK_BYTES,
    FIRST_LF,
    MEETING_BLOCK_BYTES,
    Block,
    Reader,
    ReadInto,
    after_last_delimiter,
    after_last_lf,
    cut_blocks,
    file_reader,
    meeting_parts,
    memory_reader,
    numbered_texts,
    paragraph_texts,
    part_cuts,
    read_chunks,
    reused_blocks,
    split_lines,
    windows_text,
)
from .gbk import gbk_line_problem, gbk_to_utf8

MIN_PART_BYTES = 1 << 22  # ``training_parts``: smaller parts are not worth a thread (measured on mixed, 6 MB)


class Corpus:
    """A corpus file or in-memory lines; every method starts a fresh pass over it.

    In GBK mode (Q19) every text is converted as the reference converts it; a text that
    conversion changes (bytes that are not GBK become U+FFFD, a NUL ends the text) is
    reported with its line number: a ``GBKWarning`` (the first few, then a count), or a
    ``GBKError`` when ``strict``.
    """

    WARN_LINES = 5

    def __init__(self, chunks: Callable[[int], Iterator[bytes]], *, gbk: bool = False, size: int = 0,
                 name: str = "<lines>", strict: bool = False, reader: Reader | None = None) -> None:
        self._chunks = chunks  # chunk bytes -> the raw bytes in chunks of about that size
        self._reader = reader  # reads at offsets (reused buffers, threads), if the corpus allows it
        self.gbk = gbk
        self.size = size  # in bytes, for progress (0 if unknown)
        self.name = name
        self.strict = strict
        self._reported = False
        self._spool: object = None  # a temporary copy of a pipe, kept as long as the corpus
        self._files: list[tuple[str, int]] = [(name, 0)]  # each file's name and first offset (from_files)
        self._whole: Callable[[], contextlib.AbstractContextManager[bytes | memoryview]] | None = None  # all bytes

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
        with open(path, "rb") as f:
            try:
                os.lseek(f.fileno(), 0, os.SEEK_CUR)
            except OSError:  # a pipe: see _spooled
                return cls._spooled(f, path, gbk=gbk, windows=windows, strict=strict)
        if windows:  # text mode changes offsets, and a Ctrl-Z ends everything after it
            return cls(lambda chunk_bytes: windows_text(read_chunks(path, chunk_bytes)), gbk=gbk,
                       size=os.path.getsize(path), name=path, strict=strict)
        corpus = cls(lambda chunk_bytes: read_chunks(path, chunk_bytes), gbk=gbk, size=os.path.getsize(path),
                     name=path, strict=strict, reader=lambda: file_reader(path))
        corpus._whole = lambda: _mapped(path)
        return corpus

    @classmethod
    def from_files(cls, paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]], *, gbk: bool = False,
                   missing_is_empty: bool = False, windows: bool = False, strict: bool = False) -> Corpus:
        """One or more corpus files (``"-"``: standard input), as their concatenation: what
        the C++ reads from ``cat a.txt b.txt``. One file is ``from_file``; several, or
        stdin, are copied to a temporary file first (``_spooled``), each checked before."""
        if isinstance(paths, (str, os.PathLike)):
            paths = [paths]
        elif isinstance(paths, (bytes, bytearray)) or not hasattr(paths, "__iter__"):
            raise TypeError(f"the corpus must be a path or a list of paths (str or os.PathLike), got "
                            f"{type(paths).__name__}")
        names: list[str] = []
        for i, path in enumerate(paths):
            if not isinstance(path, (str, os.PathLike)):
                raise TypeError(f"corpus path {i} must be a str or os.PathLike, got {type(path).__name__}")
            names.append(os.fspath(path))
        if not names:
            raise ValueError("no corpus file given")
        if len(names) == 1 and names[0] != "-":
            return cls.from_file(names[0], gbk=gbk, missing_is_empty=missing_is_empty, windows=windows, strict=strict)
        for name in names:
            if name != "-" and os.path.isdir(name):
                raise IsADirectoryError(f"{name}: is a directory, not a corpus file")
            if name != "-" and not os.path.exists(name) and not missing_is_empty:
                open(name, "rb").close()  # the OSError that names it, now
        if names.count("-") > 1:
            raise ValueError("standard input ('-') can be read only once")
        sizes: list[int] = []
        corpus = cls._spooled(_Concatenated(names, sizes), " + ".join(names).replace("-", "<stdin>", 1) if
                              names == ["-"] else " + ".join(names), gbk=gbk, windows=windows, strict=strict)
        starts = itertools.accumulate([0, *sizes[:-1]])
        corpus._files = [("<stdin>" if name == "-" else name, start) for name, start in zip(names, starts)]
        return corpus

    def check_utf8(self) -> Callable[[], None]:
        """Check that the corpus is valid UTF-8; returns ``report``, to call once training
        is under way. A corpus that is not is refused now with ``strict``
        (``CorpusError``); otherwise ``report`` warns (``CorpusWarning``), naming the file,
        the byte offset and the line of its first invalid sequence. The C++ trains on such
        bytes as they are, and bbpe does too: the vocabulary is the reference's, but it
        holds keys that are not text (a GBK corpus trained without ``gbk``, most likely).
        Without ``strict`` the check runs on a thread of its own (it releases the GIL),
        beside the start of training, where a core is idle (zh-large: 23 ms of work)."""
        if self.strict:
            found = self.first_invalid_utf8()
            if found is not None:
                raise CorpusError(_not_utf8(*found))
            return lambda: None
        result: list[tuple[str, int, int] | None] = []
        worker = threading.Thread(target=lambda: result.append(self.first_invalid_utf8()), name="bbpe-utf8",
                                  daemon=True)
        worker.start()

        def report() -> None:
            worker.join()
            if not result:
                return  # the check failed (reading the corpus): training meets the same error and says so
            if result[0] is not None:
                # stacklevel: this, the pipeline, the facade's _train and train (or train_from_iterator)
                warnings.warn(_not_utf8(*result[0]) + "; strict=True (--strict) refuses it", CorpusWarning,
                              stacklevel=5)

        return report

    def first_invalid_utf8(self) -> tuple[str, int, int] | None:
        """(file, byte offset in it, line) of the corpus's first byte sequence that is not
        valid UTF-8 (a sequence cut by the end of the corpus included), or None. One pass
        over the raw bytes, validated in the codec without the GIL, copying nothing: a
        char cut by the end of a chunk is checked joined with the next chunk's first bytes."""
        from ._fast import utf8_valid_prefix  # compiled: imported when used, as by the tokenizer

        if self._whole is not None:  # the file mapped, or the lines in memory: one call, no copy
            with self._whole() as data:
                valid, _ = utf8_valid_prefix(data)
                size = len(data)
            return None if valid == size else self._located(valid)
        carry = b""
        offset = 0  # of the chunk
        for chunk in self.chunks():
            start = 0
            if carry:  # a char the last chunk cut: it ends in this chunk's first 3 bytes, or is invalid
                joined = carry + chunk[:3]
                valid, invalid = utf8_valid_prefix(joined)
                if valid < len(carry):
                    if invalid or len(joined) == len(carry) + 3:
                        return self._located(offset - len(carry))
                    carry = joined  # still cut: a chunk of one or two bytes
                    offset += len(chunk)
                    continue
                start = valid - len(carry)
            valid, invalid = utf8_valid_prefix(chunk, start)
            if invalid:
                return self._located(offset + valid)
            carry = chunk[valid:]
            offset += len(chunk)
        return self._located(offset - len(carry)) if carry else None

    def _located(self, offset: int) -> tuple[str, int, int]:
        """(file, offset in it, line in it) of an offset of the corpus (an error path: the
        lines are counted by reading again)."""
        name, start = next((name, start) for name, start in reversed(self._files) if start <= offset)
        lines = sum(chunk.count(b"\n") for chunk in _slice(self.chunks(), start, offset))
        return name, offset - start, lines + 1

    @classmethod
    def _spooled(cls, stream: _Readable, name: str, **options: bool) -> Corpus:
        """A corpus from a stream that cannot be read at offsets, nor twice (a pipe, as in
        ``bbpe train <(zcat corpus.gz)``), where training reads the corpus twice at offsets
        (the vocabulary, then the stored encodings): it is copied to a temporary file
        first (as the C++ reads the whole file into memory first), which goes when the
        corpus does."""
        import shutil  # here: their imports cost every start 2 ms, and only a pipe needs them
        import tempfile

        linux = os.path.isdir("/proc/self/fd")  # an unnamed file, reopened through /proc: gone if we are killed
        spool = tempfile.TemporaryFile() if linux else tempfile.NamedTemporaryFile(prefix="bbpe-corpus-")  # noqa: SIM115
        try:
            shutil.copyfileobj(stream, spool, CHUNK_BYTES)
            spool.flush()
            corpus = cls.from_file(f"/proc/self/fd/{spool.fileno()}" if linux else spool.name, **options)
        except BaseException:
            spool.close()
            raise
        corpus.name = name
        corpus._files = [(name, 0)]  # warnings name the pipe as given, not /proc/self/fd/N
        corpus._spool = spool  # kept open as long as the corpus: it closes (and goes) with it
        return corpus

    @classmethod
    def from_lines(cls, lines: Iterable[str | bytes], *, gbk: bool = False, strict: bool = False) -> Corpus:
        """Lines given one by one, as the lines of a file (an item holding LF is several
        lines; a ``str`` is UTF-8 encoded). They are kept, joined, since training reads
        the corpus twice."""
        if isinstance(lines, (str, bytes, bytearray, memoryview, os.PathLike)):
            raise TypeError(f"lines must be an iterable of str or bytes lines, got one {type(lines).__name__}; "
                            "to train on a file, give its path to Tokenizer.train")
        if not hasattr(lines, "__iter__"):
            raise TypeError(f"lines must be an iterable of str or bytes lines, got {type(lines).__name__}")
        data = b"\n".join(_line_bytes(line, i) for i, line in enumerate(lines))

        def chunks(chunk_bytes: int) -> Iterator[bytes]:
            return (data[i : i + chunk_bytes] for i in range(0, len(data), chunk_bytes))

        corpus = cls(chunks, gbk=gbk, size=len(data), strict=strict, reader=lambda: memory_reader(data))
        corpus._whole = lambda: contextlib.nullcontext(data)
        return corpus

    def close(self) -> None:
        """Let go of the temporary copy of a pipe or of several files, if there is one (it
        goes anyway when the corpus is collected, with a ResourceWarning)."""
        spool, self._spool = self._spool, None
        if spool is not None:
            spool.close()  # type: ignore[attr-defined]

    def chunks(self, chunk_bytes: int | None = None) -> Iterator[bytes]:
        """The raw bytes, in chunks of ``chunk_bytes`` (default ``CHUNK_BYTES``)."""
        return self._chunks(chunk_bytes or CHUNK_BYTES)

    def texts(self) -> Iterator[bytes]:
        """The training texts as ``Train`` and ``Encode`` see them (after ``ToUTF8``)."""
        if not self.gbk:
            return paragraph_texts(split_lines(self.chunks()))
        return self._gbk_texts()

    def count_texts(self) -> int:
        """How many training texts ``texts`` gives (the non-empty lines), counted in one
        pass over the raw bytes without making them: a non-empty line ends at an LF that
        follows another byte, or at the end (``b"a\\n\\nb"`` -> 2). numpy, not
        ``bytes.count``: 10 ms on 24 MB of Chinese where counting ``b"x\\n"`` in a
        translated copy takes 110."""
        import numpy as np  # here, as the codec is: importing bbpe imports neither

        count, after_lf = 0, True  # the corpus starts a line
        for chunk in self.chunks():
            if not chunk:
                continue
            lf = np.frombuffer(chunk, dtype=np.uint8) == 0x0A
            count += int(np.count_nonzero(lf[1:] > lf[:-1])) + (bool(lf[0]) and not after_lf)
            after_lf = bool(lf[-1])
        return count + (not after_lf)

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

    def training_blocks(self) -> Iterator[Block]:
        """UTF-8 blocks that cut no training segment (the trainer's input). A block may be
        a view of a buffer that the next block is read into: use it before asking for
        the next."""
        if self.gbk:
            return _joined(self.texts())
        if self._reader is None:
            return cut_blocks(self.chunks(), after_last_delimiter)
        return reused_blocks(self._reader, 0, None, CHUNK_BYTES, after_last_delimiter)

    def training_parts(self, parts: int) -> list[Iterable[Block]]:
        """``training_blocks`` in up to ``parts`` consecutive parts (each at least
        ``MIN_PART_BYTES`` on the average), each an iterable of blocks, for a scan on that
        many threads. One part in GBK mode, in Windows text mode, or for a corpus without
        random access.

        The parts go in pairs that meet (``_Meeting``): the corpus is cut into blocks of
        about ``MEETING_BLOCK_BYTES`` (``part_cuts``), a range of them for each pair, and
        of a pair, the first part takes the range's blocks from its start and the second
        (a ``BackwardBlocks``) from its end, one at a time, until they meet. So the
        threads finish together however unevenly the work is spread (the later half of
        zh-large has half as many lists again as the earlier one). An odd part out
        takes a range of its own (half a pair's) from the start."""
        parts = min(parts, self.size // MIN_PART_BYTES)
        if self.gbk or self._reader is None or parts < 2:
            return [self.training_blocks()]
        with self._reader() as read_into:
            cuts = part_cuts(read_into, self.size, max(parts, self.size // MEETING_BLOCK_BYTES))
        if len(cuts) < 3:  # no one-byte delimiter to cut at
            return [self.training_blocks()]
        return meeting_parts(self._reader, cuts, parts)

    def line_blocks(self, block_bytes: int | None = None) -> Iterator[tuple[bytes, bool]]:
        """UTF-8 mode: blocks of whole lines (about ``block_bytes`` each, default
        ``CHUNK_BYTES``; a longer line is a block of its own), and whether the block's last
        line ends a paragraph (the next line is empty, or there is none)."""
        previous = None
        for block in cut_blocks(self.chunks(block_bytes), after_last_lf):
            if previous is not None:
                yield previous, block.startswith(b"\n")
            previous = block
        if previous is not None:
            yield previous, True

    def line_ranges(self, block_bytes: int) -> list[tuple[int, int]] | None:
        """UTF-8 mode: ``line_blocks`` as byte ranges ``(start, stop)`` of the corpus, for
        readers on threads (``open_reader``): each ends right after an LF or at the end.
        None when the corpus cannot be read at offsets (GBK, Windows text mode)."""
        if self.gbk or self._reader is None:
            return None
        with self._reader() as read_into:
            cuts = part_cuts(read_into, self.size, max(1, self.size // block_bytes), FIRST_LF)
        return list(itertools.pairwise(cuts))

    def open_reader(self) -> contextlib.AbstractContextManager[ReadInto]:
        """``with corpus.open_reader() as read_into``: reads at offsets (``line_ranges``),
        from any thread."""
        if self._reader is None:
            raise ValueError(f"{self.name}: this corpus cannot be read at offsets")
        return self._reader()


def _not_utf8(name: str, offset: int, line: int) -> str:
    return (f"{name}: byte offset {offset} (line {line}) is not UTF-8: keys learned from such bytes are not text. "
            "If the corpus is GBK, train with gbk=True (bbpe train --gbk)")


@contextlib.contextmanager
def _mapped(path: str) -> Iterator[Block]:
    """A file's bytes, mapped read-only (empty for an empty file, which mmap refuses)."""
    import mmap

    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            yield b""
            return
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            view = memoryview(mapped)
            try:
                yield view
            finally:
                view.release()


def _line_bytes(line: object, i: int) -> bytes:
    if isinstance(line, str):
        return line.encode("utf-8", "surrogatepass")
    if isinstance(line, (bytes, bytearray, memoryview)):
        return bytes(line)
    raise TypeError(f"lines[{i}] must be a str or bytes, got {type(line).__name__}")


class _Readable(Protocol):
    """What ``_spooled`` copies from: a file, a pipe or ``_Concatenated``."""

    def read(self, n: int = -1, /) -> bytes: ...


class _Concatenated:
    """Files read one after the other as one stream (``read(n)``, for ``_spooled``); ``-``
    is standard input, a missing file (``missing_is_empty``) nothing. ``sizes`` gets
    each file's size as it is read."""

    def __init__(self, names: list[str], sizes: list[int]) -> None:
        self._names = iter(names)
        self._sizes = sizes
        self._file: BinaryIO | None = None

    def read(self, n: int = -1) -> bytes:
        import sys

        while True:
            if self._file is None:
                name = next(self._names, None)
                if name is None:
                    return b""
                self._sizes.append(0)
                if name == "-":
                    self._file = sys.stdin.buffer
                elif not os.path.exists(name):
                    continue  # missing_is_empty: checked in from_files
                else:
                    self._file = open(name, "rb")  # noqa: SIM115 - closed at its end, below
            data = self._file.read(n)
            if data:
                self._sizes[-1] += len(data)
                return data
            if self._file is not sys.stdin.buffer:
                self._file.close()
            self._file = None


def _slice(chunks: Iterable[bytes], start: int, stop: int) -> Iterator[bytes]:
    """Bytes ``start:stop`` of a stream of chunks."""
    at = 0
    for chunk in chunks:
        if at >= stop:
            return
        if at + len(chunk) > start:
            yield chunk[max(0, start - at) : stop - at]
        at += len(chunk)


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
