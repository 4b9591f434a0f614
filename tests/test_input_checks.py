"""No silent wrong results: every public call checks its arguments and names the argument,
the position in a batch and the type; a corpus that is not UTF-8, an empty one and one with
nothing to merge are said to be so (docs/errors.md has a row for each case)."""

from __future__ import annotations

import random
import subprocess
import sys

import numpy as np
import pytest
from conftest import TANG300
from hypothesis import given
from hypothesis import strategies as st

import bbpe
from bbpe.codec import utf8_valid_prefix
from bbpe.common.corpus import Corpus


@pytest.fixture(scope="module")
def tok():
    return bbpe.Tokenizer.train(TANG300, 1000)


@pytest.mark.parametrize(("text", "message"), [
    (None, "text must be a str or a bytes-like object, got NoneType"),
    (5, "got int"),
    (["床"], "got list"),
    (np.zeros(3, dtype=np.int32), "a buffer of 'i' items"),
])
def test_encode_refuses_what_is_not_a_text(tok, text, message):
    with pytest.raises(TypeError, match=message):
        tok.encode(text)
    with pytest.raises(TypeError, match=message):
        tok.encode(text, out="numpy")


def test_encode_batch_names_the_bad_position(tok):
    with pytest.raises(TypeError, match=r"texts\[1\] must be a str or a bytes-like object, got int"):
        tok.encode_batch(["a", 5])
    with pytest.raises(TypeError, match=r"texts\[0\] .* got NoneType"):
        tok.encode_batch([None], out="numpy")
    with pytest.raises(TypeError, match="got one str .encode takes a single text"):
        tok.encode_batch("床前明月光")
    with pytest.raises(TypeError, match="texts must be a sequence of texts, got int"):
        tok.encode_batch(5)
    with pytest.raises(TypeError, match=r"gbk=True takes the GBK bytes of texts\[0\], not a str"):
        tok.encode_batch(["床"], gbk=True)


def test_ids_and_corpus_paths_are_checked(tok):
    with pytest.raises(TypeError, match="ids must be an integer or a sequence of integers, got NoneType"):
        tok.decode(None)
    with pytest.raises(TypeError, match="the corpus must be a path or a list of paths .* got int"):
        bbpe.Tokenizer.train(5)
    with pytest.raises(TypeError, match="got bytes"):
        bbpe.Tokenizer.train(b"corpus.txt")


def test_training_lines_are_checked():
    with pytest.raises(TypeError, match="got one str; to train on a file, give its path to Tokenizer.train"):
        bbpe.Tokenizer.train_from_iterator(str(TANG300))
    with pytest.raises(TypeError, match=r"lines\[0\] must be a str or bytes, got int"):
        bbpe.Tokenizer.train_from_iterator([1, 2, 3])
    with pytest.raises(TypeError, match=r"lines\[2\] must be a str or bytes, got NoneType"):
        bbpe.Tokenizer.train_from_iterator(["a", b"b", None])
    with pytest.raises(TypeError, match="lines must be an iterable of str or bytes lines, got int"):
        bbpe.Tokenizer.train_from_iterator(5)


@given(st.lists(st.sampled_from([b"a", b"\n", "天".encode(), "é".encode(), "𡵓".encode(), b"\xff", b"\xe5",
                                 b"\xed\xa0\x80", b"\xc0\xaf", b"\xf4\x90\x80\x80", b"\xe5\xa4", b"\xf0\x9f"]),
                max_size=40).map(b"".join),
       st.sampled_from([1, 2, 3, 5, 64]))
def test_the_utf8_check_agrees_with_python(data, chunk):
    """The codec's validator, in one call and across chunks cut anywhere, finds the first
    sequence Python's strict decoder refuses, and its line."""
    try:
        data.decode("utf-8")
        expected, cut = None, False
    except UnicodeDecodeError as err:
        expected, cut = err.start, err.reason == "unexpected end of data"
    valid, invalid = utf8_valid_prefix(data)
    assert valid == (len(data) if expected is None else expected)
    assert invalid == (expected is not None and not cut)  # a char the end cuts is not (yet) invalid
    corpus = Corpus(lambda _: (data[i : i + chunk] for i in range(0, len(data), chunk)), size=len(data))
    found = corpus.first_invalid_utf8()
    whole = Corpus.from_lines([data]).first_invalid_utf8()
    assert found == whole
    if expected is None:
        assert found is None
    else:
        assert found == ("<lines>", expected, data[:expected].count(b"\n") + 1)


