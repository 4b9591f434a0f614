"""``Tokenizer``: a trained XBBPE vocabulary that encodes, decodes, loads and saves ``.bin`` files.

A thin facade: training is ``xbbpe.pipeline`` (handed the corpus once), the codec
``codec.pyx``, the file format ``xbbpe.binfile``. Importing this module does not import
numba; only training does.
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cache, partial
from itertools import pairwise

import numpy as np

try:
    from .codec import Model, StreamDecoder, TokenizerBase, plain_texts
except ImportError as err:  # pragma: no cover - only in an unbuilt source checkout
    raise ImportError(
        f"bbpe's compiled codec is missing from {os.path.dirname(__file__)}: this is the source tree. "
        "Install bbpe (pip install .) and run from another directory, or build in place (pip install -e .)"
    ) from err
from .common.corpus import Corpus, block_lines, split_lines
from .common.gbk import gbk_to_utf8, utf8_to_gbk
from .common.progress import ProgressFn
from .common.resources import usable_cpus
from .errors import UnknownIdError
from .xbbpe import binfile, pipeline
from .xbbpe.pipeline import id_dtype
from .xbbpe.vocab import BOS, EOS, KEY_BYTES, PAD, key_matrix

DEFAULT_VOCAB_SIZE = 800  # VocabSize in XBBPE.h


def _default_corpus() -> str:
    """The bundled Tang poems: ``bbpe/data`` in an installed copy (setup.py ships the
    top-level ``data/`` there), the checkout's ``data/`` when run from the source tree.
    A str, not a pathlib.Path: importing pathlib costs every start 2-3 ms."""
    here = os.path.dirname(os.path.abspath(__file__))
    installed = os.path.join(here, "data", "tang300.txt")
    checkout = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))), "data", "tang300.txt")
    return checkout if not os.path.exists(installed) and os.path.exists(checkout) else installed


DEFAULT_CORPUS = _default_corpus()


class Tokenizer(TokenizerBase):
    """A byte-level BPE vocabulary as XBBPE builds it.

    >>> tok = Tokenizer.train("data/tang300.txt", vocab_size=800)   # doctest: +SKIP
    >>> ids = tok.encode("床前明月光")                              # doctest: +SKIP
    >>> tok.decode(ids)                                              # doctest: +SKIP
    '床前明月光'

    ``bug_compat=True`` makes ``encode`` reproduce the reference exactly where it loses
    data (QUIRKS Q14: chars swallowed at the 24-byte limit; Q20.1: a cut char padded with
    NUL). By default every byte is kept: ``decode_bytes(encode(x)) == x``.
    """

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

    def _set_train_encodings(self, encodings: Iterable[Sequence[int]]) -> None:
        arrays = [np.asarray(e, dtype=np.int64) for e in encodings]
        lengths = np.array([a.shape[0] for a in arrays], dtype=np.int64)
        ids = np.concatenate(arrays) if arrays else np.empty(0, dtype=np.int64)
        self._set_encoding_arrays(lengths, ids)

    def _set_encoding_arrays(self, lengths: np.ndarray, ids: np.ndarray) -> None:
        """Store encodings as offsets + ids in the smallest dtype that holds every id."""
        self._enc_offsets = np.concatenate(([0], np.cumsum(lengths, dtype=np.int64)))
        self._enc_ids = ids.astype(id_dtype(len(self._keys)), copy=False)

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, bug_compat: bool = False) -> Tokenizer:
        """Load a ``.bin`` written by bbpe or by the reference. Raises FormatError, OSError."""
        contents = binfile.read_bin(path)
        records = contents.records
        by_id = records[np.argsort(records["id"])]  # ids are 0..n-1, each once (checked)
        lens = by_id["len"].astype(np.int64)
        joined = by_id["key"][np.arange(KEY_BYTES)[None, :] < lens[:, None]].tobytes()
        ends = np.cumsum(lens).tolist()
        keys = [joined[a:b] for a, b in zip([0, *ends[:-1]], ends)]
        tok = cls(keys, record_order=records["id"], bug_compat=bug_compat)
        tok._set_encoding_arrays(np.diff(contents.encoding_offsets), contents.encoding_ids)
        return tok

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the reference's ``.bin`` layout atomically (records in ``record_order``)."""
        binfile.write_bin(path, self._bin_contents())

    def to_bytes(self) -> bytes:
        """The ``.bin`` file image."""
        return binfile.bin_bytes(self._bin_contents())

    def _bin_contents(self) -> binfile.BinContents:
        return binfile.BinContents(self._records(), self._enc_offsets, self._enc_ids)

    def _records(self) -> np.ndarray:
        """The vocabulary records of the ``.bin``, in file order."""
        return binfile.records(self._keys, self._record_order)

    @classmethod
    def train(
        cls,
        corpus_path: str | os.PathLike[str] | None = None,
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
    ) -> Tokenizer:
        """Train on a corpus file as ``LoadDataFileTrain(path, vocab_size)`` does.

        With no path, the bundled Tang poems (``data/tang300.txt``). ``gbk``: the corpus is
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
        large corpus; ``bbpe train`` does it.

        >>> Tokenizer.train(vocab_size=800).encode("床前明月光")       # doctest: +SKIP
        [229, 186, 138, 323, 400, 277, 506]
        """
        path = DEFAULT_CORPUS if corpus_path is None else corpus_path
        source = Corpus.from_file(path, gbk=gbk, missing_is_empty=bug_compat, windows=windows_text, strict=strict)
        return cls._train(source, vocab_size, bug_compat=bug_compat, lossless_encodings=lossless_encodings,
                          progress=progress, output=output, memory_check=memory_check)

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
    ) -> Tokenizer:
        """Train on lines given one by one, as if they were the lines of a corpus file.

        An empty line ends a paragraph (Q18); ``str`` lines are UTF-8 encoded. The options
        are ``train``'s.

        >>> Tokenizer.train_from_iterator(["天地一人", "天地二人"], 0).keys[263]   # doctest: +SKIP
        b'\xe5\xa4\xa9\xe5\x9c\xb0'
        """
        source = Corpus.from_lines(lines, gbk=gbk, strict=strict)
        return cls._train(source, vocab_size, bug_compat=bug_compat, lossless_encodings=lossless_encodings,
                          progress=progress, output=output)

    @classmethod
    def _train(cls, source: Corpus, vocab_size: int, *, bug_compat: bool, lossless_encodings: bool,
               progress: bool | ProgressFn, output: str | os.PathLike[str] | None,
               memory_check: bool = False) -> Tokenizer:
        """The training pipeline (``xbbpe.pipeline``) on ``source``, once; its model becomes
        this tokenizer."""
        trained = pipeline.train(source, vocab_size, bug_compat=bug_compat, lossless_encodings=lossless_encodings,
                                 progress=progress, output=output, memory_check=memory_check)
        tok = cls.__new__(cls)  # the model is built: adopted, not built again
        tok._adopt(trained.keys, trained.model, trained.record_order, bug_compat)
        if trained.ids is None:
            tok._set_train_encodings(())
        else:
            tok._set_encoding_arrays(trained.lengths, trained.ids)
        return tok

    # ------------------------------------------------------------------ encoding

    # encode(text, *, gbk=False, bug_compat=None, out="list") is TokenizerBase.encode, in
    # Cython: a str or bytes into a list goes straight to C; everything else comes here.

    def _encode_other(self, text: str | bytes, gbk: bool, compat: bool, out: str) -> list[int] | np.ndarray:
        if out == "numpy":
            return np.frombuffer(self._model.encode_ids(self._utf8(text, gbk), compat), dtype=np.uint32)
        _check_out(out)
        return self._model.encode(self._utf8(text, gbk), compat)

    def encode_batch(self, texts: Sequence[str | bytes], *, num_threads: int | None = None, gbk: bool = False,
                     bug_compat: bool | None = None, out: str = "list") -> list[list[int]] | list[np.ndarray]:
        """Encode many texts on ``num_threads`` threads (default: every CPU this process
        may use, ``resources.usable_cpus``); the GIL is released while encoding, and the
        texts go to the threads in slices as each is free, so a thread slowed by other
        work takes fewer. Returns one list (or uint32 array) per text, in order."""
        compat = self.bug_compat if bug_compat is None else bug_compat
        _check_out(out)
        if gbk:
            data = [self._utf8(t, gbk) for t in texts]
        else:
            data = texts if type(texts) is list else list(texts)
            if not plain_texts(data):
                data = [t if type(t) in (str, bytes) else bytes(t) for t in data]
        threads = max(1, min(num_threads or usable_cpus(), len(data) or 1))
        work = self._many_encoder(out)
        if threads == 1:
            return work(data, compat)
        # more slices than threads: while one thread builds its lists (GIL), others encode,
        # and the last slices, whose lists cannot overlap anything, are short (8 per thread
        # measured best among 4, 8, 16 and 32 on zh-large)
        step = max(1, -(-len(data) // (8 * threads)))
        chunks = [data[i : i + step] for i in range(0, len(data), step)]
        result: list = []
        for part in _pool(threads).map(lambda chunk: work(chunk, compat), chunks):
            result += part
        return result

    def encode_file(self, path: str | os.PathLike[str], *, gbk: bool = False, bug_compat: bool | None = None,
                    out: str = "list") -> Iterator[list[int] | np.ndarray]:
        """The ids of every line of a file, one line at a time, in constant memory.

        Lines are cut as ``std::getline`` cuts them (the LF is not encoded, CR stays); the
        file is read in blocks of whole lines, each encoded with the GIL released.
        """
        compat = self.bug_compat if bug_compat is None else bug_compat
        _check_out(out)
        source = Corpus.from_file(path)
        if gbk:
            for line in split_lines(source.chunks()):
                yield self.encode(line, gbk=True, bug_compat=compat, out=out)
            return
        work = self._many_encoder(out)
        for block, _ in source.line_blocks():
            yield from work(block_lines(block), compat)

    def _many_encoder(self, out: str):
        """``work(texts, compat)``: a list of id lists, or of uint32 arrays for ``out="numpy"``."""
        return self._model.encode_lists if out == "list" else partial(_encode_arrays, self._model)

    @staticmethod
    def _utf8(text: str | bytes, gbk: bool) -> bytes:
        if isinstance(text, str):
            if gbk:
                raise TypeError("gbk=True takes the GBK bytes of the text, not a str")
            return text.encode("utf-8", "surrogatepass")
        data = bytes(text)
        return gbk_to_utf8(data) if gbk else data

    # ------------------------------------------------------------------ decoding

    def decode_bytes(self, ids: Iterable[int], *, gbk: bool = False) -> bytes:
        """Ids -> the exact bytes (UTF-8), or with ``gbk=True`` what the reference's ``ToGBK``
        makes of them. Raises UnknownIdError naming the id and its position."""
        data = self._model.decode(ids if type(ids) is list else _id_array(ids, len(self._keys)))
        return utf8_to_gbk(data) if gbk else data

    def decoder(self, errors: str = "replace") -> StreamDecoder:
        """An incremental decoder: ``feed(ids)`` returns only whole chars, so a stream of
        generated ids can be shown as it comes; ``flush()`` returns what is left.

        >>> d = tok.decoder(); d.feed(228), d.feed(185), d.feed(157)   # doctest: +SKIP
        ('', '', '九')
        """
        return StreamDecoder(self._model, errors)

    def decode(self, ids: Iterable[int], errors: str = "replace") -> str:
        """Ids -> str; bytes that are not valid UTF-8 follow ``errors`` (as ``bytes.decode``).

        ``decode(encode(s), errors="surrogatepass") == s`` for every str ``s``.
        """
        return self._model.decode_str(ids if type(ids) is list else _id_array(ids, len(self._keys)), errors)

    # ------------------------------------------------------------------ vocabulary

    def __len__(self) -> int:
        return len(self._keys)

    @property
    def model(self) -> Model:
        """The compiled vocabulary (``bbpe.codec.Model``): what Cython code cimports and
        C code reaches through the capsule (README, "Cython and C API")."""
        return self._model

    def token_bytes(self, token_id: int) -> bytes:
        """The bytes of one id."""
        if not 0 <= token_id < len(self._keys):
            raise ValueError(f"unknown id {token_id} (the vocabulary has ids 0..{len(self._keys) - 1})")
        return self._keys[token_id]

    @property
    def keys(self) -> list[bytes]:
        """All keys in id order (a copy)."""
        return list(self._keys)

    def token_id(self, key: bytes) -> int | None:
        """The id of a key, or None."""
        kid = self._model.lookup(bytes(key)) if len(key) <= KEY_BYTES else -1
        return None if kid < 0 else kid

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

    def __repr__(self) -> str:
        return f"<bbpe.Tokenizer: {len(self)} ids, {len(self._enc_offsets) - 1} stored encodings>"


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
    seq = ids if isinstance(ids, (list, tuple)) else list(ids)
    try:
        return array("q", seq)
    except OverflowError:
        pos, kid = next((p, k) for p, k in enumerate(seq) if not -_INT64_MAX - 1 <= k <= _INT64_MAX)
        raise UnknownIdError(kid, pos, n_keys) from None


_INT64_MAX = (1 << 63) - 1


def _encode_arrays(model: Model, texts: list, compat: bool) -> list[np.ndarray]:
    ids, offsets = model.encode_many(texts, compat)
    flat = np.frombuffer(ids, dtype=np.uint32)
    bounds = np.frombuffer(offsets, dtype=np.int64).tolist()
    return [flat[a:b] for a, b in pairwise(bounds)]


@cache
def _pool(threads: int) -> ThreadPoolExecutor:
    """One long-lived pool per thread count (starting threads per call would cost more
    than small batches take)."""
    return ThreadPoolExecutor(max_workers=threads, thread_name_prefix="bbpe")


def _check_out(out: str) -> None:
    if out not in ("list", "numpy"):
        raise ValueError(f"out must be 'list' or 'numpy', got {out!r}")
