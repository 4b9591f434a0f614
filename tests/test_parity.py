"""bbpe side by side with the reference oracle: ``.bin`` bytes, encodings and decodings.

For every corpus: the ``.bin`` bbpe writes equals the one ``xbbpe train`` writes; with
``bug_compat`` every probe line encodes to the oracle's ids; by default every line
round-trips and its ids equal the oracle's wherever the oracle round-trips; and decoding
the oracle's ids gives the oracle's bytes.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from conftest import SONG100, TANG300
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from random_corpora import VOCAB_SIZES, random_corpus, random_probes, to_gbk

import bbpe
from bbpe.common.gbk import gbk_to_utf8

RANDOM_CORPORA = 200

# Random GBK corpora hold undecodable bytes on purpose; the warning itself is tested in test_gbk.
# the random corpora hold bytes that are not UTF-8 (or not GBK), and some learn nothing, on
# purpose: the warnings that says so are test_reliability.py's
pytestmark = [pytest.mark.filterwarnings("ignore::bbpe.GBKWarning"), pytest.mark.filterwarnings("ignore::bbpe.CorpusWarning")]


def check_codec(oracle, model: Path, tok: bbpe.Tokenizer, texts: list[bytes], gbk: bool = False) -> None:
    reference = oracle.encode(model, texts, gbk=gbk)
    for text, ref_ids in zip(texts, reference):
        assert tok.encode(text, gbk=gbk, bug_compat=True) == ref_ids, text
        utf8 = gbk_to_utf8(text) if gbk else text
        ids = tok.encode(text, gbk=gbk)
        assert tok.decode_bytes(ids) == utf8, text
        if tok.decode_bytes(ref_ids) == utf8:  # where the reference loses nothing, same ids
            assert ids == ref_ids, text
    assert oracle.decode(model, reference, gbk=gbk) == [tok.decode_bytes(ids, gbk=gbk) for ids in reference]


@pytest.mark.parametrize("vocab_size", [0, 7, 263, 271, 800, 2000, 4000, 1])
@pytest.mark.parametrize("corpus", [TANG300, SONG100], ids=["tang300", "song100"])
def test_reference_corpora(oracle, tmp_path, corpus, vocab_size):
    model = tmp_path / "ref.bin"
    expected = oracle.train(corpus, vocab_size, model)
    tok = bbpe.Tokenizer.train(corpus, vocab_size)
    assert tok.to_bytes() == expected
    check_codec(oracle, model, tok, corpus.read_bytes().split(b"\n"))


@pytest.mark.parametrize("seed", [pytest.param(s, marks=pytest.mark.slow) if s >= 40 else s for s in range(RANDOM_CORPORA)])
def test_random_corpus(oracle, tmp_path, seed, monkeypatch):
    """Half of the corpora are scanned in parts on three threads, encoded in pieces of
    about 64 bytes and written as ``bbpe train`` writes them (``output=``: the encodings
    go to the file as they are made), as a large one would be."""
    streamed = seed % 2 == 1
    if streamed:
        from bbpe.common import corpus as corpus_module
        from bbpe.xbbpe import encodings as trainenc

        monkeypatch.setattr(corpus_module, "MIN_PART_BYTES", 64)
        monkeypatch.setenv("BBPE_THREADS", "3")
        monkeypatch.setattr(trainenc, "BLOCK_BYTES", 64)
    rng = random.Random(seed)
    gbk = seed % 10 == 9
    data = random_corpus(rng, invalid=not gbk and seed % 3 == 1)
    probes = random_probes(rng, data)
    if gbk:
        data, probes = to_gbk(rng, data), [to_gbk(rng, p) for p in probes]
    vocab_size = rng.choice(VOCAB_SIZES)
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(data)
    model = tmp_path / "ref.bin"
    expected = oracle.train(corpus, vocab_size, model, gbk=gbk)
    if streamed:
        ours = tmp_path / "ours.bin"
        tok = bbpe.Tokenizer.train(corpus, vocab_size, gbk=gbk, output=ours)
        assert ours.read_bytes() == expected, f"seed {seed}, vocab {vocab_size}"
        assert tok.n_train_encodings == 0  # they are in the file only
    else:
        tok = bbpe.Tokenizer.train(corpus, vocab_size, gbk=gbk)
        assert tok.to_bytes() == expected, f"seed {seed}, vocab {vocab_size}"
    check_codec(oracle, model, tok, probes, gbk=gbk)


def test_gbk_sample(oracle, tmp_path):
    """The real GBK corpus (zh-small in GBK) trains to the same .bin in --gbk mode."""
    sample = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "gbk-sample.txt"
    if not sample.exists():
        pytest.skip(f"{sample} not found")
    model = tmp_path / "ref.bin"
    expected = oracle.train(sample, 2000, model, gbk=True)
    tok = bbpe.Tokenizer.train(sample, 2000, gbk=True)
    assert tok.to_bytes() == expected
    check_codec(oracle, model, tok, sample.read_bytes().split(b"\n")[:400], gbk=True)


def test_random_corpora_reach_the_quirks():
    """The generator is only useful if it hits the 24-byte limit and the lossy encoder."""
    long_keys = lossy = 0
    for seed in range(RANDOM_CORPORA):
        rng = random.Random(seed)
        data = random_corpus(rng, invalid=seed % 3 == 1)
        probes = random_probes(rng, data)
        tok = bbpe.Tokenizer.train_from_iterator(data.split(b"\n"), 0)
        long_keys += max(map(len, tok.keys)) >= 21
        lossy += any(tok.decode_bytes(tok.encode(p, bug_compat=True)) != p for p in probes)
    assert long_keys >= 40 and lossy >= 20, (long_keys, lossy)


def test_reference_loads_what_bbpe_writes(oracle, tmp_path):
    """A .bin from a Tokenizer built from keys (records by id, lossless encodings) loads in
    the C++ program and gives the same vocabulary, encodings and special ids."""
    trained = bbpe.Tokenizer.train(SONG100, 1000, lossless_encodings=True)
    rebuilt = bbpe.Tokenizer(trained.keys, train_encodings=trained.train_encodings)
    path = tmp_path / "rebuilt.bin"
    rebuilt.save(path)
    vocab = "".join(f"{i}\t{len(k)}\t{k.hex()}\n" for i, k in enumerate(rebuilt.keys)).encode()
    assert oracle.dump("vocab", path) == vocab
    assert oracle.dump("trainenc", path).decode().splitlines() == [" ".join(map(str, e)) for e in rebuilt.train_encodings]
    assert oracle.dump("special", path) == f"{rebuilt.pad_id} {rebuilt.bos_id} {rebuilt.eos_id}\n".encode()
    lines = SONG100.read_bytes().split(b"\n")
    assert oracle.encode(path, lines) == [rebuilt.encode(line, bug_compat=True) for line in lines]


corpus_lines = st.lists(
    st.text(alphabet=st.sampled_from("天地人一二三四五六七八山水，。！？ ·\u3000<>/PSab.é𡵓\r"), max_size=30),
    min_size=0, max_size=25)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=corpus_lines, vocab_size=st.sampled_from([0, 263, 271, 280, 300, 2**32 - 1]))
def test_hypothesis_corpora_match_oracle(oracle, tmp_path, lines, vocab_size):
    """Any small corpus (valid UTF-8: where the reference is defined): no crash, same .bin."""
    data = "\n".join(lines).encode()
    corpus = tmp_path / "h.txt"
    corpus.write_bytes(data)
    expected = oracle.train(corpus, vocab_size, tmp_path / "h.bin")
    assert bbpe.Tokenizer.train_from_iterator(data.split(b"\n"), vocab_size).to_bytes() == expected
