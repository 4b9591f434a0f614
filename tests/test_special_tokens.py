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
    assert tok.added_special_tokens == {b"<|endoftext|>": n, LONG.encode(): n + 1}
    tok.added_special_tokens.clear()  # a copy: the tokenizer keeps its own
    assert len(tok.added_special_tokens) == 2 and plain.added_special_tokens == {}


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
    assert tok.add_special_tokens(["<S>"]) == 0  # no new id: transformers counts the tokens it adds
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


def test_one_disallowed_token_as_a_str_is_that_token(tok):
    """tiktoken takes ``disallowed_special`` as a set; one str means that token, never its chars."""
    tok.add_special_tokens(["<|endoftext|>"])
    with pytest.raises(ValueError, match="holds the special token"):
        tok.encode("天<|endoftext|>", disallowed_special="<|endoftext|>")
    assert tok.encode("天<|e", disallowed_special="<|endoftext|>") == bbpe.Tokenizer(tok.keys).encode("天<|e")


def test_encode_file_matches_special_tokens_as_encode_does(tok, tmp_path):
    tok.add_special_tokens(["<|endoftext|>"])
    lines = ["床前<|endoftext|>明月", "", "疑是地上霜<|endoftext|>"]
    path = tmp_path / "lines.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert list(tok.encode_file(path)) == [tok.encode(line) for line in lines]
    assert [a.tolist() for a in tok.encode_file(path, out="numpy")] == [tok.encode(line) for line in lines]


def test_decoding_ids_with_special_tokens_checks_each_id(tok):
    tok.add_special_tokens([LONG])
    n = len(tok) - 1
    assert tok.decode([5, n]) == tok.decode([5]) + LONG
    with pytest.raises(TypeError, match=r"ids\[0\] must be an integer, got float"):
        tok.decode([5.9, n])
    with pytest.raises(bbpe.UnknownIdError) as err:
        tok.decode([5, 6, n, 7, -1])
    assert (err.value.id, err.value.position) == (-1, 4)  # the position in the whole input


def test_saved_special_token_ids_are_checked(tok, tmp_path):
    """A JSON file whose special tokens skip an id, or give a vocabulary token another
    token's id, would make add and decode wrong: refused, naming the token."""
    import json

    tok.add_special_tokens([LONG, "<|b|>"])
    document = json.loads(tok.to_bytes(format="json"))
    for entry, message in (({"id": len(tok) + 3, "content": "<|c|>"}, "has id"),
                           ({"id": 5, "content": "<|d|>"}, "has id 5"),
                           ({"id": len(tok), "content": tok.id_to_token(300)}, "expected 300")):
        bad = dict(document, added_tokens=[*document["added_tokens"], entry])
        path = tmp_path / "bad.json"
        path.write_text(json.dumps(bad), encoding="utf-8")
        with pytest.raises(bbpe.FormatError, match=f"bad.json: .*{message}"):
            bbpe.load(path)
    assert bbpe.from_bytes(tok.to_bytes(format="json")).special_tokens == tok.special_tokens


def test_a_bin_warns_of_what_it_does_not_keep(tok, tmp_path):
    tok.set_template("<S> $A </S>")
    tok.padding_side = "left"
    with pytest.warns(UserWarning, match="the template, padding_side set on this tokenizer are not saved"):
        tok.save(tmp_path / "m.bin")
    with pytest.raises(ValueError, match="padding_side must be 'left' or 'right', got 'Left'"):
        tok.padding_side = "Left"


def test_transformers_dict_form_is_refused(tok):
    """``add_special_tokens({"pad_token": "<pad>"})`` is transformers' call: its keys are
    roles, and adding them as tokens would make "pad_token" in a text one id."""
    with pytest.raises(TypeError, match=r"got a dict .*write \['<pad>'\]"):
        tok.add_special_tokens({"pad_token": "<pad>"})
    assert tok.added_special_tokens == {}
    assert tok.encode("pad_token") == tok.encode("pad_token", split_special_tokens=True)


def test_a_lone_surrogate_special_token_is_matched_in_str_and_bytes(tok):
    """add keeps a str's lone surrogate (surrogatepass), as str input is encoded: the token
    is matched in both kinds of input, with offsets in each one's units."""
    tok.add_special_tokens(["\ud800"])
    kid = tok.added_special_tokens[b"\xed\xa0\x80"]
    text = "a\ud800b"
    assert tok.encode(text) == tok.encode(text.encode("utf-8", "surrogatepass")) == [97, kid, 98]
    assert tok.encode_with_offsets(text)[1] == [(0, 1), (1, 2), (2, 3)]
