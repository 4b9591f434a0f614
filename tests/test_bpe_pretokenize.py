"""The compiled pre-tokenizers of byte-level BPE (bbpe/bpe/_pretokenize.pyx): for every pattern
and every spelling of it that ``compiled_pattern`` knows, the pieces are exactly those of the
regex itself, run by the ``regex`` package's findall, by tiktoken (the primary oracle: bbpe's
ids must be its ids) and by HF tokenizers' Split, on generated text, around every code point,
and on the corpora.

The table of classes is tiktoken's and HF's (Unicode 16.0, tools/make_unicode_classes.py);
``regex`` follows newer Unicode versions: the comparisons with ``regex`` leave out the code
points where its classes are not the table's; those with tiktoken and HF take every code
point, and those first."""

from __future__ import annotations

import base64
import functools
import gzip
import importlib.util
from pathlib import Path

import pytest
from conftest import REPO, SONG100, TANG300
from hypothesis import given, settings
from hypothesis import strategies as st

from bbpe.bpe import _pretokenize as pt

regex = pytest.importorskip("regex", reason="the `regex` package (the patterns' reference engine) is not installed")

IDS = {name: pid for name, pid in pt.PATTERN_NAMES.items() if name != "regex"}
SPELLINGS = list(pt._SPELLINGS.items())  # (pattern string, PIECES id), every one a scanner implements
NAMES = {pid: name for name, pid in IDS.items()}
SPELLING_IDS = [f"{NAMES[pid]}-{i}" for i, (_, pid) in enumerate(SPELLINGS)]

# the bundled corpora, and any other in ../shared/reference/corpora (which holds these two too)
CORPORA = [TANG300, SONG100] + [p for p in sorted((REPO.parent / "shared" / "reference" / "corpora").glob("*.txt"))
                                if p.name not in (TANG300.name, SONG100.name)]
LARGE = Path("/tmp/bbpe-corpora")
LARGE_FILES = ["zh-large.txt", "en-large.txt", "mixed.txt"]


