"""HF ``tokenizers``' ``tokenizer.json`` with a ``BPE`` model, read into a ``BpeSpec`` whose
ids are HF's.

The model (tokenizers/src/models/bpe/serialization.rs and model.rs): ``vocab`` maps each
token, spelt in GPT-2's byte-to-unicode chars (bbpe.bpe.byte_level) or, after a
``Whitespace`` pre-tokenizer, as its text (``BpeSpec.text_form`` "chars"), to its id; ``merges``
lists the pairs in rank order, as ``"a b"`` strings or ``["a", "b"]`` pairs. The added
tokens (tokenizer/serialization.rs, added_vocabulary.rs) get their ids as HF gives them on
loading. The pipeline around the model is bbpe.bpe.hf_pipeline's.

Beyond what HF checks, the vocabulary's ids must be 0..n-1, each once (HF also loads a
vocabulary with holes or two tokens on one id, whose ids no dense table can hold).
"""

from __future__ import annotations

import warnings
from typing import Any

from ..common.hf_spec import AddedToken, Template
from ..common.json_fields import Fields, key, shown
from .byte_level import decoded_bytes, foreign_char, to_bytes
from .hf_pipeline import Pipeline, read_pipeline
from .spec import BpeSpec

_ADDED_FLAGS = ("special", "normalized", "lstrip", "rstrip", "single_word")
_NOT_APPLIED = {"lstrip": "strip the spaces before", "rstrip": "strip the spaces after",
                "single_word": "match only as a whole word"}


def read_tokenizer_json(document: Any, name: str = "tokenizer.json") -> BpeSpec:
    """The spec of an HF ``tokenizer.json`` document (its parsed JSON); FormatError naming
    ``name`` and the field for anything bbpe cannot read exactly."""
    fields = Fields(name)
    document = fields.obj(document, "the document", "an object (an HF tokenizer.json)")
    version = document.get("version", "1.0")
    if version != "1.0":  # tokenizer/serialization.rs refuses any other
        fields.fail("version", f"unknown tokenizer version {shown(version)} (HF tokenizers reads '1.0')")
    if "model" not in document:
        fields.fail("model", "missing: an HF tokenizer.json has a 'model' object")
    model = fields.obj(document["model"], "model")
    kind = fields.kind(model, "model")
    if kind != "BPE":
        fields.fail("model.type", f"{shown(kind)} is not supported by bbpe.BPE (it reads BPE models)")
    pipeline = read_pipeline(document, fields)
    texts = read_vocab(model.get("vocab"), fields)
    added_texts = _added_contents(document.get("added_tokens"), fields)
    unreachable: frozenset[int] = frozenset()
    if pipeline.char_units:
        tokens = vocab_utf8(texts, fields)
    else:
        tokens, unreachable = vocab_bytes(texts, added_texts, fields)
    ids = {text: kid for kid, text in enumerate(texts)}
    merges = _merges(model.get("merges"), ids, unreachable, fields)
    unk_id = _model_options(model, ids, tokens, pipeline.char_units, fields)
    added = _added_tokens(document.get("added_tokens"), ids, pipeline, fields)
    n_ids = max([len(tokens), *(t.id + 1 for t in added)])
    if pipeline.template is not None:
        _check_template_ids(pipeline.template, n_ids, fields)
    sections = {}
    for section in ("truncation", "padding"):
        value = document.get(section)
        sections[section] = None if value is None else fields.obj(value, section, "null or an object")
    return BpeSpec(tokens=tokens, merges=merges, pattern=pipeline.pattern, gaps=pipeline.gaps,
                   add_prefix_space=pipeline.add_prefix_space, ignore_merges=_option(model, "ignore_merges", fields),
                   unk_id=unk_id, fuse_unk=_option(model, "fuse_unk", fields),
                   normalizer="NFC" if pipeline.normalizer == "NFC" else None, added_tokens=added,
                   template=pipeline.template, trim_offsets=pipeline.trim_offsets,
                   trim_offsets_prefix_space=pipeline.trim_offsets_prefix_space,
                   decoder="ByteLevel" if pipeline.decoder == "ByteLevel" else None,
                   truncation=sections["truncation"], padding=sections["padding"],
                   text_form="chars" if pipeline.char_units else "byte_level", unreachable=unreachable)


def read_vocab(value: Any, fields: Fields, field: str = "model.vocab") -> list[str]:
    """The token strs by id, the ids 0..n-1 each once."""
    vocab = fields.obj(value, field, "an object {token: id}")
    if not vocab:
        fields.fail(field, "holds no token")
    n = len(vocab)
    texts: list[str | None] = [None] * n
    for text, kid in vocab.items():
        if not isinstance(kid, int) or isinstance(kid, bool) or not 0 <= kid < n:
            fields.fail(f"{field}[{key(text)}]", f"id {shown(kid)} is not in 0..{n - 1} (bbpe.BPE needs the ids "
                                                     f"0..n-1 of a vocabulary of n tokens)")
        if texts[kid] is not None:
            fields.fail(f"{field}[{key(text)}]", f"id {kid} is already the id of {key(texts[kid] or '')}")
        texts[kid] = text
    return [text for text in texts if text is not None]  # all n of them: n distinct ids in 0..n-1


