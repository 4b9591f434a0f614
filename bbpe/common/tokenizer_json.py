"""bbpe's own model file: JSON whose top level is shaped like HF's ``tokenizer.json``
(``version``, ``truncation``, ``padding``, ``added_tokens``, ``normalizer``,
``pre_tokenizer``, ``model``, ``post_processor``, ``decoder``), holding what a ``.bin``
cannot: the model's kind, special tokens of any length, the template, the options.

Tokens are written in the text form of ``token_text`` (invertible). The ``model`` section
is the model's own (for XBBPE: its vocabulary in id order, the ``.bin`` record order and
``bug_compat``); the stored training encodings stay in the ``.bin``. ``looks_like_json``
tells the formats apart by their content.

``parse`` checks every field bbpe reads before anything is built from it: a bad file is a
``FormatError`` naming the file and the field (``model.record_order[3]``), never an error
from inside numpy or the codec (issue 31).
"""

from __future__ import annotations

import json
import reprlib
from typing import Any

from ..errors import FormatError
from .arguments import int_argument
from .model import KINDS
from .specials import SpecialTokenError, SpecialTokens
from .token_text import token_bytes, token_text

FORMAT_VERSION = "1.0"
_XBBPE_KEY_BYTES = 24  # sizeof(WordIdKey::idKey): bbpe.xbbpe's KEY_BYTES (bbpe.common imports nothing of the port)
_ID_LIMIT = 1 << 63  # ids are int64 in the padded arrays (pad_token_id's range)
_SIDES = ("left", "right")


def looks_like_json(data: bytes) -> bool:
    """A JSON object: its first byte that is not white space is ``{`` (a ``.bin`` starts
    with its 8-byte vocabulary count, whose low byte would have to be 0x7B and the others
    white space: a count no file holds)."""
    return data.lstrip(b" \t\r\n")[:1] == b"{"


def dump(sections: dict[str, Any], added: list[tuple[bytes, int]], template: str, options: dict[str, Any],
         pair: str | None = None) -> bytes:
    """The file's bytes: the model's ``sections`` (``model`` and, where the model has
    them, ``normalizer``, ``pre_tokenizer``, ``post_processor``, ``decoder``), the added
    tokens, the template (``set_template``'s forms, a pair template of None derived from
    the single one, and not written; a template replaces the model's post-processor) and
    the options."""
    processor = sections.get("post_processor")
    if template != "$A" or pair is not None:
        processor = {"type": "TemplateProcessing", "single": template}
        if pair is not None:
            processor["pair"] = pair
    document = {
        "version": FORMAT_VERSION,
        "truncation": None,
        "padding": None,
        "added_tokens": [{"id": kid, "content": token_text(data), "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": False, "special": True} for data, kid in added],
        "normalizer": sections.get("normalizer"),
        "pre_tokenizer": sections.get("pre_tokenizer"),
        "model": sections["model"],
        "post_processor": processor,
        "decoder": sections.get("decoder"),
        "bbpe": options,
    }
    return json.dumps(document, ensure_ascii=False, indent=1).encode("utf-8") + b"\n"


class FieldError(ValueError):
    """A field bbpe cannot read: ``field`` says which (``model.record_order[3]``), the
    message what is wrong. ``parse`` makes it a FormatError naming the file."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


def parse(data: bytes, name: str) -> dict[str, Any]:
    """The document, every field bbpe reads checked (``check``); FormatError naming
    ``name`` and the bad field (or the byte offset of a JSON error) otherwise."""
    document = _decode(data, name)
    try:
        check(document)
    except FieldError as err:
        raise FormatError(name, 0, str(err)) from None
    return document


def _decode(data: bytes, name: str) -> Any:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise FormatError(name, err.start, f"not a valid bbpe JSON file ({err})") from None
    try:
        return json.loads(text, object_pairs_hook=_object)
    except json.JSONDecodeError as err:
        offset = len(text[: err.pos].encode("utf-8"))  # err.pos counts chars: the offset is in bytes
        raise FormatError(name, offset, f"not a valid bbpe JSON file ({err})") from None
    except RecursionError:  # json's C scanner recurses per level: [[[[...]]]] 1000 deep ends it
        raise FormatError(name, 0, "not a valid bbpe JSON file (arrays or objects nested too deeply)") from None
    except ValueError as err:  # an int of more than sys.get_int_max_str_digits() digits
        raise FormatError(name, 0, f"not a valid bbpe JSON file ({err})") from None


class _Repeated(dict):
    """A JSON object that names a key twice (``json`` keeps the last value silently): its
    reader refuses it where it is read, naming the field (``_object`` makes it)."""

    repeated: str


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json``'s object_pairs_hook: a dict, marked when a key is repeated."""
    obj = dict(pairs)
    if len(obj) == len(pairs):
        return obj
    seen: set[str] = set()
    marked = _Repeated(obj)
    marked.repeated = next(key for key, _ in pairs if key in seen or seen.add(key))  # type: ignore[func-returns-value]
    return marked


