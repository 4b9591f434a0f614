"""The encoder and decoder: QUIRKS examples, a literal model of the C++, and round trips."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import DATA, TANG300
from encode_model import encode as model_encode
from hypothesis import example, given, settings
from hypothesis import strategies as st

import bbpe
from bbpe.codec import Model

CASES = DATA / "cases"


@pytest.fixture(scope="module")
def models():
    """Vocabularies with short keys, long keys (21+ bytes) and tags inside keys."""
    return {
        "tang800": bbpe.Tokenizer.load(DATA / "golden" / "tang300_v800.bin"),
        "tang_all": bbpe.Tokenizer.load(DATA / "golden" / "tang300_v1.bin"),
        "k24": bbpe.Tokenizer.train(CASES / "k24.txt", 1000),
        "specials": bbpe.Tokenizer.train(CASES / "specials.txt", 1000),
        "cjk6": bbpe.Tokenizer.train(CASES / "cjk6.txt", 1000),
    }


def vocab_of(tok: bbpe.Tokenizer) -> dict[bytes, int]:
    return {k: i for i, k in enumerate(tok.keys)}


# --------------------------------------------------------------------------- QUIRKS examples


def test_tags_split_the_text(models):
    tok = models["cjk6"]
    assert tok.encode("<P>天地人</S>") == [272, 270, 277]  # Q13
    assert tok.encode("<<S>>") == [60, 274, 62]
    assert tok.encode("<x>abc") == [60, 120, 62, 97, 98, 99]


def test_greedy_needs_every_prefix():
    tok = bbpe.Tokenizer.train(CASES / "pref.txt", 1000)
    assert tok.encode("abc") == [97, 263]  # Q14: 'ab' is no key, so 'abc' is never reached


def test_byte_fallback(models):
    assert models["cjk6"].encode("人") == [228, 186, 186]  # Q15
    assert models["tang800"].encode(bytes.fromhex("e4ff62")) == [228, 255, 98]  # Q2: one 3-byte char


def test_chars_swallowed_at_24_bytes_only_with_bug_compat(models):
    tok = models["k24"]
    assert tok.encode("一二三四五六七八a九", bug_compat=True) == [268, 97, 228, 185, 157]  # Q14
    assert tok.encode("一二三四五六七é九", bug_compat=True) == [268, 195, 169, 228, 185, 157]
    ids = tok.encode("一二三四五六七八a九")
    assert ids[0] == 268 and tok.decode(ids) == "一二三四五六七八a九"


def test_cut_char_padded_with_nul_only_with_bug_compat(models):
    tok = models["tang800"]
    assert tok.encode(b"\xc3", bug_compat=True) == [195, 0]  # Q20.1
    assert tok.encode(b"\xe4\xb8", bug_compat=True) == [228, 184, 0]
    assert tok.encode(b"\xc3") == [195]
    assert tok.encode(b"\xe4\xb8") == [228, 184]


def test_tokenizer_bug_compat_default_and_override(models):
    tok = bbpe.Tokenizer(models["k24"].keys, bug_compat=True)
    assert tok.encode("一二三四五六七八九十") == [268]
    assert tok.decode(tok.encode("一二三四五六七八九十", bug_compat=False)) == "一二三四五六七八九十"


def test_long_tag_without_closing_bracket(models):
    """Q20.4: the reference's regex overflows its stack near 25 KB; bbpe handles any length."""
    text = b"<" + "天地".encode() * 100_000
    tok = models["tang800"]
    assert tok.decode_bytes(tok.encode(text)) == text


def test_empty_input(models):
    tok = models["tang800"]
    assert tok.encode("") == [] and tok.decode([]) == "" and tok.decode_bytes([]) == b""


# --------------------------------------------------------------------------- decoding


def test_unknown_ids_raise(models):
    tok = models["tang800"]
    for bad, pos in (([1, 2, 800], 2), ([-1], 0), ([5, 99999], 1)):
        with pytest.raises(bbpe.UnknownIdError, match=rf"unknown id {bad[pos]} at position {pos}") as info:
            tok.decode(bad)
        assert (info.value.id, info.value.position) == (bad[pos], pos)
    with pytest.raises(bbpe.UnknownIdError, match="unknown id 340282366920938463463374607431768211456 at position 1"):
        tok.decode([1, 2**128])
    with pytest.raises(TypeError):
        tok.decode([1.0])
    with pytest.raises(TypeError):
        tok.decode(np.array([1.5]))


def test_decode_accepts_numpy_and_iterables(models):
    tok = models["tang800"]
    ids = tok.encode("床前明月光")
    assert tok.decode(np.array(ids, dtype=np.int32)) == tok.decode(iter(ids)) == "床前明月光"
    assert tok.decode(np.array(ids, dtype=np.uint64)) == "床前明月光"


def test_decode_str_errors(models):
    tok = models["tang800"]
    assert tok.decode([0xE4]) == "\ufffd"
    assert tok.decode([0xE4], errors="surrogateescape") == "\udce4"
    with pytest.raises(UnicodeDecodeError):
        tok.decode([0xE4], errors="strict")


