"""encode(out="numpy"), encode_batch, encode_file and the incremental decoder."""

from __future__ import annotations

import random

import numpy as np
import pytest
from conftest import DATA, TANG300
from hypothesis import given, settings
from hypothesis import strategies as st

import bbpe


@pytest.fixture(scope="module")
def tok():
    return bbpe.Tokenizer.load(DATA / "golden" / "tang300_v1.bin")


def lines_of(seed: int, count: int = 300) -> list[bytes]:
    rng = random.Random(seed)
    poems = TANG300.read_bytes().split(b"\n")
    out = []
    for _ in range(count):
        r = rng.random()
        out.append(rng.choice(poems) if r < 0.6 else rng.randbytes(rng.randrange(40)) if r < 0.8
                   else "".join(rng.choice("天地人<>/S，。ab\r") for _ in range(rng.randrange(30))).encode())
    return out


def test_numpy_output(tok):
    for line in lines_of(1):
        arr = tok.encode(line, out="numpy")
        assert arr.dtype == np.uint32 and arr.tolist() == tok.encode(line)
    with pytest.raises(ValueError, match="out must be"):
        tok.encode("x", out="tuple")


@pytest.mark.parametrize("threads", [None, 1, 2, 3, 8])
def test_batch_equals_one_by_one(tok, threads):
    texts = lines_of(threads or 0)
    texts[5] = texts[5].decode("utf-8", "surrogateescape")  # a str among bytes
    expected = [tok.encode(t) for t in texts]
    assert tok.encode_batch(texts, num_threads=threads) == expected
    assert [a.tolist() for a in tok.encode_batch(texts, num_threads=threads, out="numpy")] == expected
    assert tok.encode_batch(texts, num_threads=threads, bug_compat=True) == [tok.encode(t, bug_compat=True) for t in texts]
    assert tok.encode_batch([]) == []


def test_batch_in_many_rounds_and_a_text_larger_than_a_round(tok):
    # encode_lists encodes about 2**18 ids per round: this batch takes several rounds, and
    # one text is larger than a round on its own
    texts = lines_of(3, count=3000) * 10
    big = b"".join(lines_of(4)) * 100
    texts.insert(len(texts) // 2, big)
    texts.append(bytearray(texts[1]))  # not str or bytes: converted first
    assert sum(map(len, texts)) > 4 << 18 and len(big) > 2 << 18
    expected = [tok.encode(bytes(t)) for t in texts]
    assert tok.encode_batch(texts, num_threads=1) == expected
    assert tok.encode_batch(texts, num_threads=2) == expected


def test_encode_file_streams_every_line(tok, tmp_path):
    lines = lines_of(7)
    lines = [line.replace(b"\n", b"") for line in lines] + [b"", b"last line, no LF"]
    path = tmp_path / "in.txt"
    path.write_bytes(b"\n".join(lines))
    assert list(tok.encode_file(path)) == [tok.encode(line) for line in lines]
    assert [a.tolist() for a in tok.encode_file(path, out="numpy")] == [tok.encode(line) for line in lines]
    gbk = tmp_path / "gbk.txt"
    gbk.write_bytes("床前明月光\n疑是地上霜\n".encode("gbk"))
    assert list(tok.encode_file(gbk, gbk=True)) == [tok.encode("床前明月光"), tok.encode("疑是地上霜")]


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=60))
def test_streaming_decoder_valid_text(tok, text):
    ids = tok.encode(text)
    d = tok.decoder()
    pieces = [d.feed(i) for i in ids]
    assert "".join(pieces) + d.flush() == text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    assert d.pending == b""


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=60), split=st.integers(1, 5))
def test_streaming_decoder_any_bytes(tok, data, split):
    """Fed in any grouping, the stream gives what a one-shot decode gives, and each piece
    ends on a char boundary (so a UI never shows half a char)."""
    ids = tok.encode(data)
    d = tok.decoder()
    out = []
    for k in range(0, len(ids), split):
        out.append(d.feed(ids[k : k + split]))
    out.append(d.flush())
    assert "".join(out) == data.decode("utf-8", "replace")


