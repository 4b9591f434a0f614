"""``BPE``: the byte-level BPE of tiktoken's ranks files and HF ``tokenizer.json`` files, with
their ids, on bbpe's shared user layer.

A file is read into a ``BpeSpec`` (``bbpe.bpe.formats``), the spec builds the compiled model
(``bbpe.bpe._codec.BpeCodec``: the known patterns scanned by ``_pretokenize`` without the
GIL, any other through the ``regex`` package), and its added tokens become the tokenizer's
special tokens with the file's ids. Tokens read as text in GPT-2's byte-to-unicode form
(``Ġthe``), as HF shows them.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from functools import cached_property
from typing import Any, BinaryIO, ClassVar

import numpy as np

from ..common.hf_spec import AddedToken
from ..common.hf_templates import parts_now, set_file_template
from ..common.specials import SpecialTokenError
from ..common.template import A, B
from ..common.template import Template as FacadeTemplate
from ..tokenizer import Tokenizer
from . import byte_level, training
from ._codec import BpeCodec
from ._pretokenize import compiled_pattern, split
from .formats import read_tiktoken, read_tokenizer_json, read_vocab_merges, tiktoken_bytes, to_tokenizer_json
from .nfc import nfc_alignment
from .offsets import UnitOf, byte_units, char_units, prefixed_spans, trimmed_spans, walked_spans
from .patterns import pattern_name
from .spec import BpeSpec

_TIKTOKEN_SOURCE = "str | os.PathLike[str] | BinaryIO | Mapping[bytes, int]"


class BPE(Tokenizer):
    """A byte-level BPE by merge ranks: ids identical to tiktoken's and to HF ``tokenizers``'
    for the same files.

    >>> tok = bbpe.BPE.from_tiktoken("o200k_base.tiktoken", "o200k_base")   # doctest: +SKIP
    >>> tok = bbpe.load("tokenizer.json")                                     # doctest: +SKIP
    """

    kind = "BPE"
    _id_gaps = True  # tiktoken's special tokens name their ids, past a gap in o200k_base
    _formats: ClassVar[dict[str, tuple[str, ...]]] = {"json": (".json",), "tiktoken": (".tiktoken",)}

    def __init__(self, spec: BpeSpec) -> None:
        """Build from a ``BpeSpec`` (what the ``from_*`` constructors read)."""
        self.spec = spec
        pattern: object = None
        if spec.pattern is not None:
            pattern = compiled_pattern(spec.pattern) or _regex(spec.pattern)
        codec = BpeCodec(_codec_tokens(spec), None if spec.merges is None else list(spec.merges), spec.ignore_merges,
                         pattern, spec.gaps, -1 if spec.unk_id is None else spec.unk_id, spec.fuse_unk,
                         spec.add_prefix_space, spec.normalizer, spec.char_units)
        self._pre_tokenizer = pattern  # a PIECES id, a regex object or None: the codec's
        self._shadowed = spec.unreachable  # decoded from their added tokens (_codec_tokens)
        self._start(list(spec.tokens), codec)
        try:
            self._set_user_state({"special_tokens": [(t.content.encode("utf-8", "surrogatepass"), t.id)
                                                     for t in spec.added_tokens]})
        except SpecialTokenError as err:  # named as the file (or tiktoken's argument) names it
            token = spec.added_tokens[err.position]
            where = (f"special_tokens[{token.content!r}]" if spec.text_form == "bytes" else
                     f"added_tokens[{err.position}].{err.part}")
            raise ValueError(f"{where}: {err}") from None
        if spec.template is not None:
            set_file_template(self, spec.template)
            if spec.template.roberta:
                self._bare_template = FacadeTemplate(pair=((A, 0), (B, 0)))

    @classmethod
    def from_tiktoken(cls, source: str | os.PathLike[str] | BinaryIO | Mapping[bytes, int], pattern: str,
                      special_tokens: Mapping[str, int] | None = None) -> BPE:
        """A tiktoken ranks file (``base64 rank`` lines, gzipped or not) or tiktoken's
        ``{token bytes: rank}``; ``pattern`` is a regex or the name of one of tiktoken's
        (``"gpt2"``, ``"r50k_base"``, ``"p50k_base"``, ``"cl100k_base"``, ``"o200k_base"``:
        exactly tiktoken's pattern); ``special_tokens`` is tiktoken's ``{text: id}``."""
        return cls(read_tiktoken(source, pattern=pattern, special_tokens=special_tokens))

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> BPE:
        """An HF ``tokenizer.json`` whose model is a byte-level BPE (``load`` on this class)."""
        return cls.load(path)  # type: ignore[return-value]

    @classmethod
    def from_vocab_merges(cls, vocab: str | os.PathLike[str], merges: str | os.PathLike[str], **options: Any) -> BPE:
        """GPT-2's ``vocab.json`` and ``merges.txt`` (options: ``pattern``,
        ``add_prefix_space``, ``special_tokens``)."""
        return cls(read_vocab_merges(vocab, merges, **options))

    @classmethod
    def train(cls, files: str | os.PathLike[str] | Iterable[str | os.PathLike[str]], *, vocab_size: int = 30000,
              min_frequency: int = 0, special_tokens: Iterable[str] | None = None, limit_alphabet: int | None = None,
              initial_alphabet: Iterable[str] | None = None, max_token_length: int | None = None,
              pre_tokenizer: str = "byte_level", show_progress: bool | Callable[..., None] = True,
              memory_check: bool = True) -> BPE:
        """Train on text files as HF ``tokenizers``' ``BpeTrainer`` does, with the same
        vocabulary, ids and merges (bbpe.bpe.training): ``pre_tokenizer`` is
        ``"byte_level"`` (HF's ``ByteLevel(add_prefix_space=False)``), a tiktoken
        pattern name such as ``"cl100k_base"`` (HF's ``Split`` with it, then ByteLevel), or
        ``"whitespace"`` (HF's ``Whitespace``, no ByteLevel: merging starts from chars, and
        a char that is not in the vocabulary is dropped when encoding, as in HF);
        ``initial_alphabet`` defaults to all 256 bytes (HF's ``ByteLevel.alphabet()``) for
        the byte-level ones, to none for "whitespace".
        The other arguments are BpeTrainer's. Each line of a file is one text.
        ``memory_check``: refuse (InsufficientMemoryError) a corpus that would likely not
        fit in the memory available."""
        settings = training.Settings.checked(vocab_size, min_frequency, special_tokens, limit_alphabet,
                                             initial_alphabet, max_token_length, pre_tokenizer)
        return cls(training.train(files, "files", settings, show_progress, memory_check))

    @classmethod
    def train_from_iterator(cls, texts: Iterable[str], *, vocab_size: int = 30000, min_frequency: int = 0,
                            special_tokens: Iterable[str] | None = None, limit_alphabet: int | None = None,
                            initial_alphabet: Iterable[str] | None = None, max_token_length: int | None = None,
                            pre_tokenizer: str = "byte_level",
                            show_progress: bool | Callable[..., None] = True) -> BPE:
        """``train`` on texts (str), each one text as HF's ``train_from_iterator`` takes it."""
        settings = training.Settings.checked(vocab_size, min_frequency, special_tokens, limit_alphabet,
                                             initial_alphabet, max_token_length, pre_tokenizer)
        return cls(training.train(texts, "texts", settings, show_progress))

    @classmethod
    def train_from_counts(cls, counts: Mapping[str, int] | Mapping[bytes, int] | Iterable[tuple[str | bytes, int]], *,
                          vocab_size: int = 30000, min_frequency: int = 0, special_tokens: Iterable[str] | None = None,
                          limit_alphabet: int | None = None, initial_alphabet: Iterable[str] | None = None,
                          max_token_length: int | None = None, pre_tokenizer: str = "byte_level",
                          show_progress: bool | Callable[..., None] = True) -> BPE:
        """``train`` on counts of pre-tokenized words (a dict or (word, count) pairs; a word
        as ``count_words`` gives it, ``"Ġhello"``, or as bytes): the same tokenizer as training on the
        text those counts came from with the same ``pre_tokenizer`` (which the tokenizer
        keeps, to split the texts it encodes)."""
        settings = training.Settings.checked(vocab_size, min_frequency, special_tokens, limit_alphabet,
                                             initial_alphabet, max_token_length, pre_tokenizer)
        return cls(training.train(counts, "counts", settings, show_progress))

    @staticmethod
    def count_words(files: str | os.PathLike[str] | Iterable[str | os.PathLike[str]], *,
                    pre_tokenizer: str = "byte_level", show_progress: bool | Callable[..., None] = True) -> dict[str, int]:
        """The words of the files as ``pre_tokenizer`` splits each line, with their counts
        (the files' added up): ``{"Ġhello": 12, ...}``, what ``train_from_counts`` takes to
        give what ``train`` gives on the files (``bbpe count-words`` writes them as TSV)."""
        return training.count_file_words(files, pre_tokenizer, show_progress)

    @classmethod
    def _from_json(cls, document: dict, name: str) -> BPE:
        """An HF ``tokenizer.json`` (bbpe writes the same file, with its options in ``bbpe``)."""
        return cls._from_spec_json(read_tokenizer_json(document, name), document, name)  # type: ignore[return-value]

    def _json_bytes(self) -> bytes:
        """HF's ``tokenizer.json`` of the model with the special tokens and the template set
        on it now, which HF ``tokenizers`` loads and encodes to the same ids."""
        return self._hf_json_bytes(to_tokenizer_json(self.current_spec()))

    def current_spec(self) -> BpeSpec:
        """The ``BpeSpec`` of this tokenizer as it is now: the file's, with the special tokens
        added since and the template set since (what ``save`` writes)."""
        added, template = parts_now(self, self.spec.added_tokens, self.spec.template, _added_token)
        return replace(self.spec, added_tokens=added, template=template)

    def _token_spans(self, text: str | bytes, ids: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """Offsets as HF gives them: the space ``add_prefix_space`` puts first has the span of
        the char it comes before, and ByteLevel's post-processor trims spaces off them
        (``bbpe.bpe.offsets``)."""
        spec = self.spec
        if isinstance(text, str) and _SURROGATE.search(text):
            return self._surrogate_spans(text, ids, lengths)
        if spec.normalizer is not None and not _is_nfc(text):
            return self._normalized_spans(text, ids, lengths)
        if not (spec.add_prefix_space or spec.trim_offsets or self._walked):
            return super()._token_spans(text, ids, lengths)
        if self._walked:
            unk = -1 if spec.unk_id is None else spec.unk_id
            tokens = [None if kid == unk else self.token_bytes(kid) for kid in ids.tolist()]
            spans = walked_spans(text, tokens, self._added_mask(ids) & (ids != unk), self._unit_of, spec.fuse_unk,
                                 spec.add_prefix_space, self._piece_starts,
                                 next((key for key, kid in self._specials.ids.items() if kid == unk), b""),
                                 tuple(self._specials.ids))
        elif spec.add_prefix_space:
            spans = prefixed_spans(text, lengths, self._segment_starts(ids))
        else:
            spans = super()._token_spans(text, ids, lengths)
        if spec.trim_offsets:
            spans = trimmed_spans(spans, [self.id_to_token(i) for i in ids.tolist()],
                                  spec.trim_offsets_prefix_space)
        return spans

    def _surrogate_spans(self, text: str, ids: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """The spans in a str holding surrogates, which the codec reads as tiktoken does (a
        pair as the char it encodes, a lone one as U+FFFD): each char it read spans the code
        units it came from."""
        read = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        units = _code_units(text)
        spans = self._token_spans(read, ids, lengths)
        bounds = np.concatenate(([0], np.cumsum(units, dtype=np.int64)))
        return np.stack([bounds[spans[:, 0]], bounds[spans[:, 1]]], axis=1) if spans.shape[0] else spans

    def _normalized_spans(self, text: str | bytes, ids: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """The spans of tokens that spell the text's NFC, in the text itself: each composed
        char aligned with the char of the text HF aligns it with (``bpe.nfc``)."""
        original = text if isinstance(text, str) else text.decode("utf-8")
        normalized, align = nfc_alignment(original)
        spans = self._token_spans(normalized, ids, lengths)
        if not spans.shape[0]:
            return spans
        where = np.array(align, dtype=np.int64)
        out = np.stack([where[spans[:, 0]], where[np.maximum(spans[:, 1] - 1, spans[:, 0])] + 1], axis=1)
        if isinstance(text, bytes):  # chars to bytes
            bounds = np.concatenate(([0], np.cumsum([len(c.encode("utf-8")) for c in original])))
            out = bounds[out]
        return out

    @cached_property
    def _known_bytes(self) -> bytes:
        """1 for each byte that is a token of its own, else 0 (HF drops it, or makes it unk)."""
        single = {key[0] for key in self.spec.tokens if len(key) == 1}
        return bytes(1 if b in single else 0 for b in range(256))

    @cached_property
    def _walked(self) -> bool:
        """Whether the tokens' bytes may not spell the text end to end: a model over chars
        (gaps, chars that are no token), or bytes that are no token."""
        return self.spec.char_units or 0 in self._known_bytes

    @cached_property
    def _unit_of(self) -> UnitOf:
        if not self.spec.char_units:
            return byte_units(self._known_bytes)
        chars = frozenset(key for key in self.spec.tokens if len(key.decode("utf-8", "replace")) == 1)
        return char_units(chars.__contains__)

    def _added_mask(self, ids: np.ndarray) -> np.ndarray:
        """Whether each id is an added (special) token's."""
        return np.isin(ids, np.fromiter(self._specials.ids.values(), dtype=np.int64))

    def _segment_starts(self, ids: np.ndarray) -> np.ndarray:
        """Whether each token starts a stretch of text between added tokens (where the model
        began a text, and so where ``add_prefix_space`` may have put a space)."""
        added = self._added_mask(ids)
        starts = ~added
        starts[1:] &= added[:-1]
        return starts

    def _piece_starts(self, stretch: bytes) -> list[int]:
        """The byte offsets in ``stretch`` (text between added tokens, UTF-8) where the
        pre-tokenizer's pieces start, as the model split it (after ``add_prefix_space``'s
        space, which belongs to the first piece)."""
        spaced = self.spec.add_prefix_space and stretch[:1] not in (b"", b" ")
        data = b" " + stretch if spaced else stretch
        pattern: Any = self._pre_tokenizer
        if pattern is None:
            pieces = [data]
        elif isinstance(pattern, int):
            pieces = split(data, pattern, gaps=True)  # (a gap ends a piece too)
        else:
            text = data.decode("utf-8", "replace")
            pieces, last = [], 0
            for match in pattern.finditer(text):
                a, b = match.span()
                if self.spec.gaps and a > last:
                    pieces.append(text[last:a].encode("utf-8"))
                if b > a:
                    pieces.append(text[a:b].encode("utf-8"))
                last = b
            if self.spec.gaps and last < len(text):
                pieces.append(text[last:].encode("utf-8"))
        starts = np.cumsum([0, *map(len, pieces)])[:-1] - (1 if spaced else 0)
        return [max(0, int(c)) for c in starts]

    def _format_bytes(self, format: str, **options: Any) -> bytes:
        if format == "tiktoken" and not options:
            return tiktoken_bytes(self.spec)
        return super()._format_bytes(format, **options)

    def to_tiktoken(self, name: str = "bbpe") -> Any:
        """This model as a ``tiktoken.Encoding`` (tiktoken must be installed)."""
        try:
            import tiktoken
        except ImportError:
            raise ImportError("to_tiktoken needs tiktoken (pip install tiktoken)") from None
        if self.spec.merges is not None or self.spec.pattern is None:
            raise ValueError("to_tiktoken: only a model of tiktoken ranks (from_tiktoken) is a tiktoken Encoding")
        return tiktoken.Encoding(name, pat_str=self.spec.pattern,
                                 mergeable_ranks={key: kid for kid, key in enumerate(self._keys)},
                                 special_tokens={t.content: t.id for t in self.spec.added_tokens})

    # ------------------------------------------------------------------ what the facade needs

    def _key_text(self, key: bytes) -> str:
        if self.spec.char_units:
            return key.decode("utf-8", "replace")  # a vocabulary of text (an unreachable id's may not be UTF-8)
        return byte_level.to_text(key)  # GPT-2's form, as HF's files and get_vocab() show it

    def _text_key(self, text: str) -> bytes | None:
        if self.spec.char_units:
            try:
                return text.encode("utf-8")
            except UnicodeEncodeError:
                return None
        return byte_level.to_bytes(text)

    @property
    def special_roles(self) -> dict[str, str]:
        """``<|endoftext|>`` as the end of text, where the model has it."""
        return {"eos_token": "<|endoftext|>"} if b"<|endoftext|>" in self._specials.ids else {}

    def _model_summary(self) -> list[tuple[str, str]]:
        regex = self.spec.pattern
        if regex is None:
            return [("pattern", "none (the text is one piece)")]
        shown = regex if len(regex) <= 80 else regex[:80] + "..."
        return [("pattern", pattern_name(regex) or (shown if shown.isprintable() else repr(shown)))]

    def _model_state(self) -> tuple:
        return (self.current_spec(),)  # (the added tokens and template a file gives are the same as set after)

    @classmethod
    def _from_model_state(cls, state: tuple) -> BPE:
        return cls(state[0])

    def __repr__(self) -> str:
        return f"<bbpe.BPE: {len(self)} ids>"


def _added_token(key: bytes, kid: int) -> AddedToken:
    """A special token added on the tokenizer, as the file's added tokens are described."""
    content = key.decode("utf-8", "surrogatepass")
    return AddedToken(content, kid, decoded=byte_level.decoded_bytes(content))


def _codec_tokens(spec: BpeSpec) -> list[bytes]:
    """The tokens the codec gets: the spec's, but for an unreachable id (one only its added
    token gives: the model never makes it from text) bytes that no UTF-8 text holds (0xFF),
    so that neither a lookup nor a merge finds it. Its added token gives its bytes
    (``Tokenizer._shadowed``)."""
    if not spec.unreachable:
        return list(spec.tokens)
    tokens = [b"\xff\xff%d" % kid if kid in spec.unreachable else token for kid, token in enumerate(spec.tokens)]
    if len(set(tokens)) != len(tokens):
        raise ValueError("the vocabulary holds tokens starting with two 0xFF bytes: bbpe.BPE cannot set its "
                         "unreachable ids apart")
    return tokens


def _regex(pattern: str) -> Any:
    try:
        import regex  # type: ignore[import-untyped]
    except ImportError:
        raise ImportError(f"the pattern {pattern[:60]!r} is not one bbpe compiles: it needs the regex package "
                          "(pip install regex)") from None
    return regex.compile(pattern)


_SURROGATE = re.compile("[\ud800-\udfff]")


def _code_units(text: str) -> list[int]:
    """How many of the str's code points each char the codec reads spans: 2 for a surrogate
    pair (one char), 1 for anything else (a lone surrogate, read as U+FFFD, or a char)."""
    units, i = [], 0
    while i < len(text):
        pair = "\ud800" <= text[i] < "\udc00" and i + 1 < len(text) and "\udc00" <= text[i + 1] <= "\udfff"
        units.append(2 if pair else 1)
        i += units[-1]
    return units


def _is_nfc(text: str | bytes) -> bool:
    try:
        return unicodedata.is_normalized("NFC", text if isinstance(text, str) else text.decode("utf-8"))
    except UnicodeDecodeError:
        return True  # (the encoder has reported it)
