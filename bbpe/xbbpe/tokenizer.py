"""``XBBPE``: the model of the C++ XBBPE, trained, loaded and saved as its ``.bin`` files.

The facade of bbpe's own model over the shared ``bbpe.Tokenizer``: training is
``xbbpe.pipeline`` (handed the corpus once), the codec ``bbpe/codec.pyx`` (the trie, Q13-Q16),
the file formats ``xbbpe.binfile`` (the ``.bin``) and ``common.tokenizer_json`` (bbpe's JSON
file). It holds what is XBBPE's own: the keys of at most 24 bytes, the ``.bin`` record order
(Q17) and stored encodings (Q18), ``bug_compat`` (Q14, Q20.1), and the C++'s ``<P>``, ``<S>``,
``</S>`` (Q12). Importing this module does not import numba; only training does.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Sequence
from typing import Any, BinaryIO, ClassVar

import numpy as np

from ..codec import Model, StreamDecoder
from ..common.corpus import Corpus
from ..common.files import write_file
from ..common.progress import ProgressFn
from ..common.template import NO_TEMPLATE
from ..common.token_text import token_bytes, token_text
from ..errors import FormatError
from ..tokenizer import Tokenizer, file_format
from . import binfile, pipeline, plain_specials
from .pipeline import id_dtype
from .vocab import BOS, EOS, KEY_BYTES, PAD, key_matrix

DEFAULT_VOCAB_SIZE = 800  # VocabSize in XBBPE.h


def _default_corpus() -> str:
    """The bundled Tang poems: ``bbpe/data`` in an installed copy (setup.py ships the
    top-level ``data/`` there), the checkout's ``data/`` when run from the source tree.
    A str, not a pathlib.Path: importing pathlib costs every start 2-3 ms."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # bbpe/
    installed = os.path.join(here, "data", "tang300.txt")
    checkout = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__)))), "data",
                            "tang300.txt")
    return checkout if not os.path.exists(installed) and os.path.exists(checkout) else installed


DEFAULT_CORPUS = _default_corpus()



