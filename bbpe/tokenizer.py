"""``Tokenizer``: a trained XBBPE vocabulary that encodes, decodes, loads and saves ``.bin`` files.

A facade: training is ``xbbpe.pipeline`` (handed the corpus once), the codec
``codec.pyx``, the file formats ``xbbpe.binfile`` and ``common.tokenizer_json``; what every
model shares comes from the mixins ``common.vocab_access`` (vocabulary access, special
tokens, the template) and ``common.batch`` (HF-style batches and offsets), and this class
gives them the model's primitives (the section "what the shared layer needs"). Importing
this module does not import numba; only training does.

Why this module is long: it holds every user-facing entry point of the XBBPE model
(construction, the two file formats, training, encoding, decoding, the C++'s special ids),
each with the docstring users read, and the one place where a call's special-token
arguments are worked out and applied to a text, a batch, a flat batch and a file
(``_plan``, ``_encode_planned``, ``_flat``); the logic behind each lives in the modules
above.
"""

from __future__ import annotations

import io
import operator
import os
import warnings
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial
from itertools import pairwise
from typing import Any, BinaryIO, SupportsIndex, TypeVar, cast

import numpy as np

try:
    from .codec import Model, StreamDecoder, TokenizerBase, _plain_text, rows_holding
except ImportError as err:  # pragma: no cover - only in an unbuilt source checkout
    raise ImportError(
        f"bbpe's compiled codec is missing from {os.path.dirname(__file__)}: this is the source tree. "
        "Install bbpe (pip install .) and run from another directory, or build in place (pip install -e .)"
    ) from err
from .common import tokenizer_json
from .common.arguments import int_argument
from .common.batch import HFBatches, plain_batch
from .common.blocks import block_lines, split_lines
from .common.corpus import Corpus
from .common.gbk import gbk_to_utf8, utf8_to_gbk
from .common.progress import ProgressFn
from .common.resources import usable_cpus
from .common.specials import CallSpecials, SpecialTokens, call_specials, is_default
from .common.template import NO_TEMPLATE, Template
from .common.threads import shared_pool
from .common.token_text import token_bytes, token_text
from .common.vocab_access import VocabularyAccess, _is_one_id
from .errors import FormatError, UnknownIdError
from .xbbpe import binfile, pipeline, plain_specials
from .xbbpe.pipeline import id_dtype
from .xbbpe.vocab import BOS, EOS, KEY_BYTES, PAD, key_matrix

DEFAULT_VOCAB_SIZE = 800  # VocabSize in XBBPE.h
_OPTIONS = ("padding_side", "truncation_side", "pad_token_id")  # the user state kept in the JSON file's "bbpe"


def _default_corpus() -> str:
    """The bundled Tang poems: ``bbpe/data`` in an installed copy (setup.py ships the
    top-level ``data/`` there), the checkout's ``data/`` when run from the source tree.
    A str, not a pathlib.Path: importing pathlib costs every start 2-3 ms."""
    here = os.path.dirname(os.path.abspath(__file__))
    installed = os.path.join(here, "data", "tang300.txt")
    checkout = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))), "data", "tang300.txt")
    return checkout if not os.path.exists(installed) and os.path.exists(checkout) else installed


DEFAULT_CORPUS = _default_corpus()


