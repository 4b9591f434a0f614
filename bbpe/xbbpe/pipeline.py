"""The XBBPE training pipeline: a corpus in, a trained model out (and, with ``output``, its
``.bin`` written), every stage going down the layers once.

    memory check -> parts of the corpus -> train_vocabulary (scan, count, first pass,
    merges: ``train``, ``engine``, ``kernels``) -> record order (``map_order``) -> the
    codec's model -> stored encodings (``encodings``) kept, or streamed into the file
    (``binfile``)

The facade (``bbpe.Tokenizer.train``) hands it the corpus and gets a ``TrainedModel``
back. A MemoryError in any stage becomes one ``InsufficientMemoryError`` naming the stage
(``common.resources.MemoryGuard``).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import cast

import numpy as np

from ..codec import Model
from ..common.corpus import Corpus
from ..common.progress import ProgressFn, stages
from ..common.resources import MemoryGuard, check_training_memory, training_threads
from ..errors import CorpusWarning
from . import binfile
from .encodings import EncodedBlock, encoded_blocks
from .engine.tuning import DEFAULT, Tuning
from .vocab import INITIAL_SIZE, key_matrix, special_prefixes


@dataclass
class TrainedModel:
    """What training gives the facade: the keys in id order, the order of the ids in a
    ``.bin``, the codec's model of the keys, the stored training encodings (``lengths``
    and ``ids``; None when they went straight to ``output``), and how many training texts
    the corpus held (the reference driver's ``train_lines``; as many as stored encodings,
    when they are made)."""

    keys: list[bytes]
    record_order: np.ndarray
    model: Model
    lengths: np.ndarray | None
    ids: np.ndarray | None
    texts: int


def train(source: Corpus, vocab_size: int, *, bug_compat: bool = False, lossless_encodings: bool = False,
          progress: bool | ProgressFn = False, output: str | os.PathLike[str] | None = None,
          memory_check: bool = False, encodings: bool = True, tuning: Tuning = DEFAULT) -> TrainedModel:
    """Train on ``source`` as ``XBBPE::Train`` does (``train.train_vocabulary``), then make
    the stored encodings of its texts: the reference's (Q14, Q18), or bbpe's lossless
    ones with ``lossless_encodings``. With ``output`` the ``.bin`` is written as they are
    made and they are not kept. ``memory_check`` refuses at once a corpus that would not
    fit (``check_training_memory``). ``encodings=False`` makes no stored encodings (a
    vocabulary-only model and ``.bin``). ``tuning`` sizes and splits the engine's work
    (``engine.Tuning``), never what it learns. The model returned counts the training
    texts (``texts``) either way. ``progress`` gets every stage (``common.progress``)."""
    from .kernels import AHEAD_OF_TIME  # numba loads here, if the kernels were not compiled
    from .train import check_vocab_size, record_order, train_vocabulary

    vocab_size = check_vocab_size(vocab_size, wrap=bug_compat)
    if memory_check:
        check_training_memory(source.name, source.size, source.gbk, jit=not AHEAD_OF_TIME)
    # GBK mode reports its own problems, line by line; strict refuses a corpus now
    report_utf8 = (lambda: None) if source.gbk else source.check_utf8()
    with stages(progress) as report, MemoryGuard(source.name, report).watching() as guard:
        threads = training_threads()
        first, *rest = source.training_parts(threads)
        guard.stage("scan")
        # the trainer's parameters take the caller's type, but its totals are always ints: guard.progress's
        reports = cast(ProgressFn, guard.progress)
        keys = train_vocabulary(first, vocab_size, progress=reports, size_hint=source.size, parts=rest,
                                tuning=tuning)
        report_utf8()
        _warn_if_nothing_learned(source, keys, vocab_size)
        guard.stage("vocabulary")
        order = record_order(keys)
        rows, lens = key_matrix(keys)
        model = Model(rows.tobytes(), lens.tobytes())
        trained = _with_encodings(source, TrainedModel(keys, order, model, None, None, 0), guard, reports,
                                  output=output, encodings=encodings, lossless=lossless_encodings,
                                  threads=threads)
    return trained


def _with_encodings(source: Corpus, trained: TrainedModel, guard: MemoryGuard, reports: ProgressFn, *,
                    output: str | os.PathLike[str] | None, encodings: bool, lossless: bool,
                    threads: int) -> TrainedModel:
    """``trained`` (its vocabulary) with its stored encodings and its count of texts, the
    encodings kept or written to ``output`` with the vocabulary; without ``encodings``,
    only the count (``Corpus.count_texts``: a pass over the corpus, no encoding)."""
    keys, order = trained.keys, trained.record_order
    if not encodings:
        if output is not None:
            binfile.write_bin_streamed(output, binfile.records(keys, order), ())
        empty = np.zeros(0, dtype=np.int64)
        return replace(trained, lengths=empty, ids=empty.astype(id_dtype(len(keys))), texts=source.count_texts())
    guard.stage("encode")
    blocks = _Counted(encoded_blocks(source, trained.model, reference=not lossless, interleaved=output is not None,
                                     threads=threads, progress=reports))
    if output is not None:
        binfile.write_bin_streamed(output, binfile.records(keys, order), ((block.texts, block.ids) for block in blocks))
        return replace(trained, texts=blocks.texts)
    lengths, ids = _kept_encodings(blocks, id_dtype(len(keys)))
    return replace(trained, lengths=lengths, ids=ids, texts=blocks.texts)


class _Counted:
    """Encoded blocks, passed on as they come, counting their texts (``texts``): a ``.bin``
    written as they are made keeps none of them to count afterwards."""

    def __init__(self, blocks: Iterable[EncodedBlock]) -> None:
        self._blocks = blocks
        self.texts = 0

    def __iter__(self) -> Iterator[EncodedBlock]:
        for block in self._blocks:
            self.texts += block.texts
            yield block


def _warn_if_nothing_learned(source: Corpus, keys: list[bytes], vocab_size: int) -> None:
    """A ``CorpusWarning`` for a training that learned nothing although the vocabulary had
    room: an empty corpus, or one in which no pair occurs twice (the C++ says nothing).
    Pointed at the facade's caller (this, the pipeline, ``_train``, ``train``)."""
    from .train import vocab_limit

    if vocab_limit(vocab_size) > INITIAL_SIZE and set(keys[INITIAL_SIZE:]) <= set(special_prefixes()):
        what = "is empty" if source.size == 0 else "has no pair of chars that occurs twice"
        warnings.warn(f"{source.name}: the corpus {what}: nothing was learned (the vocabulary holds the "
                      f"{INITIAL_SIZE} initial keys and the special prefixes)", CorpusWarning, stacklevel=5)


