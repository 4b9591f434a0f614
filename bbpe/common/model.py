"""The contract between the facade (``bbpe.Tokenizer``) and a model, and the registry of
model kinds.

A model is two objects. Its *compiled model* (``CompiledModel`` below: XBBPE's
``bbpe.codec.Model``, BPE's ``bbpe.bpe._codec.BpeCodec``) does the hot work without the
GIL: text to ids, a batch to one flat array, ids to bytes. Both derive from the Cython
base ``bbpe.common._fast.CompiledModel``, so ``encode(str)`` reaches either through one
vtable call, without a Python frame. Its *facade class* (``bbpe.XBBPE``, ``bbpe.BPE``,
subclasses of ``bbpe.Tokenizer``) holds what is the model's own: construction, its file
formats, its training, its own special tokens, how a token reads as text. It provides the
hooks that ``Tokenizer`` declares in its section "what every model provides"; everything
else (added special tokens, batches, padding, offsets, streaming, pickling, JSON
container) is the facade's, the same for every model.

``KINDS`` maps the ``model.type`` of a JSON file to the facade class that reads it. Each
entry is imported when first needed, so ``import bbpe`` imports no model it does not use
(as tiktoken's ``ENCODING_CONSTRUCTORS`` and sentencepiece's ``ModelFactory``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Sequence

    import numpy as np

    from ..tokenizer import Tokenizer


class CompiledModel(Protocol):
    """What the facade calls on a compiled model. ``flags`` are the model's own
    (``BBPE_BUG_COMPAT`` for XBBPE; BPE takes 0); ids are 0 .. ``n_keys`` - 1."""

    @property
    def n_keys(self) -> int: ...

    def encode(self, data: str | bytes, flags: int = 0) -> list[int]: ...

    def encode_ids(self, data: str | bytes, flags: int = 0) -> bytes:
        """The ids as a uint32 buffer."""

    def encode_many(self, texts: list, flags: int = 0, start: int = 0, stop: int | None = None
                    ) -> tuple[object, object]:
        """``texts[start:stop]`` as one uint32 buffer of ids and an int64 buffer of each
        text's start (one more than texts), the GIL released while encoding."""

    def encode_lists(self, texts: list, flags: int = 0, start: int = 0, stop: int | None = None) -> list[list[int]]:
        ...

    def decode(self, ids: Sequence[int] | np.ndarray) -> bytes: ...

    def decode_str(self, ids: Sequence[int] | np.ndarray, errors: str = "replace") -> str: ...

    def lookup(self, key: bytes) -> int:
        """The id of a token's bytes, or -1."""


# model.type of a JSON file -> "module:class" of its facade, imported when first needed
KINDS = {
    "XBBPE": "bbpe.xbbpe.tokenizer:XBBPE",
    "BPE": "bbpe.bpe.tokenizer:BPE",
    "WordPiece": "bbpe.wordpiece.tokenizer:WordPiece",
}


def facade(kind: str) -> type[Tokenizer]:
    """The facade class of a model kind (a key of ``KINDS``); KeyError for another."""
    module, name = KINDS[kind].split(":")
    return getattr(importlib.import_module(module), name)
