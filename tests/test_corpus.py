"""Reading a corpus as LoadDataFileTrain does (QUIRKS Q18)."""

from __future__ import annotations

import itertools
import random
import re

import pytest
from scan_parts import in_corpus_order, take_in_turns

import bbpe
from bbpe.common.blocks import BackwardBlocks, paragraph_texts, split_lines
from bbpe.common.corpus import Corpus


@pytest.mark.parametrize("data,lines", [
    (b"", []),
    (b"\n", [b""]),
    (b"abc", [b"abc"]),
    (b"abc\n", [b"abc"]),
    (b"abc\n\n", [b"abc", b""]),
    (b"a\r\nb", [b"a\r", b"b"]),  # CR stays (Q19)
    (b"a\0b\nc", [b"a\0b", b"c"]),
])
def test_getline(data, lines):
    assert list(split_lines([data])) == lines
    assert list(split_lines([bytes([c]) for c in data])) == lines  # any chunking


def test_paragraphs():
    """para.txt: 4 texts, "\\n" on the last line of each paragraph."""
    data = "\n\n天地一人\n天地二人\n\n\n\n天地三人\n天地四人".encode()
    assert list(paragraph_texts(split_lines([data]))) == [
        "天地一人".encode(), "天地二人\n".encode(), "天地三人".encode(), "天地四人\n".encode()]


def test_missing_corpus(tmp_path):
    missing = tmp_path / "nope.txt"
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        Corpus.from_file(missing)
    with pytest.raises(IsADirectoryError, match="is a directory"):
        Corpus.from_file(tmp_path)
    assert list(Corpus.from_file(missing, missing_is_empty=True).texts()) == []
    with pytest.warns(bbpe.CorpusWarning, match="the corpus is empty"):
        tok = bbpe.Tokenizer.train(missing, 800, bug_compat=True)  # Q18: an empty corpus
    assert len(tok) == 270 and tok.train_encodings == []


def test_iterator_equals_file(tmp_path):
    data = "天地一人\n天地二人\n\n天地三人，天地\n".encode()
    path = tmp_path / "c.txt"
    path.write_bytes(data)
    from_file = bbpe.Tokenizer.train(path, 0)
    from_lines = bbpe.Tokenizer.train_from_iterator(data.decode().splitlines(), 0)
    assert from_file.to_bytes() == from_lines.to_bytes()


@pytest.mark.parametrize("size,entries", [(0, 278), (1, 278), (6, 278), (7, 270), (270, 270), (271, 271),
                                           (272, 272), (277, 277), (278, 278), (4294967295, 278)])
def test_vocab_size_table(size, entries):
    """QUIRKS Q11, measured on cjk6.txt."""
    lines = [f"天地{c}人" for c in "一二三四五六"]
    assert len(bbpe.Tokenizer.train_from_iterator(lines, size)) == entries


def test_vocab_size_limits():
    with pytest.raises(ValueError, match="more than the reference's uint32"):
        bbpe.Tokenizer.train_from_iterator(["天地"], 2**32)
    with pytest.raises(ValueError, match=">= 0"):
        bbpe.Tokenizer.train_from_iterator(["天地"], -1)
    with pytest.raises(TypeError):
        bbpe.Tokenizer.train_from_iterator(["天地"], 8.5)
    lines = [f"天地{c}人" for c in "一二三四五六"]
    assert len(bbpe.Tokenizer.train_from_iterator(lines, 2**32 + 271, bug_compat=True)) == 271  # cast to uint32


