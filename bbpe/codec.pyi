"""Type stub for the Cython codec (bbpe/codec.pyx)."""

from array import array

import numpy as np
import numpy.typing as npt

_Bytes = bytes | bytearray | memoryview

def plain_texts(texts: list[object]) -> bool: ...

class Model:
    """A vocabulary compiled for encoding and decoding: 24 key bytes and one length per id."""

    def __init__(self, keys: bytes, lens: bytes) -> None: ...
    @property
    def n_keys(self) -> int: ...
    def lookup(self, key: _Bytes) -> int: ...
    def encode(self, data: _Bytes, bug_compat: bool = False) -> list[int]: ...
    def decode(self, ids: array[int] | npt.NDArray[np.int64]) -> bytes: ...
