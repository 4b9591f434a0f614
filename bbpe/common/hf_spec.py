"""What every model's HF ``tokenizer.json`` holds beside its model, as the models' specs
describe it (``bbpe.bpe.spec.BpeSpec``, ``bbpe.wordpiece.spec.WordPieceSpec``): the added
tokens (``AddedToken``) and the post-processor's template (``Template``, whose reading,
writing and facade form are ``hf_templates``); and an added token as the file writes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class AddedToken:
    """A token matched whole in the text before the model runs (HF's ``added_tokens``,
    tiktoken's special tokens).

    - ``content``: the text it matches;
    - ``id``: its id, as HF gives it when loading the file (tokenizer/serialization.rs,
      added_vocabulary.rs ``add_tokens``): the id of the model's vocabulary token of that
      *str* if there is one, else the next id after the vocabulary and the added tokens
      before it; the ``id`` written in the file is not used (HF only warns of a
      difference, and so does ``read_tokenizer_json``);
    - ``special``: skipped by ``decode(skip_special_tokens=True)``; a non-special added token
      is matched the same way;
    - ``normalized``: HF matches it in the normalized text (only different from the raw text
      with the model's normalizer);
    - ``lstrip``, ``rstrip``, ``single_word``: always False in a spec (bbpe does not apply
      them, so the readers refuse them); kept so the writer writes what HF writes;
    - ``decoded``: the bytes the model's decoder gives for it (its UTF-8, except where a
      model's decoder reads it otherwise: BPE's ByteLevel, ``bpe.byte_level.decoded_bytes``).
    """

    content: str
    id: int
    special: bool = True
    normalized: bool = False
    lstrip: bool = False
    rstrip: bool = False
    single_word: bool = False
    decoded: bytes = b""


@dataclass(frozen=True)
class TemplatePiece:
    """One piece of a template: ``"$A"`` or ``"$B"`` (a text's ids) or the name of one of
    ``Template.tokens``, with the type id its ids get."""

    name: str
    type_id: int = 0


@dataclass(frozen=True)
class Template:
    """HF's ``TemplateProcessing`` (tokenizers/src/processors/template.rs): the ids put
    around one text (``single``) and a pair (``pair``). ``tokens`` maps each name that a
    piece uses to its ids and their token strings, as the file gives them (a name may stand
    for several ids; the ids are not looked up in the vocabulary: HF uses them as given).
    A ``RobertaProcessing`` is read as the template it applies: ``<s> $A </s>`` and
    ``<s> $A </s> </s> $B </s>``, all of type id 0."""

    single: tuple[TemplatePiece, ...]
    pair: tuple[TemplatePiece, ...]
    tokens: Mapping[str, tuple[tuple[int, ...], tuple[str, ...]]] = field(default_factory=dict)
    roberta: bool = False  # a RobertaProcessing: every type id 0, with add_special_tokens=False too


def added_entry(token: AddedToken) -> dict[str, Any]:
    return {"id": token.id, "content": token.content, "single_word": token.single_word, "lstrip": token.lstrip,
            "rstrip": token.rstrip, "normalized": token.normalized, "special": token.special}
