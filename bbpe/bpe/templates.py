"""A file's post-processing template (``spec.Template``, HF's ``TemplateProcessing``) and the
facade's (``bbpe.common.template``), each as the other.

HF's template names its tokens and gives each name its ids (processors/template.rs); the
facade's is words that are tokens as ``id_to_token`` shows them. A name standing for several
ids becomes one word per id; going back, each template token is a name of its own. Either
way the ids around a text, and their type ids, are the same.
"""

from __future__ import annotations

from collections.abc import Callable

from ..common.template import A, B, Piece
from ..common.template import Template as FacadeTemplate
from .spec import Template, TemplatePiece


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
