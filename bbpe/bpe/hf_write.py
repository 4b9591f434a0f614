"""A ``BpeSpec`` as HF's ``tokenizer.json``: a document that ``tokenizers.Tokenizer.from_str``
loads and that encodes every text to the spec's ids.

A spec read from HF's file is written back as HF writes it (tokenizers/src/tokenizer/
serialization.rs; ``model`` as models/bpe/serialization.rs, merges as ``[a, b]`` pairs).
A spec of tiktoken's ranks becomes an HF BPE whose merges are every pair of tokens whose
bytes together are a token, in the order of that token's rank (``ranks_to_merges``), with
``ignore_merges``: tiktoken merges any two parts whose bytes make a token, lowest rank
first, and a piece that is a token is that token. HF gives added tokens consecutive ids
after the vocabulary (added_vocabulary.rs, ``add_tokens``), so the ids between tiktoken's
special tokens (cl100k_base's 100256, 100261..100275) are given to placeholder special
tokens ``<|bbpe_unused_N|>``, which nothing else uses.
"""

from __future__ import annotations

import json
from typing import Any

from ..common.hf_spec import AddedToken, added_entry
from ..common.hf_templates import template_entry
from ._pretokenize import WHITESPACE_PATTERN
from .byte_level import to_text
from .onig import to_onig
from .patterns import HF_BYTE_LEVEL_PATTERN, PatternError
from .spec import BpeSpec

FORMAT_VERSION = "1.0"
_BYTE_LEVEL_DEFAULTS = {"add_prefix_space": True, "trim_offsets": True, "use_regex": True}


def to_tokenizer_json(spec: BpeSpec) -> dict[str, Any]:
    """The HF ``tokenizer.json`` document of ``spec`` (``json.dumps`` it to write the file).
    ValueError for what HF cannot express: an ``add_prefix_space`` with a pattern other
    than ByteLevel's own, an added token whose id HF would not give it."""
    texts = _vocab_texts(spec)
    ids = {text: kid for kid, text in enumerate(texts)}
    merges = spec.merges if spec.merges is not None else ranks_to_merges(spec.tokens, spec.unreachable)
    model = {
        "type": "BPE",
        "dropout": None,
        "unk_token": None if spec.unk_id is None else texts[spec.unk_id],
        "continuing_subword_prefix": None,
        "end_of_word_suffix": None,
        "fuse_unk": spec.fuse_unk,
        "byte_fallback": False,
        "ignore_merges": spec.ignore_merges,
        "vocab": ids,
        "merges": [[texts[a], texts[b]] for a, b in merges],
    }
    return {
        "version": FORMAT_VERSION,
        "truncation": None if spec.truncation is None else dict(spec.truncation),
        "padding": None if spec.padding is None else dict(spec.padding),
        "added_tokens": _added_tokens(spec, ids),
        "normalizer": None if spec.normalizer is None else {"type": spec.normalizer},
        "pre_tokenizer": _pre_tokenizer(spec),
        "post_processor": _post_processor(spec),
        "decoder": None if spec.decoder is None else {"type": "ByteLevel", **_BYTE_LEVEL_DEFAULTS},
        "model": model,
    }


def dumps(spec: BpeSpec) -> bytes:
    """The file's bytes: ``to_tokenizer_json`` as indented UTF-8 JSON (as HF's
    ``save(pretty=True)`` writes it, non-ASCII chars as they are)."""
    return (json.dumps(to_tokenizer_json(spec), ensure_ascii=False, indent=1) + "\n").encode("utf-8")


def _vocab_texts(spec: BpeSpec) -> list[str]:
    """Each token as HF's vocabulary spells it: byte-level chars (text, for a vocabulary of
    chars), or for an unreachable one the content of the added token that has its id."""
    by_id = {token.id: token.content for token in spec.added_tokens}
    texts = []
    for kid, token in enumerate(spec.tokens):
        if kid in spec.unreachable:
            if kid not in by_id:
                raise ValueError(f"token {kid} is unreachable but no added token has its id")
            texts.append(by_id[kid])
        else:
            texts.append(token.decode("utf-8") if spec.char_units else to_text(token))
    return texts


