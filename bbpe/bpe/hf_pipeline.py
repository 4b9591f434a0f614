"""The stages of HF's ``tokenizer.json`` around a BPE model: normalizer, pre-tokenizer,
post-processor and decoder, read into what ``BpeSpec`` holds.

Only the stages bbpe applies exactly are read; any other is refused, naming the stage
and its type (``pre_tokenizer.pretokenizers[0]: Digits is not supported by bbpe.BPE``),
never read into something that would give other ids. What is read:

- normalizer: null, ``NFC`` (Qwen2's), or a ``Sequence`` of at most that;
- pre_tokenizer: ``ByteLevel`` (its regex or none, with or without ``add_prefix_space``),
  or ``Sequence[Split, ByteLevel(use_regex=false, add_prefix_space=false)]`` (Llama 3,
  Qwen2), the Split ``Isolated`` (keeps the text between matches) or ``Removed`` with
  ``invert`` (keeps only the matches: tiktoken's way); or ``Whitespace`` (alone, or alone in a
  Sequence), with no ByteLevel anywhere: the vocabulary is then text, and merging starts
  from chars (``Pipeline.char_units``);
- post_processor: null, ``ByteLevel`` (offsets only), ``TemplateProcessing``,
  ``RobertaProcessing`` (read as the template it applies), or a ``Sequence`` of those;
- decoder: null or ``ByteLevel`` (null only after ``Whitespace``).

The HF source each follows is cited where it is read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..common.hf_spec import Template, TemplatePiece
from ..common.hf_templates import read_template
from ..common.json_fields import Fields, shown
from ._pretokenize import WHITESPACE_PATTERN
from .onig import from_onig, to_onig
from .patterns import HF_BYTE_LEVEL_PATTERN, KNOWN_PATTERNS, PatternError, regex_problem

# the known patterns as an HF file spells them (hf_write writes them so): read back as themselves
_KNOWN_ONIG = {to_onig(pattern): pattern for pattern in KNOWN_PATTERNS.values()}


@dataclass
class Pipeline:
    pattern: str | None = None
    gaps: bool = True
    add_prefix_space: bool = False
    normalizer: str | None = None
    template: Template | None = None
    trim_offsets: bool = False
    trim_offsets_prefix_space: bool = False
    decoder: str | None = None
    char_units: bool = False  # HF's Whitespace, no ByteLevel: the vocabulary is text, merged from chars


def read_pipeline(document: dict[str, Any], fields: Fields) -> Pipeline:
    out = Pipeline()
    out.normalizer = _normalizer(document.get("normalizer"), "normalizer", fields)
    _pre_tokenizer(document.get("pre_tokenizer"), fields, out)
    _post_processor(document.get("post_processor"), "post_processor", fields, out)
    decoder = document.get("decoder")
    if decoder is not None:
        # decoders/mod.rs; the ByteLevel decoder's fields change nothing in decoding (byte_level.rs, decode_chain)
        if fields.kind(fields.obj(decoder, "decoder"), "decoder") != "ByteLevel":
            fields.refuse("decoder", decoder, "bbpe.BPE decodes the tokens' bytes: a ByteLevel decoder, or none")
        if out.char_units:
            fields.fail("decoder", "ByteLevel after a Whitespace pre-tokenizer would read the vocabulary's text as "
                                   "byte-level chars: bbpe.BPE reads no such file")
        out.decoder = "ByteLevel"
    return out


def _normalizer(stage: Any, field: str, fields: Fields) -> str | None:
    """normalizers/unicode.rs: NFC composes, as Python's unicodedata does; an empty Sequence
    (normalizers/utils.rs) does nothing."""
    if stage is None:
        return None
    kind = fields.kind(fields.obj(stage, field), field)
    if kind == "NFC":
        return "NFC"
    if kind == "Sequence":
        inner = fields.array(stage.get("normalizers"), f"{field}.normalizers")
        found = [_normalizer(s, f"{field}.normalizers[{i}]", fields) for i, s in enumerate(inner)]
        kept = [n for n in found if n is not None]
        return kept[0] if kept else None  # NFC twice is NFC once
    fields.refuse(field, stage, "it reads no normalizer, or NFC")


def _pre_tokenizer(stage: Any, fields: Fields, out: Pipeline) -> None:
    field = "pre_tokenizer"
    if stage is None:
        fields.fail(field, "null: a byte-level BPE needs a ByteLevel pre-tokenizer (without one, HF's model sees "
                           "the text's chars, not the byte-level chars its vocabulary is written in)")
    kind = fields.kind(fields.obj(stage, field), field)
    if kind == "ByteLevel":
        _byte_level(stage, field, fields, out)
        return
    if kind == "Whitespace":
        _whitespace(out)
        return
    if kind != "Sequence":
        fields.refuse(field, stage, "it reads ByteLevel, Whitespace, or a Sequence of a Split and a ByteLevel")
    stages = fields.array(stage.get("pretokenizers"), f"{field}.pretokenizers")
    for i, inner in enumerate(stages):
        fields.kind(fields.obj(inner, f"{field}.pretokenizers[{i}]"), f"{field}.pretokenizers[{i}]")
    kinds = [inner["type"] for inner in stages]
    if kinds == ["ByteLevel"]:
        _byte_level(stages[0], f"{field}.pretokenizers[0]", fields, out)
        return
    if kinds == ["Whitespace"]:
        _whitespace(out)
        return
    for i, inner in enumerate(stages):
        if kinds[i] not in ("Split", "ByteLevel") or (kinds[i] == "Split" and i != 0):
            fields.refuse(f"{field}.pretokenizers[{i}]", inner, "it reads a Sequence of one Split and a ByteLevel")
    if kinds != ["Split", "ByteLevel"]:
        fields.fail(f"{field}.pretokenizers", f"a Sequence of {', '.join(kinds) or 'nothing'} is not supported by "
                                              "bbpe.BPE (it reads a Split followed by a ByteLevel)")
    _split(stages[0], f"{field}.pretokenizers[0]", fields, out)
    level = f"{field}.pretokenizers[1]"
    if fields.flag(stages[1], "use_regex", level, True):
        fields.fail(f"{level}.use_regex", "true after a Split splits each piece again with GPT-2's regex: "
                                          "bbpe.BPE applies one pattern (a Split, then ByteLevel with use_regex false)")
    if fields.flag(stages[1], "add_prefix_space", level):
        # ByteLevel puts the space before each piece of the Split, not before the text (byte_level.rs, pre_tokenize)
        fields.fail(f"{level}.add_prefix_space", "true after a Split puts a space before every piece of the "
                                                 "Split: bbpe.BPE does not do that")
    fields.flag(stages[1], "trim_offsets", level)


def _byte_level(stage: dict[str, Any], field: str, fields: Fields, out: Pipeline) -> None:
    """pre_tokenizers/byte_level.rs: add_prefix_space and trim_offsets are required, use_regex
    defaults to true (its regex ``RE``); trim_offsets does nothing in a pre-tokenizer."""
    out.add_prefix_space = fields.flag(stage, "add_prefix_space", field)
    fields.flag(stage, "trim_offsets", field)
    out.pattern = HF_BYTE_LEVEL_PATTERN if fields.flag(stage, "use_regex", field, True) else None
    out.gaps = True  # ByteLevel splits with SplitDelimiterBehavior::Isolated


def _whitespace(out: Pipeline) -> None:
    """pre_tokenizers/whitespace.rs: the matches of ``\\w+|[^\\w\\s]+`` (the Rust regex
    crate's classes), the whitespace between them dropped; no ByteLevel after it, so the
    model's vocabulary is the text's chars."""
    out.pattern = WHITESPACE_PATTERN
    out.gaps = False
    out.char_units = True


def _split(stage: dict[str, Any], field: str, fields: Fields, out: Pipeline) -> None:
    """pre_tokenizers/split.rs: ``{"Regex": r}`` or ``{"String": s}`` (a literal, escaped);
    behavior Isolated keeps every part, Removed with invert keeps the matches only."""
    pattern = fields.obj(stage.get("pattern"), f"{field}.pattern", "an object {'Regex': ...} or {'String': ...}")
    if len(pattern) != 1 or next(iter(pattern)) not in ("Regex", "String"):
        fields.fail(f"{field}.pattern", f"must be {{'Regex': str}} or {{'String': str}}, got {shown(pattern)}")
    (form, value), = pattern.items()
    text = fields.text(value, f"{field}.pattern.{form}")
    if form == "String":
        text = re.escape(text)  # HF escapes a String pattern (regex::escape)
    elif text in _KNOWN_ONIG:
        text = _KNOWN_ONIG[text]
    else:
        try:
            text = from_onig(text)  # HF compiles it with Oniguruma (utils/onig.rs), bbpe with regex
        except PatternError as err:
            fields.fail(f"{field}.pattern.Regex", str(err))
    problem = regex_problem(text)
    if problem is not None:
        fields.fail(f"{field}.pattern.{form}", f"the pattern {shown(text)} does not compile with the regex package "
                                               f"({problem})")
    behavior = stage.get("behavior")
    invert = fields.flag(stage, "invert", field)
    if (behavior, invert) == ("Isolated", False):
        out.gaps = True
    elif (behavior, invert) == ("Removed", True):
        out.gaps = False
    else:
        fields.fail(f"{field}.behavior", f"{shown(behavior)} with invert {shown(invert)} is not supported by bbpe.BPE "
                                         "(it reads 'Isolated' without invert, and 'Removed' with invert)")
    out.pattern = text


def _post_processor(stage: Any, field: str, fields: Fields, out: Pipeline) -> None:
    """processors/mod.rs; a Sequence (processors/sequence.rs) applies its stages in order."""
    if stage is None:
        return
    kind = fields.kind(fields.obj(stage, field), field)
    if kind == "Sequence":
        for i, inner in enumerate(fields.array(stage.get("processors"), f"{field}.processors")):
            _post_processor(inner, f"{field}.processors[{i}]", fields, out)
        return
    if kind == "ByteLevel":  # offsets only (byte_level.rs, process_encodings)
        if out.char_units:
            fields.refuse(field, stage, "it reads no ByteLevel after a Whitespace pre-tokenizer")
        out.trim_offsets = fields.flag(stage, "trim_offsets", field)
        out.trim_offsets_prefix_space = out.trim_offsets and fields.flag(stage, "add_prefix_space", field)
        return
    if kind not in ("TemplateProcessing", "RobertaProcessing"):
        fields.refuse(field, stage, "it reads ByteLevel, TemplateProcessing, RobertaProcessing or a Sequence of them")
    if out.template is not None:
        fields.fail(field, "a second template: bbpe.BPE applies one")
    if kind == "RobertaProcessing":
        out.template = _roberta(stage, field, fields, out)
    else:
        out.template = read_template(stage, field, fields)


def _roberta(stage: dict[str, Any], field: str, fields: Fields, out: Pipeline) -> Template:
    """processors/roberta.rs: ``<s> $A </s>``, ``<s> $A </s> </s> $B </s>``, every type id 0;
    trim_offsets as ByteLevel's."""
    ends = {}
    for end in ("cls", "sep"):
        value = stage.get(end)
        if not (isinstance(value, list) and len(value) == 2 and isinstance(value[0], str)):
            fields.fail(f"{field}.{end}", f"must be [token, id], got {shown(value)}")
        ends[end] = (value[0], fields.integer(value[1], f"{field}.{end}[1]"))
    out.trim_offsets = fields.flag(stage, "trim_offsets", field)
    out.trim_offsets_prefix_space = out.trim_offsets and fields.flag(stage, "add_prefix_space", field)
    cls, sep = ends["cls"][0], ends["sep"][0]
    names = {token: ((kid,), (token,)) for token, kid in ends.values()}
    if len(names) == 1 and ends["cls"] != ends["sep"]:
        fields.fail(field, f"cls and sep are both {cls!r}, with the ids {ends['cls'][1]} and {ends['sep'][1]}")
    a, b = TemplatePiece("$A"), TemplatePiece("$B")
    return Template((TemplatePiece(cls), a, TemplatePiece(sep)),
                    (TemplatePiece(cls), a, TemplatePiece(sep), TemplatePiece(sep), b, TemplatePiece(sep)), names,
                    roberta=True)