def test_model_rejects_bad_vocabularies():
    byte_keys = b"".join(bytes([b]) + bytes(23) for b in range(256))
    with pytest.raises(ValueError, match="no key for byte 0xff"):
        Model(byte_keys[: 255 * 24], bytes([1] * 255))
    with pytest.raises(ValueError, match="already the key"):
        Model(byte_keys + byte_keys[:24], bytes([1] * 257))


# --------------------------------------------------------------------------- properties

MODELS = ["tang800", "tang_all", "k24", "specials", "cjk6"]
texts = st.text(alphabet=st.sampled_from("一二三四五六七八九十天地人<>/PS 。，abc\né\U00021d53"), max_size=80)
bytes_near_vocab = st.lists(st.sampled_from([b"<", b">", b"\xe4", b"\xb8", b"\x80", b"\xf0", b"\xff", b"\0",
                                             "一二三四五六七".encode(), "八".encode(), b"a"]), max_size=40).map(b"".join)


@settings(max_examples=300, deadline=None)
@given(data=st.one_of(st.binary(max_size=200), bytes_near_vocab, texts.map(str.encode)), name=st.sampled_from(MODELS))
@example(data="一二三四五六七八九十".encode(), name="k24")
def test_codec_matches_literal_model(models, data, name):
    tok = models[name]
    vocab = vocab_of(tok)
    assert tok.encode(data, bug_compat=True) == model_encode(vocab, data, compat=True)
    assert tok.encode(data) == model_encode(vocab, data, compat=False)


@settings(max_examples=300, deadline=None)
@given(data=st.one_of(st.binary(max_size=300), bytes_near_vocab), name=st.sampled_from(MODELS))
def test_bytes_round_trip(models, data, name):
    tok = models[name]
    ids = tok.encode(data)
    assert tok.decode_bytes(ids) == data
    reference = tok.encode(data, bug_compat=True)
    if tok.decode_bytes(reference) == data:  # where the reference loses nothing, the same ids
        assert ids == reference


@settings(max_examples=300, deadline=None)
@given(text=st.one_of(st.text(max_size=100), texts), name=st.sampled_from(MODELS))
def test_text_round_trip(models, text, name):
    tok = models[name]
    assert tok.decode(tok.encode(text), errors="surrogatepass") == text


def test_corpus_lines_match_stored_encodings():
    """Q18: the stored encodings are Encode() of each line, "\\n" ending each paragraph."""
    tok = bbpe.Tokenizer.train(TANG300, 800)
    lines = [line for line in TANG300.read_bytes().split(b"\n") if line]
    stored = tok.train_encodings
    assert len(stored) == len(lines) == 2228
    assert [tok.decode_bytes(ids).rstrip(b"\n") for ids in stored] == lines


# Arbitrary vocabularies, not just trained ones: keys whose prefixes are no keys (the
# greedy cannot reach them), first chars that are no keys (virtual trie nodes), chains up
# to 24 bytes and chars cut short inside a key all go through the trie builder.
key_chars = st.sampled_from(["a", "b", "<", ">", "一", "二", "é", "\U00021d53"]).map(str.encode) | st.sampled_from(
    [b"\xe4\xb8", b"\xf0", b"\x80", b"\0"])
random_keys = st.lists(st.lists(key_chars, min_size=2, max_size=12).map(b"".join).filter(lambda k: len(k) <= 24),
                       max_size=60, unique=True)


@settings(max_examples=300, deadline=None)
@given(extra=random_keys, data=st.lists(key_chars, max_size=40).map(b"".join) | st.binary(max_size=60))
def test_arbitrary_vocabulary_matches_literal_model(extra, data):
    keys = [bytes([b]) for b in range(256)] + [k for k in extra if len(k) > 1]
    model = Model(b"".join(k.ljust(24, b"\0") for k in keys), bytes(len(k) for k in keys))
    vocab = {k: i for i, k in enumerate(keys)}
    for compat in (True, False):
        ids = model.encode(data, compat)
        assert ids == model_encode(vocab, data, compat=compat)
        if not compat:
            assert model.decode(ids) == data


# A str is encoded from its code units (Latin-1, UCS-2 or UCS-4), not from a UTF-8 copy:
# the ids must be those of its UTF-8 bytes, lone surrogates as surrogatepass writes them.
any_str = st.text(alphabet=st.characters(codec=None), max_size=80) | texts | st.text(
    alphabet=st.sampled_from("aé\xff<>天地人\ud800\udfff\U00021d53 "), max_size=60)


@settings(max_examples=400, deadline=None)
@given(text=any_str, name=st.sampled_from(MODELS), compat=st.booleans())
def test_str_encodes_as_its_utf8_bytes(models, text, name, compat):
    tok = models[name]
    data = text.encode("utf-8", "surrogatepass")
    assert tok.encode(text, bug_compat=compat) == tok.encode(data, bug_compat=compat)
    assert tok.encode_batch([text, text * 3], bug_compat=compat) == [tok.encode(data, bug_compat=compat),
                                                                     tok.encode(data * 3, bug_compat=compat)]
