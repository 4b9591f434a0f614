"""WordPiece's matcher (bbpe/wordpiece/_codec.pyx: LinMaxMatch, the walk it leaves words to)
against HF's WordPiece algorithm written plainly here: at each position of a word the
longest vocabulary entry (the continuing prefix before it after the first position); no
match: the whole word is the unknown token (or, ``unk_per_char``, the char is, and on); a
word longer than ``max_input_chars_per_word`` chars is the unknown token.

Random small vocabularies over a few chars of one to four UTF-8 bytes, with and without
their continuing forms, some chars in no token; random words; prefixes ``##``, ``@@``,
none, and made of letters (so that words can start with them); the ids and each token's
offsets. Then long words of one char over vocabularies of runs of it, where the walk is
quadratic and the failure links do the most.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bbpe
from bbpe.wordpiece._codec import WordPieceCodec

TOKEN_CHARS = "abé中𝕏"  # 1, 1, 2, 3 and 4 UTF-8 bytes
WORD_CHARS = TOKEN_CHARS * 3 + "zü"  # z and ü: in no token, rarely
PREFIXES = ["##", "@@", "", "a", "ab", "é", "中a"]
OPTIONS = {"lowercase": False, "strip_accents": False, "handle_chinese_chars": False, "clean_text": True}


def reference(word: str, ids: dict[str, int], prefix: str, max_chars: int, unk_per_char: bool
              ) -> list[tuple[int, int, int]] | None:
    """(id, start, end) of each token of one word, chars of the word; None: an unknown
    token is needed and the vocabulary has none."""
    unk = ids.get("[UNK]")
    if len(word) > max_chars:
        return None if unk is None else [(unk, 0, len(word))]
    out: list[tuple[int, int, int]] = []
    start = 0
    while start < len(word):
        for end in range(len(word), start, -1):
            piece = word[start:end] if start == 0 else prefix + word[start:end]
            if piece in ids:
                out.append((ids[piece], start, end))
                start = end
                break
        else:
            if unk is None:
                return None
            if not unk_per_char:
                return [(unk, 0, len(word))]
            out.append((unk, start, start + 1))
            start += 1
    return out


def expected(words: list[str], tokens: list[str], prefix: str, max_chars: int, unk_per_char: bool
             ) -> tuple[list[int], list[tuple[int, int]]] | None:
    """The ids and offsets of ``" ".join(words)``, or None (a ValueError is expected)."""
    ids = {token: kid for kid, token in enumerate(tokens)}  # a token listed twice: its last id
    out_ids, spans, at = [], [], 0
    for word in words:
        got = reference(word, ids, prefix, max_chars, unk_per_char)
        if got is None:
            return None
        out_ids += [kid for kid, _, _ in got]
        spans += [(at + a, at + b) for _, a, b in got]
        at += len(word) + 1
    return out_ids, spans


def build(tokens: list[str], prefix: str, max_chars: int = 100, unk_per_char: bool = False) -> bbpe.WordPiece:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "vocab.txt"
        path.write_text("".join(f"{t}\n" for t in tokens), encoding="utf-8")
        return bbpe.WordPiece.from_vocab(path, wordpieces_prefix=prefix, max_input_chars_per_word=max_chars,
                                         unk_per_char=unk_per_char, **OPTIONS)


def check(tokens: list[str], words: list[str], prefix: str, max_chars: int = 100, unk_per_char: bool = False
          ) -> None:
    tok = build(tokens, prefix, max_chars, unk_per_char)
    text = " ".join(words)
    want = expected(words, tokens, prefix, max_chars, unk_per_char)
    if want is None:
        with pytest.raises(ValueError, match="no unknown token"):
            tok.encode(text)
        with pytest.raises(ValueError, match="no unknown token"):
            tok.encode_with_offsets(text)
        return
    assert tok.encode(text) == want[0]
    ids, spans = tok.encode_with_offsets(text)
    assert (ids, [tuple(s) for s in spans]) == want
    data = text.encode()  # bytes: the same ids (offsets in bytes)
    assert tok.encode(data) == want[0]


pieces = st.text(alphabet=TOKEN_CHARS, min_size=1, max_size=4)


@st.composite
def vocabularies(draw: st.DrawFn) -> tuple[list[str], str]:
    """(tokens in id order, prefix): single chars in either form for some chars, random
    pieces in either form, maybe the prefix itself, maybe no unknown token, duplicates."""
    prefix = draw(st.sampled_from(PREFIXES))
    firsts = draw(st.sets(st.sampled_from(TOKEN_CHARS)))
    laters = draw(st.sets(st.sampled_from(TOKEN_CHARS)))
    entries = draw(st.lists(st.tuples(pieces, st.booleans()), max_size=25))
    tokens = sorted(firsts) + [prefix + c for c in sorted(laters)]
    tokens += [prefix + piece if later else piece for piece, later in entries]
    if draw(st.booleans()):
        tokens.append(prefix)  # the prefix a token (an empty line for the empty prefix)
    if draw(st.integers(0, 9)):
        tokens.insert(draw(st.integers(0, len(tokens))), "[UNK]")
    tokens = draw(st.permutations(tokens)) or ["[PAD]"]  # (a vocab.txt holds a token)
    if tokens and draw(st.booleans()):
        tokens.append(draw(st.sampled_from(tokens)))  # listed twice: the last id wins
    return tokens, prefix


words_of = st.lists(st.text(alphabet=WORD_CHARS, min_size=1, max_size=14), min_size=1, max_size=6)
SETTINGS = settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(vocabularies(), words_of)
def test_random_vocabularies(vocab, words):
    tokens, prefix = vocab
    check(tokens, words, prefix)


@SETTINGS
@given(vocabularies(), words_of, st.sampled_from([1, 2, 3, 5, 8, 100]))
def test_random_vocabularies_unk_per_char(vocab, words, max_chars):
    tokens, prefix = vocab
    check(tokens, words, prefix, max_chars, unk_per_char=True)


@SETTINGS
@given(vocabularies(), st.lists(st.text(alphabet=TOKEN_CHARS, min_size=1, max_size=40), min_size=1, max_size=3),
       st.sampled_from([4, 10, 100]))
def test_random_vocabularies_words_of_token_chars(vocab, words, max_chars):
    """Words of the tokens' chars only: most of them split, long splits."""
    tokens, prefix = vocab
    check(tokens, words, prefix, max_chars)


