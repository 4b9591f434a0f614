"""The reference's regression cases (tests/data/cases): bbpe prints what the oracle printed."""

from __future__ import annotations

import pytest
from conftest import DATA

import bbpe

# some regression cases are not UTF-8 or learn nothing on purpose (test_reliability.py has the warnings)
pytestmark = pytest.mark.filterwarnings("ignore::bbpe.CorpusWarning")

CASES = DATA / "cases"
TABLE = [line.split("\t")[:2] for line in (CASES / "cases.tsv").read_text().splitlines() if line and line[0] != "#"]


def _text(b: bytes) -> str:
    s = b.decode("utf-8", "backslashreplace")
    return s.replace("\r", "\\r").replace("\n", "\\n").replace("\t", "\\t")


def case_output(name: str, vocab_size: int) -> str:
    """The same report as the reference's tests/run_tests.py, from its second line on."""
    tok = bbpe.Tokenizer.train(CASES / f"{name}.txt", vocab_size)
    out = ["## vocab entries with id >= 263 (id, len, hex, text)"]
    out += [f"{i}\t{len(k)}\t{k.hex()}\t{_text(k)}" for i, k in enumerate(tok.keys) if i >= 263]
    out.append(f"## special (PAD BOS EOS): {tok.pad_id} {tok.bos_id} {tok.eos_id}")
    out.append("## trainenc")
    out += [" ".join(map(str, ids)) for ids in tok.train_encodings]
    out.append("## probes: text -> ids -> decoded")
    for probe in (CASES / f"{name}.probe").read_bytes().split(b"\n")[:-1]:
        ids = tok.encode(probe, bug_compat=True)
        back = tok.decode_bytes(ids)
        verdict = "roundtrip-ok" if back == probe else "ROUNDTRIP-FAILS"
        out.append(f"{_text(probe)} -> [{' '.join(map(str, ids))}] -> {_text(back)}  {verdict}")
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("name,vocab_size", TABLE, ids=[row[0] for row in TABLE])
def test_case_matches_reference_output(name, vocab_size):
    expected = (CASES / f"{name}.out").read_text(encoding="utf-8")
    assert case_output(name, int(vocab_size)) == expected.split("\n", 1)[1]


def test_k24_lossless_by_default():
    """Q14: the reference drops 八九十 after the 21-byte key; bbpe keeps them by default."""
    tok = bbpe.Tokenizer.train(CASES / "k24.txt", 1000)
    text = "一二三四五六七八九十"
    assert tok.decode(tok.encode(text, bug_compat=True)) == "一二三四五六七"
    assert tok.decode(tok.encode(text)) == text
    assert tok.encode(text)[0] == tok.token_id("一二三四五六七".encode())


def test_lossless_training_encodings_option():
    reference = bbpe.Tokenizer.train(CASES / "k24.txt", 1000)
    lossless = bbpe.Tokenizer.train(CASES / "k24.txt", 1000, lossless_encodings=True)
    assert reference.keys == lossless.keys
    lines = (CASES / "k24.txt").read_bytes().split(b"\n")
    assert [reference.decode_bytes(e) for e in reference.train_encodings] != [lossless.decode_bytes(e) for e in lossless.train_encodings]
    assert [lossless.decode_bytes(e).rstrip(b"\n") for e in lossless.train_encodings] == [line for line in lines if line]
