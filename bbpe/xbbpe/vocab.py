"""The vocabulary as XBBPE builds it: ids in insertion order, duplicates ignored.

``AddNewKeyToWordList`` gives a new key the id ``size()`` and ignores a key that is already
there; ``InitData`` starts every vocabulary with the 256 bytes and 7 punctuation keys (Q1);
``AddSpecialTokens`` ends it with every byte prefix of ``<P>``, ``<S>``, ``</S>`` (Q12).
This module holds those rules and nothing else, so the trainer and the tokenizer agree.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from .kernels.tables import KEY_BYTES  # the one definition: the kernels are compiled with it

# Q1: ids 256..262, in this order: · ， ？ ！ 。 U+3000 U+200B
PUNCTUATION = (
    b"\xc2\xb7",
    b"\xef\xbc\x8c",
    b"\xef\xbc\x9f",
    b"\xef\xbc\x81",
    b"\xe3\x80\x82",
    b"\xe3\x80\x80",
    b"\xe2\x80\x8b",
)
INITIAL_SIZE = 256 + len(PUNCTUATION)  # 263

PAD = b"<P>"
BOS = b"<S>"
EOS = b"</S>"
SPECIAL_TOKENS = (PAD, BOS, EOS)  # AddSpecialTokens({PAD, BOS, EOS}), in this order


def initial_keys() -> list[bytes]:
    """The 263 keys of ``InitData``: ``[b'\\x00', ..., b'\\xff', '·', '，', ...]``."""
    return [bytes([b]) for b in range(256)] + list(PUNCTUATION)


def special_prefixes() -> list[bytes]:
    """Q12: every byte prefix of each special token: ``[b'<', b'<P', b'<P>', b'<', ...]``."""
    return [token[: i + 1] for token in SPECIAL_TOKENS for i in range(len(token))]


class VocabularyBuilder:
    """Keys in id order with the ``AddNewKeyToWordList`` rule (a known key is ignored)."""

    def __init__(self, keys: Iterable[bytes] = ()) -> None:
        self.keys: list[bytes] = []
        self._ids: dict[bytes, int] = {}
        for key in keys:
            self.add(key)

    def __len__(self) -> int:
        return len(self.keys)

    def __contains__(self, key: bytes) -> bool:
        return key in self._ids

    def add(self, key: bytes) -> None:
        if key not in self._ids:
            self._ids[key] = len(self.keys)
            self.keys.append(key)


def key_matrix(keys: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """Keys as the C++ lays them out: ``(n, 24) uint8`` zero padded, and ``(n,) uint8`` lengths."""
    lens = np.fromiter(map(len, keys), dtype=np.int64, count=len(keys))
    too_long = np.flatnonzero(lens > KEY_BYTES)
    if too_long.size:
        i = int(too_long[0])
        raise ValueError(f"key {i} has {int(lens[i])} bytes; a key holds at most {KEY_BYTES}")
    rows = np.zeros((len(keys), KEY_BYTES), dtype=np.uint8)
    # the cells of the keys' bytes, row by row, are the keys joined end to end
    rows[np.arange(KEY_BYTES)[None, :] < lens[:, None]] = np.frombuffer(b"".join(keys), dtype=np.uint8)
    return rows, lens.astype(np.uint8)
