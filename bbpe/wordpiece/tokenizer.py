"""``WordPiece``: BERT's tokenizer (seed 002), with the ids of HF ``tokenizers``'
``BertWordPieceTokenizer`` for the same ``vocab.txt`` and options, on bbpe's shared user
layer.

A file is read into a ``WordPieceSpec`` (``bbpe.wordpiece.formats``), the spec builds the
compiled model (``bbpe.wordpiece._codec.WordPieceCodec``: normalizer, pre-tokenizer and
longest-match encoder without the GIL), and BERT's special tokens that the vocabulary holds
become the tokenizer's special tokens with their ids there. Tokens read as their text
(``##ing``); a text decodes as HF's WordPiece decoder joins the tokens.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any, ClassVar

import numpy as np

from ..common.hf_spec import AddedToken
from ..common.hf_templates import parts_now, set_file_template
from ..common.stream import _one_or_many
from ..errors import UnknownIdError
from ..tokenizer import Tokenizer
from . import training
from ._codec import OPTIONS, WordPieceCodec
from .formats import (
    bert_added_tokens,
    bert_template,
    read_tokenizer_json,
    read_vocab_txt,
    to_tokenizer_json,
    vocab_txt_bytes,
)
from .spec import BERT_ROLES, TRAINING_SPECIALS, BertNormalizer, WordPieceSpec

# decoders/wordpiece.rs ``cleanup``, applied to each token in this order
_CLEANUP = ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"), (" 'm", "'m"),
            (" do not", " don't"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re"))


class WordPiece(Tokenizer):
    """BERT's WordPiece: ids identical to HF ``tokenizers``' ``BertWordPieceTokenizer`` for
    the same vocabulary and options.

    >>> tok = bbpe.WordPiece.from_vocab("vocab.txt", lowercase=False)   # doctest: +SKIP
    >>> tok = bbpe.load("tokenizer.json")                                # doctest: +SKIP
    """

    kind = "WordPiece"
    _merges: tuple[tuple[str, str], ...] = ()  # what training made (set by _trained)
    _formats: ClassVar[dict[str, tuple[str, ...]]] = {"json": (".json",), "vocab": (".txt",)}

    def __init__(self, spec: WordPieceSpec) -> None:
        """Build from a ``WordPieceSpec`` (what the ``from_*`` constructors read)."""
        self.spec = spec
        keys = [token.encode("utf-8", "surrogatepass") for token in spec.tokens]
        ids = spec.ids()
        first, later = _decoded_forms(spec)
        codec = WordPieceCodec(keys, ids.get(spec.unk_token, -1), spec.prefix.encode("utf-8", "surrogatepass"),
                               spec.max_input_chars_per_word, _options(spec), first, later)
        self._start(keys, codec)
        self._set_user_state({"special_tokens": [(t.content.encode("utf-8", "surrogatepass"), t.id)
                                                 for t in spec.added_tokens]})
        if spec.template is not None:
            set_file_template(self, spec.template)

    @classmethod
    def from_vocab(cls, vocab: str | os.PathLike[str] | Iterable[str], *, lowercase: bool = True,
                   strip_accents: bool | None = None, clean_text: bool = True, handle_chinese_chars: bool = True,
                   wordpieces_prefix: str = "##", unk_token: str = "[UNK]", max_input_chars_per_word: int = 100,
                   unk_per_char: bool = False) -> WordPiece:
        """BERT's ``vocab.txt`` (a path, or the tokens in id order) with
        ``BertWordPieceTokenizer``'s options: ``strip_accents=None`` strips when
        ``lowercase`` does. BERT's ``[UNK] [SEP] [CLS] [PAD] [MASK]`` that the vocabulary
        holds are special tokens, and ``[CLS] $A [SEP]`` the template where it holds both.
        ``unk_per_char``: the seed's encoder (an unknown char, not the whole word, is
        ``[UNK]``)."""
        if isinstance(vocab, (str, os.PathLike)):
            with open(vocab, "rb") as f:
                tokens = read_vocab_txt(f.read(), os.fspath(vocab))
        else:
            tokens = tuple(vocab)
            if not all(isinstance(t, str) for t in tokens):
                raise TypeError("vocab: a path or the tokens (str) in id order")
        normalizer = BertNormalizer(clean_text, handle_chinese_chars, strip_accents, lowercase)
        spec = WordPieceSpec(tokens, unk_token, wordpieces_prefix, max_input_chars_per_word, normalizer,
                             added_tokens=bert_added_tokens(tokens), template=bert_template(tokens),
                             unk_per_char=unk_per_char)
        return cls(spec)

    @classmethod
    def train(cls, files: str | os.PathLike[str] | Iterable[str | os.PathLike[str]], *, vocab_size: int = 30000,
              min_frequency: int = 2, special_tokens: Iterable[str] | None = TRAINING_SPECIALS,
              limit_alphabet: int | None = 1000, initial_alphabet: Iterable[str] | None = None,
              score: str = "likelihood", lowercase: bool = True, strip_accents: bool | None = None,
              clean_text: bool = True, handle_chinese_chars: bool = True, wordpieces_prefix: str = "##",
              show_progress: bool | Callable[..., None] = True) -> WordPiece:
        """Train on text files (each line a text), with ``BertWordPieceTokenizer.train``'s
        defaults: ``score="likelihood"`` is the seed's (the pair of the greatest
        ``count(ab) / (count(a) * count(b))``), ``"frequency"`` HF's ``WordPieceTrainer``
        (bbpe.wordpiece.training). ``tok.merges`` lists the merges made."""
        paths = [files] if isinstance(files, (str, os.PathLike)) else list(files)
        settings = cls._settings(vocab_size, min_frequency, special_tokens, limit_alphabet, initial_alphabet, score,
                                 lowercase, strip_accents, clean_text, handle_chinese_chars, wordpieces_prefix)
        return cls._trained(training.train(training.count_files(paths, settings.normalizer), settings, show_progress))

    @classmethod
    def train_from_iterator(cls, texts: Iterable[str], *, vocab_size: int = 30000, min_frequency: int = 2,
                            special_tokens: Iterable[str] | None = TRAINING_SPECIALS,
                            limit_alphabet: int | None = 1000, initial_alphabet: Iterable[str] | None = None,
                            score: str = "likelihood", lowercase: bool = True, strip_accents: bool | None = None,
                            clean_text: bool = True, handle_chinese_chars: bool = True, wordpieces_prefix: str = "##",
                            show_progress: bool | Callable[..., None] = True) -> WordPiece:
        """``train`` on texts (str), each one text."""
        settings = cls._settings(vocab_size, min_frequency, special_tokens, limit_alphabet, initial_alphabet, score,
                                 lowercase, strip_accents, clean_text, handle_chinese_chars, wordpieces_prefix)
        return cls._trained(training.train(training.count_texts(texts, settings.normalizer), settings, show_progress))

    @staticmethod
    def _settings(vocab_size: Any, min_frequency: Any, special_tokens: Any, limit_alphabet: Any,
                  initial_alphabet: Any, score: Any, lowercase: bool, strip_accents: bool | None, clean_text: bool,
                  handle_chinese_chars: bool, prefix: Any) -> training.Settings:
        normalizer = BertNormalizer(bool(clean_text), bool(handle_chinese_chars),
                                    None if strip_accents is None else bool(strip_accents), bool(lowercase))
        return training.Settings.checked(vocab_size, min_frequency, special_tokens, limit_alphabet, initial_alphabet,
                                         score, normalizer, prefix)

    @classmethod
    def _trained(cls, trained: training.Trained) -> WordPiece:
        tok = cls(trained.spec)
        tok._merges = trained.merges
        return tok

    @property
    def merges(self) -> list[tuple[str, str]]:
        """The merges the training of this tokenizer made, in order, as pairs of token texts
        (``("un", "##aff")``); empty for one read from a file or unpickled (no file of
        WordPiece keeps them: encoding does not use them)."""
        return list(self._merges)

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> WordPiece:
        """An HF ``tokenizer.json`` whose model is WordPiece, or a ``vocab.txt`` with
        BERT's uncased options (``load`` on this class)."""
        return cls.load(path)  # type: ignore[return-value]

    @classmethod
    def _from_json(cls, document: dict, name: str) -> WordPiece:
        """An HF ``tokenizer.json`` whose model is WordPiece."""
        return cls._from_spec_json(read_tokenizer_json(document, name), document, name)  # type: ignore[return-value]

    @classmethod
    def _from_file_bytes(cls, data: bytes, name: str) -> WordPiece:
        """A ``vocab.txt``: BERT's uncased options (``from_vocab``'s defaults)."""
        return cls.from_vocab(read_vocab_txt(data, name))

    def _json_bytes(self) -> bytes:
        """HF's ``tokenizer.json`` of the model with the special tokens and the template set
        on it now, which HF ``tokenizers`` loads and encodes to the same ids."""
        return self._hf_json_bytes(to_tokenizer_json(self.current_spec()))

    def _format_bytes(self, format: str, **options: Any) -> bytes:
        if format == "vocab" and not options:
            return vocab_txt_bytes(self.spec.tokens)
        return super()._format_bytes(format, **options)

    def current_spec(self) -> WordPieceSpec:
        """The spec as the tokenizer is now: the file's, with the special tokens and the
        template set since (what ``save`` writes)."""
        added, template = parts_now(self, self.spec.added_tokens, self.spec.template, _added_token)
        return replace(self.spec, added_tokens=added, template=template)

    # ------------------------------------------------------------------ what the model shows

    def normalize(self, text: str) -> str:
        """The text as the normalizer leaves it (HF's ``normalizer.normalize_str``)."""
        return self._model.normalize(text)[0]

    def pre_tokenize(self, text: str) -> list[tuple[str, tuple[int, int]]]:
        """The words the model takes, each with its (start, end) in ``text`` (HF's
        ``pre_tokenize_str`` of the normalized text, the spans in the input)."""
        return self._model.pre_tokenize(text)

    # ------------------------------------------------------------------ what the facade needs

    def _key_text(self, key: bytes) -> str:
        return key.decode("utf-8", "surrogatepass")

    def _text_key(self, text: str) -> bytes | None:
        try:
            return text.encode("utf-8")
        except UnicodeEncodeError:
            return None

    @property
    def pad_id(self) -> int | None:
        """``[PAD]``'s id, where the vocabulary has it."""
        return self.spec.ids().get(BERT_ROLES["pad_token"])

    @property
    def special_roles(self) -> dict[str, str]:
        """BERT's special tokens the vocabulary holds, by their transformers role."""
        ids = self.spec.ids()
        roles = {role: token for role, token in BERT_ROLES.items() if token in ids}
        if self.spec.unk_token in ids:
            roles["unk_token"] = self.spec.unk_token
        return roles

    def _decode_bytes(self, ids: Any) -> bytes:
        """HF's decoder over every token, added ones included (each a token of the text)."""
        return self._decoded(ids, False)

    def _decoded(self, ids: Any, started: bool) -> bytes:
        """The text (UTF-8) of ids that come after others (``started``) or begin a text: the
        codec's where they are all the model's, else the decoder over their tokens' text."""
        try:
            extra = set(self._specials.new_ids(len(self._keys)))
            plain = not extra or extra.isdisjoint(int(i) for i in ids)
        except TypeError:
            plain = True  # (the codec names what is no integer)
        if plain:
            try:
                return self._model.decode(ids, not started)
            except UnknownIdError as err:  # the codec knows the model's ids only
                raise UnknownIdError(err.id, err.position, len(self)) from None
        tokens = []
        for position, kid in enumerate(ids):
            token = self.id_to_token(int(kid)) if 0 <= int(kid) < len(self) else None
            if token is None:
                raise UnknownIdError(int(kid), position, len(self))
            tokens.append(token)
        return self._decoded_tokens(tokens, started).encode("utf-8", "surrogatepass")

    def _decoded_tokens(self, tokens: list[str], started: bool = False) -> str:
        """HF's WordPiece decoder (decoders/wordpiece.rs) over tokens' text."""
        return "".join(_token_forms(token, self.spec)[0 if i == 0 and not started else 1]
                       for i, token in enumerate(tokens))

    def tokens_to_bytes(self, tokens: Iterable[str]) -> bytes:
        """Tokens' text joined as the decoder joins them (transformers' ``convert_tokens_to_string``)."""
        return self._decoded_tokens(list(tokens)).encode("utf-8", "surrogatepass")

    def decoder(self, errors: str = "replace") -> WordPieceStreamDecoder:
        """An incremental decoder: ``feed(ids)`` gives their text as the decoder joins them
        after the ids fed before (a token is whole text: nothing is held back)."""
        return WordPieceStreamDecoder(self, errors)

    def _token_spans(self, text: str | bytes, ids: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """Each token's span in the text, through the normalizer (the input chars its
        normalized chars came from); a special token matched whole spans its text."""
        wanted = ids.tolist()
        for cut in (self._specials.tokens, frozenset()):
            got, spans = self._spans_cut(text, cut)
            if got == wanted:
                return spans
        raise ValueError("offsets: the special tokens of this call were matched in a way bbpe.WordPiece cannot "
                         "align (give all or none of them with allowed_special)")

    def _spans_cut(self, text: str | bytes, cut: frozenset[bytes]) -> tuple[list[int], np.ndarray]:
        ids: list[int] = []
        parts: list[np.ndarray] = []
        at = 0
        for piece in self._specials.split(text, cut) if cut else (text,):
            if isinstance(piece, int):
                key = self._specials.by_id[piece]
                size = len(key) if isinstance(text, bytes) else len(key.decode("utf-8", "surrogatepass"))
                ids.append(piece)
                parts.append(np.array([[at, at + size]], dtype=np.int64))
                at += size
            else:
                got, spans = self._model.encode_offsets(piece)
                ids += got
                parts.append(spans + at)
                at += len(piece)
        return ids, np.concatenate(parts) if parts else np.zeros((0, 2), dtype=np.int64)

    def _model_summary(self) -> list[tuple[str, str]]:
        spec, norm = self.spec, self.spec.normalizer
        options = "none" if norm is None else ", ".join(
            [name for name, on in (("lowercase", norm.lowercase), ("strip_accents", norm.strips),
                                   ("clean_text", norm.clean_text), ("handle_chinese_chars", norm.handle_chinese_chars))
             if on] or ["no option on"])
        words = f"prefix {spec.prefix!r}, unknown token {spec.unk_token!r}, at most {spec.max_input_chars_per_word} chars"
        lines = [("normalizer", f"BERT's: {options}"), ("words", words)]
        return lines + [("unknown chars", "one unknown token each (the seed's encoder)")] * spec.unk_per_char

    def _model_state(self) -> tuple:
        return (self.current_spec(),)

    @classmethod
    def _from_model_state(cls, state: tuple) -> WordPiece:
        return cls(state[0])

    def __repr__(self) -> str:
        return f"<bbpe.WordPiece: {len(self)} ids>"


class WordPieceStreamDecoder:
    """``decoder()``: HF's WordPiece decoder over ids as they come; a token is whole text, so
    ``feed`` gives all of it (the space before a token that does not continue a word too)."""

    def __init__(self, tok: WordPiece, errors: str = "replace") -> None:
        self.tok, self.errors, self.started = tok, errors, False

    def feed(self, ids: object) -> str:
        ids = _one_or_many(ids)
        if not len(ids):
            return ""
        out = self.tok._decoded(ids, self.started)
        self.started = True
        return out.decode("utf-8", self.errors)

    def flush(self) -> str:
        """Nothing is held back; the next id starts a new text."""
        self.started = False
        return ""

    @property
    def pending(self) -> bytes:
        return b""


def _options(spec: WordPieceSpec) -> int:
    norm = spec.normalizer
    bits = OPTIONS["unk_per_char"] if spec.unk_per_char else 0
    if norm is not None:
        bits |= ((OPTIONS["clean_text"] if norm.clean_text else 0)
                 | (OPTIONS["handle_chinese_chars"] if norm.handle_chinese_chars else 0)
                 | (OPTIONS["strip_accents"] if norm.strips else 0) | (OPTIONS["lowercase"] if norm.lowercase else 0))
    return bits


def _cleaned(text: str) -> str:
    for dirty, clean in _CLEANUP:
        text = text.replace(dirty, clean)
    return text


def _token_forms(token: str, spec: WordPieceSpec) -> tuple[str, str]:
    """A token decoded first in a text, and after another token (decoders/wordpiece.rs; no
    decoder: HF joins the tokens with spaces)."""
    if not spec.decoder:
        return token, " " + token
    later = token[len(spec.prefix):] if token.startswith(spec.prefix) else " " + token
    return (_cleaned(token), _cleaned(later)) if spec.cleanup else (token, later)


def _decoded_forms(spec: WordPieceSpec) -> tuple[list[bytes], list[bytes]]:
    first, later = [], []
    for token in spec.tokens:
        a, b = _token_forms(token, spec)
        first.append(a.encode("utf-8", "surrogatepass"))
        later.append(b.encode("utf-8", "surrogatepass"))
    return first, later


def _added_token(key: bytes, kid: int) -> AddedToken:
    """A special token added on the tokenizer, as the file's added tokens are described."""
    return AddedToken(key.decode("utf-8", "surrogatepass"), kid, decoded=key)