@pytest.mark.parametrize("prefix", ["##", "", "a"])
@pytest.mark.parametrize("shape", ["both", "first", "later", "pairs", "long"])
def test_long_words_of_one_char(prefix, shape):
    runs = {"both": [1, 2, 3, 5, 8, 13, 21, 34], "first": [1, 2, 3, 7, 50], "later": [1, 2, 4, 6],
            "pairs": [1, 2], "long": [1, 99, 100, 150]}[shape]
    tokens = ["[UNK]"]
    for n in runs:
        if shape != "later" or n == 1:
            tokens.append("a" * n)
        if shape != "first" or n == 1:
            tokens.append(prefix + "a" * n)
    words = ["a" * n for n in (1, 2, 3, 4, 34, 55, 99, 100, 101, 150, 151, 300, 1000)]
    check(tokens, words, prefix, max_chars=2000)
    check(tokens, ["a" * 100], prefix)  # the default limit: 100 chars is a word, 101 the unknown token
    check(tokens, ["a" * 101], prefix)
    check(tokens, ["a" * 60 + "b" + "a" * 60, "a" * 200 + "é"], prefix, max_chars=2000)  # no token: unknown
    check(tokens, ["a" * 60 + "b" + "a" * 60], prefix, max_chars=2000, unk_per_char=True)


def test_failure_pops_past_their_limit_leave_words_to_the_walk():
    """A token of 2000 chars over "a" and "##a": its nodes pop up to 2000 tokens each, too
    many to keep: the words are matched by the walk, with the same results."""
    tokens = ["[UNK]", "a", "##a", "a" * 2000, "##" + "a" * 3, "b" + "a" * 1500]
    words = ["a" * n for n in (1, 7, 1999, 2000, 2001, 2500)] + ["b" + "a" * 1600, "b" + "a" * 1499 + "c"]
    check(tokens, words, "##", max_chars=5000)


def test_tokens_ending_inside_a_char():
    """The compiled model built from tokens that are not whole UTF-8 chars (the loaders never
    make one): a match ending inside a char of the word is no match, as the walk has it."""
    tokens = [b"[UNK]", b"a", b"a\xc3", b"##\xa9", b"b", b"##\xc3\xa9", b"c\xe4\xb8"]
    codec = WordPieceCodec(tokens, 0, b"##", 100, 0, tokens, tokens)
    assert codec.encode("a\u00e9") == [1, 5]  # a, ##é (not a\xc3, ##\xa9)
    assert codec.encode("b\u00e9") == [4, 5]
    assert codec.encode("c\u4e2d") == [0]
    assert codec.encode("a\u00e9\u00e9 b") == [1, 5, 5, 4]