def _generator():
    """tools/make_unicode_classes.py as a module (tools/ is no package)."""
    spec = importlib.util.spec_from_file_location("make_unicode_classes", REPO / "tools" / "make_unicode_classes.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GENERATOR = _generator()
TABLE = GENERATOR.header_classes()  # the class of every code point, as the scanners have it
# where regex's Unicode version gives other classes than the table (tiktoken's and HF's version);
# \w is Oniguruma's, for HF's Whitespace only, which the regex comparisons do not use
NEWER_UNICODE = "".join(chr(c) for c, cls in enumerate(GENERATOR.regex_classes())
                        if (cls ^ TABLE[c]) & ~GENERATOR.CLS_W)


# --- text strategies -------------------------------------------------------------------------

FRAGMENTS = [
    # whitespace, alone and in runs, \r\n mixes, the non-ASCII White_Space, and near misses
    " ", "  ", "   ", "\t", "\n", "\r", "\r\n", "\n\n", "\r\r\n", " \n", "\n ", "\x0b", "\x0c", "\x85", "\xa0",
    "\u1680", "\u2000", "\u2028", "\u2029", "\u202f", "\u3000", "\x1c", "\x1f", "\u200b", "\u180e", "\ufeff",
    # digits and other numbers
    "0", "7", "12", "345", "6789", "\u0661", "\u00b2", "\u2167", "\u3007", "\U0001d7ce",
    # apostrophes and contractions in both cases, U+017F (folds to s), the Kelvin sign (to k)
    "'", "''", "'s", "'S", "'t", "'T", "'re", "'RE", "'rE", "'Re", "'ve", "'VE", "'m", "'M", "'ll", "'LL", "'lL",
    "'d", "'D", "'\u017f", "\u017f", "'\u212a", "\u2019s", "'x",
    # letters of every kind: Lu Ll Lt Lm Lo, words in both cases
    "a", "Z", "hello", " world", "World", "HELLO", "DON'T", "we're", "\u01c5", "\u02b0", "\u01bb", "\u00df", "\u0295",
    "\u0430\u0431", "\u05d0", "\u0e01",
    # CJK and its punctuation
    "\u4e2d", "\u6587\u5b57", "\uff0c", "\u3002", "\u300c", "\u300d", "\uff01", "\u3001", "\U00020000",
    # marks: Mn, Mc, Me, after letters, after punctuation, alone
    "\u0301", "\u0308", "\u0903", "\u20dd", "e\u0301", "!\u0301",
    # emoji, ZWJ sequences, variation selectors
    "\U0001f600", "\U0001f44d\U0001f3fd", "\U0001f468\u200d\U0001f469\u200d\U0001f467", "\ufe0f", "\u200d",
    # punctuation, symbols, slashes (o200k's [\r\n/]*)
    "!", "?", "/", "//", "...", "-", "_", "$", "\"", "(", ")", "#", "+",
    # private use, noncharacters, unassigned
    "\ue000", "\ufffe", "\uffff", "\U0010ffff", "\U000e0001", "\u0378", "\U0001fffe",
]

# every code point but the surrogates (the codec turns lone ones into U+FFFD before it scans)
any_char = st.characters(exclude_categories=("Cs",))
regex_char = st.characters(exclude_categories=("Cs",), exclude_characters=NEWER_UNICODE)


def texts(char: st.SearchStrategy[str], max_size: int = 40, exclude: str = "") -> st.SearchStrategy[str]:
    """Text of ``char`` alone, and text biased towards the fragments above (but those with a
    character of ``exclude``)."""
    fragments = st.sampled_from([f for f in FRAGMENTS if not set(f) & set(exclude)])
    pieces = st.one_of(fragments, fragments, char)
    body = st.one_of(st.text(char, max_size=max_size), st.lists(pieces, max_size=max_size // 2).map("".join))
    return st.tuples(body, st.sampled_from(TAILS)).map("".join)


# the end of the text is where the patterns differ most (\s++$, \s+(?!\S), \s*[\r\n]+)
TAILS = ["", "", "", " ", "  ", "\n", "\n ", " \n", " \n  ", "\n\n\t", "\r\n", "\r\n \r\n ", "\u3000\n\u3000"]


def _check(text: str, pid: int, expected: list[str]) -> None:
    """split(text) is ``expected``, for the str and for its UTF-8 bytes."""
    assert pt.split(text, pid) == expected
    assert pt.split(text.encode(), pid) == [p.encode() for p in expected]


# --- against the `regex` package ---------------------------------------------------------------

@pytest.mark.parametrize(("spelling", "pid"), SPELLINGS, ids=SPELLING_IDS)
@settings(max_examples=400, deadline=None)
@given(text=texts(regex_char, exclude=NEWER_UNICODE))
def test_generated_text_like_regex(spelling, pid, text):
    """Every spelling's findall, on text from every code point and biased text."""
    _check(text, pid, regex.findall(spelling, text))


# Around each code point X, the contexts that decide the classes' edges (a letter before it,
# an upper letter after it, a digit, a space, an apostrophe, a mark, a newline, X twice)
CONTEXTS = ["a{x}", "A{x}a", "{x}Aa", "1{x}", "!{x}", " {x}c", "'{x}", "{x}{x}", "{x}\u0301", "\u0301{x}", "\n{x} "]


def _around(chars: str) -> str:
    return "".join("\n" + "".join(c.format(x=x) for c in CONTEXTS) for x in chars)


@functools.cache
def _code_points() -> str:
    """The code points to try one by one: all those of each block of 256 in which the class
    changes, every 17th of the others (most of CJK, the unassigned planes, private use); no
    surrogates."""
    cls = TABLE
    out = []
    for block in range(0, 0x110000, 256):
        step = 1 if len(set(cls[block:block + 256])) > 1 else 17
        out += [chr(c) for c in range(block, block + 256, step) if not 0xD800 <= c < 0xE000]
    return "".join(out)


@pytest.mark.parametrize("name", IDS)
def test_every_code_point_like_regex(name):
    """Each code point in each context, as one text (so the contexts also meet each other)."""
    pid = IDS[name]
    newer = set(NEWER_UNICODE)
    text = _around("".join(x for x in _code_points() if x not in newer))
    for spelling in (s for s, p in SPELLINGS if p == pid):
        got = pt.split(text, pid)
        expected = regex.findall(spelling, text)
        assert got == expected, _first_difference(got, expected)


def _first_difference(got: list, expected: list) -> str:
    i = next((i for i, (a, b) in enumerate(zip(got, expected)) if a != b), min(len(got), len(expected)))
    return f"piece {i}: ours {got[i:i + 4]!r}, expected {expected[i:i + 4]!r}"


EDGE_CASES = [  # hand-checked: (pattern, text, pieces)
    ("gpt2", "", []),
    ("gpt2", "x  y", ["x", " ", " y"]),                        # \s+(?!\S) leaves its last space
    ("gpt2", "x \ty", ["x", " ", "\t", "y"]),                  # only a space joins what follows
    ("gpt2", "x  ", ["x", "  "]),                              # \s++$
    ("gpt2", "x'S 'LL", ["x", "'", "S", " '", "LL"]),          # case-sensitive contractions
    ("gpt2", "x'\u017f", ["x", "'", "\u017f"]),
    ("cl100k", "x'\u017f 'LL", ["x", "'\u017f", " '", "LL"]),  # (?i): U+017F folds to s
    ("cl100k", "x\n  ", ["x", "\n  "]),                        # tiktoken 0.14's \s++$ ...
    ("llama3", "x\n  ", ["x", "\n", "  "]),                    # ... and its earlier spellings
    ("cl100k", "x\n \n  y", ["x", "\n \n", " ", " y"]),        # \s*[\r\n]: to the run's last newline
    ("cl100k", "12345", ["123", "45"]),
    ("qwen2", "12345", ["1", "2", "3", "4", "5"]),
    ("cl100k", "!!a", ["!!", "a"]),                            # the prefix is one code point
    ("cl100k", "\u3000a", ["\u3000a"]),                         # whitespace but \r\n can be it
    ("cl100k", "\na", ["\n", "a"]),
    ("cl100k", " !!\n\nx", [" !!\n\n", "x"]),
    ("o200k", " !!\n/x", [" !!\n/", "x"]),                     # [\r\n/]*
    ("o200k", "DON'T don't", ["DON'T", " don't"]),
    ("o200k", "HTMLParser", ["HTMLParser"]),
    ("o200k", "\u4e2dA!", ["\u4e2d", "A", "!"]),               # Lo is upper and lower: A backtracks
    ("o200k", "\u0301!", ["\u0301", "!"]),                     # a mark is a prefix, then alone
    ("o200k", "!\u0301", ["!\u0301"]),
    ("o200k", "x\n  ", ["x", "\n", "  "]),
    ("o200k", "\u0295\u0295", ["\u0295\u0295"]),                 # Ll at Unicode 16.0 (Lo at 17.0)
]


@pytest.mark.parametrize(("name", "text", "expected"), EDGE_CASES)
def test_edge_cases(name, text, expected):
    _check(text, IDS[name], expected)


# --- corpora ------------------------------------------------------------------------------------

def _lines(path: Path) -> list[str]:
    with open(path, encoding="utf-8") as f:
        return list(f)


def _corpus_texts(paths: list[Path], every: int, chunk_lines: int) -> list[str]:
    """Every ``every``-th line, and chunks of ``chunk_lines`` consecutive lines."""
    out = []
    for path in paths:
        lines = _lines(path)
        out += lines[::every]
        out += ["".join(lines[i:i + chunk_lines]) for i in range(0, len(lines), max(chunk_lines, len(lines) // 8))]
    return out


def _large(every: int) -> list[Path]:
    paths = [LARGE / name for name in LARGE_FILES if (LARGE / name).exists()]
    if not paths:
        pytest.skip(f"the large corpora ({', '.join(LARGE_FILES)}) are not in {LARGE}")
    return paths


@pytest.mark.parametrize("name", IDS)
def test_corpora_like_regex(name):
    """Each line of the bundled corpora, and chunks of lines (their newlines and the spaces
    around them), under every spelling."""
    pid = IDS[name]
    for text in _corpus_texts([p for p in CORPORA if p.exists()], every=1, chunk_lines=400):
        for spelling in (s for s, p in SPELLINGS if p == pid):
            assert pt.split(text, pid) == regex.findall(spelling, text), text[:200]


@pytest.mark.parametrize("name", IDS)
def test_large_corpora_sampled_like_regex(name):
    """Every 50th line of the large corpora, and eight chunks of 200 lines of each."""
    pid = IDS[name]
    spelling = next(s for s, p in SPELLINGS if p == pid)
    for text in _corpus_texts(_large(50), every=50, chunk_lines=200):
        assert pt.split(text, pid) == regex.findall(spelling, text), text[:200]


@pytest.mark.slow
@pytest.mark.parametrize("name", IDS)
def test_large_corpora_whole_like_regex(name):
    """The large corpora, each as one text (bytes in, bytes out)."""
    pid = IDS[name]
    spelling = next(s for s, p in SPELLINGS if p == pid)
    for path in _large(1):
        data = path.read_bytes()
        got = pt.split(data, pid)
        expected = [p.encode() for p in regex.findall(spelling, data.decode())]
        assert got == expected, _first_difference(got, expected)


# --- against tiktoken and HF tokenizers -----------------------------------------------------------

def _tiktoken():
    return pytest.importorskip("tiktoken", reason="tiktoken is not installed: the primary oracle is not checked")


def tiktoken_pieces(pattern: str, text: str) -> list[str]:
    """tiktoken's own pieces: with every substring of the text's bytes a token, BPE merges each
    piece into one token whatever its split, so the tokens are the pieces."""
    tiktoken = _tiktoken()
    data = text.encode()
    ranks = {bytes([b]): b for b in range(256)}
    for a in range(len(data)):
        for b in range(a + 2, len(data) + 1):
            ranks.setdefault(data[a:b], len(ranks))
    enc = tiktoken.Encoding("pieces", pat_str=pattern, mergeable_ranks=ranks, special_tokens={})
    return [enc.decode_single_token_bytes(t).decode() for t in enc.encode_ordinary(text)]


def hf_pieces(pattern: str, text: str) -> list[str]:
    """HF tokenizers' pieces: its Split pre-tokenizer, the matches isolated (for HF
    Whitespace's pattern, its Whitespace pre-tokenizer). Oniguruma's Ruby
    syntax reads ``X{1,3}+`` as ``(?:X{1,3})+``, not as possessive (tiktoken 0.14's cl100k
    would take any run of digits): that one is written as an atomic group, as
    bbpe/bpe/onig.py does for a tokenizer.json."""
    tokenizers = pytest.importorskip("tokenizers", reason="HF tokenizers is not installed")
    if pattern == pt.WHITESPACE_PATTERN:  # HF's Whitespace: its own regex (Rust's, not Oniguruma), gaps dropped
        return [piece for piece, _ in tokenizers.pre_tokenizers.Whitespace().pre_tokenize_str(text)]
    pattern = pattern.replace(r"\p{N}{1,3}+", r"(?>\p{N}{1,3})")
    split = tokenizers.pre_tokenizers.Split(tokenizers.Regex(pattern), behavior="isolated")
    return [piece for piece, _ in split.pre_tokenize_str(text)]


@pytest.mark.parametrize(("spelling", "pid"), SPELLINGS, ids=SPELLING_IDS)
@settings(max_examples=150, deadline=None)
@given(text=texts(any_char, max_size=24))
def test_generated_text_like_tiktoken(spelling, pid, text):
    _check(text, pid, tiktoken_pieces(spelling, text))


@pytest.mark.parametrize(("spelling", "pid"), SPELLINGS, ids=SPELLING_IDS)
@settings(max_examples=400, deadline=None)
@given(text=texts(any_char))
def test_generated_text_like_hf(spelling, pid, text):
    _check(text, pid, hf_pieces(spelling, text))


@pytest.mark.parametrize("name", IDS)
def test_every_code_point_like_hf(name):
    """Each code point in each context, those whose classes regex's Unicode changes first."""
    pid = IDS[name]
    spelling = next(s for s, p in SPELLINGS if p == pid)
    text = _around(NEWER_UNICODE + _code_points())
    got, expected = pt.split(text, pid), hf_pieces(spelling, text)
    assert got == expected, _first_difference(got, expected)


def _every_code_point_like_tiktoken(spelling: str, pid: int, code_points: str) -> None:
    """Each code point in each context (as a text of its own) gives tiktoken's ids when our
    pieces are encoded one by one. The ranks make the contexts' pairs with the code point
    tokens (their bytes' prefixes, merging left to right), so a piece boundary that differs
    changes the ids."""
    tiktoken = _tiktoken()
    for base in range(0, len(code_points), 1 << 14):
        chunk = code_points[base:base + (1 << 14)]
        ranks = {bytes([b]): b for b in range(256)}
        for x in chunk:
            for context in CONTEXTS:
                data = context.format(x=x).encode()
                for k in range(2, len(data) + 1):
                    ranks.setdefault(data[:k], len(ranks))
        enc = tiktoken.Encoding("contexts", pat_str=spelling, mergeable_ranks=ranks, special_tokens={})
        for x in chunk:
            text = _around(x)
            ours = [t for piece in pt.split(text, pid) for t in enc._encode_single_piece(piece)]
            assert enc.encode_ordinary(text) == ours, (f"U+{ord(x):04X}", pt.split(text, pid))


@pytest.mark.parametrize("name", IDS)
def test_every_code_point_sampled_like_tiktoken(name):
    """The code points whose classes regex's Unicode changes, and a sample of the others."""
    spelling = next(s for s, p in SPELLINGS if p == IDS[name])
    _every_code_point_like_tiktoken(spelling, IDS[name], NEWER_UNICODE + _code_points()[::29])


@pytest.mark.slow
@pytest.mark.parametrize("name", IDS)
def test_every_code_point_like_tiktoken(name):
    """The code points whose classes regex's Unicode changes, and all that _code_points tries."""
    spelling = next(s for s, p in SPELLINGS if p == IDS[name])
    _every_code_point_like_tiktoken(spelling, IDS[name], NEWER_UNICODE + _code_points())


@pytest.mark.slow
def test_classes_like_tiktoken_and_hf():
    """The table's classes are tiktoken's and HF's, class by class, over every code point."""
    _tiktoken()
    pytest.importorskip("tokenizers", reason="HF tokenizers is not installed")
    assert GENERATOR.check() == 0  # code points that differ, for any class and engine


@pytest.fixture(scope="module", params=["o200k_base", "cl100k_base"])
def real_encoding(request):
    """tiktoken's encoding with its real ranks, from the files the bpe_openai wheel ships
    (tiktoken.get_encoding would download them)."""
    tiktoken = _tiktoken()
    spec = importlib.util.find_spec("bpe_openai")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("bpe_openai (which ships the o200k_base and cl100k_base ranks) is not installed")
    path = Path(spec.submodule_search_locations[0]) / "data" / f"{request.param}.tiktoken.gz"
    if not path.exists():
        pytest.skip(f"{path} is not there")
    ranks = {}
    with gzip.open(path, "rt", encoding="ascii") as f:
        for line in f:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    name = request.param
    pid = pt.compiled_pattern(pt.TIKTOKEN_PATTERNS[name])
    return tiktoken.Encoding(name, pat_str=pt.TIKTOKEN_PATTERNS[name], mergeable_ranks=ranks, special_tokens={}), pid


def _same_ids(real_encoding, text: str) -> None:
    enc, pid = real_encoding
    ours = [t for piece in pt.split(text, pid) for t in enc._encode_single_piece(piece)]
    assert enc.encode_ordinary(text) == ours, text[:200]


@settings(max_examples=300, deadline=None)
@given(text=texts(any_char))
def test_real_ranks_generated_text(real_encoding, text):
    """tiktoken's ids for a text are its ids for our pieces, one by one."""
    _same_ids(real_encoding, text)


def test_real_ranks_corpora(real_encoding):
    """Every 50th line of each corpus, and chunks of lines."""
    paths = [p for p in CORPORA if p.exists()] + [LARGE / n for n in LARGE_FILES if (LARGE / n).exists()]
    for text in _corpus_texts(paths, every=50, chunk_lines=200):
        _same_ids(real_encoding, text)


# --- the Python API -------------------------------------------------------------------------------

def test_tiktoken_patterns_are_tiktokens(monkeypatch):
    """TIKTOKEN_PATTERNS holds the installed tiktoken's strings (its encodings' constructors
    run with the rank loaders stubbed out: they would download)."""
    _tiktoken()
    from tiktoken_ext import openai_public

    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", lambda *a, **k: {})
    monkeypatch.setattr(openai_public, "data_gym_to_mergeable_bpe_ranks", lambda *a, **k: {})
    constructors = openai_public.ENCODING_CONSTRUCTORS
    assert set(pt.TIKTOKEN_PATTERNS) <= set(constructors)
    for name, pattern in pt.TIKTOKEN_PATTERNS.items():
        assert constructors[name]()["pat_str"] == pattern, name
    for name, constructor in constructors.items():  # any newer encoding of the same pattern
        if constructor()["pat_str"] in pt.TIKTOKEN_PATTERNS.values():
            assert name in pt.TIKTOKEN_PATTERNS, f"{name}: add it to TIKTOKEN_PATTERNS"


def test_compiled_pattern():
    expected = {"gpt2": "gpt2", "r50k_base": "gpt2", "p50k_base": "gpt2", "p50k_edit": "gpt2",
                "cl100k_base": "cl100k", "o200k_base": "o200k", "o200k_harmony": "o200k"}
    for name, pattern in pt.TIKTOKEN_PATTERNS.items():
        assert pt.compiled_pattern(pattern) == IDS[expected[name]], name
    assert {pid for _, pid in SPELLINGS} == set(IDS.values())
    for spelling, pid in SPELLINGS:
        assert pt.compiled_pattern(spelling) == pid
        # nothing but the exact string: not with a space more, not a prefix of it
        assert pt.compiled_pattern(spelling + " ") == pt.PATTERN_NAMES["regex"] == 0
        assert pt.compiled_pattern(spelling[:-1]) == 0
    assert pt.compiled_pattern(r"\p{L}+|\S+|\s+") == 0


def test_split_errors():
    with pytest.raises(ValueError, match="byte 0"):
        pt.split(b"\xff", IDS["gpt2"])
    with pytest.raises(ValueError, match="byte 5"):
        pt.split(b"abc x" + "\u4e2d".encode()[:2], IDS["gpt2"])  # a code point cut short
    with pytest.raises(ValueError, match="byte 1"):
        pt.split(b"a\xed\xa0\x80", IDS["o200k"])  # an encoded surrogate is not UTF-8
    for pid in (0, -1, max(IDS.values()) + 1, 99):
        with pytest.raises(ValueError, match="not a compiled pre-tokenizer"):
            pt.split("x", pid)
    with pytest.raises(TypeError):
        pt.split(bytearray(b"x"), IDS["gpt2"])


def test_split_lone_surrogates():
    """Lone surrogates become U+FFFD, a pair of them the code point they encode, as tiktoken does."""
    for pid in IDS.values():
        assert pt.split("a\ud800b \udfff", pid) == pt.split("a\ufffdb \ufffd", pid)
        assert pt.split("x\ud83d\ude00", pid) == pt.split("x\U0001f600", pid)


def test_header_is_generated():
    """bbpe/bpe/unicode_classes.h is what tools/make_unicode_classes.py writes for its classes
    (test_classes_like_tiktoken_and_hf checks the classes themselves)."""
    assert GENERATOR.HEADER.read_text(encoding="utf-8") == GENERATOR.render(TABLE)
    assert sum(1 for c in TABLE if c & GENERATOR.CLS_L) > 100_000  # the parse read the table