def test_streaming_decoder_holds_partial_chars(tok):
    d = tok.decoder()
    assert (d.feed(0xE4), d.pending) == ("", b"\xe4")
    assert (d.feed(0xB9), d.pending) == ("", b"\xe4\xb9")
    assert d.feed(0x9D) == "九" and d.pending == b""
    assert d.feed(0xE4) == "" and d.flush() == "\ufffd"
    with pytest.raises(bbpe.UnknownIdError, match="unknown id 10000000 at position 1"):
        d.feed([1, 10_000_000])


@pytest.mark.parametrize("compat", [False, True])
def test_encode_lines_into_both_layouts(tok, compat):
    """A block's training texts (Q18) into caller buffers: ids plus lengths, or the .bin
    layout (each length, then its ids); both agree with encoding the texts one by one."""
    import numpy as np

    from bbpe.codec import lines_bound

    block = "天地一人\n\n天<P>地\n人人天地\n\nabc".encode()
    texts = ["天地一人\n", "天<P>地", "人人天地\n", "abc\n"]
    expected = [tok.encode(t, bug_compat=compat) for t in texts]
    bound = lines_bound(len(block), compat)
    ids, lengths = np.empty(bound, dtype=np.int64), np.empty(len(block) + 1, dtype=np.int64)
    n, words = tok.model.encode_lines_into(block, True, compat, ids, lengths)
    assert n == 4 and lengths[:n].tolist() == list(map(len, expected))
    assert ids[:words].tolist() == [x for e in expected for x in e]
    n, words = tok.model.encode_lines_into(block, True, compat, ids)
    assert n == 4 and ids[:words].tolist() == [x for e in expected for x in (len(e), *e)]
    with pytest.raises(ValueError, match="ids holds 3 words"):
        tok.model.encode_lines_into(block, True, compat, ids[:3])
    with pytest.raises(ValueError, match="lengths holds 1 words"):
        tok.model.encode_lines_into(block, True, compat, ids, lengths[:1])


def test_result_lists_are_plain_lists_the_collector_skips(tok):
    """Result lists hold only ints, so the cyclic collector need not track them (a program
    that keeps millions of them would otherwise pay for them in every collection); they
    are ordinary lists all the same."""
    import gc

    one = tok.encode("床前明月光")
    batch = tok.encode_batch(["床前", "明月光"] * 50, num_threads=2)
    assert not gc.is_tracked(one) and not any(gc.is_tracked(ids) for ids in batch)
    assert type(one) is list and one == list(one)
    one.append(5)
    assert one[-1] == 5 and one[:-1] == tok.encode("床前明月光")


def test_batch_lists_count_their_references(tok):
    """encode_lists writes the items without the GIL and adds the references per id after
    (``_add_references``): every shared int's count is back where it was once the lists go,
    on one thread or two, and when the batch is refused."""
    import sys

    texts = lines_of(3, count=2000) * 3
    expected = [tok.encode(t) for t in texts]
    probe = next(i for ids in expected for i in ids if i > 256)  # not a small int: those are immortal on 3.12
    before = sys.getrefcount(probe)
    for threads in (1, 2):
        got = tok.encode_batch(texts, num_threads=threads)
        assert got == expected
        assert sys.getrefcount(probe) == before + sum(ids.count(probe) for ids in got)
        del got
        assert sys.getrefcount(probe) == before
    with pytest.raises(TypeError):
        tok.model.encode_lists([*texts, 5])
    assert sys.getrefcount(probe) == before


@pytest.mark.parametrize("method", ["encode_lists", "encode_many"])
def test_the_batch_encoders_take_a_range_of_the_list(tok, method):
    """encode_batch hands its threads ranges of one list (no slices for the collector to
    walk); a range is the slice's result, and out-of-range bounds clip as slices do."""
    texts = lines_of(5, count=40)
    encode = getattr(tok.model, method)
    for start, stop in ((7, 19), (30, 500), (12, None), (50, 60), (-5, None)):
        assert encode(texts, False, start, stop) == encode(texts[start:stop]), (start, stop)
    assert tok.model.encode_lists(texts, False, 7, 19) == tok.model.encode_lists(texts)[7:19]
