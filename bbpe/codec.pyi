"""Type stub for the Cython codec (bbpe/codec.pyx)."""

from array import array
from typing import TypeAlias

import numpy as np
import numpy.typing as npt

_Bytes: TypeAlias = bytes | bytearray | memoryview

class TokenizerBase:
    """The per-call hot path of ``bbpe.Tokenizer``."""

    _model: Model
    bug_compat: bool
    def encode(self, text: str | _Bytes, *, gbk: bool = False, bug_compat: bool | None = None,
               out: str = "list") -> list[int] | npt.NDArray[np.uint32]: ...

def walk_encodings(data: bytes, offset: int, starts: npt.NDArray[np.int64],
                   lengths: npt.NDArray[np.int64]) -> tuple[int, int, int]: ...
def plain_texts(texts: list[object]) -> bool: ...

class Model:
    """A vocabulary compiled for encoding and decoding: 24 key bytes and one length per id."""

    def __init__(self, keys: bytes, lens: bytes) -> None: ...
    @property
    def n_keys(self) -> int: ...
    def lookup(self, key: _Bytes) -> int: ...
    def encode(self, data: _Bytes, bug_compat: bool = False) -> list[int]: ...
    def decode(self, ids: array[int] | npt.NDArray[np.int64]) -> bytes: ...
