"""``Tokenizer``: the facade of every model, what users call to encode, decode, load and save.

A ``Tokenizer`` holds one model: its compiled model (``common.model.CompiledModel``: text to
ids without the GIL) and, in its subclass (``bbpe.XBBPE``, ``bbpe.BPE``), what is the
model's own: construction, file formats, training, its own special tokens, its tokens'
text form (the hooks of the section "what every model provides"). What every model shares
is here and in the mixins ``common.vocab_access`` (vocabulary access, special tokens, the
template) and ``common.batch`` (HF-style batches and offsets): added special tokens, the
special-token arguments of a call, batches on threads, decoding, streaming, pickling and
the dispatch of ``load`` on a file's content. Importing this module imports no model;
``bbpe.load`` imports the one a file holds.

Why this module is long: it is the one place where a call's special-token arguments are
worked out and applied to a text, a batch, a flat batch and a file (``_plan``,
``_encode_planned``, ``_flat``), each entry point with the docstring users read; the logic
behind each lives in the modules above.
"""

from __future__ import annotations

import io
import json
import operator
import os
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import cached_property, partial
from itertools import pairwise
from typing import Any, BinaryIO, ClassVar, TypeVar, cast

import numpy as np

try:
    from .common._fast import TokenizerBase, _plain_text, rows_holding
except ImportError as err:  # pragma: no cover - only in an unbuilt source checkout
    raise ImportError(
        f"bbpe's compiled modules are missing from {os.path.dirname(__file__)}: this is the source tree. "
        "Install bbpe (pip install .) and run from another directory, or build in place (pip install -e .)"
    ) from err
from .common import tokenizer_json
from .common.arguments import int_argument
from .common.batch import HFBatches, plain_batch
from .common.blocks import block_lines, split_lines
from .common.corpus import Corpus
from .common.files import write_file
from .common.gbk import gbk_to_utf8, utf8_to_gbk
from .common.model import facade
from .common.resources import usable_cpus
from .common.specials import CallSpecials, SpecialTokens, call_specials, is_default
from .common.stream import ByteStreamDecoder, SpecialsStreamDecoder, StreamDecoder
from .common.template import Template
from .common.threads import shared_pool
from .common.vocab_access import VocabularyAccess, _is_one_id
from .errors import FormatError, UnknownIdError

# the options of the user state, kept in the JSON file's "bbpe", and their defaults
OPTION_DEFAULTS: dict[str, object] = {"padding_side": "right", "truncation_side": "right", "pad_token_id": None}
_OPTIONS = tuple(OPTION_DEFAULTS)


