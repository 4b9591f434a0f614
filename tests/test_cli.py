"""The bbpe command: output formats, errors, and byte-for-byte parity with the oracle's driver."""

from __future__ import annotations

import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from cli_runner import run_bbpe
from conftest import DATA, TANG300
from random_corpora import random_corpus, random_probes

GOLDEN800 = DATA / "golden" / "tang300_v800.bin"


bbpe = run_bbpe


def test_console_script_is_installed():
    exe = shutil.which("bbpe")
    assert exe, "the bbpe console script is not on PATH"
    assert subprocess.run([exe, "--version"], capture_output=True, check=False, text=True).stdout.startswith("bbpe ")


def _python(code: str, **env: str) -> str:
    import os

    environ = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"} | env
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=environ,
                          cwd=tempfile.gettempdir()).stdout.strip()


def test_command_keeps_blas_to_one_thread():
    """``import bbpe`` imports no numpy, so the command sets OPENBLAS_NUM_THREADS for its
    process before numpy loads (it never calls BLAS); a value the user set is kept, and
    the library itself leaves it alone."""
    check = "import sys, os, bbpe; print('numpy' in sys.modules); import bbpe.cli; print(os.environ.get('OPENBLAS_NUM_THREADS'))"
    assert _python(check).split() == ["False", "1"]
    assert _python(check, OPENBLAS_NUM_THREADS="3").split() == ["False", "3"]
    library = "import os, bbpe; bbpe.Tokenizer; print(os.environ.get('OPENBLAS_NUM_THREADS'))"
    assert _python(library) == "None"
    assert _python("import bbpe; print(bbpe.codec.__name__, bbpe.load.__name__)") == "bbpe.codec load"


def test_train_defaults_to_bundled_corpus(tmp_path):
    """Like the blog constructor: tang300 at vocab 800 into xBBPE.bin."""
    r = bbpe("train", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "xBBPE.bin").read_bytes() == GOLDEN800.read_bytes()


def test_train_from_a_pipe(tmp_path):
    """A corpus through a pipe (``bbpe train /dev/stdin < c``, ``<(zcat c.gz)``) trains as
    the file does: it is copied to a temporary file first, and nothing is left behind."""
    import os

    before = set(os.listdir(tempfile.gettempdir()))
    r = bbpe("train", "/dev/stdin", "--vocab-size", "800", "-o", str(tmp_path / "m.bin"), stdin=TANG300.read_bytes())
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "m.bin").read_bytes() == GOLDEN800.read_bytes()
    left = set(os.listdir(tempfile.gettempdir())) - before
    assert not [name for name in left if name.startswith("bbpe-corpus-")]  # no temporary copy left (none is named on Linux)


def test_encode_decode_pipeline(tmp_path):
    text = "床前明月光，疑是地上霜。\n<S>举头望明月</S>\nabc"
    enc = bbpe("encode", "-m", str(GOLDEN800), stdin=text.encode())
    assert enc.returncode == 0 and enc.stdout.count(b"\n") == 3
    dec = bbpe("decode", "-m", str(GOLDEN800), stdin=enc.stdout)
    assert dec.stdout == text.encode() + b"\n"
    (tmp_path / "in.txt").write_text(text)
    assert bbpe("encode", "-m", str(GOLDEN800), str(tmp_path / "in.txt")).stdout == enc.stdout
    count = bbpe("count", "-m", str(GOLDEN800), str(tmp_path / "in.txt")).stdout
    assert count.split() == [str(len(line.split())).encode() for line in enc.stdout.splitlines()]


def test_dumps():
    assert bbpe("vocab", str(GOLDEN800)).stdout.decode() == (DATA / "golden" / "tang300_v800.vocab.tsv").read_text()
    assert bbpe("special", str(GOLDEN800)).stdout == b"794 796 799\n"
    assert bbpe("trainenc", str(GOLDEN800)).stdout.count(b"\n") == 2228
    info = bbpe("info", str(GOLDEN800)).stdout.decode()
    assert "800 ids" in info and "PAD 794" in info and "2,228 texts" in info and "model             XBBPE" in info


