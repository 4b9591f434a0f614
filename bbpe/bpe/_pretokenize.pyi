"""Type stub for the Cython module bbpe/bpe/_pretokenize.pyx: the compiled pre-tokenizers of
byte-level BPE (tiktoken's and HF's split patterns, scanned without the GIL)."""

from typing import overload

import numpy as np

# tiktoken 0.14's pattern string of each of its encodings
TIKTOKEN_PATTERNS: dict[str, str]
# HF's Whitespace pre-tokenizer's regex (PIECES_WHITESPACE; its \w is Oniguruma's)
WHITESPACE_PATTERN: str
# the PIECES_* id of each pre-tokenizer (bbpe/bpe/_pretokenize.pxd), "regex" for none
PATTERN_NAMES: dict[str, int]

def compiled_pattern(regex_string: str) -> int:
    """The PIECES_* id of the scanner that implements ``regex_string`` exactly, else 0."""

@overload
def split(text: str, pattern: int, gaps: bool = False) -> list[str]:
    """The pieces of ``text`` under the compiled pre-tokenizer ``pattern`` (with ``gaps``,
    the text the pattern drops too)."""

@overload
def split(text: bytes, pattern: int, gaps: bool = False) -> list[bytes]: ...
def line_piece_ends(data: bytes | memoryview | np.ndarray, start: int, stop: int, pattern: int, out: np.ndarray) -> int: ...