def ranks_to_merges(tokens: tuple[bytes, ...], unreachable: frozenset[int] = frozenset()) -> list[tuple[int, int]]:
    """tiktoken's ranks as HF merges: for each token (rank order), each split of its bytes
    into two tokens, the shorter left part first. Merging by these gives tiktoken's result
    (its ``byte_pair_merge`` merges the adjacent parts whose bytes make the lowest-ranked
    token); only the order of two different splits of one token, both present at once,
    could differ, and tiktoken's vocabularies never make that happen."""
    rank = {token: kid for kid, token in enumerate(tokens) if kid not in unreachable}
    merges = []
    for kid, token in enumerate(tokens):
        if kid in unreachable:
            continue
        for cut in range(1, len(token)):
            left, right = rank.get(token[:cut]), rank.get(token[cut:])
            if left is not None and right is not None:
                merges.append((left, right))
    return merges


def _added_tokens(spec: BpeSpec, ids: dict[str, int]) -> list[dict[str, Any]]:
    """HF's added_tokens, in an order that makes HF give each its id: one whose content is a
    vocabulary str gets that str's id; the others get len(vocab), len(vocab)+1, ... in order,
    so they go by id, and the ids no token has are filled with placeholders."""
    out = []
    later: dict[int, AddedToken] = {}
    for token in spec.added_tokens:
        if token.content in ids:
            if ids[token.content] != token.id:
                raise ValueError(f"the added token {token.content!r} has the id {token.id}, but HF gives it "
                                 f"{ids[token.content]}, its id in the vocabulary")
            out.append(added_entry(token))
        elif token.id < len(ids):
            raise ValueError(f"the added token {token.content!r} has the id {token.id}, which is the id of the "
                             f"vocabulary's {list(ids)[token.id]!r}: HF would give it a new id")
        else:
            later[token.id] = token
    if later:
        for kid in range(len(ids), max(later) + 1):
            filler = AddedToken(f"<|bbpe_unused_{kid}|>", kid)
            out.append(added_entry(later.get(kid, filler)))
    return out


def _pre_tokenizer(spec: BpeSpec) -> dict[str, Any]:
    if spec.char_units:
        if spec.pattern != WHITESPACE_PATTERN or spec.add_prefix_space:
            raise ValueError("a BPE over chars is written for HF with its Whitespace pre-tokenizer only")
        return {"type": "Whitespace"}
    if spec.pattern is None or (spec.pattern == HF_BYTE_LEVEL_PATTERN and spec.gaps):
        return {"type": "ByteLevel", "add_prefix_space": spec.add_prefix_space, "trim_offsets": True,
                "use_regex": spec.pattern is not None}
    if spec.add_prefix_space:
        raise ValueError("add_prefix_space with a pattern other than ByteLevel's own: HF's ByteLevel after a Split "
                         "puts the space before every piece of the Split, not before the text")
    try:
        pattern = to_onig(spec.pattern)  # HF compiles it with Oniguruma, which reads X{1,3}+ and $ otherwise
    except PatternError as err:
        raise ValueError(f"the pattern cannot be written for HF tokenizers: {err}") from None
    behavior = ("Isolated", False) if spec.gaps else ("Removed", True)
    split = {"type": "Split", "pattern": {"Regex": pattern}, "behavior": behavior[0], "invert": behavior[1]}
    return {"type": "Sequence", "pretokenizers": [
        split, {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]}


def _post_processor(spec: BpeSpec) -> dict[str, Any] | None:
    if spec.template is not None and spec.template.roberta:  # processors/roberta.rs, trim_offsets its own
        (cls, cls_id), (sep, sep_id) = ((p.name, spec.template.tokens[p.name][0][0])
                                        for p in (spec.template.single[0], spec.template.single[2]))
        return {"type": "RobertaProcessing", "sep": [sep, sep_id], "cls": [cls, cls_id],
                "trim_offsets": spec.trim_offsets, "add_prefix_space": spec.trim_offsets_prefix_space}
    stages = []
    if spec.trim_offsets:
        stages.append({"type": "ByteLevel", "add_prefix_space": spec.trim_offsets_prefix_space, "trim_offsets": True,
                       "use_regex": True})
    if spec.template is not None:
        stages.append(template_entry(spec.template))
    if len(stages) < 2:
        return stages[0] if stages else None
    return {"type": "Sequence", "processors": stages}