class Tokenizer(TokenizerBase, VocabularyAccess, HFBatches):
    """A byte-level BPE vocabulary as XBBPE builds it.

    >>> tok = Tokenizer.train("data/tang300.txt", vocab_size=800)   # doctest: +SKIP
    >>> ids = tok.encode("床前明月光")                              # doctest: +SKIP
    >>> tok.decode(ids)                                              # doctest: +SKIP
    '床前明月光'

    ``bug_compat=True`` makes ``encode`` reproduce the reference exactly where it loses
    data (QUIRKS Q14: chars swallowed at the 24-byte limit; Q20.1: a cut char padded with
    NUL). By default every byte is kept: ``decode_bytes(encode(x)) == x``.
    """

    # the training texts read, for a tokenizer this process trained (bbpe train's summary);
    # None for one built or loaded
    train_lines: int | None = None

    # ------------------------------------------------------------------ construction

    def __init__(
        self,
        keys: Sequence[bytes],
        *,
        record_order: Sequence[int] | np.ndarray | None = None,
        train_encodings: Iterable[Sequence[int]] = (),
        bug_compat: bool = False,
    ) -> None:
        """Build from the keys in id order (``keys[i]`` is the bytes of id ``i``).

        ``record_order`` is the order of the ids in a saved ``.bin`` (default: by id);
        ``train_encodings`` are the stored training encodings.
        """
        keys = [bytes(k) for k in keys]
        rows, lens = key_matrix(keys)
        self._adopt(keys, Model(rows.tobytes(), lens.tobytes()), record_order, bug_compat)
        self._set_train_encodings(train_encodings)

    def _adopt(self, keys: list[bytes], model: Model, record_order: Sequence[int] | np.ndarray | None,
               bug_compat: bool) -> None:
        """Take these keys (id order) and their codec model as this tokenizer's."""
        n = len(keys)
        order = np.arange(n) if record_order is None else np.asarray(record_order, dtype=np.int64)
        if not np.array_equal(np.sort(order), np.arange(n)):
            raise ValueError("record_order must hold every id exactly once")
        self._keys, self._model, self._record_order, self.bug_compat = keys, model, order, bug_compat
        self._specials = SpecialTokens()
        self._has_specials = False
        self._template = Template()
        self._key_lens: np.ndarray | None = None
        self.padding_side = "right"  # where padding goes ("left" for generation), as in transformers
        self.truncation_side = "right"  # which end truncation cuts, as in transformers
        self.pad_token_id = None  # None: the model's (XBBPE: the id of <P>, ``pad_id``)

    def _set_train_encodings(self, encodings: Iterable[Sequence[int]]) -> None:
        arrays = [np.asarray(e, dtype=np.int64) for e in encodings]
        lengths = np.array([a.shape[0] for a in arrays], dtype=np.int64)
        ids = np.concatenate(arrays) if arrays else np.empty(0, dtype=np.int64)
        self._set_encoding_arrays(lengths, ids)

    def _set_encoding_arrays(self, lengths: np.ndarray, ids: np.ndarray) -> None:
        """Store encodings as offsets + ids in the smallest dtype that holds every id."""
        self._enc_offsets = np.concatenate(([0], np.cumsum(lengths, dtype=np.int64)))
        self._enc_ids: np.ndarray = ids.astype(id_dtype(len(self._keys)), copy=False)

    @classmethod
    def load(cls, source: str | os.PathLike[str] | BinaryIO, *, bug_compat: bool = False) -> Tokenizer:
        """Load a ``.bin`` written by bbpe or by the reference, or bbpe's JSON file (told
        apart by their content), from a path or a binary file object (anything with
        ``read``). Raises FormatError (naming the file and the byte offset), OSError. The
        contents as bytes go to ``from_bytes``."""
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
        """A tokenizer from the bytes of a ``.bin`` or of bbpe's JSON file (what ``to_bytes``
        gives), told apart by their content. ``name`` is what errors call it."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"from_bytes takes bytes, got {type(data).__name__} (a path goes to Tokenizer.load)")
        data = bytes(data)
        if tokenizer_json.looks_like_json(data):
            tok = cls._from_json(tokenizer_json.parse(data, name), name)
            tok.bug_compat = tok.bug_compat or bug_compat
            return tok
        return cls._from_contents(binfile.parse_bin(data, name), bug_compat)

    @classmethod
    def _from_json(cls, document: dict, name: str) -> Tokenizer:
        model = document["model"]
        if model.get("type") != "XBBPE" or not isinstance(model.get("vocab"), dict):
            raise FormatError(name, 0, f"model type {model.get('type')!r} is not one this bbpe reads ('XBBPE')")
        vocab = model["vocab"]
        keys: list[bytes] = [b""] * len(vocab)
        for text, kid in vocab.items():
            if not isinstance(kid, int) or not 0 <= kid < len(keys) or keys[kid]:
                raise FormatError(name, 0, f"model vocab: token {text!r} has id {kid!r}, not a free id in "
                                           f"0..{len(keys) - 1}")
            keys[kid] = token_bytes(text)
        try:
            tok = cls(keys, record_order=model.get("record_order"), bug_compat=bool(model.get("bug_compat", False)))
        except ValueError as err:
            raise FormatError(name, 0, f"model: {err}") from None
        options = document.get("bbpe") or {}
        if not isinstance(options, dict):
            raise FormatError(name, 0, f"the 'bbpe' options must be an object, got {type(options).__name__}")
        try:  # tokenizer_json.parse has checked these as the setters do: a safety net
            tok._set_user_state({"special_tokens": tokenizer_json.added_tokens(document),
                                 **{key: options[key] for key in _OPTIONS if key in options}})
        except (TypeError, ValueError) as err:
            raise FormatError(name, 0, f"added_tokens or bbpe options: {err}") from None
        single, pair = tokenizer_json.template(document)
        for field, templates in (("single", (single, None)), ("pair", (single, pair))):
            if field == "single" or pair is not None:
                try:  # the templates' words (their tokens, $A and $B) are set_template's to check
                    tok.set_template(*templates)
                except (TypeError, ValueError) as err:
                    raise FormatError(name, 0, f"post_processor.{field}: {err}") from None
        return tok

    def _json_bytes(self) -> bytes:
        model = {"type": "XBBPE", "vocab": {token_text(key): i for i, key in enumerate(self._keys)},
                 "record_order": self._record_order.tolist(), "bug_compat": bool(self.bug_compat)}
        state = self._user_state()
        return tokenizer_json.dump(model, state["special_tokens"], self._template.text,  # type: ignore[arg-type]
                                   {key: state[key] for key in _OPTIONS}, self._template.pair_text)

    @classmethod
    def _from_contents(cls, contents: binfile.BinContents, bug_compat: bool) -> Tokenizer:
        records = contents.records
        by_id = records[np.argsort(records["id"])]  # ids are 0..n-1, each once (checked)
        lens = by_id["len"].astype(np.int64)
        joined = by_id["key"][np.arange(KEY_BYTES)[None, :] < lens[:, None]].tobytes()
        ends = np.cumsum(lens).tolist()
        keys = [joined[a:b] for a, b in zip([0, *ends[:-1]], ends)]
        tok = cls(keys, record_order=records["id"], bug_compat=bug_compat)
        tok._set_encoding_arrays(np.diff(contents.encoding_offsets), contents.encoding_ids)
        return tok

    def save(self, target: str | os.PathLike[str] | BinaryIO, *, encodings: bool = True,
             format: str | None = None) -> None:
        """Write the model to a path, atomically (the old file or the whole new one, never
        half of it), or to a binary file object, in the format its extension names (or
        ``format``): ``"bin"``, the reference's ``.bin`` layout (records in
        ``record_order``), the default; ``"json"``, bbpe's own file, which also holds the
        special tokens, the template and the options but not the stored encodings.
        ``encodings=False`` leaves the stored training encodings out of a ``.bin``: a
        vocabulary-only file (its encoding count 0), which the C++ loads as well."""
        is_file = hasattr(target, "write")
        if not is_file and not isinstance(target, (str, os.PathLike)):
            raise TypeError(f"save takes a path or a binary file object, got {type(target).__name__}")
        if format is None:
            format = "bin" if is_file else file_format(target)  # type: ignore[arg-type]
        if format not in ("bin", "json"):
            raise ValueError(f"format must be 'bin' or 'json', got {format!r}")
        if format == "json":
            data = self._json_bytes()
            if is_file:
                target.write(data)  # type: ignore[union-attr]
            else:
                binfile.atomic_write(target, lambda f: f.write(data))  # type: ignore[arg-type]
            return
        contents = self._bin_contents(encodings)  # written as it is walked: never a second copy in memory
        if is_file:
            binfile.write_contents(target, contents)  # type: ignore[arg-type]
        else:
            binfile.write_bin(target, contents)  # type: ignore[arg-type]

    def to_bytes(self, *, encodings: bool = True, format: str = "bin") -> bytes:
        """The file image (``from_bytes`` reads it back): the ``.bin`` or, with
        ``format="json"``, bbpe's JSON file."""
        if format == "json":
            return self._json_bytes()
        if format != "bin":
            raise ValueError(f"format must be 'bin' or 'json', got {format!r}")
        return binfile.bin_bytes(self._bin_contents(encodings))

    def _bin_contents(self, encodings: bool = True) -> binfile.BinContents:
        extra = self._specials.new_ids(len(self._keys))
        if extra:
            shown = ", ".join(repr(token_text(data)) for data in list(extra.values())[:3])
            raise ValueError(f"a .bin holds the vocabulary's keys only, not the added special tokens ({shown}): "
                             "save to a .json file (format='json')")
        lost = [name for name, is_set in (("special tokens", bool(self._specials)),
                                          ("template", self._template != NO_TEMPLATE),
                                          ("padding_side", self.padding_side != "right"),
                                          ("truncation_side", self.truncation_side != "right"),
                                          ("pad_token_id", self._pad_token_id is not None)) if is_set]
        if lost:
            warnings.warn(f"a .bin holds the vocabulary only: the {', '.join(lost)} set on this tokenizer are not "
                          "saved (format='json' keeps them)", UserWarning, stacklevel=3)
        if not encodings:
            return binfile.BinContents(self._records(), np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64))
        return binfile.BinContents(self._records(), self._enc_offsets, self._enc_ids)

    def _records(self) -> np.ndarray:
        """The vocabulary records of the ``.bin``, in file order."""
        return binfile.records(self._keys, self._record_order)

    @classmethod
    def train(
        cls,
        corpus_path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None,
        vocab_size: int = DEFAULT_VOCAB_SIZE,
        *,
        gbk: bool = False,
        bug_compat: bool = False,
        lossless_encodings: bool = False,
        progress: bool | ProgressFn = False,
        windows_text: bool = False,
        strict: bool = False,
        memory_check: bool = True,
        output: str | os.PathLike[str] | None = None,
        encodings: bool = True,
    ) -> Tokenizer:
        """Train on a corpus file as ``LoadDataFileTrain(path, vocab_size)`` does.

        With no path, the bundled Tang poems (``data/tang300.txt``); a list of paths trains
        on the files one after the other, as the C++ trains on ``cat a.txt b.txt``; ``"-"``
        reads standard input. A corpus that is not valid UTF-8 (without ``gbk``) trains as
        in the C++ but warns (``CorpusWarning``, naming the file, offset and line), or is
        refused with ``strict`` (``CorpusError``); so does one that learns nothing (empty,
        or no pair occurs twice). ``gbk``: the corpus is
        GBK (Q19); lines the reference's conversion changes are reported (``GBKWarning``),
        or refused with ``strict`` (``GBKError``). ``windows_text``: read the file as the
        Windows build does (CRLF -> LF, Ctrl-Z ends it; Q19). ``bug_compat``: a missing
        file is an empty corpus and a vocab size of 2**32 or more wraps, as in the
        reference; otherwise both are errors. ``lossless_encodings``: store bbpe's lossless
        encodings of the training texts instead of the reference's (which may drop chars,
        Q14); the vocabulary is the same either way. ``progress``: True for progress bars
        on stderr, or a callable ``(stage, done, total)``. ``memory_check``: refuse at once
        (``InsufficientMemoryError``) when the corpus is too big for the memory available.
        A corpus of 8 MB or more is read on a thread per core (at most 4, or the
        environment variable ``BBPE_THREADS``); the result is the same on any number.
        ``output``: write the ``.bin`` there (what ``save(output)`` would write) while the
        stored encodings are made, without keeping them: the returned tokenizer then holds
        none (``Tokenizer.load(output)`` has them). That saves their memory and time on a
        large corpus; ``bbpe train`` does it. ``encodings=False`` makes no stored
        encodings at all (a vocabulary-only model: ``save(..., encodings=False)``), which
        spares their time and, on a large corpus, nearly all of the ``.bin``.

        >>> Tokenizer.train(vocab_size=800).encode("床前明月光")       # doctest: +SKIP
        [229, 186, 138, 323, 400, 277, 506]
        """
        paths = DEFAULT_CORPUS if corpus_path is None else corpus_path
        source = Corpus.from_files(paths, gbk=gbk, missing_is_empty=bug_compat, windows=windows_text, strict=strict)
        return cls._train(source, vocab_size, bug_compat=bug_compat, lossless_encodings=lossless_encodings,
                          progress=progress, output=output, memory_check=memory_check, encodings=encodings)

    @classmethod
    def train_from_iterator(
        cls,
        lines: Iterable[str | bytes],
        vocab_size: int = DEFAULT_VOCAB_SIZE,
        *,
        gbk: bool = False,
        bug_compat: bool = False,
        lossless_encodings: bool = False,
        progress: bool | ProgressFn = False,
        strict: bool = False,
        output: str | os.PathLike[str] | None = None,
        encodings: bool = True,
    ) -> Tokenizer:
        """Train on lines given one by one, as if they were the lines of a corpus file.

        An empty line ends a paragraph (Q18); ``str`` lines are UTF-8 encoded. The options
        are ``train``'s.

        >>> Tokenizer.train_from_iterator(["天地一人", "天地二人"], 0).keys[263]   # doctest: +SKIP
        b'\xe5\xa4\xa9\xe5\x9c\xb0'
        """
        source = Corpus.from_lines(lines, gbk=gbk, strict=strict)
        return cls._train(source, vocab_size, bug_compat=bug_compat, lossless_encodings=lossless_encodings,
                          progress=progress, output=output, encodings=encodings)

    @classmethod
    def _train(cls, source: Corpus, vocab_size: int, *, bug_compat: bool, lossless_encodings: bool,
               progress: bool | ProgressFn, output: str | os.PathLike[str] | None,
               memory_check: bool = False, encodings: bool = True) -> Tokenizer:
        """The training pipeline (``xbbpe.pipeline``) on ``source``, once; its model becomes
        this tokenizer. An ``output`` named ``.json`` gets bbpe's JSON file, which holds no
        stored encodings (so none are made); any other name the ``.bin`` (``file_format``)."""
        json_output = output if output is not None and file_format(output) == "json" else None
        if json_output is not None:
            directory = os.path.dirname(os.path.abspath(json_output))
            if not os.path.isdir(directory):  # said before training, not after
                raise FileNotFoundError(f"{os.fspath(json_output)}: the directory {directory} does not exist")
            output, encodings = None, False
        try:
            trained = pipeline.train(source, vocab_size, bug_compat=bug_compat, lossless_encodings=lossless_encodings,
                                     progress=progress, output=output, memory_check=memory_check,
                                     encodings=encodings)
        finally:
            source.close()
        tok = cls.__new__(cls)  # the model is built: adopted, not built again
        tok._adopt(trained.keys, trained.model, trained.record_order, bug_compat)
        tok.train_lines = trained.texts
        if trained.ids is None or trained.lengths is None:
            tok._set_train_encodings(())
        else:
            tok._set_encoding_arrays(trained.lengths, trained.ids)
        if json_output is not None:
            tok.save(json_output, format="json")
        return tok

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

    def _encode_excluding(self, data: bytes, compat: bool, excluded: dict[int, bytes]) -> list[int]:
        """``data`` encoded without the model's keys of ``excluded`` (``plain_specials``)."""
        return plain_specials.encode_without(self._model, self._keys, data, compat, excluded)

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
        if cut:  # added special tokens cut out first, text by text
            lists = [self._encode_with_specials(t, compat, cut, plain) for t in data]
            return lists if out == "list" else [np.array(ids, dtype=np.uint32) for ids in lists]
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
        try:
            plain = not self._specials or not len(ids) or max(ids) < n
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
            if kid >= n or kid < 0:  # checked here, so that the position is the whole input's
                if kid not in self._specials.by_id:
                    raise UnknownIdError(kid, position, len(self))
                parts.append(self._model.decode(run))
                parts.append(self._specials.by_id[kid])
                run = []
            else:
                run.append(kid)
        parts.append(self._model.decode(run))
        return b"".join(parts)

    def decoder(self, errors: str = "replace") -> StreamDecoder:
        """An incremental decoder: ``feed(ids)`` returns only whole chars, so a stream of
        generated ids can be shown as it comes; ``flush()`` returns what is left.

        >>> d = tok.decoder(); d.feed(228), d.feed(185), d.feed(157)   # doctest: +SKIP
        ('', '', '九')
        """
        if self._specials.new_ids(len(self._keys)):
            decoder = _SpecialsStreamDecoder(self._model, errors)
            decoder.specials = self._specials.new_ids(len(self._keys))
            return decoder
        return StreamDecoder(self._model, errors)

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
        """The ids there are: the vocabulary's and the added special tokens' past it."""
        return len(self._keys) + len(self._specials.new_ids(len(self._keys)))

    @property
    def model(self) -> Model:
        """The compiled vocabulary (``bbpe.codec.Model``): what Cython code cimports and
        C code reaches through the capsule (README, "Cython and C API")."""
        return self._model

    def token_bytes(self, token_id: int) -> bytes:
        """The bytes of one id (UnknownIdError for an id not in the vocabulary)."""
        kid = self._checked_id(token_id)
        return self._keys[kid] if kid < len(self._keys) else self._specials.by_id[kid]

    @property
    def keys(self) -> list[bytes]:
        """All keys in id order (a copy)."""
        return list(self._keys)

    def token_id(self, key: bytes) -> int | None:
        """The id of a key given as bytes, or None (``token_to_id`` takes text too)."""
        if not isinstance(key, (bytes, bytearray, memoryview)):
            raise TypeError(f"key must be bytes, got {type(key).__name__} (token_to_id takes a str)")
        key = bytes(key)
        kid = self._model.lookup(key) if len(key) <= KEY_BYTES else -1
        return self._specials.ids.get(key) if kid < 0 else kid

    @property
    def record_order(self) -> np.ndarray:
        """The ids in the order a saved ``.bin`` lists them (Q17)."""
        return self._record_order.copy()

    @property
    def n_train_encodings(self) -> int:
        """How many training encodings the ``.bin`` stores (one per training text)."""
        return self._enc_offsets.shape[0] - 1

    @property
    def train_encodings(self) -> list[list[int]]:
        """The training encodings stored in the ``.bin`` (Q18), one list per training text."""
        offsets = self._enc_offsets.tolist()
        ids = self._enc_ids.tolist()
        return [ids[offsets[k] : offsets[k + 1]] for k in range(len(offsets) - 1)]

    def _special(self, token: bytes) -> int:
        # GetPAD/GetBOS/GetEOS: the first id of the token's encoding, 0 if it encodes to nothing
        ids = self._model.encode(token, True)
        return ids[0] if ids else 0

    @property
    def pad_id(self) -> int:
        """``GetPAD()``: the id of ``<P>`` (794 at vocab 800)."""
        return self._special(PAD)

    @property
    def bos_id(self) -> int:
        """``GetBOS()``: the id of ``<S>``."""
        return self._special(BOS)

    @property
    def eos_id(self) -> int:
        """``GetEOS()``: the id of ``</S>``."""
        return self._special(EOS)

    # ------------------------------------------------------------------ what the shared layer needs

    def _encode_flat(self, data: list, num_threads: int | None, compat: bool, specials: dict[str, Any]
                     ) -> tuple[np.ndarray, np.ndarray]:
        """The flat batch (uint32 ids, int64 starts) of plain texts, the call's special-token
        arguments (``specials``) applied: what ``HFBatches`` builds arrays and offsets from."""
        policy = self._call_specials(**specials)
        self._check_texts(data, policy, "texts[{}]".format)
        return self._flat(data, num_threads, compat, *self._plan(policy))

    def _flat(self, data: list, num_threads: int | None, compat: bool, cut: frozenset[bytes],
              plain: dict[int, bytes]) -> tuple[np.ndarray, np.ndarray]:
        """The codec's flat batch (``encode_many``), slices of it on threads; text by text
        when added special tokens are cut out, and mended where a plain special was matched."""
        if cut:
            lists = [self._encode_with_specials(t, compat, cut, plain) for t in data]
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
            lens = np.frombuffer(self._model.key_data()[1], dtype=np.uint8).astype(np.int64)
            extra = self._specials.new_ids(len(self._keys))
            if extra:
                lens = np.concatenate((lens, np.zeros(max(extra) + 1 - lens.shape[0], dtype=np.int64)))
                for kid, data in extra.items():
                    lens[kid] = len(data)
            self._key_lens = lens
        return self._key_lens[ids]

    def _model_specials(self) -> dict[bytes, int]:
        """XBBPE's own special tokens that the vocabulary holds (``<P>``, ``<S>``, ``</S>``,
        Q12), their bytes -> id."""
        return {key: kid for key in (PAD, BOS, EOS) if (kid := self._model.lookup(key)) >= 0}

    def _model_special_tokens(self) -> dict[str, int]:
        """XBBPE's own special tokens (``VocabularyAccess.special_tokens``)."""
        return {token_text(key): kid for key, kid in self._model_specials().items()}

    # ------------------------------------------------------------------ copying and comparing

    def __reduce__(self) -> tuple:
        """Pickled as its vocabulary, record order, stored encodings and options (the
        codec's trie is rebuilt on loading): what ``multiprocessing`` and DataLoader
        workers need, and ``copy.deepcopy`` too."""
        return (_rebuilt, (type(self), self._keys, self._record_order, self._enc_offsets, self._enc_ids,
                           self.bug_compat, self._user_state()))

    def _user_state(self) -> dict[str, object]:
        """What the user layer adds to the model: special tokens, template, padding."""
        return {"special_tokens": [(data, kid) for data, kid in self._specials.ids.items()],
                "template": self._template.text, "template_pair": self._template.pair_text,
                "padding_side": self.padding_side,
                "truncation_side": self.truncation_side, "pad_token_id": self._pad_token_id}

    def _set_user_state(self, state: dict) -> None:
        self._specials.restore(state.get("special_tokens", ()), self.token_id, len(self._keys))
        self._has_specials = bool(self._specials)
        self.set_template(state.get("template", "$A"), state.get("template_pair"))
        self.padding_side = state.get("padding_side", "right")
        self.truncation_side = state.get("truncation_side", "right")
        self.pad_token_id = state.get("pad_token_id")

    def __eq__(self, other: object) -> bool:
        """The same vocabulary, record order, stored encodings and options."""
        if not isinstance(other, Tokenizer):
            return NotImplemented
        return (self is other or self._keys == other._keys and self.bug_compat == other.bug_compat
                and np.array_equal(self._record_order, other._record_order)
                and np.array_equal(self._enc_offsets, other._enc_offsets)
                and np.array_equal(self._enc_ids, other._enc_ids) and self._user_state() == other._user_state())

    __hash__ = None  # type: ignore[assignment]  # mutable options: not a dict key

    def __repr__(self) -> str:
        return f"<bbpe.Tokenizer: {len(self)} ids, {len(self._enc_offsets) - 1} stored encodings>"


