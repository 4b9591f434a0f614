"""bbpe: an exact, fast Python port of XBBPE, the C++ byte-level BPE tokenizer.

>>> import bbpe
>>> tok = bbpe.Tokenizer.train(vocab_size=800)          # doctest: +SKIP
>>> tok.decode(tok.encode("床前明月光"))                 # doctest: +SKIP
'床前明月光'
"""

__version__ = "0.1.0"

from .errors import FormatError as FormatError
from .errors import GBKError as GBKError
from .errors import GBKWarning as GBKWarning
from .errors import InsufficientMemoryError as InsufficientMemoryError
from .errors import UnknownIdError as UnknownIdError
from .tokenizer import Tokenizer as Tokenizer

train = Tokenizer.train
load = Tokenizer.load


def get_include() -> str:
    """The directory that holds ``bbpe.h``, the C API (add it to a C extension's include
    path). Cython code needs nothing: ``cimport bbpe.codec`` finds the installed .pxd."""
    import os

    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "include")


__all__ = [
    "FormatError",
    "GBKError",
    "GBKWarning",
    "InsufficientMemoryError",
    "Tokenizer",
    "UnknownIdError",
    "__version__",
    "get_include",
    "load",
    "train",
]
