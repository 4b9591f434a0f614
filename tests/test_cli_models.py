"""The bbpe command on every model: encode, decode and count with an HF ``tokenizer.json``
(``bl300.json``), a tiktoken ranks file given ``--pattern`` (a small one written here, and
OpenAI's ``o200k_base`` against tiktoken), and XBBPE's ``.bin``; ``info`` and ``vocab`` on
each; and the errors of a model or an input that is wrong."""

from __future__ import annotations

import base64
import os
import subprocess
from pathlib import Path

import pytest
from cli_runner import run_bbpe
from conftest import DATA, REPO

import bbpe as package

BL300 = DATA / "bpe" / "bl300.json"
GOLDEN800 = DATA / "golden" / "tang300_v800.bin"
ZH_SMALL = REPO.parent / "shared" / "corpora" / "zh-small.txt"

# lines that exercise the pre-tokenizers: CJK, emoji, combining marks, runs of every kind of
# white space, digits, contractions, an empty line, a special token inside a line, CR kept
LINES = ["hello world", "床前明月光，疑是地上霜。", "I'm 12345 years, they'll've  tabs\tand\u3000spaces",
         "e\u0301 🤗👍🏽 naïve", "", "a <|endoftext|> b", "   leading and trailing   ", "line with CR\r",
         "数字123和English混在一起", "x" * 3000]
TEXT = "\n".join(LINES) + "\n"


bbpe = run_bbpe


def ok(r: subprocess.CompletedProcess) -> bytes:
    assert r.returncode == 0 and not r.stderr, r.stderr.decode()
    return r.stdout


def id_lines(tok: package.Tokenizer, lines: list[str], **options) -> bytes:
    return b"".join(" ".join(map(str, tok.encode(line, **options))).encode() + b"\n" for line in lines)


def counts(tok: package.Tokenizer, lines: list[str], **options) -> list[int]:
    return [len(tok.encode(line, **options)) for line in lines]


def stdout_ints(r: subprocess.CompletedProcess) -> list[int]:
    return [int(n) for n in ok(r).split()]


@pytest.fixture(scope="module")
def ranks(tmp_path_factory) -> Path:
    """A small tiktoken ranks file: the 256 bytes, then merges of frequent pairs of LINES."""
    tokens = [bytes([b]) for b in range(256)] + [b"he", b"ll", b"hell", b"hello", b" w", b"or", b" wor", b"ld",
                                                  b"\xe5\xba", b"\xe5\xba\x8a", b"in", b"ine", b"  ", b"    "]
    path = tmp_path_factory.mktemp("ranks") / "small.tiktoken"
    path.write_bytes(b"".join(base64.b64encode(t) + b" %d\n" % rank for rank, t in enumerate(tokens)))
    return path


@pytest.fixture(scope="module")
def o200k() -> Path:
    bpe_openai = pytest.importorskip("bpe_openai", reason="OpenAI's ranks files come in the bpe-openai wheel "
                                                          "(pip install bpe-openai, or the test extra)")
    path = Path(os.path.dirname(bpe_openai.__file__)) / "data" / "o200k_base.tiktoken.gz"
    if not path.exists():
        pytest.skip(f"{path} is not in this bpe-openai wheel")
    return path


# --------------------------------------------------------------------------- HF tokenizer.json


def test_hf_file_encodes_decodes_and_counts_as_the_library(tmp_path):
    tok = package.load(BL300)
    (tmp_path / "in.txt").write_text(TEXT)
    ids = ok(bbpe("encode", "-m", BL300, tmp_path / "in.txt"))
    assert ids == id_lines(tok, LINES)
    assert ok(bbpe("decode", "-m", BL300, stdin=ids)) == TEXT.encode()
    assert stdout_ints(bbpe("count", "-m", BL300, tmp_path / "in.txt")) == counts(tok, LINES)
    # the model from a pipe, the input a file; one thread; special tokens read as text
    assert ok(bbpe("encode", "-m", "-", tmp_path / "in.txt", stdin=BL300.read_bytes())) == ids
    assert stdout_ints(bbpe("count", "-m", BL300, "--threads", "1", stdin=TEXT.encode())) == counts(tok, LINES)
    assert stdout_ints(bbpe("count", "-m", BL300, "--split-special-tokens", tmp_path / "in.txt")) == \
        counts(tok, LINES, split_special_tokens=True)
    assert ok(bbpe("encode", "-m", BL300, "--split-special-tokens", tmp_path / "in.txt")) == \
        id_lines(tok, LINES, split_special_tokens=True)


