"""bbpe: fast tokenizers for Chinese and mixed Chinese/English text: an exact port of
XBBPE, the C++ byte-level BPE (``bbpe.XBBPE``), the byte-level BPE of tiktoken and HF
files (``bbpe.BPE``) and BERT's WordPiece (``bbpe.WordPiece``), behind one interface
(``bbpe.Tokenizer``).

>>> import bbpe
>>> tok = bbpe.train(vocab_size=800)                    # doctest: +SKIP
>>> tok.decode(tok.encode("床前明月光"))                 # doctest: +SKIP
'床前明月光'
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

__version__ = "0.1.0"

from .errors import CorpusError as CorpusError
from .errors import CorpusWarning as CorpusWarning
from .errors import FormatError as FormatError
from .errors import GBKError as GBKError
from .errors import GBKWarning as GBKWarning
from .errors import InsufficientMemoryError as InsufficientMemoryError
from .errors import UnknownIdError as UnknownIdError

if TYPE_CHECKING:
    from .bpe.tokenizer import BPE as BPE
    from .tokenizer import Tokenizer as Tokenizer
    from .wordpiece.tokenizer import WordPiece as WordPiece
    from .xbbpe.tokenizer import XBBPE as XBBPE

    train = Tokenizer.train
    load = Tokenizer.load
    from_bytes = Tokenizer.from_bytes


def __getattr__(name: str) -> object:
    """``Tokenizer``, ``train``, ``load``, ``from_bytes`` and the submodules are imported on first use, so
    that the ``bbpe`` command can set up the process before numpy is imported (``cli``).
    Submodules stay reachable as attributes (``bbpe.codec``: C extensions fetch its C API
    through ``PyCapsule_Import("bbpe.codec._C_API")``)."""
    if name in ("Tokenizer", "train", "load", "from_bytes"):
        from .tokenizer import Tokenizer

        globals().update(Tokenizer=Tokenizer, train=Tokenizer.train, load=Tokenizer.load,
                         from_bytes=Tokenizer.from_bytes)
        return globals()[name]
    if name in ("XBBPE", "BPE", "WordPiece"):  # each model's class, imported when first named
        from .common.model import facade

        globals()[name] = facade(name)
        return globals()[name]
    if name.startswith("__"):  # probes such as __wrapped__ or __path__ lookups: no import
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        return importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as err:
        if err.name != f"{__name__}.{name}":
            raise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def get_include() -> str:
    """The directory that holds ``bbpe.h``, the C API (add it to a C extension's include
    path). Cython code needs nothing: ``cimport bbpe.codec`` finds the installed .pxd."""
    import os

    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "include")


__all__ = [
    "BPE",
    "XBBPE",
    "CorpusError",
    "CorpusWarning",
    "FormatError",
    "GBKError",
    "GBKWarning",
    "InsufficientMemoryError",
    "Tokenizer",
    "UnknownIdError",
    "WordPiece",
    "__version__",
    "from_bytes",
    "get_include",
    "load",
    "train",
]
