"""bbpe.WordPiece against HF tokenizers' ``BertWordPieceTokenizer`` (the oracle, installed by
the README's test command): the same ids and offsets for the same ``vocab.txt`` and options
on corpus lines and on hostile random text, the same decoding, ``normalize`` and
``pre_tokenize`` as HF's ``normalize_str`` and ``pre_tokenize_str``; the files both ways;
the seed's per-char unknown token against the seed's own encoder.

The vocabularies are trained by HF at the start of the session (cased and uncased), on the
Tang and Song poems and this repository's English docs: HF's WordPiece training is not
deterministic, and the parity holds for any vocabulary.
"""

from __future__ import annotations

import json
import pickle
import random
import unicodedata
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO, SONG100, TANG300
from hypothesis import given, settings
from hypothesis import strategies as st

import bbpe
from bbpe.errors import FormatError

tokenizers = pytest.importorskip("tokenizers", reason="the oracle is HF tokenizers: pip install 'bbpe[test]'")
from tokenizers import BertWordPieceTokenizer

ENGLISH = [REPO / "README.md", REPO / "CHANGELOG.md", REPO / "docs" / "design.md"]
OPTION_SETS = [  # (lowercase, strip_accents, handle_chinese_chars, clean_text)
    (True, None, True, True), (False, None, True, True), (True, False, True, True), (False, True, True, True),
    (True, None, False, True), (False, None, True, False), (True, True, False, False),
]


@pytest.fixture(scope="session")
def vocabs(tmp_path_factory: pytest.TempPathFactory) -> dict[bool, str]:
    """vocab.txt files HF trained: {lowercase: path}."""
    out = tmp_path_factory.mktemp("wordpiece")
    files = [str(p) for p in (TANG300, SONG100, *ENGLISH) if p.exists()]
    paths = {}
    for lower in (True, False):
        hf = BertWordPieceTokenizer(lowercase=lower)
        hf.train(files, vocab_size=2500, min_frequency=2, show_progress=False)
        paths[lower] = hf.save_model(str(out), f"lower{int(lower)}")[0]
    return paths


def _pair(vocabs, lower=True, strip=None, chinese=True, clean=True):
    options = {"lowercase": lower, "strip_accents": strip, "handle_chinese_chars": chinese, "clean_text": clean}
    return BertWordPieceTokenizer(vocabs[lower], **options), bbpe.WordPiece.from_vocab(vocabs[lower], **options)


def _lines() -> list[str]:
    lines = []
    for path in (TANG300, SONG100, *ENGLISH):
        if path.exists():
            lines += path.read_text(encoding="utf-8").split("\n")
    return lines


# hostile text: every plane, marks to reorder, controls, emoji, CJK compatibility chars,
# Hangul, the special tokens spelled out, long words
_POOLS = [
    (0x20, 0x7F), (0x80, 0x3000), (0x300, 0x370), (0x4E00, 0xA000), (0xF900, 0xFB00), (0x1F300, 0x1FB00),
    (0x0, 0x20), (0xAC00, 0xD7A4), (0x10000, 0x30000), (0x0, 0x110000),
]
_SPECIAL_CHARS = "\u0130\u1e9e\u03a3\ufffd\u200b\ufeff\u2028\u00a0\u3000\U0001d165\U0001d16d\u0345\u0f71\u0f72"
_FRAGMENTS = ["[UNK]", "[CLS]", "[SEP]", "[MASK]", " ", "  ", "\t", "\n", "ing", "the", "##", "don't", "É", "e\u0301",
              "x" * 101, "a\u0315\u0301", "\u1100\u1161"]


def _hostile(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.randint(0, 40)):
        kind = rng.random()
        if kind < 0.6:
            lo, hi = rng.choice(_POOLS)
            c = rng.randrange(lo, hi)
            parts.append(chr(c) if not 0xD800 <= c < 0xE000 else "?")
        elif kind < 0.8:
            parts.append(rng.choice(_SPECIAL_CHARS))
        else:
            parts.append(rng.choice(_FRAGMENTS))
    return "".join(parts)


def _assert_same(hf, tok, text):
    expected = hf.encode(text, add_special_tokens=False)
    ids, spans = tok.encode_with_offsets(text)
    assert ids == expected.ids, text
    assert spans == [tuple(o) for o in expected.offsets], text


# ---------------------------------------------------------------------------------- parity


@pytest.mark.parametrize("lower", [True, False], ids=["uncased", "cased"])
def test_every_corpus_line_encodes_as_hf(vocabs, lower):
    hf, tok = _pair(vocabs, lower)
    lines = _lines()
    assert len(lines) > 1000
    expected = [e.ids for e in hf.encode_batch(lines, add_special_tokens=False)]
    assert tok.encode_batch(lines) == expected
    assert [tok.encode(line) for line in lines] == expected
    with_specials = [e.ids for e in hf.encode_batch(lines[:200])]  # [CLS] ... [SEP]
    assert tok(lines[:200])["input_ids"] == with_specials