def test_special_tokens_are_matched_whole_in_large_blocks(tmp_path):
    """With added special tokens, the lines that hold none go through the threaded batch as
    ordinary text and the others one by one: the ids are those of ``encode`` line by line,
    in order, across blocks of the input (1 MB each) and a line longer than a block."""
    tok = package.load(BL300)
    assert tok.added_special_tokens  # else this tests nothing
    lines = [f"{i} {LINES[i % len(LINES)]}" + (" <|endoftext|>" if i % 97 == 0 else "") for i in range(30_000)]
    lines.insert(12_345, "long line " * 150_000)  # 1.5 MB
    (tmp_path / "big.txt").write_text("\n".join(lines))  # no LF after the last line
    assert stdout_ints(bbpe("count", "-m", BL300, tmp_path / "big.txt")) == counts(tok, lines)
    assert ok(bbpe("encode", "-m", BL300, "--threads", "2", tmp_path / "big.txt")) == id_lines(tok, lines)


def test_hf_file_info_and_vocab():
    tok = package.load(BL300)
    info = ok(bbpe("info", BL300)).decode()
    assert "model             BPE" in info and "300 ids (300 tokens)" in info
    assert "<|endoftext|> 0" in info and "pattern           hf_byte_level" in info
    rows = ok(bbpe("vocab", BL300)).decode().splitlines()
    assert rows == [f"{i}\t{len(k)}\t{k.hex()}" for i, k in enumerate(tok.keys)]


# --------------------------------------------------------------------------- tiktoken ranks files


def test_ranks_file_with_a_pattern_name_and_a_regex(ranks, tmp_path):
    tiktoken = pytest.importorskip("tiktoken", reason="tiktoken is the oracle for ranks files (pip install tiktoken)")
    (tmp_path / "in.txt").write_text(TEXT)
    for pattern in ("cl100k_base", r"\S+|\s+"):
        tok = package.BPE.from_tiktoken(ranks, pattern)
        ids = ok(bbpe("encode", "-m", ranks, "--pattern", pattern, tmp_path / "in.txt"))
        assert ids == id_lines(tok, LINES)
        enc = tiktoken.Encoding("small", pat_str=tok.spec.pattern, special_tokens={},
                                mergeable_ranks={k: i for i, k in enumerate(tok.keys)})
        assert [list(map(int, line.split())) for line in ids.splitlines()] == [enc.encode(line) for line in LINES]
        assert ok(bbpe("decode", "-m", ranks, "--pattern", pattern, stdin=ids)) == TEXT.encode()
        total = ok(bbpe("count", "-m", ranks, "--pattern", pattern, "-t", tmp_path / "in.txt"))
        assert total == f"{sum(counts(tok, LINES))} {tmp_path / 'in.txt'}\n".encode()
    info = ok(bbpe("info", ranks, "--pattern", "cl100k_base")).decode()
    assert "270 ids (270 tokens)" in info and "special tokens    none" in info and "pattern           cl100k_base" in info


