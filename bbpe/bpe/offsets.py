"""Token offsets as HF ``tokenizers`` gives them for BPE files, where they are not simply the
tokens' bytes laid end to end over the text (``common.batch.char_spans``):

- units the model drops (a byte or char that is no token, HF Whitespace's spaces) or makes
  unk tokens: the text is walked token by token (``walked_spans``);

- ``add_prefix_space`` (pre_tokenizers/byte_level.rs): the space put before each stretch of
  text between added tokens is not in the text; HF's ``NormalizedString::prepend`` gives it
  the alignment of the char it comes before, so a token holding it spans that char too;
- a ByteLevel (or Roberta) post-processor with ``trim_offsets`` (``process_offsets`` in
  byte_level.rs) moves each token's start past its leading spaces and its end before its
  trailing ones, but keeps the one leading space of the first token when the text got it
  from ``add_prefix_space``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .byte_level import to_text

_SPACE = to_text(b" ")  # "Ġ"
# Rust's char::is_whitespace (the White_Space property), which process_offsets uses, and the
# \s of HF's Whitespace pre-tokenizer
WHITE_SPACE = ("\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
               "\u2009\u200a\u2028\u2029\u202f\u205f\u3000")
_TRIMMED = _SPACE + WHITE_SPACE


def prefixed_spans(text: str | bytes, lengths: np.ndarray, segment_starts: np.ndarray) -> np.ndarray:
    """(n, 2) spans of tokens whose bytes spell ``text`` with a space put first in each
    stretch that the model began (``segment_starts``: the first token of each) and that did
    not start with one; in chars for a str, in bytes for bytes. The added space counts as a
    byte of the char it comes before."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    ends = np.cumsum(lengths, dtype=np.int64)
    starts = ends - lengths
    inserted = np.zeros(lengths.shape[0], dtype=np.int64)  # spaces put before each token's start
    shift = 0
    for k in np.flatnonzero(segment_starts).tolist():
        at = int(starts[k]) - shift
        if at < len(data) and data[at] != 0x20:  # HF prepends only to a stretch not starting with a space
            inserted[k] = 1
            shift += 1
    before = np.cumsum(inserted) - inserted  # spaces put before the token's own
    byte_starts = starts - before  # an added space: where the byte it comes before is
    byte_ends = np.maximum(ends - before - inserted, byte_starts + inserted)  # a token of the space alone: that byte
    if isinstance(text, bytes):
        return np.stack([byte_starts, byte_ends], axis=1)
    if not lengths.shape[0]:
        return np.zeros((0, 2), dtype=np.int64)
    array = np.frombuffer(data, dtype=np.uint8)
    char_of = np.cumsum((array & 0xC0) != 0x80, dtype=np.int64) - 1
    return np.stack([char_of[byte_starts], char_of[byte_ends - 1] + 1], axis=1)


def trimmed_spans(spans: np.ndarray, tokens: list[str | None], add_prefix_space: bool) -> np.ndarray:
    """``spans`` with each token's leading and trailing spaces (``Ġ`` or a White_Space char
    of its text) taken off, as ``process_offsets`` does."""
    out = spans.copy()
    for i, token in enumerate(tokens):
        if not token:
            continue
        lead = len(token) - len(token.lstrip(_TRIMMED))
        trail = len(token) - len(token.rstrip(_TRIMMED))
        start, end = int(out[i, 0]), int(out[i, 1])
        if lead:
            if (i == 0 or start == 0) and add_prefix_space and lead == 1:
                lead = 0
            start = min(start + lead, end)
        if trail and end >= trail:
            end = max(end - trail, start)
        out[i] = (start, end)
    return out





# what a unit of text (a byte, or a char of a model over chars) is to the model
KNOWN, UNKNOWN, GAP = 0, 1, 2
UnitOf = Callable[[bytes, int], tuple[int, int]]  # (UTF-8, position) -> (its length in bytes, KNOWN/UNKNOWN/GAP)


def byte_units(known: bytes) -> UnitOf:
    """Units of a byte-level model: each byte, unknown where ``known[b]`` is 0."""
    return lambda data, pos: (1, KNOWN if known[data[pos]] else UNKNOWN)