@pytest.mark.parametrize("options", OPTION_SETS, ids=lambda o: "-".join(map(str, o)))
def test_hostile_text_encodes_as_hf_with_its_offsets(vocabs, options):
    hf, tok = _pair(vocabs, *options)
    rng = random.Random(hash(options) & 0xFFFF)
    for _ in range(600):
        _assert_same(hf, tok, _hostile(rng))


@settings(max_examples=300, deadline=None)
@given(text=st.text(st.characters(exclude_categories=("Cs",)), max_size=60))
def test_any_text_encodes_as_hf(vocabs, text):
    for options in (OPTION_SETS[0], OPTION_SETS[1]):
        _assert_same(*_pair_cached(vocabs, options), text)


_PAIRS: dict = {}


def _pair_cached(vocabs, options):
    if options not in _PAIRS:
        _PAIRS[options] = _pair(vocabs, *options)
    return _PAIRS[options]


def test_marks_that_nfd_reorders_take_hf_spans(vocabs):
    """NFD sorts marks by combining class; HF's alignments then follow the crate's flags, not
    the marks (a mark moved first takes the span of the char it lands on)."""
    hf, tok = _pair(vocabs, True)
    for text in ("é\u0301\x16\U0001d165x", "a\u0301\u0315\u0300b", "\u1e69\u0323 \U0001d165\U0001d16d\u0301",
                 "Å\u0328\U0001d165", "x\u0345\u0301\u0315"):
        _assert_same(hf, tok, text)


def test_words_past_max_input_chars_are_unknown(vocabs):
    hf, tok = _pair(vocabs, True)
    for n in (99, 100, 101, 250):
        _assert_same(hf, tok, "a" * n + " b " + "é" * n)
    short = bbpe.WordPiece.from_vocab(vocabs[True], max_input_chars_per_word=3)
    assert short.encode("abcd ab") == [short.token_to_id("[UNK]"), *short.encode("ab")]


def test_bytes_input_gives_byte_offsets(vocabs):
    _, tok = _pair(vocabs, True)
    rng = random.Random(3)
    for _ in range(200):
        text = _hostile(rng)
        ids, spans = tok.encode_with_offsets(text)
        data = text.encode("utf-8")
        got, byte_spans = tok.encode_with_offsets(data)
        bounds = np.cumsum([0] + [len(c.encode("utf-8")) for c in text])
        assert got == ids
        assert byte_spans == [(int(bounds[a]), int(bounds[b])) for a, b in spans]
    with pytest.raises(ValueError, match="invalid UTF-8 at byte offset 2"):
        tok.encode(b"ab\xff")


def test_normalize_and_pre_tokenize_are_hf_s(vocabs):
    rng = random.Random(5)
    for options in OPTION_SETS:
        hf, tok = _pair(vocabs, *options)
        for _ in range(150):
            text = _hostile(rng)
            assert tok.normalize(text) == hf.normalizer.normalize_str(text), text
            words = hf.pre_tokenizer.pre_tokenize_str(hf.normalizer.normalize_str(text))
            assert [w for w, _ in tok.pre_tokenize(text)] == [w for w, _ in words], text
    hf, tok = _pair(vocabs, True)
    encoding = hf.encode("Héllo,  WORLD 中文", add_special_tokens=False)
    assert tok.pre_tokenize("Héllo,  WORLD 中文") == [
        ("hello", (0, 5)), (",", (5, 6)), ("world", (8, 13)), ("中", (14, 15)), ("文", (15, 16))]
    assert encoding.offsets[0] == (0, 5)


# ---------------------------------------------------------------------------------- decoding


@pytest.mark.parametrize("lower", [True, False], ids=["uncased", "cased"])
def test_decode_is_hf_s(vocabs, lower):
    hf, tok = _pair(vocabs, lower)
    rng = random.Random(7)
    texts = _lines()[:300] + [_hostile(rng) for _ in range(300)] + ["Hello , world . isn ' t"]
    for text in texts:
        ids = hf.encode(text).ids  # with [CLS] and [SEP]
        assert tok.decode(ids) == hf.decode(ids, skip_special_tokens=False), text
        assert tok.decode(ids, skip_special_tokens=True) == hf.decode(ids), text
        decoder = tok.decoder()
        assert "".join(decoder.feed(i) for i in ids) + decoder.flush() == tok.decode(ids)
        assert tok.encode(tok.decode(ids)) == ids  # decoding is stable ([UNK] decodes to "[UNK]")


