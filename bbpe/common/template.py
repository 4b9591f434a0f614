"""The post-processing template, shared by every model: what ``add_special_tokens=True``
puts around one text or a pair of texts, and each token's type id, written as HF
``tokenizers``' ``TemplateProcessing`` writes it (tokenizers/src/processors/template.rs).

A template is words: ``$A`` (the first text), ``$B`` (the second text of a pair) and
tokens (each a token of the vocabulary or a special token, as ``id_to_token`` shows it);
each word may end in ``:N``, its type id (``token_type_ids``; 0 when not given), as in
``"[CLS] $A:0 [SEP]:0 $B:1 [SEP]:1"``. The single template holds ``$A`` once and no
``$B``; the pair template ``$A`` and ``$B`` once each, ``$A`` first. A pair template not
given is the single one with ``$B:1`` right after ``$A`` and the tokens after it of type
1: ``"<S> $A </S>"`` gives ``"<S> $A $B:1 </S>:1"``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

A, B = -1, -2  # the texts' places among a template's pieces (token ids are >= 0)
Piece = tuple[int, int]  # (token id, or A or B; type id)
_TYPED = re.compile(r"(.+):([0-9]+)")
_MAX_TYPE_ID = (1 << 32) - 1  # tokenizers' type_id is a u32


@dataclass(frozen=True)
class Template:
    """A parsed template (``parse_template``). ``prefix`` and ``suffix`` are the single
    template's ids before and after ``$A``, what the compiled batch framing takes."""

    single: tuple[Piece, ...] = ((A, 0),)
    pair: tuple[Piece, ...] = ((A, 0), (B, 1))
    text: str = field(default="$A", compare=False)  # as given, for saving
    pair_text: str | None = field(default=None, compare=False)  # None: derived from the single one

    @cached_property
    def prefix(self) -> tuple[int, ...]:
        return tuple(kid for kid, _ in self.single[: self._a])

    @cached_property
    def suffix(self) -> tuple[int, ...]:
        return tuple(kid for kid, _ in self.single[self._a + 1 :])

    @cached_property
    def _a(self) -> int:
        return next(i for i, (kid, _) in enumerate(self.single) if kid == A)

    @property
    def extra(self) -> int:
        """The ids the single template adds."""
        return len(self.single) - 1

    def added(self, pair: bool = False) -> int:
        """The ids the template adds to one text, or to a pair (transformers'
        ``num_special_tokens_to_add``)."""
        return len(self.pair) - 2 if pair else self.extra

    @cached_property
    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """(prefix, suffix) as int64 arrays, for ``codec.pad_rows``."""
        return np.array(self.prefix, dtype=np.int64), np.array(self.suffix, dtype=np.int64)

    def frame(self, first: list, second: list | None = None) -> tuple[list, list[int], list[int]]:
        """(items, type ids, special-tokens mask) of one text's items (``first``) or of a
        pair's, in the template: the items are the texts' (ids, or anything else per
        token, such as offsets) and, in the template tokens' places, the token ids;
        ``special`` marks those with 1."""
        pieces = self.single if second is None else self.pair
        items: list = []
        types: list[int] = []
        special: list[int] = []
        for kid, kind in pieces:
            if kid >= 0:
                items.append(kid)
                types.append(kind)
                special.append(1)
            else:
                part = first if kid == A else second
                assert part is not None
                items += part
                types += [kind] * len(part)
                special += [0] * len(part)
        return items, types, special


NO_TEMPLATE = Template()  # add_special_tokens=False


def parse_template(single: str | None, pair: str | None, token_id: Callable[[str], int | None]) -> Template:
    """The template of ``single`` (None: ``"$A"``, nothing added) and ``pair`` (None: derived,
    see the module), their tokens looked up with ``token_id`` (text -> id or None)."""
    if single is None:
        single = "$A"
    for name, value in (("single", single), ("pair", pair)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"the {name} template must be a str such as '<S> $A </S>', got {type(value).__name__}")
    one = _pieces(single, token_id, "single")
    if [kid for kid, _ in one if kid < 0] != [A]:
        raise ValueError(f"the single template must hold $A once and no $B, got {single!r}")
    if pair is None:
        at = next(i for i, (kid, _) in enumerate(one) if kid == A)
        two = (*one[: at + 1], (B, 1), *((kid, 1) for kid, _ in one[at + 1 :]))
    else:
        two = _pieces(pair, token_id, "pair")
        if [kid for kid, _ in two if kid < 0] != [A, B]:
            raise ValueError(f"the pair template must hold $A and then $B, each once, got {pair!r}")
    return Template(one, two, single, pair)


def _pieces(template: str, token_id: Callable[[str], int | None], name: str) -> tuple[Piece, ...]:
    pieces = []
    for word in template.split():
        typed = _TYPED.fullmatch(word)
        # "x:1" is the word x of type 1, unless "x:1" is itself a token (and x is not)
        if typed and not (token_id(word) is not None and token_id(typed.group(1)) is None):
            word, kind = typed.group(1), int(typed.group(2))
        else:
            kind = 0
        if word.startswith("$") and (word[1:] in ("", "A", "a", "B", "b") or word[1:].isdecimal()):
            # tokenizers' Piece::extract: "$", "$A", "$a" and "$N" (type N) are the first
            # text, "$B", "$b" the second
            if word[1:].isdecimal():
                kind = int(word[1:])
            pieces.append((B if word[1:] in ("B", "b") else A, _type_id(kind, word, name)))
            continue
        kid = token_id(word)
        if kid is None:
            raise ValueError(f"{name} template token {word!r} is neither in the vocabulary nor a special token")
        pieces.append((kid, _type_id(kind, word, name)))
    return tuple(pieces)


def _type_id(kind: int, word: str, name: str) -> int:
    if kind > _MAX_TYPE_ID:
        raise ValueError(f"{name} template word {word!r}: type id {kind} is past {_MAX_TYPE_ID} (a u32, as in "
                         "tokenizers)")
    return kind
