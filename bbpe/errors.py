"""bbpe's exceptions: one small hierarchy whose messages name the file, offset, line or id."""

from __future__ import annotations


class FormatError(ValueError):
    """A ``.bin`` file that is not a valid vocabulary file.

    ``path`` and ``offset`` say where: ``FormatError('m.bin', 8, 'record 0: ...')`` reads
    ``m.bin: offset 8: record 0: ...``.
    """

    def __init__(self, path: str, offset: int, message: str) -> None:
        super().__init__(f"{path}: offset {offset}: {message}")
        self.path = path
        self.offset = offset


class UnknownIdError(ValueError):
    """An id that is not in the vocabulary; ``.id`` and ``.position`` say which.

    ``UnknownIdError(99999, 3, 800)`` reads ``unknown id 99999 at position 3 (...)``.
    """

    def __init__(self, kid: int, position: int, n_keys: int) -> None:
        super().__init__(f"unknown id {kid} at position {position} (the vocabulary has ids 0..{n_keys - 1})")
        self.id = kid
        self.position = position


class GBKError(ValueError):
    """GBK input that the reference's conversion would change (``strict`` mode); the
    message names the file, the line and the byte."""


class GBKWarning(UserWarning):
    """GBK input that the reference's conversion changes: bytes that are not GBK become
    U+FFFD, and a NUL byte ends the text. bbpe does the same, and says where."""


class InsufficientMemoryError(MemoryError):
    """Training would need more memory than the machine has available; the message says
    how much of each, and how to go ahead anyway."""


class CorpusError(ValueError):
    """A corpus training refuses with ``strict``: bytes that are not UTF-8 (without
    ``gbk``); the message names the file, the byte offset and the line."""


class CorpusWarning(UserWarning):
    """A corpus that trains, but probably not as meant: bytes that are not UTF-8 (without
    ``gbk``: the vocabulary then holds keys that are not text), an empty corpus, or one in
    which no pair occurs twice (nothing to merge)."""