def test_decode_with_an_added_token_past_the_vocabulary(vocabs):
    _, tok = _pair(vocabs, True)
    tok.add_special_tokens(["<new>"])
    ids = tok.encode("hello <new> world")
    assert ids[-2] == tok.token_to_id("<new>") or tok.token_to_id("<new>") in ids
    assert tok.decode(ids) == "hello <new> world"


# ---------------------------------------------------------------------------------- the seed


def seed_wordpiece(text: str, vocab: set[str]) -> list[str]:
    """The seed's own encoder (seed 002, ``wordpiece_tokenize``), on one word."""
    tokens, start = [], 0
    while start < len(text):
        end, found = len(text), False
        while start < end:
            substr = text[start:end]
            if start > 0:
                substr = "##" + substr
            if substr in vocab:
                tokens.append(substr)
                start, found = end, True
                break
            end -= 1
        if not found:
            tokens.append("[UNK]")
            start += 1
    return tokens


def test_unk_per_char_is_the_seed_s_encoder():
    vocab = ["[UNK]", "un", "##able", "##ing", "happ", "happy", "ness", "jump", "!", "##ness", "##i"]
    tok = bbpe.WordPiece.from_vocab(vocab, unk_per_char=True)
    bert = bbpe.WordPiece.from_vocab(vocab)
    for word in ("jumping", "unhappiness", "unable", "happyx", "xjump", "unhappyness", "!", "zz"):
        assert tok.convert_ids_to_tokens(tok.encode(word)) == seed_wordpiece(word, set(vocab)), word
        whole = ["[UNK]"] if "[UNK]" in seed_wordpiece(word, set(vocab)) else seed_wordpiece(word, set(vocab))
        assert bert.convert_ids_to_tokens(bert.encode(word)) == whole, word
    rng = random.Random(1)
    for _ in range(300):
        word = "".join(rng.choice("unhapyiesjmngbl") for _ in range(rng.randint(1, 12)))  # one word: no "!"
        assert tok.convert_ids_to_tokens(tok.encode(word)) == seed_wordpiece(word, set(vocab)), word


# ---------------------------------------------------------------------------------- files


def test_vocab_txt_loads_and_saves_as_hf(vocabs, tmp_path):
    path = vocabs[True]
    tok = bbpe.load(path)  # told apart from a .bin by its content: BERT's uncased options
    hf = BertWordPieceTokenizer(path)
    assert isinstance(tok, bbpe.WordPiece) and tok.get_vocab() == hf.get_vocab()
    assert tok.encode("Hello, 世界!") == hf.encode("Hello, 世界!", add_special_tokens=False).ids
    tok.save(tmp_path / "vocab.txt")
    assert (tmp_path / "vocab.txt").read_bytes() == Path(path).read_bytes()
    assert tok.special_tokens == {t: hf.token_to_id(t) for t in ("[UNK]", "[SEP]", "[CLS]", "[PAD]", "[MASK]")}
    assert tok.pad_id == hf.token_to_id("[PAD]")