class XBBPE(Tokenizer):
    """A byte-level BPE vocabulary as XBBPE builds it.

    >>> tok = bbpe.XBBPE.train("data/tang300.txt", vocab_size=800)   # doctest: +SKIP
    >>> ids = tok.encode("床前明月光")                              # doctest: +SKIP
    >>> tok.decode(ids)                                              # doctest: +SKIP
    '床前明月光'

    ``bug_compat=True`` makes ``encode`` reproduce the reference exactly where it loses
    data (QUIRKS Q14: chars swallowed at the 24-byte limit; Q20.1: a cut char padded with
    NUL). By default every byte is kept: ``decode_bytes(encode(x)) == x``.
    """

    kind = "XBBPE"
    _formats: ClassVar[dict[str, tuple[str, ...]]] = {"bin": (".bin",), "json": (".json",)}  # any name but *.json: a .bin (file_format)

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
        self._start(keys, model)
        self._record_order, self.bug_compat = order, bug_compat

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
    def _from_json(cls, document: dict, name: str) -> XBBPE:
        """bbpe's JSON file of an XBBPE model (``tokenizer_json.parse`` has checked every
        field: ``check``)."""
        model = document["model"]
        keys = [token_bytes(text) for text, _ in sorted(model["vocab"].items(), key=lambda item: item[1])]
        try:
            tok = cls(keys, record_order=model.get("record_order"), bug_compat=bool(model.get("bug_compat", False)))
        except ValueError as err:
            raise FormatError(name, 0, f"model: {err}") from None
        tok._apply_json_state(document, name)
        return tok

    def _json_sections(self) -> dict[str, Any]:
        return {"model": {"type": "XBBPE", "vocab": {token_text(key): i for i, key in enumerate(self._keys)},
                          "record_order": self._record_order.tolist(), "bug_compat": bool(self.bug_compat)}}

    @classmethod
    def _from_file_bytes(cls, data: bytes, name: str) -> XBBPE:
        return cls._from_contents(binfile.parse_bin(data, name), False)

    def _set_bug_compat(self, name: str) -> None:
        self.bug_compat = True

    @classmethod
    def _from_contents(cls, contents: binfile.BinContents, bug_compat: bool) -> XBBPE:
        records = contents.records
        by_id = records[np.argsort(records["id"])]  # ids are 0..n-1, each once (checked)
        lens = by_id["len"].astype(np.int64)
        joined = by_id["key"][np.arange(KEY_BYTES)[None, :] < lens[:, None]].tobytes()
        ends = np.cumsum(lens).tolist()
        keys = [joined[a:b] for a, b in zip([0, *ends[:-1]], ends)]
        tok = cls(keys, record_order=records["id"], bug_compat=bug_compat)
        tok._set_encoding_arrays(np.diff(contents.encoding_offsets), contents.encoding_ids)
        return tok

    def save(self, target: str | os.PathLike[str] | BinaryIO, *, encodings: bool = True,  # type: ignore[override]
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
        format = self._format_of(None if is_file else target, format)
        if format == "json":
            write_file(target, self._json_bytes(), is_file)
            return
        contents = self._bin_contents(encodings)  # written as it is walked: never a second copy in memory
        if is_file:
            binfile.write_contents(target, contents)  # type: ignore[arg-type]
        else:
            binfile.write_bin(target, contents)  # type: ignore[arg-type]

    def to_bytes(self, *, encodings: bool = True, format: str = "bin") -> bytes:  # type: ignore[override]
        """The file image (``from_bytes`` reads it back): the ``.bin`` or, with
        ``format="json"``, bbpe's JSON file."""
        if self._format_of(None, format) == "json":
            return self._json_bytes()
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
        tok: XBBPE = cls.__new__(cls)  # type: ignore[assignment]  # the model is built: adopted, not built again
        tok._adopt(trained.keys, trained.model, trained.record_order, bug_compat)
        tok.train_lines = trained.texts
        if trained.ids is None or trained.lengths is None:
            tok._set_train_encodings(())
        else:
            tok._set_encoding_arrays(trained.lengths, trained.ids)
        if json_output is not None:
            tok.save(json_output, format="json")
        return tok

    def _encode_excluding(self, data: bytes, compat: bool, excluded: dict[int, bytes]) -> list[int]:
        """``data`` encoded without the model's keys of ``excluded`` (``plain_specials``)."""
        return plain_specials.encode_without(self._model, self._keys, data, compat, excluded)

    # ------------------------------------------------------------------ vocabulary

    @property
    def model(self) -> Model:  # type: ignore[override]
        """The compiled vocabulary (``bbpe.codec.Model``): what Cython code cimports and
        C code reaches through the capsule (README, "Cython and C API")."""
        return self._model

    def token_id(self, key: bytes) -> int | None:
        """The id of a key given as bytes, or None (``token_to_id`` takes text too)."""
        if isinstance(key, (bytes, bytearray, memoryview)) and len(key) > KEY_BYTES:
            return self._specials.ids.get(bytes(key))  # no key is that long: the codec's lookup takes 24 bytes
        return super().token_id(key)

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
    def special_roles(self) -> dict[str, str]:
        """XBBPE's ``<P>``, ``<S>``, ``</S>`` (Q12) as transformers' pad, bos and eos tokens."""
        return {"pad_token": "<P>", "bos_token": "<S>", "eos_token": "</S>"}

    @property
    def bos_id(self) -> int:
        """``GetBOS()``: the id of ``<S>``."""
        return self._special(BOS)

    @property
    def eos_id(self) -> int:
        """``GetEOS()``: the id of ``</S>``."""
        return self._special(EOS)

    def _model_specials(self) -> dict[bytes, int]:
        """XBBPE's own special tokens that the vocabulary holds (``<P>``, ``<S>``, ``</S>``,
        Q12), their bytes -> id."""
        return {key: kid for key in (PAD, BOS, EOS) if (kid := self._model.lookup(key)) >= 0}

    def _key_lengths(self) -> np.ndarray:
        return np.frombuffer(self._model.key_data()[1], dtype=np.uint8).astype(np.int64)

    def _stream_decoder(self, errors: str) -> Any:
        return StreamDecoder(self._model, errors)  # the codec's, in C

    # ------------------------------------------------------------------ copying and comparing

    def _model_state(self) -> tuple:
        return (self._keys, self._record_order, self._enc_offsets, self._enc_ids, self.bug_compat)

    @classmethod
    def _from_model_state(cls, state: tuple) -> XBBPE:
        keys, record_order, offsets, ids, bug_compat = state
        tok = cls(keys, record_order=record_order, bug_compat=bug_compat)
        tok._enc_offsets, tok._enc_ids = offsets, ids
        return tok

    def __repr__(self) -> str:
        return f"<bbpe.XBBPE: {len(self)} ids, {len(self._enc_offsets) - 1} stored encodings>"