def test_a_corpus_that_is_not_utf8_is_named(tmp_path):
    """Trained without gbk=True, a GBK corpus trains as the C++ trains it (the same
    vocabulary), with a warning naming the file, the offset and the line; strict refuses."""
    path = tmp_path / "gbk.txt"
    lines = ["ascii first", "床前明月光，疑是地上霜。举头望明月，低头思故乡。"] * 50
    path.write_bytes("\n".join(lines).encode("gbk"))
    offset = len(lines[0]) + 1
    with pytest.warns(bbpe.CorpusWarning, match=rf"gbk.txt: byte offset {offset} \(line 2\) is not UTF-8.*--gbk"):
        tok = bbpe.Tokenizer.train(path, 1000)
    with pytest.raises(bbpe.CorpusError, match=rf"gbk.txt: byte offset {offset} \(line 2\)"):
        bbpe.Tokenizer.train(path, 1000, strict=True)
    with pytest.warns(bbpe.CorpusWarning, match=rf"gbk.txt: byte offset {offset} \(line 2\)"):
        assert bbpe.Tokenizer.train([TANG300, path], 1000).keys != tok.keys  # named in its own file
    out = tmp_path / "m.bin"
    run = subprocess.run([sys.executable, "-m", "bbpe", "train", str(path), "-o", str(out), "-q", "--strict"],
                         check=False, capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 1 and not out.exists()
    assert run.stderr.startswith("bbpe: error: ") and "is not UTF-8" in run.stderr and run.stderr.count("\n") == 1
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bbpe.Tokenizer.train(path, 1000, gbk=True)  # read as GBK: nothing to say


def test_nothing_to_learn_is_said(tmp_path):
    with pytest.warns(bbpe.CorpusWarning, match="<lines>: the corpus is empty"):
        bbpe.Tokenizer.train_from_iterator([], 1000)
    with pytest.warns(bbpe.CorpusWarning, match="no pair of chars that occurs twice"):
        bbpe.Tokenizer.train_from_iterator(["abcdefg"], 1000)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bbpe.Tokenizer.train_from_iterator(["abcdefg"], 270)  # no room to learn anything: nothing to say
        bbpe.Tokenizer.train_from_iterator(["abab"], 1000)


def test_binary_junk_is_named_at_its_first_bad_byte(tmp_path):
    rng = random.Random(7)
    data = "天地\n".encode() * 3 + bytes(rng.randrange(256) for _ in range(1000))
    path = tmp_path / "junk.txt"
    path.write_bytes(data)
    with pytest.raises(UnicodeDecodeError) as bad:
        data.decode("utf-8")
    line = data[: bad.value.start].count(b"\n") + 1
    assert Corpus.from_file(path).first_invalid_utf8() == (str(path), bad.value.start, line)


def test_one_id_may_be_a_zero_dimensional_array(tok):
    ids = tok.encode("床前")
    assert tok.decoder().feed(np.array(ids[0])) == tok.decoder().feed(ids[0])
    assert tok.decode(np.array(ids[0])) == tok.decode([ids[0]])


def test_a_str_subclass_is_encoded_as_the_text_it_holds(tok):
    class Shown(str):
        def __str__(self) -> str:
            return "something else"

    assert tok.encode(Shown("床前")) == tok.encode("床前")
    assert tok.encode_batch([Shown("床前"), "明月"]) == [tok.encode("床前"), tok.encode("明月")]


def test_id_errors_name_the_position_and_the_whole_vocabulary():
    """With added special tokens the ids run past the model's: every error says where the
    bad item is among all the ids given, and the ids there are."""
    tok = bbpe.Tokenizer.train(TANG300, 800)
    tok.add_special_tokens(["<|e|>"])
    top = len(tok) - 1
    with pytest.raises(bbpe.UnknownIdError, match=f"unknown id 99999 at position 1 .*0..{top}"):
        tok.convert_ids_to_tokens([1, 99999])
    with pytest.raises(TypeError, match=r"ids\[1\] must be an integer, got float"):
        tok.convert_ids_to_tokens([1, 2.5])
    with pytest.raises(bbpe.UnknownIdError, match=f"unknown id -1 at position 0 .*0..{top}"):
        tok.decode([-1])
    with pytest.raises(TypeError, match=r"ids\[1\] must be an integer, got str"):
        tok.decode([800, "1"])
    with pytest.raises(TypeError, match=r"one sequence of ids, got a sequence of list: use batch_decode"):
        tok.decode([[800, 97]])
    with pytest.raises(TypeError, match=r"ids\[1\] must be an integer, got list"):
        tok.decode([800, [97]])
    with pytest.raises(TypeError, match="got float at position 1"):
        tok.decoder().feed([800, 1.5])
    with pytest.raises(bbpe.UnknownIdError, match=f"unknown id 5000 at position 2 .*0..{top}"):
        tok.decoder().feed([800, 97, 5000])
    with pytest.raises(TypeError, match="^text must be a str"):
        tok.encode_with_offsets(None)
    assert tok.convert_tokens_to_ids(bytearray(b"a")) == tok.token_to_id(b"a") == 97