def test_o200k_matches_tiktoken(o200k, tmp_path):
    """OpenAI's own o200k_base file with its name: tiktoken's encoding, special tokens
    included (matched whole, as tiktoken's ``allowed_special="all"``; with
    --split-special-tokens read as text, as ``encode_ordinary``)."""
    pytest.importorskip("tiktoken", reason="tiktoken is the oracle for o200k_base (pip install tiktoken)")
    lines = LINES + (ZH_SMALL.read_text(encoding="utf-8").splitlines()[:300] if ZH_SMALL.exists() else [])
    text = "\n".join(lines) + "\n"
    (tmp_path / "in.txt").write_text(text, encoding="utf-8")
    model = ("-m", o200k, "--pattern", "o200k_base")
    ids = ok(bbpe("encode", *model, tmp_path / "in.txt"))
    enc = package.BPE.from_tiktoken(o200k, "o200k_base", special_tokens={"<|endoftext|>": 199999,
                                                                        "<|endofprompt|>": 200018}).to_tiktoken()
    got = [list(map(int, line.split())) for line in ids.splitlines()]
    assert got == [enc.encode(line, allowed_special="all") for line in lines]
    assert got[LINES.index("a <|endoftext|> b")] == enc.encode("a <|endoftext|> b", allowed_special="all")
    assert 199999 in got[LINES.index("a <|endoftext|> b")]
    assert ok(bbpe("decode", *model, stdin=ids)) == text.encode()
    assert stdout_ints(bbpe("count", *model, tmp_path / "in.txt")) == [len(row) for row in got]
    ordinary = stdout_ints(bbpe("count", *model, "--split-special-tokens", stdin=text.encode()))
    assert ordinary == [len(enc.encode_ordinary(line)) for line in lines]
    info = ok(bbpe("info", o200k, "--pattern", "o200k_base")).decode()
    assert "200,019 ids (199,998 tokens, 2 special past them, 19 unused)" in info
    assert "<|endoftext|> 199999  <|endofprompt|> 200018 (o200k_base's" in info and "pattern           o200k_base" in info


def test_o200k_vocab_lists_its_special_tokens(o200k):
    rows = ok(bbpe("vocab", o200k, "--pattern", "o200k_base")).decode().splitlines()
    assert len(rows) == 199_998 + 2
    assert rows[-2:] == [f"199999\t13\t{b'<|endoftext|>'.hex()}", f"200018\t15\t{b'<|endofprompt|>'.hex()}"]


def test_another_encodings_pattern_warns(o200k, tmp_path):
    """o200k_base's file with cl100k_base's pattern is probably a mistake: a warning, and no
    special tokens (they are o200k_base's); the ids are those of the pattern asked for."""
    r = bbpe("count", "-m", o200k, "--pattern", "cl100k_base", "--total", stdin=b"hello <|endoftext|>\n")
    assert r.returncode == 0
    assert r.stderr.decode().startswith("bbpe: warning: ") and "o200k_base ranks file" in r.stderr.decode()
    tok = package.BPE.from_tiktoken(o200k, "cl100k_base")
    assert r.stdout == b"%d\n" % len(tok.encode("hello <|endoftext|>"))


# --------------------------------------------------------------------------- count, as wc


def test_count_totals_follow_wc(tmp_path):
    tok = package.load(BL300)
    a, b, empty = tmp_path / "a.txt", tmp_path / "b.txt", tmp_path / "empty.txt"
    a.write_text(TEXT)
    b.write_text("床前明月光\n疑是地上霜")
    empty.write_bytes(b"")
    n_a, n_b = sum(counts(tok, LINES)), sum(counts(tok, ["床前明月光", "疑是地上霜"]))
    assert ok(bbpe("count", "-m", BL300, "--total", a)) == f"{n_a} {a}\n".encode()
    assert ok(bbpe("count", "-m", BL300, "-t", stdin=TEXT.encode())) == f"{n_a}\n".encode()  # stdin: no name
    assert ok(bbpe("count", "-m", BL300, "-t", a, b, "-", empty, stdin=b"hello\n")).decode().splitlines() == [
        f"{n_a} {a}", f"{n_b} {b}", f"{len(tok.encode('hello'))} -", f"0 {empty}",
        f"{n_a + n_b + len(tok.encode('hello'))} total"]
    # without --total, the counts of every line of every file, one after the other
    assert stdout_ints(bbpe("count", "-m", BL300, a, empty, b)) == counts(tok, [*LINES, "床前明月光", "疑是地上霜"])
    assert ok(bbpe("count", "-m", BL300, empty)) == b""


