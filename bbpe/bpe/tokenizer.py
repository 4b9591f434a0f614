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
from collections.abc import Mapping
from typing import Any, BinaryIO, ClassVar

from ..errors import FormatError
from ..tokenizer import Tokenizer
from . import byte_level
from ._codec import BpeCodec
from ._pretokenize import compiled_pattern
from .formats import dumps, read_tiktoken, read_tokenizer_json, read_vocab_merges, tiktoken_bytes, to_tokenizer_json
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
        _check_applicable(spec)
        self.spec = spec
        pattern: object = None
        if spec.pattern is not None:
            pattern = compiled_pattern(spec.pattern) or _regex(spec.pattern)
        codec = BpeCodec(list(spec.tokens), None if spec.merges is None else list(spec.merges), spec.ignore_merges,
                         pattern, spec.gaps, -1 if spec.unk_id is None else spec.unk_id, spec.fuse_unk)
        self._start(list(spec.tokens), codec)
        self._set_user_state({"special_tokens": [(t.content.encode("utf-8", "surrogatepass"), t.id)
                                                 for t in spec.added_tokens]})

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
    def train(cls, *args: Any, **kwargs: Any) -> Tokenizer:
        raise NotImplementedError("bbpe.BPE does not train yet: bbpe.train trains bbpe's own model (XBBPE)")

    train_from_iterator = train

    @classmethod
    def _from_json(cls, document: dict, name: str) -> BPE:
        """An HF ``tokenizer.json`` (bbpe writes the same file, with its options in ``bbpe``)."""
        spec = read_tokenizer_json(document, name)
        try:
            tok = cls(spec)
        except ValueError as err:
            raise FormatError(name, 0, str(err)) from None
        options = document.get("bbpe") or {}
        tok._set_user_state({**tok._user_state(), **{k: v for k, v in options.items() if k in _USER_OPTIONS}})
        return tok

    def _json_bytes(self) -> bytes:
        """HF's ``tokenizer.json`` of the spec, which HF ``tokenizers`` loads, while nothing is
        set on top of it; else bbpe's JSON file (its added tokens and options: HF refuses the
        ``bbpe`` section)."""
        fresh = BPE._from_model_state(self._model_state())
        if self._user_state() == fresh._user_state():
            return dumps(self.spec)
        return super()._json_bytes()

    def _json_sections(self) -> dict[str, Any]:
        document = to_tokenizer_json(self.spec)
        return {key: document.get(key) for key in ("normalizer", "pre_tokenizer", "model", "post_processor",
                                                   "decoder")}

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
        return byte_level.to_text(key)  # GPT-2's form, as HF's files and get_vocab() show it

    def _text_key(self, text: str) -> bytes | None:
        return byte_level.to_bytes(text)

    @property
    def special_roles(self) -> dict[str, str]:
        """``<|endoftext|>`` as the end of text, where the model has it."""
        return {"eos_token": "<|endoftext|>"} if b"<|endoftext|>" in self._specials.ids else {}

    def _model_state(self) -> tuple:
        return (self.spec,)

    @classmethod
    def _from_model_state(cls, state: tuple) -> BPE:
        return cls(state[0])

    def __repr__(self) -> str:
        return f"<bbpe.BPE: {len(self)} ids>"


_USER_OPTIONS = ("padding_side", "truncation_side", "pad_token_id")


def _check_applicable(spec: BpeSpec) -> None:
    """ValueError naming a stage of ``spec`` that this tokenizer does not apply yet, so that
    no file is ever encoded otherwise than by its own tool."""
    stages = [name for name, used in (("the NFC normalizer", spec.normalizer is not None),
                                      ("add_prefix_space", spec.add_prefix_space),
                                      ("a post-processor template", spec.template is not None),
                                      ("tokens only an added token gives (unreachable ids)", bool(spec.unreachable)))
              if used]
    if stages:
        raise ValueError(f"bbpe.BPE does not apply {', '.join(stages)} yet")


def _regex(pattern: str) -> Any:
    try:
        import regex  # type: ignore[import-untyped]
    except ImportError:
        raise ImportError(f"the pattern {pattern[:60]!r} is not one bbpe compiles: it needs the regex package "
                          "(pip install regex)") from None
    return regex.compile(pattern)