@pytest.mark.parametrize("from_file", [True, False])
@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 1 << 20])
def test_blocks_cover_the_file(tmp_path, chunk, monkeypatch, from_file):
    """Training blocks end after a one-byte delimiter; line blocks after LF, with the right
    paragraph flag; both concatenate back to the file, whatever the chunk size (line blocks
    of a given size are how the stored encodings are made)."""
    import bbpe.common.corpus as C

    data = "\n\n天地 一人\n天地二人,x\n\n\n天地三人\n天地四人".encode()
    path = tmp_path / "c.txt"
    path.write_bytes(data)
    monkeypatch.setattr(C, "CHUNK_BYTES", chunk)
    corpus = Corpus.from_file(path) if from_file else Corpus.from_lines(data.split(b"\n"))
    blocks = [bytes(block) for block in corpus.training_blocks()]  # a block is valid until the next
    assert b"".join(blocks) == data
    assert all(b[-1:] in (b"\n", b" ", b",") for b in blocks[:-1])
    line_blocks = list(corpus.line_blocks())
    assert line_blocks == list(Corpus.from_file(path).line_blocks(chunk))
    assert b"".join(b for b, _ in line_blocks) == data
    texts = []
    for block, para_end in line_blocks:
        lines = block.split(b"\n")
        if lines[-1] == b"":
            lines.pop()
        for i, line in enumerate(lines):
            last = i == len(lines) - 1
            ends = para_end if last else lines[i + 1] == b""
            if line:
                texts.append(line + b"\n" if ends else line)
    assert texts == list(corpus.texts())


def _part_blocks(corpus: Corpus, parts: int, seed: int = 0) -> list[list[bytes]]:
    """The blocks of each of the scan's parts, taken in turns as threads take them, in
    corpus order."""
    live = corpus.training_parts(parts)
    got = take_in_turns(live, random.Random(seed))
    return [in_corpus_order(BackwardBlocks(blocks) if isinstance(part, BackwardBlocks) else blocks)
            for part, blocks in zip(live, got)]