def test_vocab_txt_as_hf_reads_it(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_bytes(b"[UNK]\r\nab  \n\nab\n##c\n[SEP]\n[CLS]")  # CRLF, trailing spaces, a blank line, a token twice
    tok, hf = bbpe.WordPiece.from_vocab(path), BertWordPieceTokenizer(str(path))
    assert tok.get_vocab() == hf.get_vocab() == {"[UNK]": 0, "ab": 3, "": 2, "##c": 4, "[SEP]": 5, "[CLS]": 6}
    assert tok.encode("abc ab") == hf.encode("abc ab", add_special_tokens=False).ids == [3, 4, 3]
    assert tok.decode([1]) == "ab"  # the earlier id of a token listed twice still decodes
    path.write_bytes(b"[UNK]\nok\n\xff\xfe\n")
    with pytest.raises(FormatError, match=r"vocab\.txt.*offset 9.*line 3 is not UTF-8"):
        bbpe.WordPiece.from_vocab(path)


def test_tokenizer_json_both_ways(vocabs, tmp_path):
    hf = BertWordPieceTokenizer(vocabs[False], lowercase=False, strip_accents=True)
    hf.save(str(tmp_path / "hf.json"))
    tok = bbpe.load(tmp_path / "hf.json")
    assert isinstance(tok, bbpe.WordPiece)
    texts = [*_lines()[:100], "Ça va? [MASK] OK", "Ünïcödé  words"]
    assert [tok(t)["input_ids"] for t in texts] == [e.ids for e in hf.encode_batch(texts)]
    assert tok("a", "b")["token_type_ids"] == hf.encode("a", "b").type_ids
    tok.save(tmp_path / "bbpe.json")
    again = tokenizers.Tokenizer.from_file(str(tmp_path / "bbpe.json"))
    assert [e.ids for e in again.encode_batch(texts)] == [e.ids for e in hf.encode_batch(texts)]
    assert bbpe.load(tmp_path / "bbpe.json") == tok
    assert json.loads((tmp_path / "bbpe.json").read_text())["post_processor"]["type"] == "BertProcessing"


def test_unsupported_stages_are_refused(vocabs, tmp_path):
    hf = BertWordPieceTokenizer(vocabs[True])
    document = json.loads(hf.to_str())
    for field, stage, match in (("normalizer", {"type": "NFKC"}, "normalizer: NFKC is not supported"),
                                ("pre_tokenizer", {"type": "Whitespace"}, "pre_tokenizer: Whitespace"),
                                ("decoder", {"type": "ByteLevel"}, "decoder: ByteLevel"),
                                ("post_processor", {"type": "ByteLevel"}, "post_processor: ByteLevel")):
        bad = {**document, field: stage}
        (tmp_path / "bad.json").write_text(json.dumps(bad))
        with pytest.raises(FormatError, match=match):
            bbpe.load(tmp_path / "bad.json")
    broken = {**document, "model": {**document["model"], "vocab": {"a": 0, "b": 2}}}
    (tmp_path / "bad.json").write_text(json.dumps(broken))
    with pytest.raises(FormatError, match="no token has the id 1"):
        bbpe.load(tmp_path / "bad.json")
    processor = document["post_processor"]  # BertProcessing: [SEP] and [CLS] with their ids
    moved = {**document, "post_processor": {**processor, "cls": [processor["cls"][0], processor["sep"][1]]}}
    (tmp_path / "bad.json").write_text(json.dumps(moved))
    with pytest.raises(ValueError, match=r"ids in the file are not theirs in the vocabulary: bbpe.WordPiece does not"):
        bbpe.load(tmp_path / "bad.json")


def test_no_unknown_token(tmp_path):
    tok = bbpe.WordPiece.from_vocab(["a", "##b"])
    assert tok.encode("ab a") == [0, 1, 0]
    with pytest.raises(ValueError, match="no unknown token"):
        tok.encode("ab c")


# ---------------------------------------------------------------------------------- the rest


def test_pickling_and_batches(vocabs):
    _, tok = _pair(vocabs, False)
    again = pickle.loads(pickle.dumps(tok))
    lines = _lines()[:500]
    assert again == tok and again.encode_batch(lines, num_threads=2) == [tok.encode(t) for t in lines]
    assert [list(a) for a in tok.encode_batch(lines, out="numpy")] == tok.encode_batch(lines)


def test_the_tables_are_tokenizers_own():
    """bert_tables.h is what tools/make_bert_tables.py reads from the installed tokenizers."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_bert_tables", REPO / "tools" / "make_bert_tables.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.render(*module.probe()) == module.HEADER.read_text(encoding="utf-8")


def test_normalizer_covers_unicode_edge_cases(vocabs):
    """Chars whose handling differs between HF's old Unicode tables and Python's."""
    hf, tok = _pair(vocabs, True)
    text = "".join(chr(c) for c in range(0x1F900, 0x1FA00)) + " İstanbul ẞ Σσς ǅ ﬀ"
    assert tok.normalize(text) == hf.normalizer.normalize_str(text)
    assert unicodedata.unidata_version  # (the tables do not come from it: see test_the_tables_are_tokenizers_own)


def test_surrogates_in_a_str(vocabs):
    """A surrogate pair reads as the char it encodes, a lone surrogate as U+FFFD (which
    clean_text drops, as HF drops it); the spans count the str's code units."""
    hf, tok = _pair(vocabs, True)
    assert tok.encode("x\ud83d\ude00y") == tok.encode("x\U0001f600y") == hf.encode("x\U0001f600y",
                                                                              add_special_tokens=False).ids
    assert tok.encode_with_offsets("\ud83d\ude00")[1] == [(0, 2)]
    assert tok.encode("a\ud800b c") == tok.encode("a\ufffdb c") == hf.encode("a\ufffdb c", add_special_tokens=False).ids


def test_load_tells_a_vocab_txt_from_a_corpus(tmp_path):
    """A corpus of short lines (the Tang poems: no spaces) is no vocab.txt: bbpe.load says
    what it is; a vocab.txt is one by BERT's marks (## continuations, [UNK] ...)."""
    with pytest.raises(FormatError, match="text file, not a .bin"):
        bbpe.load(TANG300)
    (tmp_path / "v.txt").write_text("a\nb\n##b\n", encoding="utf-8")
    assert bbpe.load(tmp_path / "v.txt").encode("ab") == [0, 2]
    (tmp_path / "v.txt").write_text("[UNK]\nhello world\n", encoding="utf-8")  # a token with a space: no vocab
    with pytest.raises(FormatError):
        bbpe.load(tmp_path / "v.txt")
