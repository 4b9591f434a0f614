"""Vocabulary access and special tokens, the same for every model: the calls HF
``tokenizers`` and transformers name (``get_vocab``, ``id_to_token``, ``token_to_id``,
``convert_ids_to_tokens``, ``vocab_size``, ``add_special_tokens``) and the template that
``add_special_tokens=True`` applies.

``VocabularyAccess`` is a mixin of the facade (``bbpe.Tokenizer``), which provides:
``_keys`` (each id's bytes, the model's vocabulary), ``token_id(bytes)`` (the id of a key,
added special tokens included, or None), ``_specials`` (a ``SpecialTokens``),
``_has_specials``, ``_key_lens`` (a cache this resets) and ``_model_special_tokens()``; a
model whose tokens read otherwise than as ``token_text`` overrides ``_key_text`` and
``_text_key``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from ..errors import UnknownIdError
from .specials import SpecialTokens
from .template import Template, parse_template
from .token_text import token_bytes, token_text


class VocabularyAccess:
    """The vocabulary by id and by token text, and the special tokens (see the module)."""

    # what the facade provides (see the module)
    _keys: list[bytes]
    _specials: SpecialTokens
    _has_specials: bool
    _special_probes: tuple | None
    _key_lens: np.ndarray | None
    _template: Template

    def _key_text(self, key: bytes) -> str:
        """A model token's bytes in the model's text form (``get_vocab``, ``id_to_token``);
        by default ``token_text``'s."""
        return token_text(key)

    def _text_key(self, text: str) -> bytes | None:
        """The bytes of a model token given in the model's text form, or None for a text
        that form never gives (the inverse of ``_key_text``)."""
        return token_bytes(text)

    if TYPE_CHECKING:
        def __len__(self) -> int: ...
        def token_bytes(self, token_id: int) -> bytes: ...
        def token_id(self, key: bytes) -> int | None: ...
        def _model_special_tokens(self) -> dict[str, int]: ...

    @property
    def vocab_size(self) -> int:
        """The number of ids, added special tokens included (``len(tok)``; HF's
        ``get_vocab_size(with_added_tokens=True)``)."""
        return len(self)

    def get_vocab_size(self, with_added_tokens: bool = True) -> int:
        """The number of ids (HF ``tokenizers``' name): with the added special tokens past
        the vocabulary, or without them."""
        return len(self) if with_added_tokens else len(self._keys)

    @property
    def n_vocab(self) -> int:
        """The number of ids, added special tokens included (tiktoken's name)."""
        return len(self)

    def _without_specials(self, ids: list | np.ndarray | Iterable[int]) -> list:
        """``ids`` less the special tokens' (the model's own and those added), for
        ``decode(..., skip_special_tokens=True)``."""
        special = set(self.special_tokens.values())
        return [i for i in _as_id_list(ids) if i not in special]

    def get_vocab(self) -> dict[str, int]:
        """Every token as text (``id_to_token``) -> its id, as HF ``tokenizers`` gives it."""
        vocab = {self._key_text(key): i for i, key in enumerate(self._keys)}
        vocab.update((token_text(data), kid) for kid, data in self._specials.new_ids(len(self._keys)).items())
        return vocab

    def id_to_token(self, token_id: int) -> str:
        """The token of an id as text, in the model's own form (``_key_text``: XBBPE's is
        the UTF-8 with ``<0xHH>`` for each byte that is not part of a valid UTF-8 char,
        ``bbpe.common.token_text``; a byte-level BPE's GPT-2's ``Ġ`` form); an added special
        token reads as its text. Invertible: no two tokens read the same. Raises
        UnknownIdError for an id not in the vocabulary."""
        kid = self._checked_id(token_id)
        return self._key_text(self._keys[kid]) if kid < len(self._keys) else token_text(self._specials.by_id[kid])

    def token_to_id(self, token: str | bytes | bytearray | memoryview) -> int | None:
        """The id of a token given as text (the form ``id_to_token`` gives) or as bytes, or
        None when it is not in the vocabulary."""
        if isinstance(token, str):
            key = self._text_key(token)
            kid = None if key is None else self.token_id(key)
            return self._specials.ids.get(token_bytes(token)) if kid is None else kid
        if isinstance(token, (bytes, bytearray, memoryview)):
            key = bytes(token)
        else:
            raise TypeError(f"token must be a str or bytes, got {type(token).__name__}")
        return self.token_id(key)

    def convert_ids_to_tokens(self, ids: int | Iterable[int]) -> str | list[str]:
        """``id_to_token`` of each id (of one id: its token), as transformers has it."""
        if _is_one_id(ids):
            return self.id_to_token(ids)  # type: ignore[arg-type]
        items = _as_id_list(ids)
        try:  # each id checked once, by token_bytes
            return [self.id_to_token(i) for i in items]
        except (TypeError, UnknownIdError):  # the bad one again, named by its position among all
            for position, i in enumerate(items):
                self._checked_id(i, position, f"ids[{position}]")
            raise

    def convert_tokens_to_ids(self, tokens: str | bytes | bytearray | memoryview | Iterable[str | bytes]
                              ) -> int | None | list[int | None]:
        """``token_to_id`` of each token (of one token: its id)."""
        if isinstance(tokens, (str, bytes, bytearray, memoryview)):  # one token, as token_to_id takes it
            return self.token_to_id(tokens)
        return [self.token_to_id(t) for t in tokens]

    def _checked_id(self, token_id: object, position: int = 0, name: str = "an id") -> int:
        if isinstance(token_id, float) or not hasattr(token_id, "__index__"):
            raise TypeError(f"{name} must be an integer, got {type(token_id).__name__}")
        kid = token_id.__index__()
        if not 0 <= kid < len(self) or kid >= len(self._keys) and kid not in self._specials.by_id:
            raise UnknownIdError(kid, position, len(self))
        return kid

    # special tokens

    def add_special_tokens(self, tokens: Iterable[str | bytes]) -> int:
        """Add special tokens (``str`` or bytes, any length): each is matched whole in the
        input before the model runs, never split or merged, and has one id, that of the
        vocabulary's key with its bytes or else a new one after the vocabulary. Returns
        how many got a new id, as transformers counts the tokens it adds (a vocabulary key
        made special is not counted). A model's own specials (XBBPE's ``<P>``, ``<S>``,
        ``</S>``) are special tokens already: the model encodes them as the C++ does
        (QUIRKS Q12, Q13), and each call's ``allowed_special``, ``disallowed_special`` and
        ``split_special_tokens`` apply to them as to those added here."""
        added = self._specials.add(tokens, self.token_id, len(self))
        self._specials_changed()
        return added

    def _specials_changed(self) -> None:
        """What the encoder keeps of the added special tokens, set again after a change:
        whether there are any, and what tells that a text holds none (``probes``: then
        ``encode`` takes its C path)."""
        self._has_specials = bool(self._specials)
        self._special_probes = self._specials.probes() if self._specials else None
        self._key_lens = None

    @property
    def special_tokens(self) -> dict[str, int]:
        """The special tokens as text (``id_to_token``'s form) -> id: the model's own (XBBPE:
        PAD, BOS and EOS), then those added."""
        named = self._model_special_tokens()
        named.update((token_text(data), kid) for data, kid in self._specials.ids.items())
        return named

    @property
    def added_special_tokens(self) -> dict[bytes, int]:
        """The special tokens added with ``add_special_tokens``, their bytes -> id, in the
        order they were added (a copy)."""
        return dict(self._specials.ids)

    def set_template(self, single: str | None = "$A", pair: str | None = None) -> None:
        """What ``add_special_tokens=True`` puts around each text (``single``) and around a
        pair of texts (``pair``), with the type ids of their tokens, as HF's
        ``TemplateProcessing`` writes them: ``"<S> $A </S>"``, ``"<S> $A:0 </S>:0 $B:1
        </S>:1"`` (each other word a token of the vocabulary or a special token, as text;
        ``common.template``). ``None`` or ``"$A"``: nothing, as in the C++; a pair template
        not given is derived from the single one."""
        self._template = parse_template(single, pair, self.token_to_id)


def _is_one_id(ids: object) -> bool:
    """An int, a numpy integer or a 0-d integer array (numpy's, or a 0-d tensor): one id,
    not a sequence of them."""
    ndim = getattr(ids, "ndim", None)
    if ndim is not None:
        return ndim == 0
    return not isinstance(ids, (str, bytes)) and hasattr(ids, "__index__") and not hasattr(ids, "__iter__")


def _as_id_list(ids: object) -> list:
    if isinstance(ids, (str, bytes, bytearray)):
        raise TypeError(f"ids must be integers, got {type(ids).__name__}")
    if isinstance(ids, np.ndarray):
        return ids.reshape(-1).tolist()
    return ids if type(ids) is list else list(ids)  # type: ignore[call-overload]