_shown = reprlib.Repr()  # values in messages: a few levels and chars, never the whole of a huge or deep value
_shown.maxlevel, _shown.maxstring, _shown.maxother, _shown.maxlong = 3, 60, 60, 60


def _got(value: Any) -> str:
    """A value as messages show it: as JSON writes it, shortened, and its type where the
    text alone does not tell it (``1.0 (a float)``, ``a list [1, 2]``)."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, float):
        return f"{value!r} (a float)"
    if isinstance(value, (list, dict)):
        return f"{'a list' if isinstance(value, list) else 'an object'} {_shown.repr(value)}"
    return _shown.repr(value)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)  # true and false are no ids


def _fields(value: Any, field: str, what: str, tokens: bool = False) -> dict[str, Any]:
    """``value`` if it is an object with no repeated key; FieldError otherwise, naming the
    repeated key as a field (``bbpe.padding_side``) or, for ``tokens``, as a token
    (``model.vocab['天地']``)."""
    if not isinstance(value, dict):
        raise FieldError(field, f"must be {what}, got {_got(value)}")
    if isinstance(value, _Repeated):
        key, twice = value.repeated, "given twice (JSON would keep the last one silently)"
        if tokens:
            raise FieldError(f"{field}[{_shown.repr(key)}]", twice)
        if key.isidentifier():
            raise FieldError(key if field == "the document" else f"{field}.{key}", twice)
        raise FieldError(field, f"the key {_shown.repr(key)} is {twice}")
    return value


def check(document: Any) -> None:
    """Raise FieldError naming the first field of ``document`` that bbpe cannot read: each
    field's type and range, the vocabulary's ids (0..n-1, each once) and keys (distinct),
    the record order (the ids once each), the added tokens' ids (as ``add`` gives them
    back), the post-processor's form and the options. What is left to the model's
    constructor and ``set_template`` (the 256 byte keys, the template's tokens) they check."""
    if not isinstance(document, dict):
        raise FieldError("the document", f"a bbpe JSON file is an object with a 'model' object, got {_got(document)}")
    _fields(document, "the document", "an object")
    if "version" not in document or document["version"] != FORMAT_VERSION:
        raise FieldError("version", f"unknown version {_got(document.get('version'))} "
                                    f"(bbpe reads {FORMAT_VERSION!r})")
    added = _added_tokens(document.get("added_tokens"))
    if "model" not in document:
        raise FieldError("model", "missing: a bbpe JSON file is an object with a 'model' object")
    model = _fields(document["model"], "model", "an object")
    kind = model.get("type")
    if not isinstance(kind, str) or kind not in KINDS:
        raise FieldError("model.type", f"model type {_got(kind)} is not one this bbpe reads "
                                       f"({', '.join(map(repr, KINDS))})")
    _check_options(document.get("bbpe"))
    if kind == "XBBPE":  # bbpe's own file: the rest is checked here; another model's reader checks its file
        _check_added_ids(added, _xbbpe_keys(model))
        template(document)


def _added_tokens(value: Any) -> list[tuple[str, int]]:
    """The (content, id) of each entry of ``added_tokens`` (null: none), their types checked."""
    if value is None:
        return []
    form = "added_tokens must be a list of {'id': int, 'content': str}"
    if not isinstance(value, list):
        raise FieldError("added_tokens", f"got {_got(value)}: {form}")
    out = []
    for i, entry in enumerate(value):
        field = f"added_tokens[{i}]"
        entry = _fields(entry, field, f"an object ({form})")
        for key, ok in (("id", _is_int), ("content", lambda v: isinstance(v, str))):
            if not ok(entry.get(key)):
                got = _got(entry[key]) if key in entry else "nothing"
                raise FieldError(f"{field}.{key}", f"got {got}: {form}")
        out.append((entry["content"], entry["id"]))
    return out


def _xbbpe_keys(model: dict[str, Any]) -> list[bytes]:
    """XBBPE's ``model``: ``vocab`` (keys of 1..24 bytes), ``record_order`` (optional: the
    ids in ``.bin`` order), ``bug_compat`` (optional, a bool)."""
    texts, keys = _vocab(model.get("vocab"), "model.vocab")
    for text, key in zip(texts, keys):
        if len(key) > _XBBPE_KEY_BYTES:
            raise FieldError(f"model.vocab[{_shown.repr(text)}]",
                             f"a key of {len(key)} bytes: an XBBPE key holds at most {_XBBPE_KEY_BYTES}")
    _check_record_order(model.get("record_order"), len(keys))
    if not isinstance(model.get("bug_compat", False), bool):
        raise FieldError("model.bug_compat", f"must be true or false, got {_got(model['bug_compat'])}")
    return keys


def _vocab(value: Any, field: str) -> tuple[list[str], list[bytes]]:
    """The token texts and their bytes in id order of a ``{token: id}`` object whose ids
    are 0..n-1, each once, and whose tokens are distinct non-empty bytes."""
    vocab = _fields(value, field, "an object {token: id}", tokens=True)
    if not vocab:
        raise FieldError(field, "holds no token")
    n = len(vocab)
    texts: list[str | None] = [None] * n
    for text, kid in vocab.items():
        if not _is_int(kid) or not 0 <= kid < n:
            raise FieldError(f"{field}[{_shown.repr(text)}]",
                             f"token {_shown.repr(text)} has id {_got(kid)}, not an id in 0..{n - 1}")
        if texts[kid] is not None:
            raise FieldError(f"{field}[{_shown.repr(text)}]",
                             f"token {_shown.repr(text)} has id {kid}, already the id of {_shown.repr(texts[kid])}")
        texts[kid] = text
    ordered = [text for text in texts if text is not None]  # all of them: n distinct ids in 0..n-1
    keys = [token_bytes(text) for text in ordered]
    first: dict[bytes, int] = {}
    for kid, (text, key) in enumerate(zip(ordered, keys)):
        if not key:
            raise FieldError(f"{field}[{_shown.repr(text)}]", "an empty token (a key needs at least one byte)")
        if first.setdefault(key, kid) != kid:  # two spellings of one key: "A" and "<0x41>"
            raise FieldError(f"{field}[{_shown.repr(text)}]", f"token {_shown.repr(text)} (id {kid}) has the "
                             f"bytes of token {_shown.repr(ordered[first[key]])} (id {first[key]})")
    return ordered, keys


def _check_record_order(value: Any, n: int) -> None:
    """``record_order``: null or absent (by id), or the ids 0..n-1 in any order, each once."""
    field = "model.record_order"
    if value is None:
        return
    if not isinstance(value, list):
        raise FieldError(field, f"must be a list of the ids 0..{n - 1}, got {_got(value)}")
    if len(value) != n:
        raise FieldError(field, f"has {len(value)} entries for the {n} tokens of model.vocab")
    at: list[int | None] = [None] * n
    for i, kid in enumerate(value):
        if not _is_int(kid) or not 0 <= kid < n:
            raise FieldError(f"{field}[{i}]", f"{_got(kid)} is not an id in 0..{n - 1}")
        if at[kid] is not None:
            raise FieldError(f"{field}[{i}]", f"id {kid} is already at {field}[{at[kid]}]")
        at[kid] = i


def _check_added_ids(added: list[tuple[str, int]], keys: list[bytes]) -> None:
    """Each added token's id is the one ``SpecialTokens.restore`` gives it back (its rule,
    run on a throwaway copy): a vocabulary key's own id, else the next id after the
    vocabulary and the tokens added before it."""
    vocab = {key: kid for kid, key in enumerate(keys)}
    try:
        SpecialTokens().restore([(token_bytes(content), kid) for content, kid in added], vocab.get, len(keys))
    except SpecialTokenError as err:
        message = str(err).split(" ", 1)[1] if err.part == "content" else str(err)  # less add's "tokens[i]"
        raise FieldError(f"added_tokens[{err.position}].{err.part}", message) from None


def _check_options(value: Any) -> None:
    """The ``bbpe`` section: null or absent, or an object whose known keys hold what the
    tokenizer's setters take (``padding_side``, ``truncation_side``, ``pad_token_id``)."""
    if value is None:
        return
    if not isinstance(value, dict):
        raise FieldError("bbpe", f"the 'bbpe' options must be an object, got {_got(value)}")
    options = _fields(value, "bbpe", "an object")
    for side in ("padding_side", "truncation_side"):
        if side in options and not (isinstance(options[side], str) and options[side] in _SIDES):
            raise FieldError(f"bbpe.{side}", f"{side} must be 'left' or 'right', got {_got(options[side])}")
    try:  # the setter's own rule and words (HFBatches.pad_token_id)
        int_argument("pad_token_id", options.get("pad_token_id"), "an int", 0, _ID_LIMIT)
    except (TypeError, ValueError) as err:
        raise FieldError("bbpe.pad_token_id", str(err)) from None


def added_tokens(document: dict[str, Any]) -> list[tuple[bytes, int]]:
    return [(token_bytes(t["content"]), t["id"]) for t in document.get("added_tokens") or []]


def template(document: dict[str, Any]) -> tuple[str, str | None]:
    """The templates for single texts and for pairs (``set_template``'s forms, ``"<S> $A
    </S>"``; the pair None when not given), from a ``TemplateProcessing`` post-processor
    written as bbpe writes it (str) or as HF ``tokenizers`` does (a list of
    ``{"SpecialToken": {"id": token, "type_id": n}}`` and ``{"Sequence": {"id": "A", "type_id":
    n}}``); FieldError (a ValueError) naming the field for any other."""
    processor = document.get("post_processor")
    if processor is None:
        return "$A", None
    if not isinstance(processor, dict):
        raise FieldError("post_processor", f"must be null or a TemplateProcessing object, got {_got(processor)}")
    if processor.get("type") != "TemplateProcessing":
        raise FieldError("post_processor.type", f"post_processor {_got(processor.get('type'))} is not one bbpe "
                                                "applies (a TemplateProcessing)")
    _fields(processor, "post_processor", "an object")
    single = _template_words(processor.get("single", "$A"), "post_processor.single")
    pair = processor.get("pair")
    return single, None if pair in (None, [], "") else _template_words(pair, "post_processor.pair")


def _template_words(value: Any, field: str) -> str:
    """One template (bbpe's str, or HF's list of pieces) as ``set_template``'s words."""
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        raise FieldError(field, f"'{field.rsplit('.', 1)[1]}' must be a str or a list, got {_got(value)}")
    return " ".join(_piece(piece, f"{field}[{i}]") for i, piece in enumerate(value))


def _piece(piece: Any, field: str) -> str:
    """One piece of HF's form (tokenizers/src/processors/template.rs, Piece) as a word,
    with its type id (``:n``) when it is not 0."""
    inner = piece.get("Sequence") if isinstance(piece, dict) else None
    if isinstance(inner, dict) and inner.get("id") in ("A", "B"):
        word = "$" + inner["id"]
    else:
        inner = piece.get("SpecialToken") if isinstance(piece, dict) else None
        if not (isinstance(inner, dict) and isinstance(token := inner.get("id"), str) and token
                and not any(c.isspace() for c in token)):
            raise FieldError(field, f"{_shown.repr(piece)} is not a piece of a template ({{'Sequence': {{'id': 'A'}}}} "
                                    "or {'SpecialToken': {'id': token}}, the token without spaces)")
        word = token
    kind = inner.get("type_id", 0)
    if not _is_int(kind) or not 0 <= kind < 1 << 32:
        raise FieldError(f"{field}.type_id", f"must be an int in 0..2**32-1, got {_got(kind)}")
    return f"{word}:{kind}" if kind else word