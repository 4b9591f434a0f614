"""The reference's golden .bin files: bbpe trains the same bytes and loads/saves them intact."""

from __future__ import annotations

import hashlib
import re

import pytest
from conftest import DATA, SONG100, TANG300

import bbpe

GOLDEN = sorted((DATA / "golden").glob("*.bin"))
CORPORA = {"tang300": TANG300, "song100": SONG100}


def test_golden_files_are_the_reference_ones():
    sums = dict(line.split()[::-1] for line in (DATA / "golden" / "MD5SUMS").read_text().splitlines())
    assert len(GOLDEN) == 7 and {p.name for p in GOLDEN} == set(sums)
    for path in GOLDEN:
        assert hashlib.md5(path.read_bytes()).hexdigest() == sums[path.name]


@pytest.mark.parametrize("path", GOLDEN, ids=lambda p: p.stem)
def test_training_reproduces_golden_bytes(path):
    name, vocab = re.fullmatch(r"(\w+)_v(\d+)", path.stem).groups()
    tok = bbpe.Tokenizer.train(CORPORA[name], int(vocab))
    assert tok.to_bytes() == path.read_bytes()


@pytest.mark.parametrize("path", GOLDEN, ids=lambda p: p.stem)
def test_load_save_is_byte_identical(path, tmp_path):
    tok = bbpe.Tokenizer.load(path)
    out = tmp_path / "copy.bin"
    tok.save(out)
    assert out.read_bytes() == path.read_bytes()


@pytest.mark.parametrize("path", GOLDEN, ids=lambda p: p.stem)
def test_vocab_dump_matches_reference(path):
    tok = bbpe.Tokenizer.load(path)
    dump = "".join(f"{i}\t{len(k)}\t{k.hex()}\n" for i, k in enumerate(tok.keys))
    assert dump == path.with_suffix(".vocab.tsv").read_text()


@pytest.mark.parametrize("path", GOLDEN, ids=lambda p: p.stem)
def test_corpus_round_trips(path):
    tok = bbpe.Tokenizer.load(path)
    name = path.stem.split("_")[0]
    for line in CORPORA[name].read_bytes().split(b"\n"):
        assert tok.decode_bytes(tok.encode(line)) == line
        assert tok.encode(line) == tok.encode(line, bug_compat=True)  # neither corpus hits Q14


def test_special_ids_at_800():
    tok = bbpe.Tokenizer.load(DATA / "golden" / "tang300_v800.bin")
    assert (tok.pad_id, tok.bos_id, tok.eos_id) == (794, 796, 799)  # QUIRKS Q12
    assert [tok.token_bytes(i) for i in range(793, 800)] == [b"<P", b"<P>", b"<S", b"<S>", b"</", b"</S", b"</S>"]