class _SpecialsStreamDecoder(StreamDecoder):
    """The stream decoder of a tokenizer with added special tokens past its vocabulary:
    such an id ends the char before it (flushed) and gives its token's text."""

    specials: dict[int, bytes]

    def feed(self, ids: object) -> str:
        items = cast(Iterable[SupportsIndex], [ids] if _is_one_id(ids) else ids)
        out: list[str] = []
        run: list = []
        start = 0  # the position of run[0] in ids
        for position, item in enumerate(items):
            try:
                kid = operator.index(item)
            except TypeError:
                raise TypeError(f"ids must be integers, got {type(item).__name__} at position {position}") from None
            if kid in self.specials:
                out += (self._feed_run(run, start), self.flush(), self.specials[kid].decode("utf-8", self.errors))
                run, start = [], position + 1
            else:
                run.append(kid)
        out.append(self._feed_run(run, start))
        return "".join(out)

    def _feed_run(self, run: list[int], start: int) -> str:
        """The model's ids ``run`` (from ``start`` in the ids fed), an unknown one named by
        its position among all of them."""
        try:
            return super().feed(run)
        except UnknownIdError as err:
            raise UnknownIdError(err.id, start + err.position, max(self.model.n_keys, max(self.specials) + 1)) from None

    def __reduce__(self) -> tuple:
        return (_specials_stream_decoder, (self.model, self.errors, self.pending, self.specials))


