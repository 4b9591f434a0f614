"""The files of byte-level BPE tokenizers, to and from one neutral description (``BpeSpec``).

======================  ==================================  ====================================
format                  read                                write
======================  ==================================  ====================================
tiktoken ranks          ``read_tiktoken`` (plain or gzip)   ``write_tiktoken``, ``tiktoken_bytes``
HF ``tokenizer.json``   ``read_tokenizer_json`` (a parsed   ``to_tokenizer_json`` (a document),
                        document), ``load_tokenizer_json``  ``dumps`` (its bytes)
                        (the file's bytes)
GPT-2 vocab + merges    ``read_vocab_merges``
======================  ==================================  ====================================

``sniff`` tells the formats apart from a file's first bytes, for ``bbpe.load``. The modules
behind this one: spec (BpeSpec), byte_level (GPT-2's byte-to-unicode map), patterns (the
pre-tokenizer patterns by name), tiktoken_file, hf_json and hf_pipeline (reading HF's
file), hf_write, vocab_merges; and, shared with the other models, bbpe.common's hf_spec
(added tokens, templates), hf_templates and json_fields (errors naming the field).
"""

from __future__ import annotations

import re
import zlib
from typing import Literal

from ..common.hf_spec import AddedToken, Template, TemplatePiece
from ..common.json_fields import parse
from .hf_json import read_tokenizer_json
from .hf_write import dumps, ranks_to_merges, to_tokenizer_json
from .patterns import ENCODINGS, HF_BYTE_LEVEL_PATTERN, PATTERNS, PatternError, pattern_name, resolve_pattern
from .spec import BpeSpec
from .tiktoken_file import GZIP_MAGIC, read_tiktoken, tiktoken_bytes, write_tiktoken
from .vocab_merges import read_vocab_merges

__all__ = [
    "ENCODINGS", "HF_BYTE_LEVEL_PATTERN", "PATTERNS", "AddedToken", "BpeSpec", "PatternError", "Template",
    "TemplatePiece", "dumps", "load_tokenizer_json", "pattern_name", "ranks_to_merges", "read_tiktoken",
    "read_tokenizer_json", "read_vocab_merges", "resolve_pattern", "sniff", "tiktoken_bytes", "to_tokenizer_json",
    "write_tiktoken",
]

Kind = Literal["tiktoken", "tokenizer.json", "vocab.json", "unknown"]

# the keys HF writes at the top of a tokenizer.json (tokenizer/serialization.rs), the first of
# which starts the file; bbpe's own JSON files share them
_HF_KEYS = {"version", "truncation", "padding", "added_tokens", "normalizer", "pre_tokenizer", "post_processor",
            "decoder", "model"}
_FIRST_KEY = re.compile(rb'\s*\{\s*"((?:[^"\\]|\\.)*)"\s*:\s*(-?\d)?')
_RANK_LINE = re.compile(rb"[A-Za-z0-9+/]+={0,2} \d+\r?")
_RANK_START = re.compile(rb"[A-Za-z0-9+/]+={0,2}(?: \d*)?")  # a first line cut short by the end of the head


def sniff(head: bytes) -> Kind:
    """What a file is, from its first bytes (4 KB is plenty; a whole small file works too):

    - ``"tiktoken"``: ``base64 rank`` lines, plain or gzipped (a gzipped file is told by
      its content, not its name);
    - ``"tokenizer.json"``: a JSON object whose first key is one HF writes first
      (``version``, ``added_tokens``, ``model``, ...): HF's file, or bbpe's own (the
      ``model.type`` in it says which model reads it);
    - ``"vocab.json"``: a JSON object of token: int, GPT-2's vocabulary (it needs its
      merges.txt);
    - ``"unknown"``: anything else (a bbpe ``.bin``, a corpus, ...)."""
    if head.startswith(GZIP_MAGIC):
        try:  # as much of the content as the head holds
            head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, 1 << 16)
        except zlib.error:
            return "unknown"
        return "tiktoken" if _rank_lines(head) else "unknown"
    first = _FIRST_KEY.match(head)
    if first is not None:
        if first.group(1).decode("utf-8", "replace") in _HF_KEYS:
            return "tokenizer.json"
        return "vocab.json" if first.group(2) is not None else "unknown"
    return "tiktoken" if _rank_lines(head) else "unknown"


def _rank_lines(head: bytes) -> bool:
    """The head's whole lines (at most 8) are ``base64 rank`` lines, or its first line, cut
    short, starts like one."""
    lines = head.split(b"\n")
    whole, rest = lines[:-1][:8], lines[-1]
    if not whole:
        return bool(rest) and _RANK_START.fullmatch(rest) is not None
    return all(_RANK_LINE.fullmatch(line) for line in whole)


def load_tokenizer_json(data: bytes, name: str = "tokenizer.json") -> BpeSpec:
    """The spec of a ``tokenizer.json`` file's bytes: FormatError at the byte offset of a
    JSON error, or naming the field that bbpe cannot read."""
    return read_tokenizer_json(parse(data, name), name)
