"""Training texts from a corpus, as ``LoadDataFileTrain`` reads them (QUIRKS Q18).

The file is cut into lines the way ``std::getline`` cuts them (a last line without LF
still counts, a final LF makes no extra empty line; CR stays in the line, Q19). Empty lines
separate paragraphs; every non-empty line is one training text, and the last line of each
paragraph gets ``"\\n"`` appended. The file is read in chunks, so no more than a chunk and
one line are held at a time.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator

from .gbk import gbk_to_utf8

CHUNK_BYTES = 1 << 20


def read_chunks(path: str | os.PathLike[str], chunk_bytes: int = CHUNK_BYTES) -> Iterator[bytes]:
    """The bytes of a file in chunks. Raises OSError naming the file if it can't be read."""
    with open(path, "rb") as f:
        while chunk := f.read(chunk_bytes):
            yield chunk


def split_lines(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """``std::getline`` over a byte stream: ``[b'a\\nb', b'c\\n'] -> b'a', b'bc'``."""
    pending: list[bytes] = []
    for chunk in chunks:
        parts = chunk.split(b"\n")
        if len(parts) > 1:
            pending.append(parts[0])
            yield b"".join(pending)
            yield from parts[1:-1]
            pending = []
        if parts[-1]:
            pending.append(parts[-1])
    if pending:
        yield b"".join(pending)


def paragraph_texts(lines: Iterable[bytes]) -> Iterator[bytes]:
    """Q18: non-empty lines, with ``\\n`` on the last line of each paragraph.

    ``[b'', b'a', b'b', b'', b'c'] -> b'a', b'b\\n', b'c\\n'``
    """
    pending: bytes | None = None
    for line in lines:
        if not line:
            if pending is not None:
                yield pending + b"\n"
                pending = None
            continue
        if pending is not None:
            yield pending
        pending = line
    if pending is not None:
        yield pending + b"\n"


def as_utf8(texts: Iterable[bytes], gbk: bool) -> Iterator[bytes]:
    """The texts as ``Train``/``Encode`` see them after ``ToUTF8`` (identity unless GBK)."""
    if not gbk:
        return iter(texts)
    return (gbk_to_utf8(text) for text in texts)


TextSource = Callable[[], Iterator[bytes]]
"""A callable that returns a fresh iterator of raw training texts (it is read twice)."""


def file_texts(path: str | os.PathLike[str], *, missing_is_empty: bool = False) -> TextSource:
    """The training texts of a corpus file, as a re-readable source.

    The reference trains on nothing when the file cannot be opened (Q18); that only happens
    here with ``missing_is_empty`` (``--bug-compat``), otherwise OSError names the file.
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        raise IsADirectoryError(f"{path}: is a directory, not a corpus file")
    if not os.path.exists(path) and missing_is_empty:
        return lambda: iter(())
    with open(path, "rb"):
        pass  # fail now, with the path in the message, rather than halfway through training
    return lambda: paragraph_texts(split_lines(read_chunks(path)))


def iterable_texts(lines: Iterable[str | bytes]) -> TextSource:
    """Training texts from lines given one by one (a str is UTF-8 encoded).

    They are treated as the lines of a file: an item holding LF is several lines, an empty
    item ends a paragraph. The lines are kept (as one bytes object) because training reads
    them twice.
    """
    data = b"\n".join(line.encode("utf-8", "surrogatepass") if isinstance(line, str) else bytes(line) for line in lines)
    return lambda: paragraph_texts(split_lines([data]))