@pytest.mark.parametrize("from_file", [True, False])
@pytest.mark.parametrize("parts", [2, 3, 5, 64])
@pytest.mark.parametrize("seed", range(4))
def test_training_parts_cover_the_corpus(tmp_path, monkeypatch, from_file, parts, seed):
    """The scan's parts (one per thread) are consecutive, each block ends right after a
    one-byte delimiter (so no segment spans two), and together they are the corpus,
    however the threads' turns fall: the second part of each pair takes its blocks from
    the end of the pair's range (a ``BackwardBlocks``), the first from its start."""
    import bbpe.common.corpus as C

    monkeypatch.setattr(C, "MIN_PART_BYTES", 16)
    monkeypatch.setattr(C, "MEETING_BLOCK_BYTES", 64)
    rng = random.Random(parts)
    data = "".join(rng.choice(["天地", "人", "。", "，", " ", "\n", "ab", ".", "x" * 40]) for _ in range(400)).encode()
    path = tmp_path / "c.txt"
    path.write_bytes(data)
    corpus = Corpus.from_file(path) if from_file else Corpus.from_lines(data.split(b"\n"))
    live = corpus.training_parts(parts)
    assert len(live) == min(parts, len(data) // 16)
    assert [isinstance(part, BackwardBlocks) for part in live] == [i % 2 == 1 for i in range(len(live))]
    got = _part_blocks(corpus, parts, seed)
    assert b"".join(b"".join(part) for part in got) == data
    blocks = [block for part in got for block in part]
    for block in blocks[:-1]:
        assert block[-1:] in [bytes([d]) for d in b'\n? !",.']
    longest_run = max(map(len, re.split(rb'[\n? !",.]', data)))  # a cut waits for the next delimiter
    assert max(map(len, blocks)) <= 64 + longest_run + 1


def test_meeting_parts_share_the_work(tmp_path, monkeypatch):
    """Two parts that meet split the blocks by how fast each takes them: taken strictly
    in turns, they get half each; one that is never asked for leaves all to the other."""
    import bbpe.common.corpus as C

    monkeypatch.setattr(C, "MIN_PART_BYTES", 16)
    monkeypatch.setattr(C, "MEETING_BLOCK_BYTES", 100)
    path = tmp_path / "c.txt"
    path.write_bytes(b"ab cd\n" * 1000)  # 6,000 bytes: 60 blocks
    front, back = Corpus.from_file(path).training_parts(2)
    counts = [0, 0]
    for a, b in itertools.zip_longest(front, back):
        counts[0] += a is not None
        counts[1] += b is not None
    assert counts == [30, 30]
    front, back = Corpus.from_file(path).training_parts(2)
    assert b"".join(bytes(block) for block in front) == path.read_bytes()
    assert list(back) == []


def test_training_parts_read_what_the_file_has_grown_by(tmp_path, monkeypatch):
    """The last block reads on to the end of the file, wherever that is by then."""
    import bbpe.common.corpus as C

    monkeypatch.setattr(C, "MIN_PART_BYTES", 16)
    monkeypatch.setattr(C, "MEETING_BLOCK_BYTES", 64)
    path = tmp_path / "c.txt"
    path.write_bytes(b"ab cd\n" * 100)
    corpus = Corpus.from_file(path)
    with path.open("ab") as f:
        f.write("天地 人\n".encode() * 500)  # more than the last block's buffer twice over
    for seed in range(3):
        got = _part_blocks(corpus, 2, seed)
        assert b"".join(b"".join(part) for part in got) == path.read_bytes()
    # the first part takes every block, the last one into the buffer of a longer block
    assert b"".join(bytes(block) for part in corpus.training_parts(2) for block in part) == path.read_bytes()


def test_training_parts_stay_whole_when_they_cannot_split(tmp_path, monkeypatch):
    """One part: a corpus smaller than two parts, one without a one-byte delimiter, GBK
    (converted text by text) and Windows text mode (offsets change, Ctrl-Z ends it)."""
    import bbpe.common.corpus as C

    monkeypatch.setattr(C, "MIN_PART_BYTES", 16)
    path = tmp_path / "c.txt"
    path.write_bytes(("天地人" * 100 + "。").encode())  # only multi-byte delimiters
    assert len(_part_blocks(Corpus.from_file(path), 4)) == 1
    path.write_bytes(b"ab cd\n" * 100)
    assert len(_part_blocks(Corpus.from_file(path), 4)) == 4
    assert len(_part_blocks(Corpus.from_file(path, windows=True), 4)) == 1
    assert len(_part_blocks(Corpus.from_file(path, gbk=True), 4)) == 1
    monkeypatch.setattr(C, "MIN_PART_BYTES", 1 << 20)
    assert len(_part_blocks(Corpus.from_file(path), 4)) == 1


@pytest.mark.parametrize("block_bytes", [1, 2, 5, 64, 1 << 20])
@pytest.mark.parametrize("from_file", [True, False])
def test_reused_blocks_cover_the_corpus(tmp_path, block_bytes, from_file):
    """Blocks read into one reused buffer: each ends after a delimiter (a block without
    one grows), and, each taken while it is the current one, all of them are the corpus."""
    import random

    from bbpe.common.blocks import after_last_delimiter, reused_blocks

    rng = random.Random(block_bytes)
    data = "".join(rng.choice(["天地", "人", "。", " ", "\n", "ab", "x" * 70]) for _ in range(300)).encode()
    path = tmp_path / "c.txt"
    path.write_bytes(data)
    corpus = Corpus.from_file(path) if from_file else Corpus.from_lines(data.split(b"\n"))
    for start, stop in [(0, None), (7, len(data) - 5), (len(data) // 2, None), (3, 3)]:
        seen = [bytes(block) for block in reused_blocks(corpus._reader, start, stop, block_bytes,
                                                        after_last_delimiter)]
        assert b"".join(seen) == data[start:stop]
        assert all(block and block[-1:] in (b" ", b"\n") for block in seen[:-1])


def test_part_cuts_read_a_corpus_without_delimiters_once():
    """Shares that fall inside one long run look for its end once: a corpus without a
    delimiter is read about once, not once per share."""
    from bbpe.common.blocks import FIRST_LF, memory_reader, part_cuts

    data = b"x" * 300_000 + b"\nend"
    read = [0]
    with memory_reader(data) as read_into:

        def counting(offset, view):
            n = read_into(offset, view)
            read[0] += n
            return n

        assert part_cuts(counting, len(data), 100, FIRST_LF) == [0, 300_001, len(data)]
        assert read[0] < 2 * len(data)
        assert part_cuts(counting, len(data), 100) == [0, 300_001, len(data)]  # LF is a delimiter too
        read[0] = 0
        assert part_cuts(counting, 300_000, 100) == [0, 300_000]  # no delimiter in these bytes at all
        assert read[0] < 2 * len(data)


@pytest.mark.parametrize("from_file", [True, False])
@pytest.mark.parametrize("block_bytes", [1, 4, 50, 1 << 20])
def test_line_ranges_are_whole_lines(tmp_path, from_file, block_bytes):
    """The stored encodings' ranges: consecutive, each ending right after an LF (or at the
    end), and together the corpus."""
    data = "\n\n天地 一人\n天地二人,x\n\n\n天地三人\n天地四人".encode() * 7
    path = tmp_path / "c.txt"
    path.write_bytes(data)
    corpus = Corpus.from_file(path) if from_file else Corpus.from_lines(data.split(b"\n"))
    ranges = corpus.line_ranges(block_bytes)
    assert ranges[0][0] == 0 and ranges[-1][1] == len(data)
    assert all(a[1] == b[0] and a[0] < a[1] for a, b in itertools.pairwise(ranges))
    assert all(data[stop - 1 : stop] == b"\n" for _, stop in ranges[:-1])
    assert len(ranges) > 1 or block_bytes > len(data) // 2
    assert Corpus.from_file(path, gbk=True).line_ranges(block_bytes) is None
    assert Corpus.from_file(path, windows=True).line_ranges(block_bytes) is None


def test_a_pipe_is_copied_first(tmp_path):
    """Training reads the corpus twice, at offsets, which a pipe cannot do: a pipe is
    copied to a temporary file first (``bbpe train <(zcat c.gz)``), which goes with the
    corpus. The result is the file's."""
    import gc
    import os
    import threading
    import weakref

    data = "天地一人\n天地二人\n\n天地三人，天地\n".encode() * 50
    path = tmp_path / "c.txt"
    path.write_bytes(data)
    read_end, write_end = os.pipe()
    writer = threading.Thread(target=lambda: (os.write(write_end, data), os.close(write_end)))
    writer.start()
    try:
        corpus = Corpus.from_file(f"/dev/fd/{read_end}")
    finally:
        writer.join()
        os.close(read_end)
    assert corpus.name == f"/dev/fd/{read_end}" and corpus.size == len(data)
    spool = weakref.ref(corpus._spool)
    assert list(corpus.texts()) == list(Corpus.from_file(path).texts())
    assert [bytes(b) for b in corpus.training_blocks()] == [bytes(b) for b in Corpus.from_file(path).training_blocks()]
    del corpus
    gc.collect()
    assert spool() is None  # closed and gone with the corpus (an unnamed file on Linux: gone even if killed)
    assert list(Corpus.from_file("/dev/null").texts()) == []  # a device that reads at offsets: as it is


def test_a_pipe_with_invalid_utf8_is_named_as_given():
    """The warning names the pipe the user gave (``/dev/fd/N``), not the spool behind it."""
    import os
    import threading

    import bbpe

    data = "天地一人\n天地二人\n".encode() * 20 + b"\xff\xfe\n"
    read_end, write_end = os.pipe()
    writer = threading.Thread(target=lambda: (os.write(write_end, data), os.close(write_end)))
    writer.start()
    try:
        with pytest.warns(bbpe.CorpusWarning, match=f"/dev/fd/{read_end}.*offset {len(data) - 3}"):
            bbpe.Tokenizer.train(f"/dev/fd/{read_end}", 300)
    finally:
        writer.join()
        os.close(read_end)