class Tokenizer(TokenizerBase, VocabularyAccess, HFBatches):
    """A tokenizer: one model (``bbpe.XBBPE``, ``bbpe.BPE``) and what every model shares.

    >>> tok = bbpe.load("model.json")                              # doctest: +SKIP
    >>> tok.decode(tok.encode("床前明月光"))                       # doctest: +SKIP
    '床前明月光'

    ``Tokenizer.load`` and ``Tokenizer.from_bytes`` read any model file, told apart by its
    content; ``Tokenizer.train`` trains bbpe's own model and ``Tokenizer(keys)`` builds it:
    XBBPE (``bbpe.XBBPE.train``, ``bbpe.XBBPE(keys)``).
    """

    _model: Any  # the compiled model (common.model.CompiledModel): each model's own class
    kind: ClassVar[str] = ""  # the model's name: its JSON file's model.type (common.model.KINDS)
    _id_gaps: ClassVar[bool] = False  # whether its files may skip ids before a special token's (tiktoken's)
    # ids of the model's own range whose bytes an added special token gives, not the model
    # (BPE's unreachable ids: a gap in tiktoken's ranks that a special token fills)
    _shadowed: frozenset[int] = frozenset()

    # the training texts read, for a tokenizer this process trained (bbpe train's summary);
    # None for one built or loaded
    train_lines: int | None = None

    # ------------------------------------------------------------------ construction

    def __new__(cls, *args: Any, **kwargs: Any) -> Tokenizer:  # noqa: PYI034 - Tokenizer(...) is an XBBPE
        """``Tokenizer(keys, ...)`` builds bbpe's own model, an ``XBBPE`` (its constructor);
        a model's class builds itself."""
        return super().__new__(facade("XBBPE") if cls is Tokenizer else cls)

    def _start(self, keys: list[bytes], model: Any) -> None:
        """The state every model's tokenizer starts from: its keys (each id's bytes) and
        compiled model, no added special token, no template, the default options."""
        self._keys, self._model = keys, model
        self.bug_compat = False
        self._specials = SpecialTokens()
        self._has_specials = False
        self._special_probes = None
        self._own_specials = bool(self._model_specials())
        self._template = Template()
        self._key_lens: np.ndarray | None = None
        self.padding_side = "right"  # where padding goes ("left" for generation), as in transformers
        self.truncation_side = "right"  # which end truncation cuts, as in transformers
        self.pad_token_id = None  # None: the model's own (``pad_id``)

    @classmethod
    def train(cls, *args: Any, **kwargs: Any) -> Tokenizer:
        """Train bbpe's own model, XBBPE: ``bbpe.XBBPE.train`` (its docstring)."""
        return facade("XBBPE").train(*args, **kwargs)

    @classmethod
    def train_from_iterator(cls, *args: Any, **kwargs: Any) -> Tokenizer:
        """Train XBBPE on lines given one by one: ``bbpe.XBBPE.train_from_iterator``."""
        return facade("XBBPE").train_from_iterator(*args, **kwargs)

    @classmethod
    def load(cls, source: str | os.PathLike[str] | BinaryIO, *, bug_compat: bool = False) -> Tokenizer:
        """Load any model file bbpe reads, told apart by its content (``from_bytes``): a
        ``.bin`` written by bbpe or by the reference, bbpe's JSON file, an HF
        ``tokenizer.json``; from a path or a binary file object (anything with ``read``).
        Called on a model's class (``bbpe.BPE.load``), a file of another model is refused.
        Raises FormatError (naming the file and the byte offset or field), OSError."""
        if isinstance(source, (bytes, bytearray, memoryview)):
            raise TypeError("load takes a path or a binary file object; for a model's bytes use Tokenizer.from_bytes")
        if isinstance(source, io.TextIOBase):  # its read() would fail on the model's bytes, or change them
            raise TypeError(f"load: {getattr(source, 'name', 'the file object')!r} is open in text mode: "
                            "open it in 'rb' mode")
        if hasattr(source, "read"):
            data = source.read()
            if not isinstance(data, (bytes, bytearray)):
                raise TypeError(f"load: the file object gave {type(data).__name__}, not bytes (open it in 'rb' mode)")
            return cls.from_bytes(data, bug_compat=bug_compat, name=str(getattr(source, "name", "<file object>")))
        if not isinstance(source, (str, os.PathLike)):
            raise TypeError(f"load takes a path or a binary file object, got {type(source).__name__}")
        with open(source, "rb") as f:
            data = f.read()
        return cls.from_bytes(data, bug_compat=bug_compat, name=os.fspath(source))

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview, *, bug_compat: bool = False,
                   name: str = "<bytes>") -> Tokenizer:
        """A tokenizer from the bytes of a model file (what ``to_bytes`` gives), told apart
        by their content: a JSON object is bbpe's JSON file or HF's ``tokenizer.json``, read
        by the model its ``model.type`` names (``common.model.KINDS``); anything else is a
        ``.bin`` (XBBPE). ``name`` is what errors call it. ``bug_compat`` is XBBPE's."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"from_bytes takes bytes, got {type(data).__name__} (a path goes to Tokenizer.load)")
        data = bytes(data)
        if tokenizer_json.looks_like_json(data):
            document = tokenizer_json.parse(data, name)
            tok = facade(document["model"]["type"])._from_json(document, name)
        else:
            _refuse_ranks_file(data, name)
            from .wordpiece.formats import looks_like_vocab_txt  # pure Python: no model is imported

            tok = facade("WordPiece" if looks_like_vocab_txt(data) else "XBBPE")._from_file_bytes(data, name)
        if not isinstance(tok, cls):
            raise FormatError(name, 0, f"holds a {tok.kind} model, not a {cls.kind} one: load it with bbpe.load")
        if bug_compat:
            tok._set_bug_compat(name)
        return tok

    @classmethod
    def _from_json(cls, document: dict, name: str) -> Tokenizer:
        """The tokenizer a JSON document describes (``tokenizer_json.parse`` has read it
        and checked what it checks): each model reads its own ``model`` section."""
        raise NotImplementedError(f"{cls.__name__} reads no JSON file")

    @classmethod
    def _from_spec_json(cls, spec: Any, document: dict, name: str) -> Tokenizer:
        """The tokenizer of a spec read from an HF ``tokenizer.json`` (BPE's, WordPiece's):
        a ValueError of the build named as the file's, and the options of its ``bbpe``
        section (which bbpe writes where HF's file has no place for them)."""
        try:
            tok = cls(spec)  # type: ignore[call-arg]
        except ValueError as err:
            raise FormatError(name, 0, str(err)) from None
        options = document.get("bbpe") or {}
        tok._set_user_state({**tok._user_state(), **{k: v for k, v in options.items() if k in OPTION_DEFAULTS}})
        return tok

    def _hf_json_bytes(self, document: dict) -> bytes:
        """An HF ``tokenizer.json`` document as the file's bytes, the options HF's file has
        no place for (``padding_side``, ``truncation_side``, ``pad_token_id``), when set, in
        a ``bbpe`` section, which bbpe reads back and HF refuses."""
        state = self._user_state()
        options = {key: state[key] for key in OPTION_DEFAULTS}
        if options != OPTION_DEFAULTS:
            document["bbpe"] = options
        return json.dumps(document, ensure_ascii=False, indent=2).encode("utf-8") + b"\n"

    @classmethod
    def _from_file_bytes(cls, data: bytes, name: str) -> Tokenizer:
        """The tokenizer of a file that is not JSON (XBBPE's ``.bin``)."""
        raise NotImplementedError(f"{cls.__name__} reads no such file")

    def _set_bug_compat(self, name: str) -> None:
        """``load(..., bug_compat=True)``: only XBBPE reproduces a reference's losses."""
        raise ValueError(f"{name}: bug_compat=True reproduces the XBBPE C++'s encoding; this is a {self.kind} model")

    def _apply_json_state(self, document: dict, name: str) -> None:
        """The user state a JSON document holds (added tokens, template, options), applied
        to a tokenizer just built from its model section; FormatError naming the field."""
        options = document.get("bbpe") or {}
        try:  # tokenizer_json.parse has checked these as the setters do: a safety net
            self._set_user_state({"special_tokens": tokenizer_json.added_tokens(document),
                                  **{key: options[key] for key in _OPTIONS if key in options}})
        except (TypeError, ValueError) as err:
            raise FormatError(name, 0, f"added_tokens or bbpe options: {err}") from None
        single, pair = tokenizer_json.template(document)
        for field, templates in (("single", (single, None)), ("pair", (single, pair))):
            if field == "single" or pair is not None:
                try:  # the templates' words (their tokens, $A and $B) are set_template's to check
                    self.set_template(*templates)
                except (TypeError, ValueError) as err:
                    raise FormatError(name, 0, f"post_processor.{field}: {err}") from None

    def _json_state(self) -> dict[str, Any]:
        """What ``tokenizer_json.dump`` writes besides the model's own sections."""
        state = self._user_state()
        return {"added": state["special_tokens"], "template": self._template.text,
                "pair": self._template.pair_text, "options": {key: state[key] for key in _OPTIONS}}

    def _json_bytes(self) -> bytes:
        """bbpe's JSON file of this tokenizer: the model's sections and the user state."""
        return tokenizer_json.dump(self._json_sections(), **self._json_state())

    def _json_sections(self) -> dict[str, Any]:
        """The model's sections of the JSON file: ``model`` and, where the model has them,
        ``normalizer``, ``pre_tokenizer`` and ``decoder``."""
        raise NotImplementedError

    # the formats save() writes: name -> the file extensions that name it (the first is the
    # default); every model writes bbpe's JSON file
    _formats: ClassVar[dict[str, tuple[str, ...]]] = {"json": (".json",)}

    def _format_of(self, target: object, format: str | None) -> str:
        """The format ``save`` writes: ``format``, or the one the path's extension names, or
        the model's first."""
        if format is None:
            name = os.fspath(target).lower() if isinstance(target, (str, os.PathLike)) else ""
            format = next((fmt for fmt, ends in self._formats.items() if name.endswith(ends)), next(iter(self._formats)))
        if format not in self._formats:
            raise ValueError(f"format must be one of {', '.join(map(repr, self._formats))}, got {format!r}")
        return format

    def save(self, target: str | os.PathLike[str] | BinaryIO, *, format: str | None = None, **options: Any) -> None:
        """Write the model to a path, atomically (the old file or the whole new one, never
        half of it), or to a binary file object, in the format its extension names (or
        ``format``; the model's own formats: ``XBBPE.save``, ``BPE.save``). ``"json"``,
        bbpe's JSON file, also holds the special tokens, the template and the options."""
        is_file = hasattr(target, "write")
        if not is_file and not isinstance(target, (str, os.PathLike)):
            raise TypeError(f"save takes a path or a binary file object, got {type(target).__name__}")
        format = self._format_of(None if is_file else target, format)
        self._save(target, format, is_file, **options)

    def _save(self, target: Any, format: str, is_file: bool, **options: Any) -> None:
        """Write one of the model's formats (``save`` has checked the arguments)."""
        if options:
            raise TypeError(f"save: unexpected option {next(iter(options))!r} for the {format} format")
        write_file(target, self.to_bytes(format=format), is_file)

    def to_bytes(self, *, format: str | None = None, **options: Any) -> bytes:
        """The file image (``from_bytes`` reads it back) in one of the model's formats."""
        format = self._format_of(None, format)
        if format == "json" and not options:
            return self._json_bytes()
        return self._format_bytes(format, **options)

    def _format_bytes(self, format: str, **options: Any) -> bytes:
        raise ValueError(f"format must be one of {', '.join(map(repr, self._formats))}, got {format!r}")

    # ------------------------------------------------------------------ encoding

    # encode(text, *, gbk=False, bug_compat=None, out="list", split_special_tokens=False,
    # disallowed_special=()) is TokenizerBase.encode, in Cython: a str or bytes into a list,
    # with no special token added, goes straight to C; everything else comes here.

    def _encode_other(self, text: str | bytes, gbk: bool, compat: bool, out: str, split_special_tokens: bool = False,
                      allowed_special: object = None, disallowed_special: object = ()) -> list[int] | np.ndarray:
        _check_out(out)
        policy = self._call_specials(split_special_tokens, allowed_special, disallowed_special)
        if self._has_specials or policy is not None:
            text = self._utf8(text, gbk) if gbk else _plain_text(text, "text") if type(text) not in (str, bytes) else text
            if policy is not None:
                policy.check(text)
            ids = self._encode_with_specials(text, compat, *self._plan(policy))
            return ids if out == "list" else np.array(ids, dtype=np.uint32)
        if out == "list":
            return self._model.encode(self._utf8(text, gbk), compat)
        return np.frombuffer(self._model.encode_ids(self._utf8(text, gbk), compat), dtype=np.uint32)

    def encode_ordinary(self, text: str | bytes, *, gbk: bool = False, bug_compat: bool | None = None,
                        out: str = "list") -> list[int] | np.ndarray:
        """``text`` encoded with every special token read as plain text (tiktoken's
        ``encode_ordinary``; ``encode(text, split_special_tokens=True)``)."""
        return self.encode(text, gbk=gbk, bug_compat=bug_compat, out=out, split_special_tokens=True)

    def encode_ordinary_batch(self, texts: Sequence[str | bytes], *, num_threads: int | None = None,
                              out: str = "list") -> list[list[int]] | list[np.ndarray]:
        """``encode_ordinary`` of each text (tiktoken's ``encode_ordinary_batch``)."""
        return self.encode_batch(texts, num_threads=num_threads, out=out, split_special_tokens=True)

    def _call_specials(self, split_special_tokens: bool = False, allowed_special: object = None,
                       disallowed_special: object = ()) -> CallSpecials | None:
        """What a call does with the special tokens, or None for the default (every one
        matched whole: ``specials.call_specials``)."""
        if is_default(split_special_tokens, allowed_special, disallowed_special):
            return None
        known = [*self._model_specials(), *self._specials.ids]
        return call_specials(known, split_special_tokens, allowed_special, disallowed_special)

    def _plan(self, policy: CallSpecials | None) -> tuple[frozenset[bytes], dict[int, bytes]]:
        """What a call does with the special tokens, worked out once per call: (the added
        ones it cuts out whole before the model runs, the model's own it reads as plain
        text, id -> key). By default every added one is cut out and the model's are its own."""
        if policy is None:
            return self._specials.tokens, {}
        plain = {kid: key for key, kid in self._model_specials().items() if key not in policy.whole}
        return policy.whole.intersection(self._specials.tokens), plain

    def _encode_with_specials(self, text: str | bytes, compat: bool, cut: frozenset[bytes],
                              plain: dict[int, bytes]) -> list[int]:
        """The added special tokens of ``cut`` matched whole, the pieces between them
        encoded by the model, the model's own specials of ``plain`` kept out of its matches
        (``_encode_excluding``); ``_plan`` gives both. The caller has checked the call's
        disallowed tokens."""
        ids: list[int] = []
        for piece in self._specials.split(text, cut) if cut else (text,):
            if isinstance(piece, int):
                ids.append(piece)
            elif plain:
                ids += self._encode_excluding(self._utf8(piece, False), compat, plain)
            else:
                ids += self._model.encode(piece, compat)
        return ids

    @staticmethod
    def _check_texts(data: list, policy: CallSpecials | None, name: Callable[[int], str]) -> None:
        """A ValueError naming the first text (``name(i)``) that holds a disallowed token."""
        if policy is not None and policy.disallowed:
            for i, text in enumerate(data):
                policy.check(text, name(i))

    def encode_batch(self, texts: Sequence[str | bytes], *, num_threads: int | None = None, gbk: bool = False,
                     bug_compat: bool | None = None, out: str = "list", split_special_tokens: bool = False,
                     allowed_special: object = None, disallowed_special: object = ()
                     ) -> list[list[int]] | list[np.ndarray]:
        """Encode many texts on ``num_threads`` threads (default: every CPU this process
        may use, ``resources.usable_cpus``; no more than one per ``_MIN_SLICE`` texts, and
        one when special tokens are matched whole); the GIL is released while encoding, and the
        texts go to the threads in slices as each is free, so a thread slowed by other
        work takes fewer. Returns one list (or uint32 array) per text, in order. Special
        tokens follow ``split_special_tokens``, ``allowed_special`` and
        ``disallowed_special`` as in ``encode`` (a disallowed one raises ValueError naming
        ``texts[i]``)."""
        compat = self.bug_compat if bug_compat is None else bug_compat
        _check_out(out)
        num_threads = int_argument("num_threads", num_threads, "a positive int", 1)
        data: list[str | bytes]
        if gbk:
            data = [self._utf8(t, gbk, f"texts[{i}]") for i, t in enumerate(_text_list(texts))]
        else:
            data = plain_batch(_text_list(texts))
        policy = self._call_specials(split_special_tokens, allowed_special, disallowed_special)
        self._check_texts(data, policy, "texts[{}]".format)
        return self._encode_planned(data, compat, out, num_threads, *self._plan(policy))

    def _encode_planned(self, data: list, compat: bool, out: str, num_threads: int | None,
                        cut: frozenset[bytes], plain: dict[int, bytes]) -> list[list[int]] | list[np.ndarray]:
        """``encode_batch`` of checked texts, the call's special tokens worked out (``_plan``)."""
        if cut:
            holding = self._specials.holding(data, cut)
            if holding:
                return self._encode_cut(data, compat, out, num_threads, cut, plain, holding)
        if plain and out != "list":  # arrays: the flat batch, mended where a plain special was matched
            flat, starts = self._flat(data, num_threads, compat, cut, plain)
            return [flat[a:b] for a, b in pairwise(starts.tolist())]
        threads = _batch_threads(num_threads, len(data))
        work = self._many_encoder(out)
        if threads == 1:
            result = work(data, compat)
        else:
            result = []
            for part in _on_slices(lambda start, stop: work(data, compat, start, stop), len(data), threads):
                result += part
        if plain:  # the few texts in which the model matched a special read as plain text, again
            for i in rows_holding(result, np.array(list(plain), dtype=np.int64)):
                result[i] = self._encode_excluding(self._utf8(data[i], False), compat, plain)
        return result

    def encode_file(self, path: str | os.PathLike[str], *, gbk: bool = False, bug_compat: bool | None = None,
                    out: str = "list", split_special_tokens: bool = False, allowed_special: object = None,
                    disallowed_special: object = ()) -> Iterator[list[int] | np.ndarray]:
        """The ids of every line of a file, one line at a time, in constant memory.

        Lines are cut as ``std::getline`` cuts them (the LF is not encoded, CR stays); the
        file is read in blocks of whole lines, each encoded with the GIL released. Special
        tokens as in ``encode``; a disallowed one raises ValueError naming the file and line.
        """
        compat = self.bug_compat if bug_compat is None else bug_compat
        _check_out(out)
        policy = self._call_specials(split_special_tokens, allowed_special, disallowed_special)  # before the file
        cut, plain = self._plan(policy)
        source = Corpus.from_file(path)
        name = os.fspath(path)
        blocks: Iterable[list[bytes]] = ([gbk_to_utf8(line)] for line in split_lines(source.chunks())) if gbk else (
            block_lines(block) for block, _ in source.line_blocks())
        lineno = 1
        for block in blocks:
            self._check_texts(block, policy, lambda i: f"{name}: line {lineno + i}")  # noqa: B023 - called here
            yield from self._encode_planned(block, compat, out, 1, cut, plain)
            lineno += len(block)

    def _many_encoder(self, out: str):
        """``work(texts, compat, start=0, stop=None)``: a list of id lists for
        ``texts[start:stop]``, or of uint32 arrays for ``out="numpy"``."""
        return self._model.encode_lists if out == "list" else partial(_encode_arrays, self._model)

    @staticmethod
    def _utf8(text: str | bytes, gbk: bool, name: str = "text") -> bytes:
        text = _plain_text(text, name) if type(text) not in (str, bytes) else text
        if isinstance(text, str):
            if gbk:
                raise TypeError(f"gbk=True takes the GBK bytes of {name}, not a str")
            return text.encode("utf-8", "surrogatepass")
        data = bytes(text)
        return gbk_to_utf8(data) if gbk else data

    # ------------------------------------------------------------------ decoding

    def decode_bytes(self, ids: int | Iterable[int], *, gbk: bool = False) -> bytes:
        """Ids -> the exact bytes (UTF-8), or with ``gbk=True`` what the reference's ``ToGBK``
        makes of them. Raises UnknownIdError naming the id and its position."""
        data = self._decode_bytes(self._decodable(ids))
        return utf8_to_gbk(data) if gbk else data

    def _decode_bytes(self, ids: list | np.ndarray | array) -> bytes:
        """The model's decode; added special tokens' ids (past the model's) give their bytes."""
        n = len(self._keys)
        shadowed = self._shadowed
        try:
            plain = not self._specials or not len(ids) or (max(ids) < n and (not shadowed or shadowed.isdisjoint(ids)))
        except TypeError:  # an item that is no integer: the loop below names it
            plain = False
        if plain:
            try:
                return self._model.decode(ids)
            except UnknownIdError as err:  # the codec knows the model's ids only
                raise UnknownIdError(err.id, err.position, len(self)) from None
        parts: list[bytes] = []
        run: list[int] = []
        for position, item in enumerate(ids):
            try:
                kid = operator.index(item)  # an integer, as the codec takes: no float, no str
            except TypeError:
                raise TypeError(f"ids[{position}] must be an integer, got {type(item).__name__}") from None
            if kid >= n or kid < 0 or kid in shadowed:  # checked here, so that the position is the whole input's
                if kid not in self._specials.by_id:
                    raise UnknownIdError(kid, position, len(self))
                parts.append(self._model.decode(run))
                parts.append(self._specials.by_id[kid])
                run = []
            else:
                run.append(kid)
        parts.append(self._model.decode(run))
        return b"".join(parts)

    def decoder(self, errors: str = "replace") -> StreamDecoder | SpecialsStreamDecoder:
        """An incremental decoder: ``feed(ids)`` returns only whole chars, so a stream of
        generated ids can be shown as it comes; ``flush()`` returns what is left.

        >>> d = tok.decoder(); d.feed(228), d.feed(185), d.feed(157)   # doctest: +SKIP
        ('', '', '九')
        """
        extra = {**self._specials.new_ids(len(self._keys)), **{kid: self._specials.by_id[kid] for kid in self._shadowed}}
        inner = self._stream_decoder(errors)
        return SpecialsStreamDecoder(inner, extra, len(self)) if extra else inner

    def decode(self, ids: int | Iterable[int], errors: str = "replace", *, skip_special_tokens: bool = False) -> str:
        """Ids -> str; bytes that are not valid UTF-8 follow ``errors`` (as ``bytes.decode``).
        ``skip_special_tokens`` leaves out the special tokens' ids (the model's own and
        those added), as transformers does. One sequence of ids: a batch (a list of lists,
        a 2-D array) goes to ``batch_decode``.

        ``decode(encode(s), errors="surrogatepass") == s`` for every str ``s``.
        """
        ids = self._decodable(ids)
        if skip_special_tokens:
            ids = self._without_specials(ids)
        try:
            if self._specials:
                return self._decode_bytes(ids).decode("utf-8", errors)
            return self._model.decode_str(ids, errors)
        except TypeError:
            _refuse_batch(ids)
            raise

    def _decodable(self, ids: int | Iterable[int]) -> list | np.ndarray | array:
        """What the codec decodes: a list as it is, one id (an int, a numpy integer, a 0-d
        array: what ``argmax()`` returns) as a list of it, anything else as an int64 buffer."""
        if type(ids) is list:
            return ids
        if _is_one_id(ids):
            return [ids]
        if isinstance(ids, (str, bytes, bytearray)):
            raise TypeError(f"ids must be integers, got {type(ids).__name__}")
        if (ndim := getattr(ids, "ndim", 1)) != 1:  # a generate() output: one text per row, never one text
            raise TypeError(f"decode takes one sequence of ids, got a {ndim}-D array of shape "
                            f"{tuple(getattr(ids, 'shape', ()))}: use batch_decode for a batch")
        return _id_array(cast("Iterable[int]", ids), len(self._keys))  # not one id: _is_one_id said so

    # ------------------------------------------------------------------ vocabulary

    def __len__(self) -> int:
        """The ids there are: the model's and the added special tokens' past them (with a
        gap in the ids, as tiktoken's ``o200k_base`` has one, up to the last: ``n_vocab``)."""
        extra = self._specials.new_ids(len(self._keys))
        return max(len(self._keys), max(extra) + 1) if extra else len(self._keys)

    @property
    def model(self) -> Any:
        """The compiled model (XBBPE: ``bbpe.codec.Model``, what Cython code cimports and C
        code reaches through the capsule: README, "Cython and C API")."""
        return self._model

    @property
    def keys(self) -> list[bytes]:
        """The model's tokens as bytes, in id order (a copy)."""
        return list(self._keys)

    def token_bytes(self, token_id: int) -> bytes:
        """The bytes of one id (UnknownIdError for an id not in the vocabulary)."""
        kid = self._checked_id(token_id)
        return self._keys[kid] if kid < len(self._keys) else self._specials.by_id[kid]

    def token_id(self, key: bytes) -> int | None:
        """The id of a token given as bytes (the model's, else an added special token's),
        or None (``token_to_id`` takes text too)."""
        if not isinstance(key, (bytes, bytearray, memoryview)):
            raise TypeError(f"key must be bytes, got {type(key).__name__} (token_to_id takes a str)")
        key = bytes(key)
        kid = self._model.lookup(key)
        if kid < 0 and self._shadowed:
            kid = self._shadowed_ids.get(key, -1)
        return self._specials.ids.get(key) if kid < 0 else kid

    @cached_property
    def _shadowed_ids(self) -> dict[bytes, int]:
        return {self._keys[kid]: kid for kid in self._shadowed}

    @property
    def pad_id(self) -> int | None:
        """The model's own padding id, or None (a model without one: set ``pad_token_id``)."""
        return None

    @property
    def special_roles(self) -> dict[str, str]:
        """The model's own special tokens by the role transformers names them
        (``bos_token``, ``eos_token``, ``pad_token``, ``unk_token``), as text: what
        ``bbpe.hf.BbpeTokenizer`` takes when no other is named."""
        return {}

    def tokens_to_bytes(self, tokens: Iterable[str]) -> bytes:
        """The bytes of tokens given as text (``id_to_token``'s form), joined; a text that
        is no token counts as its UTF-8 (transformers' ``convert_tokens_to_string``)."""
        parts = []
        for token in tokens:
            kid = self.token_to_id(token)
            parts.append(token.encode("utf-8", "surrogatepass") if kid is None else self.token_bytes(kid))
        return b"".join(parts)

    # ------------------------------------------------------------------ what the shared layer needs

    def _encode_flat(self, data: list, num_threads: int | None, compat: bool, specials: dict[str, Any]
                     ) -> tuple[np.ndarray, np.ndarray]:
        """The flat batch (uint32 ids, int64 starts) of plain texts, the call's special-token
        arguments (``specials``) applied: what ``HFBatches`` builds arrays and offsets from."""
        policy = self._call_specials(**specials)
        self._check_texts(data, policy, "texts[{}]".format)
        return self._flat(data, num_threads, compat, *self._plan(policy))

    def _encode_cut(self, data: list, compat: bool, out: str, num_threads: int | None, cut: frozenset[bytes],
                    plain: dict[int, bytes], holding: list[int]) -> list:
        """``_encode_planned`` when the texts ``holding`` hold added special tokens: those cut
        there, text by text; the others in one batch, as if there were none."""
        held = set(holding)
        rest = [i for i in range(len(data)) if i not in held]
        rows: list[Any] = [None] * len(data)
        if rest:
            for i, row in zip(rest, self._encode_planned([data[i] for i in rest], compat, out, num_threads,
                                                         frozenset(), plain)):
                rows[i] = row
        for i in holding:
            ids = self._encode_with_specials(data[i], compat, cut, plain)
            rows[i] = ids if out == "list" else np.array(ids, dtype=np.uint32)
        return rows

    def _flat(self, data: list, num_threads: int | None, compat: bool, cut: frozenset[bytes],
              plain: dict[int, bytes]) -> tuple[np.ndarray, np.ndarray]:
        """The codec's flat batch (``encode_many``), slices of it on threads; text by text
        for the texts that hold added special tokens, and mended where a plain special was
        matched."""
        holding = self._specials.holding(data, cut) if cut else []
        if holding:
            lists = self._encode_cut(data, compat, "list", num_threads, cut, plain, holding)
            flat = np.fromiter((i for ids in lists for i in ids), dtype=np.uint32, count=sum(map(len, lists)))
            return flat, np.concatenate(([0], np.cumsum([len(ids) for ids in lists], dtype=np.int64)))
        threads = _batch_threads(num_threads, len(data))
        if threads == 1:
            ids, offsets = self._model.encode_many(data, compat)
            flat, starts = np.frombuffer(ids, dtype=np.uint32), np.frombuffer(offsets, dtype=np.int64)
        else:
            parts = list(_on_slices(lambda start, stop: self._model.encode_many(data, compat, start, stop),
                                    len(data), threads))
            flat = np.concatenate([np.frombuffer(ids, dtype=np.uint32) for ids, _ in parts])
            pieces, base = [], 0
            for _, offsets in parts:  # each part's starts, moved past the parts before it
                part = np.frombuffer(offsets, dtype=np.int64)
                pieces.append(part[:-1] + base)
                base += int(part[-1])
            pieces.append(np.array([base], dtype=np.int64))
            starts = np.concatenate(pieces)
        return self._flat_without(data, flat, starts, compat, plain) if plain else (flat, starts)

    def _flat_without(self, data: list, flat: np.ndarray, starts: np.ndarray, compat: bool,
                      plain: dict[int, bytes]) -> tuple[np.ndarray, np.ndarray]:
        """The flat batch with the texts in which the model matched a special of ``plain``
        encoded again without it (``_encode_excluding``); the others' ids are kept."""
        hits = np.flatnonzero(np.isin(flat, np.array(list(plain), dtype=np.uint32)))
        if not hits.shape[0]:
            return flat, starts
        rows = np.unique(np.searchsorted(starts, hits, side="right") - 1).tolist()
        bounds, lengths = starts.tolist(), np.diff(starts)
        parts: list[np.ndarray] = []  # the rows before each mended one, then it
        done = 0
        for row in rows:
            fixed = np.array(self._encode_excluding(self._utf8(data[row], False), compat, plain), dtype=np.uint32)
            parts += (flat[bounds[done] : bounds[row]], fixed)
            lengths[row] = fixed.shape[0]
            done = row + 1
        parts.append(flat[bounds[done] :])
        return np.concatenate(parts), np.concatenate(([0], np.cumsum(lengths)))

    def _token_lengths(self, ids: np.ndarray) -> np.ndarray:
        """The byte length of each id's token (added special tokens' included)."""
        if self._key_lens is None:
            lens = self._key_lengths()
            extra = self._specials.new_ids(len(self._keys))
            if extra:
                lens = np.concatenate((lens, np.zeros(max(extra) + 1 - lens.shape[0], dtype=np.int64)))
                for kid, data in extra.items():
                    lens[kid] = len(data)
            self._key_lens = lens
        return self._key_lens[ids]

    def _model_special_tokens(self) -> dict[str, int]:
        """The model's own special tokens as text (``VocabularyAccess.special_tokens``)."""
        return {self._key_text(key): kid for key, kid in self._model_specials().items()}

    # ------------------------------------------------------------------ what every model provides

    # Besides ``_start``'s keys and compiled model, a model's class gives these; the defaults
    # are those of a model without special tokens of its own whose tokens are its bytes.

    def _key_lengths(self) -> np.ndarray:
        """The byte length of each of the model's tokens, int64, in id order."""
        return np.fromiter(map(len, self._keys), dtype=np.int64, count=len(self._keys))

    def _model_specials(self) -> dict[bytes, int]:
        """The model's own special tokens (XBBPE's ``<P>``, ``<S>``, ``</S>``): bytes -> id."""
        return {}

    def _encode_excluding(self, data: bytes, compat: bool, excluded: dict[int, bytes]) -> list[int]:
        """``data`` encoded with the model's own specials of ``excluded`` read as plain text."""
        raise NotImplementedError(f"{type(self).__name__} has no special tokens of its own")

    def _stream_decoder(self, errors: str) -> Any:
        """The model's stream decoder (``decoder()``); by default over ``model.decode``."""
        return ByteStreamDecoder(self._model, errors)

    def _model_summary(self) -> list[tuple[str, str]]:
        """What ``bbpe info`` shows of the model beside its vocabulary and special tokens,
        as (label, value) lines: its pre-tokenizer, normalizer and options."""
        return []

    def _model_state(self) -> tuple:
        """What rebuilds the model (``_from_model_state``): pickling, equality."""
        raise NotImplementedError

    @classmethod
    def _from_model_state(cls, state: tuple) -> Tokenizer:
        raise NotImplementedError

    # ------------------------------------------------------------------ copying and comparing

    def __reduce__(self) -> tuple:
        """Pickled as its model's state and the user state (the compiled model is rebuilt
        on loading): what ``multiprocessing`` and DataLoader workers need, and
        ``copy.deepcopy`` too."""
        return (_rebuilt, (type(self), self._model_state(), self._user_state()))

    def __eq__(self, other: object) -> bool:
        """The same kind of model, the same model state and the same user state."""
        if not isinstance(other, Tokenizer):
            return NotImplemented
        return self is other or (type(self) is type(other) and _same(self._model_state(), other._model_state())
                                 and _unordered(self._user_state()) == _unordered(other._user_state()))

    __hash__ = None  # type: ignore[assignment]  # mutable options: not a dict key

    def _user_state(self) -> dict[str, object]:
        """What the user layer adds to the model: special tokens, template, padding."""
        return {"special_tokens": [(data, kid) for data, kid in self._specials.ids.items()],
                "template": self._template.text, "template_pair": self._template.pair_text,
                "padding_side": self.padding_side,
                "truncation_side": self.truncation_side, "pad_token_id": self._pad_token_id}

    def _set_user_state(self, state: dict) -> None:
        self._specials.restore(state.get("special_tokens", ()), self.token_id, len(self._keys), self._id_gaps)
        self._specials_changed()
        self.set_template(state.get("template", "$A"), state.get("template_pair"))
        for name, default in OPTION_DEFAULTS.items():
            setattr(self, name, state.get(name, default))


def _refuse_ranks_file(data: bytes, name: str) -> None:
    """A FormatError for a tiktoken ranks file, which holds no pre-tokenizer pattern: it is
    read by ``bbpe.BPE.from_tiktoken``, given one."""
    from .bpe.formats import sniff  # pure Python: no model is imported

    if sniff(data[:4096]) == "tiktoken":
        raise FormatError(name, 0, "a tiktoken ranks file holds no pre-tokenizer pattern: load it with "
                                   "bbpe.BPE.from_tiktoken(path, pattern='o200k_base') (or the pattern it was made for)")


def _rebuilt(cls: type[Tokenizer], state: tuple, user_state: dict) -> Tokenizer:
    """A pickled tokenizer (``Tokenizer.__reduce__``), built again."""
    tok = cls._from_model_state(state)
    tok._set_user_state(user_state)
    return tok


def _unordered(state: dict[str, object]) -> dict[str, object]:
    """A user state whose special tokens are compared as a set: the order they were added
    in changes no id and no match (at one place the longest is matched)."""
    return {**state, "special_tokens": sorted(state["special_tokens"])}  # type: ignore[call-overload]


def _same(a: object, b: object) -> bool:
    """Equal model states: tuples compared item by item, numpy arrays by value."""
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and np.array_equal(a, b)
    return a == b


def _refuse_batch(ids: object) -> None:
    """A TypeError pointing to ``batch_decode`` when ``ids`` is a batch (its first item a
    sequence); nothing otherwise (the codec's own error then stands)."""
    first = ids[0] if isinstance(ids, list) and ids else None
    if first is not None and not _is_one_id(first) and hasattr(first, "__len__"):
        raise TypeError(f"decode takes one sequence of ids, got a sequence of {type(first).__name__}: "
                        "use batch_decode for a batch") from None


def file_format(path: str | os.PathLike[str]) -> str:
    """The format a path names, wherever bbpe writes a model: ``"json"`` for a name ending
    in ``.json`` (any case), bbpe's JSON file; ``"bin"``, the reference's layout, for any
    other name."""
    return "json" if os.fspath(path).lower().endswith(".json") else "bin"


def _text_list(texts: object) -> list:
    """A batch of texts as a list; a single text (str, bytes) is refused, not taken char by
    char."""
    if isinstance(texts, (str, bytes, bytearray, memoryview)):
        raise TypeError(f"texts must be a sequence of texts, got one {type(texts).__name__} "
                        "(encode takes a single text)")
    if type(texts) is list:
        return texts
    try:
        return list(texts)  # type: ignore[call-overload]
    except TypeError:
        raise TypeError(f"texts must be a sequence of texts, got {type(texts).__name__}") from None


def _id_array(ids: Iterable[int], n_keys: int) -> np.ndarray | array:
    """Ids as a contiguous int64 buffer for the codec; floats are refused, not truncated."""
    if isinstance(ids, np.ndarray):
        if ids.dtype.kind not in "iu":
            raise TypeError(f"ids must be integers, got an array of {ids.dtype}")
        flat = ids.reshape(-1)
        if flat.dtype.kind == "u" and flat.size and int(flat.max()) > _INT64_MAX:
            pos = int(np.argmax(flat > _INT64_MAX))
            raise UnknownIdError(int(flat[pos]), pos, n_keys)
        return np.ascontiguousarray(flat, dtype=np.int64)
    if not hasattr(ids, "__iter__"):
        raise TypeError(f"ids must be an integer or a sequence of integers, got {type(ids).__name__}")
    seq = ids if isinstance(ids, (list, tuple)) else list(ids)
    try:
        return array("q", seq)
    except OverflowError:
        pos, kid = next((p, k) for p, k in enumerate(seq) if not -_INT64_MAX - 1 <= k <= _INT64_MAX)
        raise UnknownIdError(kid, pos, n_keys) from None


_INT64_MAX = (1 << 63) - 1


def _encode_arrays(model: Any, texts: list, compat: bool, start: int = 0, stop: int | None = None
                   ) -> list[np.ndarray]:
    ids, offsets = model.encode_many(texts, compat, start, stop)
    flat = np.frombuffer(ids, dtype=np.uint32)
    bounds = np.frombuffer(offsets, dtype=np.int64).tolist()
    return [flat[a:b] for a, b in pairwise(bounds)]


T = TypeVar("T")

# texts per thread of a batch at least: a slice handed to a thread costs tens of
# microseconds, the encoding of a short line (zh-large's average 130 bytes) about one
_MIN_SLICE = 128
_SLICE_TEXTS = 1024  # texts per slice, where the batch has enough for every thread (_on_slices)


def _batch_threads(num_threads: int | None, n_texts: int) -> int:
    """Threads for a batch of ``n_texts``: as asked (default: every usable CPU), but no
    more than the slices of ``_MIN_SLICE`` texts it holds."""
    return max(1, min(num_threads or usable_cpus(), n_texts // _MIN_SLICE))


def _on_slices(work: Callable[[int, int], T], n_texts: int, threads: int) -> Iterator[T]:
    """``work(start, stop)`` for each slice of a batch of ``n_texts``, on the shared pool of
    ``threads``, in order. Each slice is a range of the caller's one list (the codec takes
    its own untracked copy). A large batch gets more slices than threads: while one thread
    makes its lists (the GIL, one allocation each), the others encode and fill theirs, a
    thread slowed by other work takes fewer, and the last slices, which nothing overlaps,
    are short (8 per thread measured best among 4, 8, 16 and 32 on all of zh-large). But no
    slice is smaller than ``_SLICE_TEXTS`` unless that would leave a thread without one: a
    slice handed to a thread costs tens of microseconds, and in batches of 1000 to 16,000
    zh-large lines smaller slices made encode_batch up to 1.5x slower."""
    step = min(max(_SLICE_TEXTS, -(-n_texts // (8 * threads))), -(-n_texts // threads))
    return shared_pool(threads).map(lambda start: work(start, start + step), range(0, n_texts, step))


def _check_out(out: str) -> None:
    if out not in ("list", "numpy", "np"):
        raise ValueError(f"out must be 'list', 'numpy' or 'np', got {out!r}")