@pytest.mark.parametrize("args,stdin,message", [
    (["encode", "-m", "missing.bin"], b"", "missing.bin: No such file"),
    (["decode", "-m", str(GOLDEN800)], b"1 2 99999\n", "line 1: unknown id 99999 at position 2"),
    (["decode", "-m", str(GOLDEN800)], b"1 2\n3 x\n", "line 2: 'x' is not an id"),
    (["decode", "-m", str(GOLDEN800)], b"99999999999999999999\n", "out of range"),
    (["train", "nothere.txt", "--vocab-size", "800"], b"", "nothere.txt: No such file"),
    (["train", str(TANG300), "--vocab-size", "-5"], b"", "not a non-negative integer"),
    (["train", str(TANG300), "--vocab-size", "abc"], b"", "not a non-negative integer"),
    (["train", str(TANG300), "--vocab-size", "4294967296"], b"", "uint32"),
    (["vocab", str(TANG300)], b"", "offset 0: this is a text file, not a .bin model"),
    (["vocab", "-"], b"", "<stdin>: offset 0: file too short"),
    (["info", "-"], TANG300, "<stdin>: offset 0: this is a text file"),
    (["encode", "-m", "-"], GOLDEN800, "the model and the input cannot both be standard input"),
    (["encode", "-m", "-", "-"], GOLDEN800, "the model and the input cannot both be standard input"),
    (["decode", "-m", "-", "-"], GOLDEN800, "the model and the input cannot both be standard input"),
    (["count", "-m", "-"], GOLDEN800, "the model and the input cannot both be standard input"),
    (["trainenc", str(DATA / "bpe" / "bl300.json")], b"", "holds a BPE model: `bbpe trainenc` shows what only XBBPE"),
])
def test_errors_are_one_line(args, stdin, message, tmp_path):
    r = bbpe(*args, stdin=stdin.read_bytes() if isinstance(stdin, Path) else stdin, cwd=tmp_path)  # a file piped in
    assert r.returncode == 1
    err = r.stderr.decode()
    assert err.count("\n") == 1 and err.startswith("bbpe: error: ") and message in err, err
    assert "Traceback" not in err
    assert not list(tmp_path.glob("*.bin")) and not list(tmp_path.glob(".bbpe-*"))


def test_dash_is_stdin_for_every_file_a_verb_reads(tmp_path):
    """``-`` is standard input for the input of encode and decode, and for the model of
    every verb (a model from a pipe); the output is the same as from the files."""
    text = "床前明月光，疑是地上霜。\n举头望明月\n".encode()
    (tmp_path / "in.txt").write_bytes(text)
    ids = bbpe("encode", "-m", str(GOLDEN800), str(tmp_path / "in.txt")).stdout
    (tmp_path / "ids.txt").write_bytes(ids)
    model = GOLDEN800.read_bytes()
    assert bbpe("encode", "-m", str(GOLDEN800), "-", stdin=text).stdout == ids
    assert bbpe("decode", "-m", str(GOLDEN800), "-", stdin=ids).stdout == text
    assert bbpe("encode", "-m", "-", str(tmp_path / "in.txt"), stdin=model).stdout == ids
    assert bbpe("decode", "-m", "-", str(tmp_path / "ids.txt"), stdin=model).stdout == text
    for verb in ("vocab", "trainenc", "special"):
        from_pipe = bbpe(verb, "-", stdin=model)
        assert from_pipe.returncode == 0 and from_pipe.stdout == bbpe(verb, str(GOLDEN800)).stdout, from_pipe.stderr
    info = bbpe("info", "-", stdin=model).stdout.decode()
    assert f"<stdin> ({len(model):,} bytes)" in info and "2,228 texts" in info


def _summary(r: subprocess.CompletedProcess) -> str:
    assert r.returncode == 0, r.stderr
    lines = r.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bbpe: trained vocab="), lines
    return lines[0]


def _check_train_lines(summary: str, lines: int) -> None:
    assert f" train_lines={lines} " in summary


def test_train_names_the_full_path_it_wrote(tmp_path):
    """The default output lands in the current directory: the summary says where, in full."""
    summary = _summary(bbpe("train", "-n", "800", cwd=tmp_path))
    assert summary.endswith(f" -> {tmp_path / 'xBBPE.bin'}") and (tmp_path / "xBBPE.bin").exists()
    (tmp_path / "sub").mkdir()
    summary = _summary(bbpe("train", "-n", "800", "-o", "sub/m.bin", cwd=tmp_path))
    assert summary == f"bbpe: trained vocab=800 train_lines=2228 -> {tmp_path / 'sub' / 'm.bin'}"


