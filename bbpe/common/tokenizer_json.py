"""bbpe's own model file: JSON whose top level is shaped like HF's ``tokenizer.json``
(``version``, ``truncation``, ``padding``, ``added_tokens``, ``normalizer``,
``pre_tokenizer``, ``model``, ``post_processor``, ``decoder``), holding what a ``.bin``
cannot: the model's kind, special tokens of any length, the template, the options.

Tokens are written in the text form of ``token_text`` (invertible). The ``model`` section
is the model's own (for XBBPE: its vocabulary in id order, the ``.bin`` record order and
``bug_compat``); the stored training encodings stay in the ``.bin``. ``looks_like_json``
tells the formats apart by their content.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import FormatError
from .token_text import token_bytes, token_text

FORMAT_VERSION = "1.0"


def looks_like_json(data: bytes) -> bool:
    """A JSON object: its first byte that is not white space is ``{`` (a ``.bin`` starts
    with its 8-byte vocabulary count, whose low byte would have to be 0x7B and the others
    white space: a count no file holds)."""
    return data.lstrip(b" \t\r\n")[:1] == b"{"


def dump(model: dict[str, Any], added: list[tuple[bytes, int]], template: str, options: dict[str, Any]) -> bytes:
    """The file's bytes."""
    document = {
        "version": FORMAT_VERSION,
        "truncation": None,
        "padding": None,
        "added_tokens": [{"id": kid, "content": token_text(data), "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": False, "special": True} for data, kid in added],
        "normalizer": None,
        "pre_tokenizer": None,
        "model": model,
        "post_processor": None if template == "$A" else {"type": "TemplateProcessing", "single": template},
        "decoder": None,
        "bbpe": options,
    }
    return json.dumps(document, ensure_ascii=False, indent=1).encode("utf-8") + b"\n"


def parse(data: bytes, name: str) -> dict[str, Any]:
    """The document, checked for the fields every bbpe file has; FormatError otherwise."""
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        offset = getattr(err, "pos", getattr(err, "start", 0))
        raise FormatError(name, offset, f"not a valid bbpe JSON file ({err})") from None
    if not isinstance(document, dict) or not isinstance(document.get("model"), dict):
        raise FormatError(name, 0, "a bbpe JSON file is an object with a 'model' object")
    if document.get("version") != FORMAT_VERSION:
        raise FormatError(name, 0, f"unknown version {document.get('version')!r} (bbpe reads {FORMAT_VERSION!r})")
    added = document.get("added_tokens") or []
    if not isinstance(added, list) or not all(isinstance(t, dict) and isinstance(t.get("content"), str)
                                              and isinstance(t.get("id"), int) for t in added):
        raise FormatError(name, 0, "added_tokens must be a list of {'id': int, 'content': str}")
    return document


def added_tokens(document: dict[str, Any]) -> list[tuple[bytes, int]]:
    return [(token_bytes(t["content"]), t["id"]) for t in document.get("added_tokens") or []]


def template(document: dict[str, Any]) -> str:
    """The template for single texts (``set_template``'s form, ``"<S> $A </S>"``), from a
    ``TemplateProcessing`` post-processor written as bbpe writes it (a str) or as HF
    ``tokenizers`` does (a list of ``{"SpecialToken": {"id": token}}`` and
    ``{"Sequence": {"id": "A"}}``); ValueError for any other."""
    processor = document.get("post_processor")
    if processor is None:
        return "$A"
    if not isinstance(processor, dict) or processor.get("type") != "TemplateProcessing":
        kind = processor.get("type") if isinstance(processor, dict) else type(processor).__name__
        raise ValueError(f"post_processor {kind!r} is not one bbpe applies (a TemplateProcessing)")
    single = processor.get("single", "$A")
    if isinstance(single, str):
        return single
    if not isinstance(single, list):
        raise TypeError(f"post_processor: 'single' must be a str or a list, got {type(single).__name__}")
    words = []
    for piece in single:  # HF's form: tokenizers/src/processors/template.rs, Piece
        if isinstance(piece, dict) and isinstance(piece.get("Sequence"), dict) and piece["Sequence"].get("id") == "A":
            words.append("$A")
        elif isinstance(piece, dict) and isinstance(piece.get("SpecialToken"), dict) and isinstance(
                token := piece["SpecialToken"].get("id"), str) and token and not any(c.isspace() for c in token):
            words.append(token)
        else:
            raise ValueError(f"post_processor: {piece!r} is not a piece of a single-text template "
                             "({'Sequence': {'id': 'A'}} or {'SpecialToken': {'id': token}}, the token without spaces)")
    return " ".join(words)