def test_count_xbbpe_is_the_length_of_encode(tmp_path):
    """XBBPE too, with its own specials (<S>) matched and --bug-compat's lossy encoding."""
    text = "床前明月光，疑是地上霜。\n<S>举头望明月</S>\n".encode() + b"abc \xff\n\n"  # XBBPE encodes any bytes
    for flags in ([], ["--bug-compat"]):
        ids = ok(bbpe("encode", "-m", GOLDEN800, *flags, stdin=text))
        assert stdout_ints(bbpe("count", "-m", GOLDEN800, *flags, stdin=text)) == [len(r.split()) for r in
                                                                                 ids.splitlines()]


# --------------------------------------------------------------------------- errors


def check_error(r: subprocess.CompletedProcess, *fragments: str) -> None:
    err = r.stderr.decode()
    assert r.returncode == 1, err
    assert err.count("\n") == 1 and err.startswith("bbpe: error: ") and "Traceback" not in err, err
    for fragment in fragments:
        assert fragment in err, err


@pytest.mark.parametrize("verb", ["encode", "decode", "count"])
def test_a_ranks_file_needs_a_pattern(ranks, verb):
    check_error(bbpe(verb, "-m", ranks, stdin=b"1 2\n"), f"{ranks}: a tiktoken ranks file holds no pre-tokenizer "
                "pattern: pass --pattern", "o200k_base")


def test_errors_of_a_model_or_an_input(ranks, tmp_path):
    check_error(bbpe("info", "-", stdin=ranks.read_bytes()), "<stdin>: a tiktoken ranks file", "--pattern")
    check_error(bbpe("encode", "-m", ranks, "--pattern", "o300k_base", stdin=b"x\n"),
                "--pattern: unknown pattern name 'o300k_base'", "cl100k_base, o200k_base")
    check_error(bbpe("count", "-m", ranks, "--pattern", "(unclosed", stdin=b"x\n"), "(unclosed", "does not compile")
    check_error(bbpe("encode", "-m", BL300, "--pattern", "o200k_base", stdin=b"x\n"),
                "--pattern is for a tiktoken ranks file", str(BL300))
    check_error(bbpe("encode", "-m", ranks, "--pattern", "gpt2", "--bug-compat", stdin=b"x\n"), "--bug-compat")
    check_error(bbpe("count", "-m", BL300, "nothere.txt", cwd=tmp_path), "nothere.txt: No such file")
    check_error(bbpe("count", "-m", "nothere.json", stdin=b"x\n", cwd=tmp_path), "nothere.json: No such file")
    check_error(bbpe("count", "-m", BL300, tmp_path), f"{tmp_path}: is a directory")
    check_error(bbpe("count", "-m", "-", stdin=BL300.read_bytes()), "cannot both be standard input")
    check_error(bbpe("count", "-m", "-", "a.txt", "-", stdin=BL300.read_bytes()), "cannot both be standard input")
    check_error(bbpe("vocab", DATA / "bpe" / "gpt2_vocab.json"), "GPT-2's vocab.json", "merges.txt")
    for verb in ("trainenc", "special"):
        check_error(bbpe(verb, BL300), f"{BL300} holds a BPE model: `bbpe {verb}`", "XBBPE")
        check_error(bbpe(verb, ranks), "holds a BPE model (a tiktoken ranks file)")
    r = bbpe("count", "-m", BL300, "--threads", "0", stdin=b"x\n")
    assert r.returncode == 2 and b"--threads: '0' is not a positive integer" in r.stderr


@pytest.mark.parametrize("verb", ["encode", "count"])
def test_invalid_utf8_names_the_line_for_a_bpe_model(ranks, verb, tmp_path):
    """A BPE model encodes text, not bytes: a line that is not UTF-8 is an error naming the
    file and the line (XBBPE encodes any bytes: test_count_xbbpe_is_the_length_of_encode)."""
    (tmp_path / "bad.txt").write_bytes(b"fine\n" * 5000 + b"ab\xffc\nfine\n")
    check_error(bbpe(verb, "-m", BL300, tmp_path / "bad.txt"), f"{tmp_path / 'bad.txt'}: line 5001: invalid UTF-8")
    check_error(bbpe(verb, "-m", ranks, "--pattern", "gpt2", stdin=b"ok\n\xe5\xba\n"), "<stdin>: line 2: invalid UTF-8")