def test_train_lines_counts_the_texts_trained_on_without_encodings(tmp_path):
    """``--no-encodings`` stores none, but the run trained on 2228 texts all the same."""
    summary = _summary(bbpe("train", "-n", "800", "--no-encodings", "-o", "m.bin", cwd=tmp_path))
    assert summary.endswith(f" -> {tmp_path / 'm.bin'}")
    assert bbpe("trainenc", str(tmp_path / "m.bin")).stdout == b""
    _check_train_lines(summary, 2228)


def test_train_to_json(tmp_path):
    """``-o x.json`` writes bbpe's JSON model, which loads as JSON and encodes as the .bin
    trained on the same corpus; the summary reads nothing back from it as a .bin."""
    import json

    import bbpe as package

    summary = _summary(bbpe("train", str(TANG300), "-n", "800", "-o", "m.json", cwd=tmp_path))
    assert summary.startswith("bbpe: trained vocab=800 ") and summary.endswith(f" -> {tmp_path / 'm.json'}")
    assert json.loads((tmp_path / "m.json").read_bytes())["model"]["type"] == "XBBPE"
    from_json, from_bin = package.Tokenizer.load(tmp_path / "m.json"), package.Tokenizer.load(GOLDEN800)
    assert from_json.keys == from_bin.keys
    lines = TANG300.read_text().splitlines()
    assert from_json.encode_batch(lines) == from_bin.encode_batch(lines)
    probes = "床前明月光，疑是地上霜。\n<S>举头望明月</S>\nabc"
    assert bbpe("encode", "-m", str(tmp_path / "m.json"), stdin=probes.encode()).stdout == \
        bbpe("encode", "-m", str(GOLDEN800), stdin=probes.encode()).stdout
    _check_train_lines(summary, 2228)


def test_usage_error():
    r = bbpe("encode")
    assert r.returncode == 2 and b"usage" in r.stderr


# --------------------------------------------------------------------------- against the oracle


def _same_output(oracle, tmp_path, corpus, vocab_size, probes: bytes, gbk: bool = False) -> None:
    flag = ["--gbk"] if gbk else []
    ref_bin, our_bin = tmp_path / "ref.bin", tmp_path / "ours.bin"
    oracle.train(corpus, vocab_size, ref_bin, gbk=gbk)
    r = bbpe("train", str(corpus), "--vocab-size", str(vocab_size), "-o", str(our_bin), *flag)
    assert r.returncode == 0, r.stderr
    assert our_bin.read_bytes() == ref_bin.read_bytes()
    for command in ("vocab", "trainenc", "special"):
        assert bbpe(command, str(our_bin)).stdout == oracle.dump(command, ref_bin)
    ref_ids = oracle.run("encode", str(ref_bin), stdin=probes, gbk=gbk)
    assert bbpe("encode", "-m", str(our_bin), "--bug-compat", *flag, stdin=probes).stdout == ref_ids
    assert bbpe("decode", "-m", str(our_bin), *flag, stdin=ref_ids).stdout == oracle.run("decode", str(ref_bin), stdin=ref_ids, gbk=gbk)


def test_cli_matches_oracle_on_tang300(oracle, tmp_path):
    _same_output(oracle, tmp_path, TANG300, 2000, TANG300.read_bytes())


# the quick set keeps seed 0 (valid UTF-8, vocab 1000) and seed 3 (invalid bytes, vocab 0: no
# limit); the others repeat those cases on other corpora, as test_parity does 200 times
@pytest.mark.parametrize("seed", [s if s in (0, 3) else pytest.param(s, marks=pytest.mark.slow) for s in range(10)])
def test_cli_matches_oracle_on_random_corpora(oracle, tmp_path, seed):
    rng = random.Random(1000 + seed)
    data = random_corpus(rng, invalid=seed % 2 == 1)
    corpus = tmp_path / "c.txt"
    corpus.write_bytes(data)
    probes = b"\n".join(random_probes(rng, data)) + b"\n"
    _same_output(oracle, tmp_path, corpus, rng.choice([0, 300, 400, 1000]), probes)


def test_cli_matches_oracle_in_gbk_mode(oracle, tmp_path):
    corpus = tmp_path / "gbk.txt"
    lines = TANG300.read_text().replace("・", "·").splitlines()[:600]
    corpus.write_bytes("\n".join(lines).encode("gbk") + b"\n\x81 bad \x80\n")
    _same_output(oracle, tmp_path, corpus, 1200, corpus.read_bytes(), gbk=True)
