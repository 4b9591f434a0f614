"""WordPiece's files, to and from ``WordPieceSpec``: BERT's ``vocab.txt`` (a token a line,
the line number its id) and HF's ``tokenizer.json`` whose model is ``WordPiece``.

What HF's file may hold, and bbpe applies exactly: the ``BertNormalizer`` (or none), the
``BertPreTokenizer``, the ``WordPiece`` model and decoder, a ``BertProcessing`` or
``TemplateProcessing`` post-processor, added tokens. Any other stage is refused with an
error naming it, never encoded differently.
"""

from __future__ import annotations

import warnings
from typing import Any

from ..common.hf_spec import AddedToken, Template, TemplatePiece, added_entry
from ..common.hf_templates import read_template, template_entry
from ..common.json_fields import Fields, key, shown
from ..errors import FormatError
from .spec import BERT_ROLES, BertNormalizer, WordPieceSpec

FORMAT_VERSION = "1.0"
_ADDED_FLAGS = ("single_word", "lstrip", "rstrip", "normalized", "special")


# ----------------------------------------------------------------------------- vocab.txt

def looks_like_vocab_txt(data: bytes) -> bool:
    """Whether a file that is neither JSON nor a ranks file (``bbpe.load``) is BERT's
    ``vocab.txt``: no NUL (an XBBPE ``.bin`` starts with a little-endian u64 count, which
    holds one), a token a line with no space or tab inside (BERT splits words there: no
    token holds one), and BERT's marks, a ``##`` continuation or one of its special tokens,
    so that a corpus of short lines is not taken for one (its error says what it is)."""
    head = data[: 1 << 20]
    if not head or b"\0" in head[:4096]:
        return False
    lines = head.split(b"\n")
    if len(head) < len(data):
        lines.pop()  # (cut by the head)
    if any(b" " in line.strip() or b"\t" in line.strip() for line in lines):
        return False
    return any(line.startswith(b"##") or line.rstrip() in BERT_MARKS for line in lines)


BERT_MARKS = {token.encode() for token in BERT_ROLES.values()}


