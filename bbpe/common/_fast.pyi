"""Type stub for the Cython module bbpe/common/_fast.pyx: the model-free hot loops and the
base of every compiled model."""

from typing import Any, Literal, TypeAlias, overload

import numpy as np
import numpy.typing as npt
from typing_extensions import disjoint_base

from .model import CompiledModel as _CompiledModelProtocol

_Bytes: TypeAlias = bytes | bytearray | memoryview

@disjoint_base
class CompiledModel:
    """The base of every compiled model (``bbpe.codec.Model`` for XBBPE)."""

@disjoint_base
class BatchModel(CompiledModel):
    """A compiled model whose one-text encoder runs without the GIL, with its batch calls."""

    def encode_ids(self, data: str | _Bytes, flags: int = 0) -> npt.NDArray[np.uint32]: ...
    def encode_many(self, texts: list[Any], flags: int = 0, start: int = 0, stop: int | None = None
                    ) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64]]: ...
    def encode_lists(self, texts: list[Any], flags: int = 0, start: int = 0, stop: int | None = None
                     ) -> list[list[int]]: ...

@disjoint_base
class TokenizerBase:
    """The per-call hot path of ``bbpe.Tokenizer``."""

    # at run time any CompiledModel; what the facade calls on it is the protocol's
    _model: _CompiledModelProtocol
    bug_compat: bool
    _has_specials: bool
    _special_probes: tuple[Any, Any] | None
    _own_specials: bool
    @overload
    def encode(self, text: str | _Bytes, *, gbk: bool = False, bug_compat: bool | None = None,
               out: Literal["list"] = "list", split_special_tokens: bool = False,
               allowed_special: object = None, disallowed_special: object = ()) -> list[int]: ...
    @overload
    def encode(self, text: str | _Bytes, *, gbk: bool = False, bug_compat: bool | None = None,
               out: Literal["numpy", "np"], split_special_tokens: bool = False,
               allowed_special: object = None, disallowed_special: object = ()) -> npt.NDArray[np.uint32]: ...
    @overload
    def encode(self, text: str | _Bytes, *, gbk: bool = False, bug_compat: bool | None = None,
               out: str = "list", split_special_tokens: bool = False,
               allowed_special: object = None, disallowed_special: object = ()) -> list[int] | npt.NDArray[np.uint32]: ...

def _plain_text(obj: object, name: str) -> str | bytes: ...
def plain_texts(texts: list[Any]) -> bool: ...
def longest_row(starts: npt.NDArray[np.int64]) -> int: ...
def pad_rows(flat: npt.NDArray[np.uint32], starts: npt.NDArray[np.int64], cap: int,
             prefix: npt.NDArray[np.int64], suffix: npt.NDArray[np.int64], pad_id: int, left: bool,
             ids: npt.NDArray[np.int64], mask: npt.NDArray[np.int64] | None = None, keep_end: bool = False) -> None: ...
def frame_rows(rows: list[list[int]], prefix: tuple[int, ...], suffix: tuple[int, ...], cap: int, width: int,
               pad_id: int, left: bool, mask: bool, keep_end: bool = False
               ) -> tuple[list[list[int]], list[list[int]] | None]: ...
def rows_holding(rows: list[list[int]], ids: npt.NDArray[np.int64]) -> list[int]: ...
def utf8_valid_prefix(data: _Bytes, start: int = 0) -> tuple[int, bool]: ...