def _added_contents(value: Any, fields: Fields) -> set[str]:
    if value is None:
        return set()
    entries = fields.array(value, "added_tokens", "a list of {'id', 'content', ...} objects")
    contents = set()
    for i, entry in enumerate(entries):
        entry = fields.obj(entry, f"added_tokens[{i}]")
        contents.add(fields.text(entry.get("content"), f"added_tokens[{i}].content"))
    return contents


def vocab_bytes(texts: list[str], added: set[str], fields: Fields,
                 field: str = "model.vocab") -> tuple[tuple[bytes, ...], frozenset[int]]:
    """Each vocabulary str as bytes: its byte-level chars' bytes, or for an added token with
    chars outside that alphabet its UTF-8 (such a token is unreachable by the model)."""
    tokens: list[bytes] = []
    unreachable = set()
    first: dict[bytes, int] = {}
    for kid, text in enumerate(texts):
        data = to_bytes(text)
        if data is None:
            if text not in added:
                fields.fail(f"{field}[{key(text)}]", f"the char {foreign_char(text)!r} "
                            f"(U+{ord(foreign_char(text) or ' '):04X}) is not in the byte-level alphabet (GPT-2's "
                            "bytes_to_unicode), and the token is no added token: this is not a byte-level vocabulary")
            data = text.encode("utf-8", "surrogatepass")
            unreachable.add(kid)
        if not data:
            fields.fail(f"{field}[{key(text)}]", "an empty token")
        if first.setdefault(data, kid) != kid:
            fields.fail(f"{field}[{key(text)}]", f"its bytes {data!r} are those of {key(texts[first[data]])} "
                                                     f"(id {first[data]})")
        tokens.append(data)
    return tuple(tokens), frozenset(unreachable)


def vocab_utf8(texts: list[str], fields: Fields, field: str = "model.vocab") -> tuple[bytes, ...]:
    """Each vocabulary str as its UTF-8 (a vocabulary of text)."""
    tokens = []
    for text in texts:
        if not text:
            fields.fail(f"{field}[{key(text)}]", "an empty token")
        try:
            tokens.append(text.encode("utf-8"))
        except UnicodeEncodeError as err:
            fields.fail(f"{field}[{key(text)}]", f"char {err.start}: a lone surrogate is not text")
    return tuple(tokens)


def _merges(value: Any, ids: dict[str, int], unreachable: frozenset[int],
            fields: Fields) -> tuple[tuple[int, int], ...]:
    """(left id, right id) in rank order; each part and the token they make in the
    vocabulary (model.rs, BpeBuilder::build: MergeTokenOutOfVocabulary). A pair given twice
    is kept twice: HF's map keeps its last rank, and so does bbpe's codec."""
    entries = fields.array(value, "model.merges", "a list of merges ('a b' strs or ['a', 'b'] pairs)")
    merges = []
    for i, entry in enumerate(entries):
        at = f"model.merges[{i}]"
        if isinstance(entry, str):
            parts = entry.split(" ")  # convert_merges_to_hashmap: exactly one space
            if len(parts) != 2:
                fields.fail(at, f"{shown(entry)} is not two tokens parted by one space")
        elif isinstance(entry, list) and len(entry) == 2 and all(isinstance(p, str) for p in entry):
            parts = entry
        else:
            fields.fail(at, f"must be 'a b' or ['a', 'b'], got {shown(entry)}")
        left, right = parts
        for part in (left, right, left + right):
            if part not in ids:
                what = "the token they make, " if part == left + right else ""
                fields.fail(at, f"{what}{key(part)}, is not in model.vocab")
            if ids[part] in unreachable:
                fields.fail(at, f"{key(part)} is not a byte-level token: no merge can make it or use it")
        merges.append((ids[left], ids[right]))
    return tuple(merges)


def _option(model: dict[str, Any], name: str, fields: Fields) -> bool:
    """A bool option of the model; null or absent is false (serialization.rs reads
    ``Option<bool>`` and keeps the default)."""
    return False if model.get(name) is None else fields.flag(model, name, "model")


