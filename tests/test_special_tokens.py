"""Added special tokens: matched whole before the model runs, any length, kept through
pickling and the JSON file; per call treated as text (HF's ``split_special_tokens``) or
refused (tiktoken's ``disallowed_special``); XBBPE's own three keep the C++ behaviour."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from conftest import TANG300

import bbpe

LONG = "<|a special token much longer than the 24 bytes of a key|>"


@pytest.fixture
def tok():
    t = bbpe.Tokenizer.train(TANG300, 2000)
    return t


def test_special_tokens_are_matched_whole(tok):
    plain = bbpe.Tokenizer(tok.keys)
    n = len(tok)
    assert tok.add_special_tokens(["<|endoftext|>", LONG]) == 2
    assert tok.add_special_tokens(["<|endoftext|>"]) == 0  # already there
    assert len(tok) == n + 2 and tok.special_tokens["<|endoftext|>"] == n and tok.special_tokens[LONG] == n + 1
    text = f"床前明月光{LONG}疑是<|endoftext|>地上霜<|endoftext|>"
    ids = tok.encode(text)
    assert ids == (plain.encode("床前明月光") + [n + 1] + plain.encode("疑是") + [n] + plain.encode("地上霜") + [n])
    assert tok.decode(ids) == text and tok.decode_bytes(ids) == text.encode()
    assert tok.encode(text.encode()) == ids  # bytes input: matched as bytes
    assert tok.encode_batch([text, "x"]) == [ids, plain.encode("x")]
    assert tok.encode(text, out="numpy").tolist() == ids
    assert tok.id_to_token(n + 1) == LONG and tok.token_to_id(LONG) == n + 1
    assert tok.get_vocab()[LONG] == n + 1


def test_the_longest_special_token_wins(tok):
    tok.add_special_tokens(["<|a|>", "<|a|><|b|>"])
    assert tok.encode("<|a|><|b|>") == [tok.token_to_id("<|a|><|b|>")]
    assert tok.encode("<|a|>") == [tok.token_to_id("<|a|>")]


def test_per_call_switches(tok):
    plain = bbpe.Tokenizer(tok.keys)
    tok.add_special_tokens(["<|endoftext|>"])
    text = "天<|endoftext|>地"
    assert tok.encode(text, split_special_tokens=True) == plain.encode(text)
    assert tok.encode_batch([text], split_special_tokens=True) == [plain.encode(text)]
    with pytest.raises(ValueError, match=r"holds the special token '<\|endoftext\|>' at 1"):
        tok.encode(text, disallowed_special="all")
    with pytest.raises(ValueError, match="special token"):
        tok.encode(text, disallowed_special={"<|endoftext|>"})
    assert tok.encode(text, disallowed_special={"<|other|>"}) == tok.encode(text)


def test_an_existing_key_becomes_special_with_its_id(tok):
    n = len(tok)
    assert tok.add_special_tokens(["<S>"]) == 1
    assert len(tok) == n and tok.special_tokens["<S>"] == tok.bos_id
    assert tok.encode("天<S>地")[1] == tok.bos_id


def test_xbbpe_specials_keep_the_cpp_behaviour(tok):
    assert tok.special_tokens == {"<P>": tok.pad_id, "<S>": tok.bos_id, "</S>": tok.eos_id}
    assert tok.encode("<S>") == [tok.bos_id] and tok.encode("<P>x") == [tok.pad_id, ord("x")]


def test_special_tokens_survive_pickling_and_json(tok, tmp_path):
    tok.add_special_tokens(["<|endoftext|>", LONG, b"\xff\xfe raw bytes"])
    tok.set_template("<S> $A </S>")
    text = f"a{LONG}b<|endoftext|>"
    for again in (pickle.loads(pickle.dumps(tok)), bbpe.from_bytes(tok.to_bytes(format="json"))):
        assert again.encode(text) == tok.encode(text) and again.special_tokens == tok.special_tokens
        assert again("x")["input_ids"] == tok("x")["input_ids"]
    path = tmp_path / "model.json"
    tok.save(path)
    loaded = bbpe.load(path)
    assert loaded.keys == tok.keys and loaded.encode(text) == tok.encode(text)
    assert loaded.encode(b"x\xff\xfe raw bytes") == tok.encode(b"x\xff\xfe raw bytes")
    assert np.array_equal(loaded.record_order, tok.record_order)
    with pytest.raises(ValueError, match="a .bin holds the vocabulary's keys only"):
        tok.save(tmp_path / "model.bin")
    assert not (tmp_path / "model.bin").exists()


def test_the_stream_decoder_gives_special_tokens(tok):
    tok.add_special_tokens([LONG])
    ids = tok.encode(f"九{LONG}天")
    decoder = tok.decoder()
    assert "".join(decoder.feed(i) for i in ids) + decoder.flush() == f"九{LONG}天"
    byte_ids = list("九".encode())
    decoder = tok.decoder()
    assert decoder.feed(byte_ids[:2]) == ""
    resumed = pickle.loads(pickle.dumps(decoder))
    assert resumed.feed([byte_ids[2], tok.token_to_id(LONG)]) == "九" + LONG


def test_bad_special_tokens_are_refused(tok):
    with pytest.raises(TypeError, match=r"got one str \(write \['<\|x\|>'\]\)"):
        tok.add_special_tokens("<|x|>")
    with pytest.raises(TypeError, match=r"tokens\[1\] must be a str or bytes, got int"):
        tok.add_special_tokens(["<|x|>", 5])
    with pytest.raises(ValueError, match=r"tokens\[0\] is empty"):
        tok.add_special_tokens([""])
