"""A file's post-processing template (``hf_spec.Template``, HF's ``TemplateProcessing``):
read from the file's JSON (``read_template``), written to it (``template_entry``), as the
facade's (``bbpe.common.template``) and back, set on a tokenizer read from a file
(``set_file_template``) and taken back with the special tokens added since
(``parts_now``).

HF's template names its tokens and gives each name its ids (processors/template.rs); the
facade's is words that are tokens as ``id_to_token`` shows them. A name standing for several
ids becomes one word per id; going back, each template token is a name of its own. Either
way the ids around a text, and their type ids, are the same.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .hf_spec import AddedToken, Template, TemplatePiece
from .json_fields import Fields, shown
from .template import A, B, Piece
from .template import Template as FacadeTemplate

if TYPE_CHECKING:
    from ..tokenizer import Tokenizer


def facade_pieces(template: Template) -> tuple[tuple[Piece, ...], tuple[Piece, ...]]:
    """The (single, pair) pieces of the facade's template that applies ``template``."""
    def pieces(items: tuple[TemplatePiece, ...]) -> tuple[Piece, ...]:
        out: list[Piece] = []
        for piece in items:
            if piece.name in ("$A", "$B"):
                out.append((A if piece.name == "$A" else B, piece.type_id))
            else:
                out += [(kid, piece.type_id) for kid in template.tokens[piece.name][0]]
        return tuple(out)
    return pieces(template.single), pieces(template.pair)


def template_texts(template: Template) -> tuple[str, str]:
    """``set_template``'s (single, pair) words for ``template``: each token as the file
    writes it, every word with its type id."""
    def text(items: tuple[TemplatePiece, ...]) -> str:
        words = []
        for piece in items:
            names = (piece.name,) if piece.name in ("$A", "$B") else template.tokens[piece.name][1]
            words += [f"{name}:{piece.type_id}" for name in names]
        return " ".join(words)
    return text(template.single), text(template.pair)


def spec_template(template: FacadeTemplate, token_text: Callable[[int], str | None]) -> Template | None:
    """The file's form of the facade's template (None: nothing around the texts)."""
    if template.single == ((A, 0),) and template.pair == ((A, 0), (B, 1)):
        return None
    tokens: dict[str, tuple[tuple[int, ...], tuple[str, ...]]] = {}

    def pieces(items: tuple[Piece, ...]) -> tuple[TemplatePiece, ...]:
        out = []
        for kid, type_id in items:
            if kid < 0:
                out.append(TemplatePiece("$A" if kid == A else "$B", type_id))
                continue
            name = token_text(kid)
            if name is None:
                raise ValueError(f"the template's id {kid} has no token")
            tokens[name] = ((kid,), (name,))
            out.append(TemplatePiece(name, type_id))
        return tuple(out)
    return Template(pieces(template.single), pieces(template.pair), tokens)


def read_template(stage: dict[str, Any], field: str, fields: Fields) -> Template:
    """processors/template.rs: ``single`` and ``pair`` are lists of pieces, and each
    ``SpecialToken`` piece names an entry of ``special_tokens`` ({id, ids, tokens})."""
    names: dict[str, tuple[tuple[int, ...], tuple[str, ...]]] = {}
    specials = fields.obj(stage.get("special_tokens"), f"{field}.special_tokens")
    for name, entry in specials.items():
        at = f"{field}.special_tokens[{name!r}]"
        entry = fields.obj(entry, at, "an object {'id': str, 'ids': [int], 'tokens': [str]}")
        ids = tuple(fields.integer(kid, f"{at}.ids[{i}]") for i, kid in enumerate(fields.array(entry.get("ids"),
                                                                                                 f"{at}.ids")))
        tokens = tuple(fields.text(t, f"{at}.tokens[{i}]") for i, t in enumerate(fields.array(entry.get("tokens"),
                                                                                                f"{at}.tokens")))
        if len(ids) != len(tokens):
            fields.fail(at, f"{len(ids)} ids and {len(tokens)} tokens: they go in pairs")
        names[name] = (ids, tokens)
    single = _pieces(stage.get("single"), f"{field}.single", names, fields)
    pair = _pieces(stage.get("pair"), f"{field}.pair", names, fields)
    return Template(single, pair, names)