def _model_options(model: dict[str, Any], ids: dict[str, int], tokens: tuple[bytes, ...], char_units: bool,
                   fields: Fields) -> int | None:
    """Check the options that change a BPE (model.rs, Config); the unk token's id."""
    dropout = model.get("dropout")
    if dropout not in (None, 0, 0.0) or isinstance(dropout, bool):
        fields.fail("model.dropout", f"{shown(dropout)}: BPE dropout skips merges at random, bbpe.BPE is deterministic "
                                     "(null or 0 only)")
    for option in ("continuing_subword_prefix", "end_of_word_suffix"):
        if model.get(option) not in (None, ""):
            fields.fail(f"model.{option}", f"{shown(model[option])} is not supported by bbpe.BPE (null or '' only)")
    if model.get("byte_fallback") not in (None, False):
        fields.fail("model.byte_fallback", f"{shown(model['byte_fallback'])} is not supported by bbpe.BPE (a "
                                           "byte-level vocabulary needs no <0xHH> fallback: false only)")
    unk = model.get("unk_token")
    if unk is None:
        return None
    fields.text(unk, "model.unk_token")
    if unk in ids:
        return ids[unk]
    if char_units:
        fields.fail("model.unk_token", f"{key(unk)} is not in model.vocab: HF fails on any text that holds a char "
                                       "that is no token")
    single = {token for token in tokens if len(token) == 1}
    if len(single) == 256:
        return None  # every byte is a token: the unk token is never used
    missing = next(b for b in range(256) if bytes([b]) not in single)
    fields.fail("model.unk_token", f"{key(unk)} is not in model.vocab, and the byte 0x{missing:02X} is no token: HF "
                                   "fails on any text that holds it")


def _added_tokens(value: Any, ids: dict[str, int], pipeline: Pipeline, fields: Fields) -> tuple[AddedToken, ...]:
    """The added tokens with the ids HF gives them (added_vocabulary.rs, ``add_tokens``): the
    vocabulary id of their content if it has one, else the next id after the vocabulary;
    an empty one is skipped, one given again keeps its first id."""
    if value is None:
        return ()
    added: dict[str, AddedToken] = {}
    next_id = len(ids)
    for i, entry in enumerate(value):  # a list of objects with a str content: _added_contents checked that
        at = f"added_tokens[{i}]"
        content = entry["content"]
        flags = {flag: fields.flag(entry, flag, at) for flag in _ADDED_FLAGS}
        given = fields.integer(entry.get("id"), f"{at}.id")
        if not content:
            continue
        for flag, what in _NOT_APPLIED.items():
            if flags[flag]:
                fields.fail(f"{at}.{flag}", f"true for {key(content)}: bbpe.BPE does not {what} an added token")
        if flags["normalized"] and pipeline.normalizer is not None:
            fields.fail(f"{at}.normalized", f"true for {key(content)} with a {pipeline.normalizer} normalizer: HF "
                                            "matches it in the normalized text, bbpe.BPE in the text as given")
        if content in added:
            old = added[content]
            if any(getattr(old, flag) != flags[flag] for flag in _ADDED_FLAGS):
                fields.fail(at, f"{key(content)} is added again with other flags than at its first entry")
            continue
        kid = ids.get(content)
        if kid is None:
            kid, next_id = next_id, next_id + 1
        if kid != given:  # HF warns and uses its own id (tokenizer/serialization.rs)
            warnings.warn(f"{fields.name}: {at}: the file gives {key(content)} the id {given}, HF tokenizers gives it "
                          f"{kid} when loading the file, and so does bbpe", UserWarning, stacklevel=3)
        added[content] = AddedToken(content, kid, **flags, decoded=decoded_bytes(content))
    tokens = tuple(added.values())
    _check_overlaps(tokens, fields)
    return tokens


def _check_overlaps(tokens: tuple[AddedToken, ...], fields: Fields) -> None:
    """HF takes out the added tokens that are not ``normalized`` first, then the others in
    what is left (added_vocabulary.rs, ``extract_and_normalize``); bbpe takes all of them
    in one pass, leftmost and longest first. The two agree unless a token of one group can
    overlap one of the other: refuse that."""
    raw = [t.content for t in tokens if not t.normalized]
    normalized = [t.content for t in tokens if t.normalized]
    for a in raw:
        for b in normalized:
            if a in b or b in a or any(a.endswith(b[:k]) or b.endswith(a[:k]) for k in range(1, min(len(a), len(b)))):
                fields.fail("added_tokens", f"{key(a)} (normalized false) and {key(b)} (normalized true) can overlap "
                                            "in a text: HF matches the first kind before the second, bbpe.BPE matches "
                                            "them together")


def _check_template_ids(template: Template, n_ids: int, fields: Fields) -> None:
    for name, (ids, _) in template.tokens.items():
        for i, kid in enumerate(ids):
            if kid >= n_ids:
                fields.fail("post_processor", f"the template's special token {key(name)} has the id "
                            f"{kid}, which is no id of the vocabulary or the added tokens (0..{n_ids - 1})")