def read_vocab_txt(data: bytes, name: str) -> tuple[str, ...]:
    """The tokens of a ``vocab.txt``, as HF reads it (models/wordpiece/mod.rs ``read_file``):
    one per line (LF or CRLF), trailing whitespace removed; FormatError naming the line of
    bytes that are not UTF-8."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()  # (the last line's break)
    tokens = []
    offset = 0
    for number, line in enumerate(lines, 1):
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as err:
            raise FormatError(name, offset + err.start, f"line {number} is not UTF-8") from None
        tokens.append(text.rstrip())  # Rust's trim_end: Unicode White_Space, as str.rstrip
        offset += len(line) + 1
    if not tokens:
        raise FormatError(name, 0, "holds no token")
    return tuple(tokens)


def vocab_txt_bytes(tokens: tuple[str, ...]) -> bytes:
    """A ``vocab.txt`` of the tokens (HF's ``save``: each token and a LF)."""
    for kid, token in enumerate(tokens):
        if token != token.rstrip() or "\n" in token or "\r" in token:
            raise ValueError(f"the token {token!r} (id {kid}) cannot be a line of vocab.txt: save tokenizer.json")
    return "".join(f"{token}\n" for token in tokens).encode("utf-8", "surrogatepass")


def bert_added_tokens(tokens: tuple[str, ...]) -> tuple[AddedToken, ...]:
    """The special tokens ``BertWordPieceTokenizer`` adds: those of BERT's five that are in
    the vocabulary, with their ids there."""
    ids = {token: kid for kid, token in enumerate(tokens)}
    return tuple(AddedToken(token, ids[token], special=True, decoded=token.encode("utf-8", "surrogatepass"))
                 for token in BERT_ROLES.values() if token in ids)


def bert_template(tokens: tuple[str, ...], cls: str = "[CLS]", sep: str = "[SEP]") -> Template | None:
    """``BertProcessing``: ``[CLS] $A [SEP]`` and ``[CLS] $A [SEP] $B:1 [SEP]:1``, where the
    vocabulary has both tokens."""
    ids = {token: kid for kid, token in enumerate(tokens)}
    if cls not in ids or sep not in ids:
        return None
    names = {cls: ((ids[cls],), (cls,)), sep: ((ids[sep],), (sep,))}
    a, b = TemplatePiece("$A"), TemplatePiece("$B", 1)
    return Template((TemplatePiece(cls), a, TemplatePiece(sep)),
                    (TemplatePiece(cls), a, TemplatePiece(sep), b, TemplatePiece(sep, 1)), names)


# ----------------------------------------------------------------------------- tokenizer.json

def read_tokenizer_json(document: Any, name: str = "tokenizer.json") -> WordPieceSpec:
    """The spec of an HF ``tokenizer.json`` whose model is WordPiece; FormatError naming the
    field of anything bbpe does not apply."""
    fields = Fields(name)
    document = fields.obj(document, "the document")
    model = fields.obj(document.get("model"), "model")
    vocab = fields.obj(model.get("vocab"), "model.vocab", "an object {token: id}")
    tokens = _vocab(vocab, fields)
    unk = fields.text(model.get("unk_token", "[UNK]"), "model.unk_token")
    prefix = fields.text(model.get("continuing_subword_prefix", "##"), "model.continuing_subword_prefix")
    longest = fields.integer(model.get("max_input_chars_per_word", 100), "model.max_input_chars_per_word", 1 << 63)
    normalizer = _normalizer(document.get("normalizer"), fields)
    _pre_tokenizer(document.get("pre_tokenizer"), fields)
    decoder, cleanup = _decoder(document.get("decoder"), prefix, fields)
    template = _post_processor(document.get("post_processor"), fields)
    added = _added_tokens(document.get("added_tokens"), {t: i for i, t in enumerate(tokens)}, normalizer, fields)
    for field in ("truncation", "padding"):
        if document.get(field) is not None:
            fields.fail(field, f"{shown(document[field])}: bbpe sets {field} per call (tok(texts, {field}=...))")
    return WordPieceSpec(tokens, unk, prefix, longest, normalizer, cleanup, decoder, added, template)


def _vocab(vocab: dict[str, Any], fields: Fields) -> tuple[str, ...]:
    """The tokens in id order: the ids must be 0..n-1, each once (HF's own files are)."""
    by_id: dict[int, str] = {}
    for token, kid in vocab.items():
        kid = fields.integer(kid, f"model.vocab[{key(token)}]")
        if kid in by_id:
            fields.fail(f"model.vocab[{key(token)}]", f"the id {kid} is {key(by_id[kid])}'s too")
        by_id[kid] = fields.text(token, f"model.vocab[{key(token)}]")
    missing = next((i for i in range(len(by_id)) if i not in by_id), None)
    if missing is not None:
        fields.fail("model.vocab", f"no token has the id {missing}: the ids must be 0..{len(by_id) - 1}")
    if not by_id:
        fields.fail("model.vocab", "is empty")
    return tuple(by_id[i] for i in range(len(by_id)))


def _normalizer(stage: Any, fields: Fields) -> BertNormalizer | None:
    if stage is None:
        return None
    kind = fields.kind(fields.obj(stage, "normalizer"), "normalizer")
    if kind != "BertNormalizer":
        _refuse(fields, "normalizer", kind, "it reads a BertNormalizer or none")
    strip = stage.get("strip_accents")
    if strip is not None and not isinstance(strip, bool):
        fields.fail("normalizer.strip_accents", f"must be true, false or null, got {shown(strip)}")
    return BertNormalizer(fields.flag(stage, "clean_text", "normalizer", True),
                          fields.flag(stage, "handle_chinese_chars", "normalizer", True), strip,
                          fields.flag(stage, "lowercase", "normalizer", True))


def _pre_tokenizer(stage: Any, fields: Fields) -> None:
    kind = None if stage is None else fields.kind(fields.obj(stage, "pre_tokenizer"), "pre_tokenizer")
    if kind != "BertPreTokenizer":
        _refuse(fields, "pre_tokenizer", kind or "none", "it reads a BertPreTokenizer")


def _decoder(stage: Any, prefix: str, fields: Fields) -> tuple[bool, bool]:
    """(whether there is a decoder, its cleanup)."""
    if stage is None:
        return False, False
    kind = fields.kind(fields.obj(stage, "decoder"), "decoder")
    if kind != "WordPiece":
        _refuse(fields, "decoder", kind, "it reads a WordPiece decoder or none")
    if fields.text(stage.get("prefix", "##"), "decoder.prefix") != prefix:
        fields.fail("decoder.prefix", f"{key(stage.get('prefix'))} is not the model's continuing prefix {key(prefix)}")
    return True, fields.flag(stage, "cleanup", "decoder", True)


def _post_processor(stage: Any, fields: Fields) -> Template | None:
    if stage is None:
        return None
    kind = fields.kind(fields.obj(stage, "post_processor"), "post_processor")
    if kind == "TemplateProcessing":
        return read_template(stage, "post_processor", fields)
    if kind != "BertProcessing":
        _refuse(fields, "post_processor", kind, "it reads BertProcessing or TemplateProcessing")
    ends = {}
    for end in ("cls", "sep"):
        value = stage.get(end)
        if not (isinstance(value, list) and len(value) == 2 and isinstance(value[0], str)):
            fields.fail(f"post_processor.{end}", f"must be [token, id], got {shown(value)}")
        ends[end] = (value[0], fields.integer(value[1], f"post_processor.{end}[1]"))
    (cls, cls_id), (sep, sep_id) = ends["cls"], ends["sep"]
    if cls == sep and cls_id != sep_id:
        fields.fail("post_processor", f"cls and sep are both {cls!r}, with the ids {cls_id} and {sep_id}")
    names = {cls: ((cls_id,), (cls,)), sep: ((sep_id,), (sep,))}
    a, b = TemplatePiece("$A"), TemplatePiece("$B", 1)
    return Template((TemplatePiece(cls), a, TemplatePiece(sep)),
                    (TemplatePiece(cls), a, TemplatePiece(sep), b, TemplatePiece(sep, 1)), names)


def _added_tokens(value: Any, ids: dict[str, int], normalizer: BertNormalizer | None,
                  fields: Fields) -> tuple[AddedToken, ...]:
    """HF's added tokens with the ids HF gives them when loading (the vocabulary's id of
    their content, else the next after the vocabulary); bbpe matches them in the text as
    given, so one HF matches in the normalized text is refused where that differs."""
    if value is None:
        return ()
    added: dict[str, AddedToken] = {}
    next_id = len(ids)
    for i, entry in enumerate(fields.array(value, "added_tokens")):
        at = f"added_tokens[{i}]"
        entry = fields.obj(entry, at)
        content = fields.text(entry.get("content"), f"{at}.content")
        flags = {flag: fields.flag(entry, flag, at, False) for flag in _ADDED_FLAGS}
        given = fields.integer(entry.get("id"), f"{at}.id")
        if not content:
            continue
        for flag in ("single_word", "lstrip", "rstrip"):
            if flags[flag]:
                fields.fail(f"{at}.{flag}", f"true for {key(content)}: bbpe does not apply {flag} to an added token")
        if flags["normalized"] and normalizer is not None:
            fields.fail(f"{at}.normalized", f"true for {key(content)} with a BertNormalizer: HF matches it in the "
                                            "normalized text, bbpe in the text as given")
        if content in added:
            continue
        kid = ids.get(content)
        if kid is None:
            kid, next_id = next_id, next_id + 1
        if kid != given:
            warnings.warn(f"{fields.name}: {at}: the file gives {key(content)} the id {given}, HF tokenizers gives it "
                          f"{kid} when loading the file, and so does bbpe", UserWarning, stacklevel=3)
        added[content] = AddedToken(content, kid, **flags, decoded=content.encode("utf-8"))
    return tuple(added.values())


def _refuse(fields: Fields, field: str, kind: str, why: str) -> None:
    fields.fail(field, f"{kind} is not supported by bbpe.WordPiece ({why})")


def to_tokenizer_json(spec: WordPieceSpec) -> dict[str, Any]:
    """The HF ``tokenizer.json`` document of ``spec``, which ``tokenizers`` loads to the same
    ids (as HF's ``BertWordPieceTokenizer`` saves it)."""
    ids = spec.ids()
    if len(ids) != len(spec.tokens):
        raise ValueError("the vocabulary lists a token twice: HF's tokenizer.json has room for one id per token "
                         "(save vocab.txt)")
    if spec.unk_per_char:
        raise ValueError("unk_per_char (the seed's encoder) is not something HF's WordPiece model does")
    norm = spec.normalizer
    return {
        "version": FORMAT_VERSION,
        "truncation": None,
        "padding": None,
        "added_tokens": [added_entry(t) for t in sorted(spec.added_tokens, key=lambda t: t.id)],
        "normalizer": None if norm is None else {
            "type": "BertNormalizer", "clean_text": norm.clean_text, "handle_chinese_chars": norm.handle_chinese_chars,
            "strip_accents": norm.strip_accents, "lowercase": norm.lowercase},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": None if spec.template is None else _processor(spec.template),
        "decoder": {"type": "WordPiece", "prefix": spec.prefix, "cleanup": spec.cleanup} if spec.decoder else None,
        "model": {"type": "WordPiece", "unk_token": spec.unk_token, "continuing_subword_prefix": spec.prefix,
                  "max_input_chars_per_word": spec.max_input_chars_per_word, "vocab": ids},
    }


def _processor(template: Template) -> dict[str, Any]:
    """BertProcessing where the template is its, else TemplateProcessing."""
    single = template.single
    if len(single) == 3 and single[1].name == "$A" and single[0].name in template.tokens:
        cls, sep = single[0].name, single[2].name
        bert = Template((TemplatePiece(cls), TemplatePiece("$A"), TemplatePiece(sep)),
                        (TemplatePiece(cls), TemplatePiece("$A"), TemplatePiece(sep), TemplatePiece("$B", 1),
                         TemplatePiece(sep, 1)), {})
        if (template.single, template.pair) == (bert.single, bert.pair) and all(
                len(template.tokens[n][0]) == 1 and template.tokens[n][1] == (n,) for n in (cls, sep)):
            return {"type": "BertProcessing", "sep": [sep, template.tokens[sep][0][0]],
                    "cls": [cls, template.tokens[cls][0][0]]}
    return template_entry(template)
