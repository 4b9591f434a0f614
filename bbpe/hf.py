"""bbpe inside transformers: ``BbpeTokenizer``, a ``transformers.PreTrainedTokenizer`` over
any bbpe tokenizer object, so that ``save_pretrained``/``from_pretrained``, ``AutoTokenizer``,
``__call__``, ``pad``, ``batch_decode`` and the data collators work with it.

    pip install 'bbpe[hf]'

    from bbpe.hf import BbpeTokenizer
    hf_tok = BbpeTokenizer(bbpe.load("model.bin"))     # or AutoTokenizer.from_pretrained(directory)

An optional extra: ``import bbpe`` never imports this module, nor transformers. Importing it
registers ``BbpeTokenizer`` with ``AutoTokenizer`` (transformers finds tokenizer classes
through model configs: ``BbpeConfig``, model type "bbpe", stands in for the model bbpe does
not have), so that ``AutoTokenizer.from_pretrained`` loads a directory ``save_pretrained``
wrote, whose ``tokenizer_config.json`` names the class. Without the import transformers
cannot find the class: 4.x says it "does not exist or is not currently imported", 5.x falls
back to its own backend, which asks for sentencepiece.

The wrapper gives the ids, masks, token type ids and padding the bbpe tokenizer's own
``tok(texts, ...)`` gives, under every transformers version the extra admits (4.40 to 5.x).
It keeps transformers' slow-tokenizer pipeline (tokenize each text, ``prepare_for_model``,
``pad``) and overrides the steps whose defaults differ between versions or from bbpe:

- the template (``tok.set_template("<S> $A:0 </S>:0", "<S> $A:0 </S>:0 $B:1 </S>:1")``, read
  at each call) is what ``add_special_tokens=True`` puts around a text or a pair:
  ``build_inputs_with_special_tokens``, ``create_token_type_ids_from_sequences``,
  ``get_special_tokens_mask`` and ``num_special_tokens_to_add`` come from ``Template.frame``
  and ``Template.added``. A pair gets ``token_type_ids`` unless ``return_token_type_ids=False``;
  without special tokens its second text is of type 1, as in HF tokenizers (type 0 for a
  RoBERTa file's BPE, as HF gives it; transformers 4.x refuses token type ids then, 5.x
  makes them 0);
- truncation is bbpe's (``truncate_sequences``): a pair under ``longest_first`` keeps what HF
  tokenizers keeps, and a ``max_length`` that leaves no room for the template, or none for
  the text ``only_first``/``only_second`` cuts, raises ValueError (transformers logs it and
  returns longer rows);
- the bbpe tokenizer's ``padding_side``, ``truncation_side`` and pad id (``pad_token_id``,
  else the model's own: XBBPE's ``<P>``; a BPE has none) are the wrapper's unless
  ``padding_side=``, ``truncation_side=`` or ``pad_token=`` are passed. A named special
  token (pad, bos, eos...) that is a plain token of the model, no special token of the bbpe
  tokenizer (a BPE's pad id set to ``"Ġ"``), names an id only: transformers does not cut it
  out of texts as one of its added tokens, so the ids stay the bbpe tokenizer's; ``bos_token`` and ``eos_token`` default to the model's own
  (``special_roles``: XBBPE's ``<S>``, ``</S>``; a tiktoken model's ``<|endoftext|>``). A call's ``padding_side=`` (``__call__``, ``encode``, ``pad``) holds under 4.x
  too, which has no such argument: what transformers does not pass down (the call's
  padding side, whether it adds special tokens) reaches ``_pad`` and the template methods
  through a context variable, so that calls on other threads never see it;
- pre-split words (``is_split_into_words=True``) follow ``common.words``: each word is
  encoded alone, with a space before every word but the first except where either side is
  a CJK char. transformers' slow tokenizers tokenize each word alone and join the tokens,
  so the words are given their separators (``word_texts``) before it tokenizes them, and
  ``__call__`` takes a batch of pairs of words under 4.x too. Offsets are refused for them
  (the bbpe tokenizer's own call gives them);
- the bbpe tokenizer's added special tokens are special tokens of the wrapper, with the same
  ids (in ``all_special_tokens``, skipped by ``decode(..., skip_special_tokens=True)``,
  marked by ``get_special_tokens_mask``), shown as ``id_to_token`` shows them.

Tokens are text in ``id_to_token``'s form; an unknown token's id is ``unk_token_id``
(None); decoding joins the tokens' bytes, so it gives the text back exactly (transformers
4.x's own decoding spaces out added tokens). ``return_offsets_mapping=True`` gives each
token's (start, end) in the text's chars, (0, 0) for template and padding tokens (single
texts, not pairs), from the tokens transformers asked for. ``save_pretrained`` writes the
model as bbpe's JSON file (``bbpe.json``, template and special tokens included), which
``BbpeTokenizer.from_pretrained(directory)`` and ``AutoTokenizer.from_pretrained(directory)``
load. Pickling and ``deepcopy`` keep the whole current state.

Why this module is long: each step of transformers' pipeline that differs between its
versions, or from bbpe, is overridden here with the reason beside it; the work itself is the
bbpe tokenizer's.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np

try:
    from transformers import AddedToken, AutoTokenizer, BatchEncoding, PretrainedConfig, PreTrainedTokenizer
    from transformers.tokenization_utils_base import PaddingStrategy, TruncationStrategy
except ImportError as err:  # pragma: no cover - only without the extra
    raise ImportError("bbpe.hf needs transformers: pip install 'bbpe[hf]'") from err

from .common.batch import kept_part
from .common.rows import pair_lengths
from .common.template import Template
from .common.token_text import token_text
from .common.words import word_texts
from .tokenizer import Tokenizer

MODEL_FILE = "bbpe.json"

# the options of the call in progress in this thread (or task) that transformers does not
# pass to where the wrapper needs them: 4.x's _pad takes no padding side, and no version
# tells the template methods whether the call adds special tokens. (tokenizer, options):
# a call on another tokenizer sees none of them
_CALL: ContextVar[tuple[object, dict[str, Any]] | None] = ContextVar("bbpe_hf_call", default=None)
# the keyword arguments that hold the texts of transformers' _encode_plus/_batch_encode_plus
_TEXT_ARGUMENTS = ("text", "text_pair", "batch_text_or_text_pairs")


class BbpeTokenizer(PreTrainedTokenizer):
    """A transformers tokenizer whose model is a bbpe tokenizer (``tokenizer``), or the one
    saved in ``model_file`` (what ``from_pretrained`` passes)."""

    # tokenize's results (text, split_special_tokens, tokens) while __call__ wants offsets
    _recording: list[tuple[str, bool, list[str]]] | None = None
    vocab_files_names = {"model_file": MODEL_FILE}  # noqa: RUF012 - transformers reads it as a class attribute
    model_input_names = ["input_ids", "attention_mask"]  # noqa: RUF012

    def __init__(self, tokenizer: Tokenizer | None = None, model_file: str | os.PathLike[str] | None = None,
                 *, pad_token: str | AddedToken | None = None, bos_token: str | AddedToken | None = None,
                 eos_token: str | AddedToken | None = None, **kwargs: Any) -> None:
        if tokenizer is None:
            if model_file is None:
                raise TypeError("BbpeTokenizer needs a bbpe tokenizer, or model_file (from_pretrained gives it)")
            tokenizer = Tokenizer.load(model_file)
        if not isinstance(tokenizer, Tokenizer):
            raise TypeError(f"BbpeTokenizer's first argument must be a bbpe tokenizer, got {type(tokenizer).__name__}")
        self.bbpe = tokenizer
        # the bbpe tokenizer's added special tokens, as transformers' added tokens with the
        # same ids and in id_to_token's form (a special "<0xE5>" reads "<0x3C>0xE5>", not as
        # the byte 0xE5); special whatever extra_special_tokens holds (all_special_tokens)
        own = {kid: AddedToken(token_text(data), special=True, normalized=False)
               for data, kid in tokenizer.added_special_tokens.items()}
        self._own_specials = [token.content for token in own.values()]
        added = {**own, **(kwargs.pop("added_tokens_decoder", None) or {})}
        # decoding is exact: transformers 4.x's default would turn "a ." into "a."
        kwargs.setdefault("clean_up_tokenization_spaces", False)
        kwargs.setdefault("padding_side", tokenizer.padding_side)
        kwargs.setdefault("truncation_side", tokenizer.truncation_side)
        roles = tokenizer.special_roles  # the model's own (XBBPE: <S>, </S>), unless others are named
        bos_token = roles.get("bos_token") if bos_token is None else bos_token
        eos_token = roles.get("eos_token") if eos_token is None else eos_token
        if pad_token is None and tokenizer.pad_token_id is not None:  # what the bbpe tokenizer pads with
            pad_token = tokenizer.id_to_token(tokenizer.pad_token_id)
        super().__init__(pad_token=pad_token, bos_token=bos_token, eos_token=eos_token,
                         added_tokens_decoder=added, **kwargs)

    @property
    def all_special_tokens(self) -> list[str]:
        # what decode(skip_special_tokens=True) skips and get_special_tokens_mask marks: the
        # named and extra special tokens, and the bbpe tokenizer's own (HF tokenizers skips
        # every special added token, even one add_special_tokens({...}) left out of the extras)
        tokens = super().all_special_tokens
        tokens = tokens + [t for t in self._own_specials if t not in tokens]
        if self._options().get("cutting"):  # tokenize: a role's plain token is text there (_plain_roles)
            plain = self._plain_roles()
            tokens = [t for t in tokens if t not in plain]
        return tokens

    def _plain_roles(self, text: str | None = None) -> set[str]:
        """The named special tokens (pad, bos, eos...) that are plain tokens of the model
        (those ``text`` holds, if given): in its vocabulary but no special token of the bbpe
        tokenizer, such as the pad token of a BPE whose ``pad_token_id`` is a vocabulary
        token (``"Ġ"``, GPT-2's form of a space). They name an id, not text to cut out: bbpe
        encodes a text holding ``"Ġ"`` as the char's UTF-8, so transformers must not match
        them in text as it matches its added tokens (XBBPE's ``<P>``, ``<S>``, ``</S>`` are
        the bbpe tokenizer's special tokens, matched whole by both)."""
        # transformers 5.x keeps them in _special_tokens_map (str or AddedToken, or None);
        # its special_tokens_map, which 4.x has alone, builds a dict at each call
        roles = getattr(self, "_special_tokens_map", None)
        if not isinstance(roles, dict):
            roles = self.special_tokens_map
        named = {str(value) for role, value in roles.items()
                 if role in _ROLES and value is not None and not isinstance(value, (list, tuple))}
        if text is not None:
            named = {value for value in named if value in text}
        if not named:  # tokenize's usual case: no named token in the text
            return named
        specials = self.bbpe.special_tokens
        return {value for value in named if value not in specials and self.bbpe.token_to_id(value) is not None}

    def _add_tokens(self, new_tokens: Any, special_tokens: bool = False) -> int:
        # transformers adds the named special tokens to its added tokens, which it cuts out
        # of every text: not the plain ones (_plain_roles), which its lookups still find
        # through the vocabulary (_convert_token_to_id, _convert_id_to_token)
        if new_tokens:
            plain = self._plain_roles()
            new_tokens = [token for token in new_tokens if str(token) not in plain]
        return super()._add_tokens(new_tokens, special_tokens)

    @property
    def vocab_size(self) -> int:
        return self.bbpe.vocab_size

    def get_vocab(self) -> dict[str, int]:
        vocab = self.bbpe.get_vocab()
        vocab.update(self.added_tokens_encoder)
        return vocab

    def tokenize(self, text: str, **kwargs: Any) -> list[str]:
        split = self._splits(kwargs)
        if split:  # transformers hands the whole text to _tokenize then: bbpe splits its specials too
            tokens = self._tokens(self.bbpe.encode(text, split_special_tokens=True))
        elif self._plain_roles(text):
            # transformers 5.x keeps a piece that is a special token's text as that token:
            # not a plain one (_plain_roles), which is text
            with self._with_options(cutting=True):
                tokens = super().tokenize(text, **kwargs)
        else:
            tokens = super().tokenize(text, **kwargs)
        if self._recording is not None:  # an offsets call reads them back (__call__)
            self._recording.append((text, split, tokens))
        return tokens

    def _splits(self, kwargs: dict[str, Any]) -> bool:
        """Whether this call reads special tokens' text as plain text."""
        return bool(kwargs.get("split_special_tokens", self.split_special_tokens))

    def _tokenize(self, text: str, **kwargs: Any) -> list[str]:
        # transformers has cut out its added tokens already, but not a bbpe special whose
        # text is not its token form (a "<0xE5>"): bbpe finds those
        return self._tokens(self.bbpe.encode(text))

    def _tokens(self, ids: list[int]) -> list[str]:
        return self.bbpe.convert_ids_to_tokens(ids)  # type: ignore[return-value]

    def _convert_token_to_id(self, token: str) -> int | None:
        kid = self.bbpe.token_to_id(token)
        return self.unk_token_id if kid is None else kid  # as transformers: None without an unk token

    def _convert_id_to_token(self, index: int) -> str:
        return self.bbpe.id_to_token(index)

    def convert_tokens_to_string(self, tokens: list[str]) -> str:
        return self.bbpe.tokens_to_bytes(tokens).decode("utf-8", "replace")

    def _decode(self, token_ids: int | list[int], skip_special_tokens: bool = False,
                clean_up_tokenization_spaces: bool | None = None, **kwargs: Any) -> str:
        # the bytes of every token, added ones too, joined: transformers 4.x's own _decode
        # puts a space around each added token and decodes the bytes between them apart
        tokens = self.convert_ids_to_tokens(token_ids, skip_special_tokens=skip_special_tokens)
        text = self.convert_tokens_to_string([tokens] if isinstance(tokens, str) else tokens)
        if clean_up_tokenization_spaces is None:
            clean_up_tokenization_spaces = self.clean_up_tokenization_spaces
        return self.clean_up_tokenization(text) if clean_up_tokenization_spaces else text

    # the options transformers does not pass down (_CALL)

    @contextmanager
    def _with_options(self, **options: Any) -> Iterator[None]:
        """Run what follows with ``options`` added to those of the call in progress."""
        token = _CALL.set((self, {**self._options(), **options}))
        try:
            yield
        finally:
            _CALL.reset(token)

    def _options(self) -> dict[str, Any]:
        """The options of this tokenizer's call in progress in this thread."""
        call = _CALL.get()
        return call[1] if call is not None and call[0] is self else {}

    # the texts: pre-split words and the call's padding side, on their way in

    def _encode_plus(self, *args: Any, **kwargs: Any) -> BatchEncoding:
        return self._encoding(super()._encode_plus, args, kwargs)

    def _batch_encode_plus(self, *args: Any, **kwargs: Any) -> BatchEncoding:
        # transformers 4.x's batches (5.x's _encode_plus takes them too)
        return self._encoding(super()._batch_encode_plus, args, kwargs)

    def _encoding(self, encode: Callable[..., BatchEncoding], args: tuple, kwargs: dict[str, Any]) -> BatchEncoding:
        """transformers' ``encode`` (the texts first) with pre-split words given their
        separators, and the call's padding side held for ``_pad`` (transformers 4.x has no
        ``padding_side`` argument: it would hand it to ``tokenize``, which ignores it)."""
        side = kwargs.pop("padding_side", None)
        if kwargs.get("is_split_into_words"):
            args = tuple(_separated(text) for text in args[:2]) + args[2:]
            kwargs.update({name: _separated(kwargs[name]) for name in _TEXT_ARGUMENTS if name in kwargs})
        if side is None:
            return encode(*args, **kwargs)
        with self._with_options(padding_side=_side(side)):
            return encode(*args, **kwargs)

    # the bbpe tokenizer's template, for add_special_tokens=True

    def prepare_for_model(self, ids: list[int], pair_ids: list[int] | None = None, add_special_tokens: bool = True,
                          *args: Any, **kwargs: Any) -> BatchEncoding:
        # bbpe's tok(...) returns a pair's token type ids unless told not to and, without
        # special tokens, types the second text 1 as HF tokenizers do (transformers 4.x
        # refuses token type ids then, 5.x makes them 0): the empty template gives that
        if pair_ids is not None and kwargs.get("return_token_type_ids") is None:
            kwargs["return_token_type_ids"] = True
        with self._with_options(bare=not add_special_tokens):
            return super().prepare_for_model(ids, pair_ids, True, *args, **kwargs)

    def _call_template(self) -> Template:
        """The template of the call in progress: the bbpe tokenizer's, or none."""
        return self.bbpe._bare_template if self._options().get("bare") else self.bbpe._template

    def build_inputs_with_special_tokens(self, token_ids_0: list[int],
                                         token_ids_1: list[int] | None = None) -> list[int]:
        return self._call_template().frame(token_ids_0, token_ids_1)[0]

    def create_token_type_ids_from_sequences(self, token_ids_0: list[int],
                                             token_ids_1: list[int] | None = None) -> list[int]:
        return self._call_template().frame(token_ids_0, token_ids_1)[1]

    def get_special_tokens_mask(self, token_ids_0: list[int], token_ids_1: list[int] | None = None,
                                already_has_special_tokens: bool = False) -> list[int]:
        if already_has_special_tokens:
            return super().get_special_tokens_mask(token_ids_0, token_ids_1, already_has_special_tokens=True)
        return self._call_template().frame(token_ids_0, token_ids_1)[2]

    def num_special_tokens_to_add(self, pair: bool = False) -> int:
        return self._call_template().added(pair)

    def truncate_sequences(self, ids: list[int], pair_ids: list[int] | None = None, num_tokens_to_remove: int = 0,
                           truncation_strategy: Any = "longest_first", stride: int = 0
                           ) -> tuple[list[int], list[int] | None, list[int]]:
        """Cut ``num_tokens_to_remove`` ids as bbpe's ``tok(...)`` cuts them, at the
        ``truncation_side`` end: a pair under ``longest_first`` as HF tokenizers does (the
        longer text first, an odd id to the second; transformers gives it to the first).
        The overflowing ids are transformers'. ValueError where ``max_length`` leaves too
        little, where transformers logs it and cuts nothing (4.x) or keeps the template (5.x)."""
        if num_tokens_to_remove <= 0:
            return ids, pair_ids, []
        strategy = TruncationStrategy(truncation_strategy).value
        budget = len(ids) + len(pair_ids or ()) - num_tokens_to_remove  # what max_length leaves the texts
        if budget < 0:
            added = self.num_special_tokens_to_add(pair_ids is not None)
            raise ValueError(f"max_length={budget + added} leaves no room for the template's {added} ids")
        keep_end = self.truncation_side == "left"
        if pair_ids is not None and strategy == "longest_first":
            n1, n2 = pair_lengths(len(ids), len(pair_ids), budget)
            return kept_part(ids, n1, keep_end), kept_part(pair_ids, n2, keep_end), []
        if pair_ids is None and strategy == "only_second":
            raise ValueError("truncation='only_second' needs text_pair: a single text has no second text to cut")
        cut_first = strategy != "only_second"
        moving, fixed = (ids, pair_ids) if cut_first else (pair_ids, ids)
        assert moving is not None
        size = len(moving) - num_tokens_to_remove
        if fixed is not None and size <= 0:
            first, second = ("first", "second") if cut_first else ("second", "first")
            raise ValueError(f"truncation={strategy!r}: the {second} text takes {len(fixed)} of the {budget} ids left "
                             f"by max_length, leaving {max(size, 0)} for the {first}")
        window = min(len(moving), stride + num_tokens_to_remove)
        overflow = moving[:window] if keep_end else moving[-window:]
        moving = kept_part(moving, size, keep_end)
        return (moving, pair_ids, overflow) if cut_first else (ids, moving, overflow)

    # padding on the call's side

    def pad(self, encoded_inputs: Any, *args: Any, padding_side: str | None = None, **kwargs: Any) -> BatchEncoding:
        # transformers 4.x's pad takes no padding_side: the call holds it for _pad
        if padding_side is None:
            return super().pad(encoded_inputs, *args, **kwargs)
        with self._with_options(padding_side=_side(padding_side)):
            return super().pad(encoded_inputs, *args, **kwargs)

    def _pad(self, encoded_inputs: Any, max_length: int | None = None,
             padding_strategy: Any = PaddingStrategy.DO_NOT_PAD, pad_to_multiple_of: int | None = None,
             padding_side: str | None = None, return_attention_mask: bool | None = None) -> dict:
        """One row padded as transformers pads it, on ``padding_side``, else the call's, else
        the tokenizer's (4.x's own ``_pad`` reads only the tokenizer's)."""
        side = _side(padding_side or self._options().get("padding_side") or self.padding_side)
        if return_attention_mask is None:
            return_attention_mask = "attention_mask" in self.model_input_names
        main = self.model_input_names[0]
        length = len(encoded_inputs[main])
        if padding_strategy == PaddingStrategy.LONGEST:
            max_length = length
        if max_length is not None and pad_to_multiple_of and max_length % pad_to_multiple_of:
            max_length += pad_to_multiple_of - max_length % pad_to_multiple_of
        if return_attention_mask and "attention_mask" not in encoded_inputs:
            encoded_inputs["attention_mask"] = [1] * length
        missing = 0 if padding_strategy == PaddingStrategy.DO_NOT_PAD or max_length is None else max_length - length
        if missing <= 0:
            return encoded_inputs
        # transformers pads the mask only when it returns it
        fillers = {main: self.pad_token_id, "token_type_ids": self.pad_token_type_id, "special_tokens_mask": 1,
                   "attention_mask": 0 if return_attention_mask else None}
        for name, filler in fillers.items():
            if name in encoded_inputs and filler is not None:
                pad = [filler] * missing
                encoded_inputs[name] = pad + list(encoded_inputs[name]) if side == "left" \
                    else list(encoded_inputs[name]) + pad
        return encoded_inputs

    # offsets, which transformers' slow tokenizers drop, and batches of pairs of words

    def __call__(self, text: Any = None, *args: Any, return_offsets_mapping: bool = False,
                 **kwargs: Any) -> BatchEncoding:
        if (kwargs.get("is_split_into_words") and not args and kwargs.get("text_pair") is None
                and isinstance(text, (list, tuple)) and text and all(map(_is_pair, text))):
            # a batch of pairs of words, which transformers 4.x's __call__ refuses (its
            # batch_encode_plus and 5.x take them): the texts, and text_pair
            text, kwargs["text_pair"] = [first for first, _ in text], [second for _, second in text]
        if not return_offsets_mapping:
            return super().__call__(text, *args, **kwargs)
        if kwargs.get("is_split_into_words"):
            raise NotImplementedError("BbpeTokenizer gives no offsets for pre-split words (is_split_into_words=True): "
                                      "the bbpe tokenizer's own tok(words, is_split_into_words=True, "
                                      "return_offsets_mapping=True) gives them")
        if args or any(kwargs.get(name) for name in ("text_pair", "text_target", "text_pair_target",
                                                     "return_overflowing_tokens")):
            raise NotImplementedError("BbpeTokenizer gives offsets for single texts only: no pairs, targets or "
                                      "overflowing tokens")
        single = isinstance(text, str)
        texts = [text] if single else list(text)
        if not all(isinstance(t, str) for t in texts):
            raise TypeError("return_offsets_mapping=True needs a str or a list of str")
        tensors = kwargs.pop("return_tensors", None)
        keep_mask = kwargs.pop("return_special_tokens_mask", False)
        split = self._splits(kwargs)
        # the tokens transformers asks for, text by text, so that the spans need no second
        # pass; a text whose record is missing or not its own (another thread's call on
        # this object) is tokenized again
        recorded = self._recording = []
        try:
            out = super().__call__(texts, return_special_tokens_mask=True, **kwargs)
        finally:
            self._recording = None
        # the text's tokens are where the mask has 0 (template and padding have 1), in order:
        # all of them, or the first (last, truncating on the left) that truncation kept
        rows: list[list[tuple[int, int]]] = []
        known: dict[str, int] = {}
        for i, (t, mask) in enumerate(zip(texts, out["special_tokens_mask"])):
            own = i < len(recorded) and recorded[i][:2] == (t, split)
            spans = self._spans(t, split, recorded[i][2] if own else None, known)
            inner = iter(kept_part(spans, mask.count(0), self.truncation_side == "left"))
            rows.append([(0, 0) if m else next(inner) for m in mask])
        data = dict(out, offset_mapping=rows)
        if not keep_mask:
            del data["special_tokens_mask"]
        if single and tensors is None:
            data = {name: value[0] for name, value in data.items()}
        return BatchEncoding(data, tensor_type=tensors)

    def _spans(self, text: str, split: bool, tokens: list[str] | None,
               known: dict[str, int]) -> list[tuple[int, int]]:
        """Each token's (start, end) in ``text``'s chars, from the bytes of its id; ``known``
        holds the byte lengths of the tokens met so far in this call."""
        if tokens is None:
            tokens = self.tokenize(text, split_special_tokens=split)
        for token in set(tokens).difference(known):
            i = self.convert_tokens_to_ids(token)
            known[token] = len(self.bbpe.token_bytes(i) if i < len(self.bbpe)
                               else self._added_tokens_decoder[i].content.encode())
        lengths = np.array([known[token] for token in tokens], dtype=np.int64)
        ids = np.array(self.convert_tokens_to_ids(tokens), dtype=np.int64)
        try:  # the model's own offsets (BPE: HF's prefix space, trimming, NFC)
            spans = self.bbpe._token_spans(text, ids, lengths)
        except ValueError:
            raise ValueError("offsets: the tokens do not spell the text (an added token that strips spaces, "
                             "or bug_compat=True)") from None
        return [(a, b) for a, b in spans.tolist()]

    def save_vocabulary(self, save_directory: str, filename_prefix: str | None = None) -> tuple[str, ...]:
        if not os.path.isdir(save_directory):
            raise NotADirectoryError(f"{save_directory}: save_pretrained needs a directory")
        path = os.path.join(save_directory, (f"{filename_prefix}-" if filename_prefix else "") + MODEL_FILE)
        self.bbpe.save(path, format="json")
        return (path,)


class BbpeConfig(PretrainedConfig):
    """The model config ``AutoTokenizer`` finds ``BbpeTokenizer`` through: transformers
    registers tokenizer classes against model configs, and bbpe has no model of its own."""

    model_type = "bbpe"


# AutoTokenizer.from_pretrained looks the class tokenizer_config.json names up among the
# registered ones (TOKENIZER_MAPPING._extra_content; 5.x also keeps them by name)
AutoTokenizer.register(BbpeConfig, slow_tokenizer_class=BbpeTokenizer, exist_ok=True)


# the named special tokens (transformers' SPECIAL_TOKENS_ATTRIBUTES but the additional ones)
_ROLES = frozenset({"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"})


def _side(side: object) -> str:
    if side not in ("left", "right"):
        raise ValueError(f"padding_side must be 'left' or 'right', got {side!r}")
    return side  # type: ignore[return-value]


class _Words(list):
    """One pre-split text's words, each with its separator (``word_texts``): what
    transformers tokenizes one by one. A class of its own so that 5.x's call per text of a
    batch, which passes the texts on, does not separate them twice."""


def _separated(text: Any) -> Any:
    """``text`` of a call with ``is_split_into_words=True`` (one text's words, a batch of
    them, or a batch of pairs of them) with each text's words given their separators;
    anything else as it is, for transformers to judge."""
    if _is_words(text):
        return _Words(word_texts(text))
    if not isinstance(text, (list, tuple)) or isinstance(text, _Words):
        return text
    # a batch: a pair of texts is a tuple, as transformers 5.x takes one
    return [tuple(map(_words_of, item)) if _is_pair(item) else _words_of(item) for item in text]


def _words_of(text: Any) -> Any:
    return _Words(word_texts(text)) if _is_words(text) else text


def _is_words(text: Any) -> bool:
    """Whether ``text`` is one text's words, not yet separated."""
    return (isinstance(text, (list, tuple)) and not isinstance(text, _Words) and len(text) > 0
            and all(isinstance(word, str) for word in text))


def _is_pair(item: Any) -> bool:
    """Whether an item of a batch is a pair of texts' words."""
    return (isinstance(item, (list, tuple)) and len(item) == 2
            and all(_is_words(part) or isinstance(part, _Words) for part in item))
