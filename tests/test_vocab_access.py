"""Vocabulary access as HF ``tokenizers`` and transformers name it, tokens as text in one
invertible form (``bbpe.common.token_text``), and ids in every shape users hold them
(an int, numpy integers, numpy arrays, any sequence; numpy ``str_`` texts)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import TANG300
from hypothesis import given
from hypothesis import strategies as st

import bbpe
from bbpe.common.token_text import token_bytes, token_text


@pytest.fixture(scope="module")
def tok():
    return bbpe.Tokenizer.train(TANG300, 2000)


@given(st.binary(max_size=40) | st.lists(st.sampled_from([b"<0x", b"E5", b">", b"\xe5", b"\xa4", b"a", b"<", b"0x",
                                                           "天".encode(), b"\xff"]), max_size=12).map(b"".join))
def test_token_text_is_invertible(data):
    text = token_text(data)
    assert token_bytes(text) == data
    try:
        plain = data.decode("utf-8")
    except UnicodeDecodeError:
        assert "<0x" in text
    else:
        assert text == plain or "<0x" in plain


def test_two_tokens_never_read_the_same():
    tokens = [b"\xe5", b"<0xE5>", b"<0x3C>0xE5>", "天".encode(), "天".encode()[:2], b"<", b"<0x3C>"]
    assert len({token_text(t) for t in tokens}) == len(tokens)
    assert token_text(b"\xe5") == "<0xE5>" and token_text(b"<0xE5>") == "<0x3C>0xE5>"


def test_vocabulary_views_agree(tok):
    vocab = tok.get_vocab()
    assert len(vocab) == len(tok) == tok.vocab_size
    assert sorted(vocab.values()) == list(range(len(tok)))
    for token, i in vocab.items():
        assert tok.id_to_token(i) == token and tok.token_to_id(token) == i
        assert tok.token_to_id(tok.token_bytes(i)) == i
    assert tok.convert_ids_to_tokens([229, 257]) == ["<0xE5>", "，"]
    assert tok.convert_ids_to_tokens(np.int64(229)) == "<0xE5>"
    assert tok.convert_tokens_to_ids(["<0xE5>", "，", "no such token"]) == [229, 257, None]
    assert tok.token_to_id("，") == tok.token_id("，".encode()) == 257


def test_unknown_ids_and_wrong_types_are_named(tok):
    with pytest.raises(bbpe.UnknownIdError, match=f"unknown id {len(tok)}"):
        tok.id_to_token(len(tok))
    with pytest.raises(bbpe.UnknownIdError, match="unknown id -1"):
        tok.token_bytes(-1)
    with pytest.raises(TypeError, match="an id must be an integer, got float"):
        tok.id_to_token(1.0)
    with pytest.raises(TypeError, match="token must be a str or bytes, got int"):
        tok.token_to_id(5)
    with pytest.raises(TypeError, match="key must be bytes, got str"):
        tok.token_id("，")


def test_decode_takes_ids_in_every_shape(tok):
    ids = tok.encode("床前明月光")
    text = "床前明月光"
    for shaped in (ids, tuple(ids), np.array(ids), np.array(ids, dtype=np.uint16),
                   [np.int64(i) for i in ids], iter(ids)):
        assert tok.decode(shaped) == text
    for batch in (np.array([ids]), np.array([ids, ids]), [ids, ids], [np.array(ids)]):  # generate()'s output
        with pytest.raises(TypeError, match="use batch_decode"):
            tok.decode(batch)
    assert tok.batch_decode(np.array([ids, ids])) == tok.batch_decode([ids, ids]) == [text, text]
    one = ids[0]
    assert tok.decode_bytes(one) == tok.decode_bytes([one])
    assert tok.decode_bytes(np.int32(one)) == tok.decode_bytes(np.array(one)) == tok.token_bytes(one)
    with pytest.raises(TypeError, match="ids must be integers, got str"):
        tok.decode("床")
    with pytest.raises(TypeError, match="integers"):
        tok.decode(np.array([1.5]))


def test_the_stream_decoder_takes_numpy_integers(tok):
    decoder = tok.decoder()
    logits = np.zeros(len(tok))
    out = ""
    for b in "九".encode():
        logits[:] = 0
        logits[b] = 1
        out += decoder.feed(logits.argmax())  # a numpy integer, as in a generation loop
    assert out == "九"


def test_str_and_bytes_subclasses_are_texts(tok):
    assert tok.encode(np.str_("床前")) == tok.encode("床前")
    assert tok.encode(np.bytes_("床前".encode())) == tok.encode("床前")
    assert tok.encode_batch([np.str_("床前"), np.frombuffer("床前".encode(), dtype=np.uint8)]) == [tok.encode("床前")] * 2
