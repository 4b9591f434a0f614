"""The .bin reader: valid files load, every malformed file raises FormatError with the offset."""

from __future__ import annotations

import itertools
import struct
import sys

import numpy as np
import pytest
from conftest import DATA
from hypothesis import given
from hypothesis import strategies as st

import bbpe
from bbpe.xbbpe.binfile import RECORD, _first_repeat, parse_bin

SMALL = DATA / "golden" / "song100_v800.bin"


@pytest.fixture(scope="module")
def tiny() -> bytes:
    """A real file with few encodings: the empty corpus (270 ids, 0 encodings) + one text."""
    tok = bbpe.Tokenizer.train_from_iterator(["天地一人", "天地二人"], 1000)
    return tok.to_bytes()


def records_of(data: bytes) -> np.ndarray:
    (n,) = struct.unpack_from("<Q", data)
    return np.frombuffer(data, dtype=RECORD, count=n, offset=8).copy()


def with_records(data: bytes, records: np.ndarray) -> bytes:
    return data[:8] + records.tobytes() + data[8 + 40 * records.shape[0] :]


def test_every_truncation_is_an_error(tiny):
    for cut in range(len(tiny)):
        with pytest.raises(bbpe.FormatError):
            parse_bin(tiny[:cut], "t.bin")


def test_message_names_file_and_offset(tiny, tmp_path):
    path = tmp_path / "cut.bin"
    path.write_bytes(tiny[:100])
    with pytest.raises(bbpe.FormatError, match=r"cut\.bin: offset 0: vocabulary count \d+ needs") as info:
        bbpe.Tokenizer.load(path)
    assert info.value.offset == 0 and info.value.path == str(path)


@pytest.mark.parametrize("data,offset,message", [
    (b"", 0, "too short"),
    (b"abc", 0, "too short"),
    (struct.pack("<Q", 2**63) + bytes(16), 0, "vocabulary count"),
    (b"this is a text file, not a vocabulary\n", 0, "this is a text file, not a .bin model"),
])
def test_small_garbage(data, offset, message):
    with pytest.raises(bbpe.FormatError, match=message) as info:
        parse_bin(data)
    assert info.value.offset == offset


def test_record_fields_are_checked(tiny):
    base = records_of(tiny)

    def broken(change):
        recs = base.copy()
        change(recs)
        return with_records(tiny, recs)

    cases = [
        (lambda r: r.__setitem__(("len"), np.where(np.arange(len(r)) == 5, 25, r["len"])), 8 + 40 * 5 + 24, "key length 25"),
        (lambda r: r["len"].__setitem__(7, 0), 8 + 40 * 7 + 24, "key length 0"),
        (lambda r: r["key"].__setitem__((3, 10), 1), 8 + 40 * 3 + 10, "nonzero byte"),
        (lambda r: r["id"].__setitem__(4, -1), 8 + 40 * 4 + 32, "id -1 is outside"),
        (lambda r: r["id"].__setitem__(4, len(r)), 8 + 40 * 4 + 32, "outside"),
        (lambda r: r["id"].__setitem__(9, r["id"][2]), 8 + 40 * 9 + 32, "already the id of record 2"),
    ]
    for change, offset, message in cases:
        with pytest.raises(bbpe.FormatError, match=message) as info:
            parse_bin(broken(change))
        assert info.value.offset == offset, message


def test_duplicate_key_and_missing_byte(tiny):
    recs = records_of(tiny)
    a = int(np.flatnonzero(recs["id"] == 65)[0])  # the byte 'A'
    b = int(np.flatnonzero(recs["id"] == 66)[0])
    recs["key"][b] = recs["key"][a]
    with pytest.raises(bbpe.FormatError, match="already the key of record|no record for the byte 0x42"):
        parse_bin(with_records(tiny, recs))


def test_duplicate_key_names_both_records(tiny):
    recs = records_of(tiny)
    long_keys = np.flatnonzero(recs["len"] > 1)
    first, second = int(long_keys[0]), int(long_keys[-1])  # a later record repeats an earlier key
    recs["key"][second], recs["len"][second] = recs["key"][first], recs["len"][first]
    with pytest.raises(bbpe.FormatError, match=f"record {second}: key .* already the key of record {first}") as info:
        parse_bin(with_records(tiny, recs))
    assert info.value.offset == 8 + 40 * second


def test_keys_differing_only_by_trailing_nul_are_distinct(tiny):
    recs = records_of(tiny)
    i = int(np.flatnonzero(recs["len"] > 1)[0])
    recs["key"][i] = 0
    recs["key"][i][0], recs["len"][i] = ord("a"), 2  # b"a\0": the same padded bytes as b"a"
    assert parse_bin(with_records(tiny, recs)).records.shape[0] == recs.shape[0]


@given(st.lists(st.integers(0, 6), max_size=30))
def test_first_repeat_is_the_first_index_seen_before(values):
    seen: dict[int, int] = {}
    expected = None
    for i, v in enumerate(values):
        if v in seen:
            expected = (i, seen[v])
            break
        seen[v] = i
    assert _first_repeat(np.array(values, dtype=np.int64)) == expected


