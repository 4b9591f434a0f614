"""Pre-tokenizer patterns by name: tiktoken's encodings, and HF ByteLevel's own regex.

A name means exactly tiktoken's pattern for that encoding: the strings below are copied
from tiktoken_ext/openai_public.py (tiktoken 0.14), with the special tokens and the
SHA-256 of each ranks file (``expected_hash``: of the plain file, after gunzip). A .tiktoken
file holds only the ranks, so whoever loads one must say which pattern splits the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_R50K = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
_CL100K = (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|"""
           r"""\s*[\r\n]|\s+(?!\S)|\s""")
_O200K = (  # openai_public.py joins these with "|"
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?"""
    r"""|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?"""
    r"""|\p{N}{1,3}"""
    r"""| ?[^\s\p{L}\p{N}]+[\r\n/]*"""
    r"""|\s*[\r\n]+"""
    r"""|\s+(?!\S)"""
    r"""|\s+"""
)

# HF ByteLevel's regex (``RE`` in tokenizers/src/pre_tokenizers/byte_level.rs): GPT-2's
# original spelling, whose pieces are those of tiktoken's r50k pattern.
HF_BYTE_LEVEL_PATTERN = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"

# the Split patterns of Llama 3's and Qwen2's tokenizer.json: cl100k's without its possessive
# quantifiers (which HF's regex engine reads otherwise, bbpe.bpe.onig), Qwen2's with single digits
LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
                  r"\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
                 r"\s*[\r\n]+|\s+(?!\S)|\s+")

_ENDOFTEXT, _ENDOFPROMPT = "<|endoftext|>", "<|endofprompt|>"
_FIM = {"<|fim_prefix|>": 0, "<|fim_middle|>": 1, "<|fim_suffix|>": 2}


@dataclass(frozen=True)
class Encoding:
    """One of tiktoken's encodings: its pattern, special tokens and ranks file."""

    pattern: str
    special_tokens: dict[str, int] = field(default_factory=dict)
    ranks_file: str = ""  # the name tiktoken downloads (r50k_base.tiktoken), "" for gpt2's vocab.bpe form
    expected_hash: str = ""  # SHA-256 of the plain ranks file


ENCODINGS: dict[str, Encoding] = {
    "gpt2": Encoding(_R50K, {_ENDOFTEXT: 50256}),
    "r50k_base": Encoding(_R50K, {_ENDOFTEXT: 50256}, "r50k_base.tiktoken",
                          "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930"),
    "p50k_base": Encoding(_R50K, {_ENDOFTEXT: 50256}, "p50k_base.tiktoken",
                          "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069"),
    "p50k_edit": Encoding(_R50K, {_ENDOFTEXT: 50256, **{k: 50281 + v for k, v in _FIM.items()}},
                          "p50k_base.tiktoken", "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069"),
    "cl100k_base": Encoding(_CL100K, {_ENDOFTEXT: 100257, **{k: 100258 + v for k, v in _FIM.items()},
                                      _ENDOFPROMPT: 100276}, "cl100k_base.tiktoken",
                            "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"),
    "o200k_base": Encoding(_O200K, {_ENDOFTEXT: 199999, _ENDOFPROMPT: 200018}, "o200k_base.tiktoken",
                           "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"),
}
PATTERNS: dict[str, str] = {name: enc.pattern for name, enc in ENCODINGS.items()}
# every pattern bbpe knows by name: tiktoken's (the names ``resolve_pattern`` takes) and those
# of HF files, for ``pattern_name`` to tell a caller which compiled scanner fits
KNOWN_PATTERNS: dict[str, str] = {**PATTERNS, "hf_byte_level": HF_BYTE_LEVEL_PATTERN, "llama3": LLAMA3_PATTERN,
                                  "qwen2": QWEN2_PATTERN}

# a word of letters, digits and _ alone matches only itself: as a pattern it can only be a
# misspelt name, so it is refused as one (listing the names) rather than compiled
_LOOKS_LIKE_NAME = re.compile(r"[A-Za-z0-9_]+")


class PatternError(ValueError):
    """A pattern that is neither a known name nor a regex that compiles."""


def resolve_pattern(pattern: str) -> str:
    """The regex that ``pattern`` means: a name of ``PATTERNS`` ("cl100k_base") is tiktoken's
    pattern for it; any other str is a regex, which must compile with the ``regex`` package
    (bbpe runs it with that package). PatternError naming it otherwise."""
    if not isinstance(pattern, str):
        raise TypeError(f"a pattern is a str (a name such as 'cl100k_base', or a regex), got {type(pattern).__name__}")
    if pattern in PATTERNS:
        return PATTERNS[pattern]
    if _LOOKS_LIKE_NAME.fullmatch(pattern):
        raise PatternError(f"unknown pattern name {pattern!r}: the known names are {', '.join(PATTERNS)} "
                           "(or give the regex itself)")
    check_regex(pattern)
    return pattern


def check_regex(pattern: str) -> None:
    """PatternError naming ``pattern`` and regex's message when it does not compile."""
    problem = regex_problem(pattern)
    if problem is not None:
        raise PatternError(f"the pattern {pattern!r} does not compile with the regex package: {problem}")


def regex_problem(pattern: str) -> str | None:
    """Why ``pattern`` does not compile with the ``regex`` package (the one bbpe runs
    patterns with: tiktoken's and HF's use possessive quantifiers and ``\\p{..}``, which
    ``re`` lacks), or None when it compiles."""
    try:
        import regex  # type: ignore[import-untyped]  # imported here: only patterns need it
    except ImportError:  # pragma: no cover - an install without it
        raise ImportError("bbpe.BPE runs pre-tokenizer patterns with the regex package: pip install regex") from None
    try:
        regex.compile(pattern)
    except regex.error as err:
        return str(err)
    except (RecursionError, OverflowError, ValueError) as err:  # absurd nesting or repeat counts
        return f"{type(err).__name__}: {err}"
    return None


def pattern_name(pattern: str | None) -> str | None:
    """The first name of ``KNOWN_PATTERNS`` whose regex is exactly ``pattern`` (None if none),
    so a caller can pick a compiled scanner for it: ``"gpt2"`` for r50k's, ``"llama3"``..."""
    return next((name for name, known in KNOWN_PATTERNS.items() if known == pattern), None)