def _specials_stream_decoder(model: Model, errors: str, pending: bytes, specials: dict[int, bytes]
                             ) -> _SpecialsStreamDecoder:
    decoder = _SpecialsStreamDecoder(model, errors)
    decoder.specials = specials
    decoder.feed(list(pending))  # id b is the byte b (Q1): the pending bytes go back as they were
    return decoder


def _refuse_batch(ids: object) -> None:
    """A TypeError pointing to ``batch_decode`` when ``ids`` is a batch (its first item a
    sequence); nothing otherwise (the codec's own error then stands)."""
    first = ids[0] if isinstance(ids, list) and ids else None
    if first is not None and not _is_one_id(first) and hasattr(first, "__len__"):
        raise TypeError(f"decode takes one sequence of ids, got a sequence of {type(first).__name__}: "
                        "use batch_decode for a batch") from None


def _rebuilt(cls: type[Tokenizer], keys: list[bytes], record_order: np.ndarray, offsets: np.ndarray,
             ids: np.ndarray, bug_compat: bool, state: dict | None = None) -> Tokenizer:
    """A pickled tokenizer (``Tokenizer.__reduce__``), built again."""
    tok = cls(keys, record_order=record_order, bug_compat=bug_compat)
    tok._enc_offsets, tok._enc_ids = offsets, ids
    tok._set_user_state(state or {})
    return tok


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


def _encode_arrays(model: Model, texts: list, compat: bool, start: int = 0, stop: int | None = None
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
