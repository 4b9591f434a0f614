"""GPT-2's two files: ``vocab.json`` ({token: id}, tokens in byte-level chars) and
``merges.txt`` (a ``#version`` line, then ``a b`` per merge in rank order), as
HF's ``BPE.read_file`` and ``convert_merges_to_hashmap`` read them
(tokenizers/src/models/bpe/model.rs) and ``ByteLevelBPETokenizer.from_file`` uses them:
GPT-2's ByteLevel pre-tokenizer and decoder around the model.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from ..common.hf_spec import AddedToken
from ..common.json_fields import Fields, key, parse
from ..errors import FormatError
from .byte_level import decoded_bytes
from .hf_json import read_vocab, vocab_bytes
from .patterns import HF_BYTE_LEVEL_PATTERN, resolve_pattern
from .spec import BpeSpec


def read_vocab_merges(vocab_path: str | os.PathLike[str], merges_path: str | os.PathLike[str], *,
                      pattern: str = HF_BYTE_LEVEL_PATTERN, add_prefix_space: bool = False,
                      special_tokens: Iterable[str] = ()) -> BpeSpec:
    """The spec of GPT-2's ``vocab.json`` + ``merges.txt``. ``pattern`` (default: GPT-2's
    regex as HF's ByteLevel has it; a name or a regex) and ``add_prefix_space`` are the
    pre-tokenizer's, which the files do not hold; ``special_tokens`` become added special
    tokens, with HF's ids (their vocabulary id, else the next ones after it: GPT-2's
    ``<|endoftext|>`` is in vocab.json, 50256). A bad file is a FormatError naming it and
    the token, or for merges.txt the line."""
    vocab_name, merges_name = os.fspath(vocab_path), os.fspath(merges_path)
    regex_pattern = pattern if pattern == HF_BYTE_LEVEL_PATTERN else resolve_pattern(pattern)
    with open(vocab_name, "rb") as f:
        document = parse(f.read(), str(vocab_name))
    fields = Fields(str(vocab_name))
    texts = read_vocab(document, fields, field="vocab")
    specials = [special_tokens] if isinstance(special_tokens, str) else list(special_tokens)
    tokens, unreachable = vocab_bytes(texts, set(specials), fields, field="vocab")
    ids = {text: kid for kid, text in enumerate(texts)}
    with open(merges_name, "rb") as f:
        merges = _merges(f.read(), str(merges_name), ids, unreachable)
    added = []
    next_id = len(texts)
    for content in dict.fromkeys(specials):  # once each, in order
        if not isinstance(content, str) or not content:
            raise ValueError(f"special_tokens: {content!r} is not a non-empty str")
        kid = ids.get(content)
        if kid is None:
            kid, next_id = next_id, next_id + 1
        added.append(AddedToken(content, kid, decoded=decoded_bytes(content)))
    return BpeSpec(tokens=tokens, merges=merges, pattern=regex_pattern, gaps=True, add_prefix_space=add_prefix_space,
                   ignore_merges=False, added_tokens=tuple(added), decoder="ByteLevel", text_form="byte_level",
                   unreachable=unreachable)


def _merges(data: bytes, name: str, ids: dict[str, int], unreachable: frozenset[int]) -> tuple[tuple[int, int], ...]:
    """Each line that does not start with ``#version`` is one merge, ``a b`` (exactly one
    space; a last newline, LF or CRLF, ends the file)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise FormatError(name, err.start, f"not UTF-8 text ({err})") from None
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    merges = []
    offset = 0
    for number, line in enumerate(lines, 1):
        at = offset
        offset += len(line.encode("utf-8")) + 1
        line = line.removesuffix("\r")
        if line.startswith("#version"):
            continue
        parts = line.split(" ")
        if len(parts) != 2:
            raise FormatError(name, at, f"line {number}: {line[:60]!r} is not two tokens parted by one space")
        left, right = parts
        for part in (left, right, left + right):
            if part not in ids:
                what = "the token they make, " if part == left + right else ""
                raise FormatError(name, at, f"line {number}: {what}{key(part)}, is not in the vocabulary")
            if ids[part] in unreachable:
                raise FormatError(name, at, f"line {number}: {key(part)} is not a byte-level token")
        merges.append((ids[left], ids[right]))
    return tuple(merges)