def _pieces(value: Any, field: str, names: dict[str, Any], fields: Fields) -> tuple[TemplatePiece, ...]:
    pieces = []
    for i, piece in enumerate(fields.array(value, field, "a list of pieces")):
        at = f"{field}[{i}]"
        form = "{'Sequence': {'id': 'A', 'type_id': 0}} or {'SpecialToken': {'id': token, 'type_id': 0}}"
        if not (isinstance(piece, dict) and len(piece) == 1 and next(iter(piece)) in ("Sequence", "SpecialToken")):
            fields.fail(at, f"{shown(piece)} is not a piece of a template ({form})")
        (kind, inner), = piece.items()
        inner = fields.obj(inner, f"{at}.{kind}")
        kid = inner.get("id")
        if not isinstance(kid, str):
            fields.fail(f"{at}.{kind}.id", f"must be a str, got {shown(kid)}")
        if kind == "Sequence" and kid not in ("A", "B"):
            fields.fail(f"{at}.Sequence.id", f"must be 'A' or 'B', got {shown(kid)}")
        if kind == "SpecialToken" and kid not in names:
            fields.fail(f"{at}.SpecialToken.id", f"{shown(kid)} is not one of the template's special_tokens")
        type_id = fields.integer(inner.get("type_id"), f"{at}.{kind}.type_id")
        pieces.append(TemplatePiece(f"${kid}" if kind == "Sequence" else str(kid), type_id))
    return tuple(pieces)


def template_entry(template: Template) -> dict[str, Any]:
    """processors/template.rs's serialized form."""
    def pieces(template_pieces: tuple[TemplatePiece, ...]) -> list[dict[str, Any]]:
        return [{"Sequence": {"id": p.name[1:], "type_id": p.type_id}} if p.name in ("$A", "$B")
                else {"SpecialToken": {"id": p.name, "type_id": p.type_id}} for p in template_pieces]
    return {"type": "TemplateProcessing", "single": pieces(template.single), "pair": pieces(template.pair),
            "special_tokens": {name: {"id": name, "ids": list(ids), "tokens": list(tokens)}
                               for name, (ids, tokens) in template.tokens.items()}}


def set_file_template(tok: Tokenizer, template: Template) -> None:
    """The file's template set on the tokenizer built from it (``set_template``); a
    ValueError when a token of it has another id in the file than in the vocabulary."""
    single, pair = template_texts(template)
    try:
        tok.set_template(single, pair)
    except ValueError as err:
        raise ValueError(f"post_processor: {err}") from None
    if (tok._template.single, tok._template.pair) != facade_pieces(template):
        raise ValueError(f"post_processor: the template {single!r} names tokens whose ids in the file are not "
                         f"theirs in the vocabulary: bbpe.{type(tok).__name__} does not apply such a template")


def parts_now(tok: Tokenizer, added: tuple[AddedToken, ...], template: Template | None,
              new_token: Callable[[bytes, int], AddedToken]) -> tuple[tuple[AddedToken, ...], Template | None]:
    """The added tokens and template of a tokenizer built from a file's (``added``,
    ``template``) as it is now, what ``save`` writes: the file's, with the special tokens
    added since (``new_token`` describes one) and the template set since."""
    known = {t.content.encode("utf-8", "surrogatepass"): t for t in added}
    now = [known.get(key) or new_token(key, kid) for key, kid in tok._specials.ids.items()]
    if template is None or (tok._template.single, tok._template.pair) != facade_pieces(template):
        template = spec_template(tok._template, tok.id_to_token)  # set since
    return tuple(sorted(now, key=lambda t: t.id)), template
