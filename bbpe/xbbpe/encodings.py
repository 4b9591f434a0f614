"""The stored training encodings (QUIRKS Q18): ``Encode`` of every training text with the
final vocabulary, made block by block on threads, for memory or straight for a ``.bin``.

A block is about ``BLOCK_BYTES`` of whole lines. Its encoding goes into buffers that are
handed back and reused for a later block once the consumer has taken it, so however large
the corpus, the encoding holds a few blocks' worth of memory, and a corpus that can be
read at offsets (``Corpus.line_ranges``) is read by the threads themselves into buffers
of their own. Each block comes out either as ids plus one length per text, or in the
``.bin`` layout (each text's length, then its ids), which a writer copies to the file as
it is.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import numpy as np

from ..codec import Model, lines_bound
from ..common.blocks import ReadInto, read_fully
from ..common.corpus import Corpus
from ..common.progress import ProgressFn
from ..common.threads import bounded_map
from . import binfile

# The blocks are this size: small enough that the buffers of the blocks in flight stay
# small, large enough that a block is worth a task.
BLOCK_BYTES = 1 << 20


class EncodedBlock(NamedTuple):
    """The encodings of one block's texts: ``ids`` (int64) holds them one after the other
    with ``lengths`` the length of each, or, when ``lengths`` is None, in the ``.bin``
    layout. ``size`` is the block's corpus bytes (for progress)."""

    texts: int
    ids: np.ndarray
    lengths: np.ndarray | None
    size: int


class _Buffers:
    """Output buffers (ids, lengths) for blocks, handed back by the consumer for reuse."""

    def __init__(self, interleaved: bool, reference: bool) -> None:
        self.interleaved = interleaved
        self.reference = reference  # the reference pads cut chars (Q20.1): more room
        self._free: queue.SimpleQueue = queue.SimpleQueue()

    def take(self, nbytes: int) -> tuple[np.ndarray, np.ndarray | None]:
        """Buffers for a block of ``nbytes``: room for its worst case, so that the encoder
        need not count what it holds."""
        try:
            ids, lengths = self._free.get_nowait()
        except queue.Empty:
            ids, lengths = np.empty(0, dtype=np.int64), None
        need = lines_bound(nbytes, self.reference)
        if ids.shape[0] < need:  # np.empty: only the pages written ever take memory
            ids = np.empty(max(need, lines_bound(BLOCK_BYTES, self.reference)), dtype=np.int64)
        if not self.interleaved and (lengths is None or lengths.shape[0] < nbytes + 1):
            lengths = np.empty(max(nbytes, BLOCK_BYTES) + 1, dtype=np.int64)
        return ids, lengths

    def give_back(self, ids: np.ndarray, lengths: np.ndarray | None) -> None:
        self._free.put((ids, lengths))


def encoded_blocks(source: Corpus, model: Model, *, reference: bool, interleaved: bool, threads: int,
                   progress: ProgressFn | None = None) -> Iterator[EncodedBlock]:
    """The encodings of every training text of ``source``, block by block in corpus order.
    ``reference``: the reference's encodings (which may drop chars, Q14), else bbpe's
    lossless ones. Each block's arrays are valid until the next block is asked for: their
    buffers are then reused."""
    buffers = _Buffers(interleaved, reference)
    blocks: Iterator[tuple[EncodedBlock, tuple | None]]
    if source.gbk:
        blocks = _gbk_blocks(source, model, reference, interleaved)
    else:
        blocks = _line_blocks(source, model, reference, buffers, threads)
    done = 0
    for block, owned in blocks:
        yield block
        if owned is not None:
            buffers.give_back(*owned)
        done += block.size
        if progress:
            progress("encode", done, source.size)


def _encode_lines(model: Model, data, para_end: bool, reference: bool, buffers: _Buffers,
                  size: int) -> tuple[EncodedBlock, tuple]:
    ids, lengths = buffers.take(len(data))
    texts, words = model.encode_lines_into(data, para_end, reference, ids, lengths)
    block = EncodedBlock(texts, ids[:words], None if lengths is None else lengths[:texts], size)
    return block, (ids, lengths)


def _line_blocks(source: Corpus, model: Model, reference: bool, buffers: _Buffers,
                 threads: int) -> Iterator[tuple[EncodedBlock, tuple]]:
    """Blocks of lines on ``threads`` threads (encode_lines_into releases the GIL)."""
    ranges = source.line_ranges(BLOCK_BYTES)
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="bbpe-encode") as pool:
        if ranges is None:  # Windows text mode: the blocks come from the chunks

            def encode_block(item: tuple[bytes, bool]) -> tuple[EncodedBlock, tuple]:
                block, para_end = item
                return _encode_lines(model, block, para_end, reference, buffers, len(block))

            yield from bounded_map(pool, encode_block, source.line_blocks(BLOCK_BYTES), ahead=threads)
            return
        with source.open_reader() as read_into:
            read = _ThreadReader(read_into)

            def encode_range(item: tuple[int, int]) -> tuple[EncodedBlock, tuple]:
                start, stop = item
                data, para_end = read(start, stop)
                return _encode_lines(model, data, para_end, reference, buffers, stop - start)

            yield from bounded_map(pool, encode_range, ranges, ahead=threads)


class _ThreadReader:
    """Reads a range of lines into a buffer of the calling thread's own, reused for its
    next range, with one byte more: an LF there means the range's last line ends a
    paragraph, as does the end of the corpus."""

    def __init__(self, read_into: ReadInto) -> None:
        self._read_into = read_into
        self._local = threading.local()

    def __call__(self, start: int, stop: int) -> tuple[memoryview, bool]:
        size = stop - start
        buf = getattr(self._local, "buf", None)
        if buf is None or len(buf) < size + 1:
            buf = self._local.buf = bytearray(max(size + 1, BLOCK_BYTES + 1))
        view = memoryview(buf)
        n = read_fully(self._read_into, start, view[: size + 1])
        return view[: min(n, size)], n <= size or buf[size] == 0x0A


def _gbk_blocks(source: Corpus, model: Model, reference: bool,
                interleaved: bool) -> Iterator[tuple[EncodedBlock, None]]:
    """GBK mode: the texts come one by one (each converted on its own, Q19); they are
    gathered into blocks and each block is encoded in one call (``Model.encode_many``)."""
    texts: list[bytes] = []
    size = 0
    for text in source.texts():
        texts.append(text)
        size += len(text)
        if size >= BLOCK_BYTES:
            yield _encode_texts(model, texts, reference, interleaved, size), None
            texts, size = [], 0
    if texts:
        yield _encode_texts(model, texts, reference, interleaved, size), None


def _encode_texts(model: Model, texts: list[bytes], reference: bool, interleaved: bool, size: int) -> EncodedBlock:
    """A block of texts, encoded into new arrays (nothing to hand back)."""
    ids, offsets = model.encode_many(texts, reference)
    flat = np.frombuffer(ids, dtype=np.int32).astype(np.int64)
    lengths = np.diff(np.frombuffer(offsets, dtype=np.int64))
    if interleaved:
        return EncodedBlock(len(texts), binfile.interleaved(lengths, flat), None, size)
    return EncodedBlock(len(texts), flat, lengths, size)