def char_units(is_token: Callable[[bytes], bool]) -> UnitOf:
    """Units of a model over chars under HF's Whitespace: each char, a gap where it is
    White_Space (the pre-tokenizer drops it), unknown where it is no token."""
    def unit(data: bytes, pos: int) -> tuple[int, int]:
        lead = data[pos]
        length = 1 if lead < 0x80 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
        char = data[pos:pos + length]
        if char.decode("utf-8", "replace") in WHITE_SPACE:
            return length, GAP
        return length, KNOWN if is_token(char) else UNKNOWN
    return unit


def walked_spans(text: str | bytes, tokens: list[bytes | None], added: np.ndarray, unit_of: UnitOf,
                 fuse_unk: bool, prefix_space: bool, piece_starts: Callable[[bytes], list[int]],
                 unk_text: bytes = b"", added_texts: tuple[bytes, ...] = ()) -> np.ndarray:
    """(n, 2) spans of tokens of a model that does not spell its text end to end: HF drops
    a unit (``unit_of``: a byte, or a char) that is no token, or gives it the unk token
    (``tokens[i]`` None), one per unit or, with ``fuse_unk``, one per run of them inside a
    piece of the pre-tokenizer; a gap between pieces (HF Whitespace's spaces) is dropped.
    The text is walked token by token, unit by unit: a token's units are the text's there,
    after the units dropped before each (HF merges across a dropped unit: its neighbours
    become adjacent); an unk spans the units it stands for, a fused one up to the next
    piece (``piece_starts`` of a stretch of text between added tokens: ``added`` marks their
    ids, ``added_texts`` are their bytes). An unk token that is also an added token
    (``unk_text``) is the added one where the text spells it there: an unknown unit is never
    the start of a text's token. ValueError when the tokens do not spell the text."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    out = np.zeros((len(tokens), 2), dtype=np.int64)
    pos = 0
    cuts: list[int] = []  # where the pieces of the current stretch start, after pos
    after_added = True

    def skipped(pos: int, upto: int) -> int:
        """pos after the units the model dropped there (gaps, and unknown units when the
        next token is no unk), up to the first known one."""
        while pos < len(data):
            length, kind = unit_of(data, pos)
            if kind == KNOWN or (kind == UNKNOWN and upto == UNKNOWN):
                break
            pos += length
        return pos

    for i, token in enumerate(tokens):
        if token is None and unk_text and data.startswith(unk_text, skipped(pos, UNKNOWN)):
            pos = skipped(pos, UNKNOWN)
            out[i], pos, after_added = (pos, pos + len(unk_text)), pos + len(unk_text), True
            continue
        starts_stretch = after_added and not added[i]
        after_added = bool(added[i])
        if starts_stretch and fuse_unk:
            # the stretch ends where the text first holds an added token (``added_texts``), as
            # the encoder cut it
            end = min([found for key in added_texts if (found := data.find(key, pos)) >= 0], default=len(data))
            cuts = [pos + c for c in piece_starts(data[pos:end]) if c > 0] + [end]
        space = starts_stretch and prefix_space and pos < len(data) and data[pos] != 0x20
        if token is None:  # the unk token
            pos = skipped(pos, UNKNOWN)
            stop = min([c for c in cuts if c > pos], default=len(data)) if fuse_unk else len(data)
            end = pos
            while end < stop:
                length, kind = unit_of(data, end)
                if kind != UNKNOWN:
                    break
                end += length
                if not fuse_unk:
                    break
            if end == pos:
                raise ValueError("offsets: the tokens do not spell the text")
            out[i], pos = (pos, end), end
            continue
        body = token[1:] if space else token
        if added[i]:  # the stretch before it is all encoded: what is left there was dropped
            while pos < len(data) and not data.startswith(body, pos):
                pos += unit_of(data, pos)[0]
            out[i], pos = (pos, pos + len(body)), pos + len(body)
            continue
        if not body:  # the added space alone: the char it comes before
            out[i] = (pos, pos + 1)
            continue
        start = -1
        at = 0
        while at < len(body):
            pos = skipped(pos, KNOWN)
            length = unit_of(body, at)[0]
            if data[pos : pos + length] != body[at : at + length]:
                raise ValueError("offsets: the tokens do not spell the text")
            start = pos if start < 0 else start
            pos, at = pos + length, at + length
        out[i] = (start, pos)
    if isinstance(text, bytes) or not len(tokens):
        return out
    array = np.frombuffer(data, dtype=np.uint8)
    char_of = np.cumsum((array & 0xC0) != 0x80, dtype=np.int64) - 1
    return np.stack([char_of[out[:, 0]], char_of[out[:, 1] - 1] + 1], axis=1)