def _kept_encodings(blocks, dtype: type) -> tuple[np.ndarray, np.ndarray]:
    """Q18: the stored encodings, each block's copied (its buffers are reused) and narrowed
    to ``dtype``, then put together freeing each block as it is copied."""
    lengths: list[np.ndarray] = []
    ids: list[np.ndarray] = []
    for block in blocks:
        lengths.append(block.lengths.copy())
        ids.append(block.ids.astype(dtype))
    return _concatenate_freeing(lengths, np.int64), _concatenate_freeing(ids, dtype)


def _concatenate_freeing(parts: list[np.ndarray], dtype: type) -> np.ndarray:
    """``np.concatenate(parts)``, emptying ``parts`` as it goes: each part is freed once it is
    copied, so the copy and the parts are never both whole in memory (np.concatenate would
    hold the stored encodings twice at the end of training)."""
    out = np.empty(sum(part.shape[0] for part in parts), dtype=dtype)
    at = 0
    parts.reverse()
    while parts:
        part = parts.pop()
        out[at : at + part.shape[0]] = part
        at += part.shape[0]
    return out


def id_dtype(n_keys: int) -> type:
    """The smallest dtype for ids 0..n_keys-1."""
    return np.uint16 if n_keys <= 1 << 16 else np.int32 if n_keys <= 1 << 31 else np.int64