def test_encodings_are_checked(tiny):
    n = records_of(tiny).shape[0]
    tail = 8 + 40 * n
    with pytest.raises(bbpe.FormatError, match="trailing data") as info:
        parse_bin(tiny + b"\0")
    assert info.value.offset == len(tiny)
    bad_count = tiny[:tail] + struct.pack("<Q", 10**12) + tiny[tail + 8 :]
    with pytest.raises(bbpe.FormatError, match="encoding count") as info:
        parse_bin(bad_count)
    assert info.value.offset == tail
    first_id = tail + 16  # after M and the first L
    bad_id = tiny[:first_id] + struct.pack("<q", 5000) + tiny[first_id + 8 :]
    with pytest.raises(bbpe.FormatError, match="encoding 0 holds id 5000") as info:
        parse_bin(bad_id)
    assert info.value.offset == first_id
    bad_len = tiny[: tail + 8] + struct.pack("<Q", 2**60) + tiny[tail + 16 :]
    with pytest.raises(bbpe.FormatError, match="encoding 0 has length") as info:
        parse_bin(bad_len)
    assert info.value.offset == tail + 8


def test_round_trip_through_bytes():
    data = SMALL.read_bytes()
    tok = bbpe.Tokenizer.load(SMALL)
    assert tok.to_bytes() == data
    assert len(tok) == 800 and len(tok.train_encodings) == 601


def test_save_is_atomic_and_leaves_no_temporary(tmp_path, tiny):
    path = tmp_path / "m.bin"
    tok = bbpe.Tokenizer.load(SMALL)
    tok.save(path)
    tok.save(path)  # replacing an existing file
    assert path.read_bytes() == SMALL.read_bytes()
    assert [p.name for p in tmp_path.iterdir()] == ["m.bin"]
    with pytest.raises(OSError):
        tok.save(tmp_path / "no-such-dir" / "m.bin")
    assert [p.name for p in tmp_path.iterdir()] == ["m.bin"]


@pytest.mark.parametrize("mode", ["lines", "windows", "gbk", "lossless"])
def test_training_straight_into_the_file(tmp_path, monkeypatch, mode):
    """``output=``: the .bin written while the encodings are made (in small blocks here,
    so that buffers are reused many times) is the one ``save`` writes, in every reading
    mode; the tokenizer keeps no encodings, and the file counts them."""
    from bbpe.xbbpe import binfile
    from bbpe.xbbpe import encodings as trainenc

    monkeypatch.setattr(trainenc, "BLOCK_BYTES", 50)
    lines = ["天地一人，天地二人", "", "床前明月光 abc<P>x", "天地一人\r", "", "", "天地二人"] * 9
    data = "\n".join(lines).encode()
    path, out = tmp_path / "c.txt", tmp_path / "out.bin"
    options = {"windows_text": mode == "windows", "gbk": mode == "gbk", "lossless_encodings": mode == "lossless"}
    if mode == "gbk":
        data = data.decode().encode("gbk")
    path.write_bytes(data + b"\x1a tail" if mode == "windows" else data)
    if mode == "lines":
        expected = bbpe.Tokenizer.train_from_iterator(data.split(b"\n"), 300).to_bytes()
        tok = bbpe.Tokenizer.train_from_iterator(data.split(b"\n"), 300, output=out)
    else:
        expected = bbpe.Tokenizer.train(path, 300, **options).to_bytes()
        tok = bbpe.Tokenizer.train(path, 300, output=out, **options)
    assert out.read_bytes() == expected
    assert tok.n_train_encodings == 0
    assert binfile.encoding_count(out) == len(bbpe.Tokenizer.load(out).train_encodings) == 4 * 9
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.txt", "out.bin"]  # no temporary left


@pytest.mark.parametrize("result", [0, -1])
def test_a_streamed_file_goes_to_disk_as_it_grows(tmp_path, monkeypatch, result):
    """The streamed ``.bin`` asks the kernel to start writing each new stretch of it
    (``_Writeback``): stretches in order, each from where the last ended; if the kernel
    refuses (-1: a filesystem without ``sync_file_range``), it is not asked again. The file
    is the same either way."""
    from bbpe.xbbpe import binfile
    from bbpe.xbbpe import encodings as trainenc

    monkeypatch.setattr(trainenc, "BLOCK_BYTES", 50)
    monkeypatch.setattr(binfile._Writeback, "STEP", 1)
    asked: list[tuple[int, int]] = []

    def start(fd: int, offset: int, nbytes: int, flags: int) -> int:
        assert flags == binfile._Writeback._SYNC_FILE_RANGE_WRITE
        asked.append((offset, nbytes))
        return result

    monkeypatch.setattr(binfile._Writeback, "_function", staticmethod(lambda: start))
    lines = ["天地一人，天地二人", "床前明月光 abc<P>x", "天地二人"] * 30
    out = tmp_path / "out.bin"
    bbpe.Tokenizer.train_from_iterator(lines, 300, output=out)
    assert out.read_bytes() == bbpe.Tokenizer.train_from_iterator(lines, 300).to_bytes()
    if result != 0:
        assert len(asked) == 1
        return
    assert len(asked) > 5
    header = 8 + 40 * records_of(out.read_bytes()).shape[0] + 8
    assert asked[0][0] == header
    assert all(a + n == b for (a, n), (b, _) in itertools.pairwise(asked))
    assert asked[-1][0] + asked[-1][1] == out.stat().st_size


def test_writeback_is_the_kernels_where_there_is_one():
    from bbpe.xbbpe import binfile

    function = binfile._Writeback._function()
    assert (function is not None) == sys.platform.startswith("linux")


def test_training_into_a_missing_directory_leaves_nothing(tmp_path):
    with pytest.raises(OSError):
        bbpe.Tokenizer.train_from_iterator(["天地一人", "天地二人"], 300, output=tmp_path / "nope" / "m.bin")
    assert list(tmp_path.iterdir()) == []
