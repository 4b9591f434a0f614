"""The incremental engine against the reference one (which recounts every pair on every
merge), whole: any corpus, any vocab size, any tuning gives the same vocabulary in the same
order. The reference engine is itself checked against the C++ oracle in test_parity.py;
each stage's own paths are in test_scan.py, test_first_pass.py and test_merges.py.
"""

from __future__ import annotations

import random

import pytest
from conftest import SONG100, TANG300
from engine_runs import TINY_TABLES, both, repetitive
from hypothesis import given, settings
from hypothesis import strategies as st
from random_corpora import VOCAB_SIZES, random_corpus
from reference.simple_engine import train_simple
from scan_parts import in_parts

from bbpe.xbbpe.engine import DEFAULT, Tuning
from bbpe.xbbpe.train import train_vocabulary


@pytest.mark.parametrize("seed", [pytest.param(s, marks=pytest.mark.slow) if s >= 60 else s for s in range(300)])
def test_random_corpora(seed):
    rng = random.Random(10_000 + seed)
    data = random_corpus(rng, invalid=seed % 2 == 0)
    simple, incremental = both([data], rng.choice(VOCAB_SIZES))
    assert incremental == simple


@pytest.mark.parametrize("vocab_size", [0, 300, 1500, 3000, 3500])
def test_reference_corpora_together(vocab_size):
    data = TANG300.read_bytes() + b"\n" + SONG100.read_bytes()
    simple, incremental = both([data], vocab_size)
    assert incremental == simple


@settings(max_examples=200, deadline=None)
@given(text=repetitive, vocab_size=st.sampled_from([0, 270, 271, 275, 290, 320]))
def test_repetitive_text(text, vocab_size):
    simple, incremental = both([text.encode()], vocab_size)
    assert incremental == simple


def test_a_key_that_only_lost_occurrences_is_lowered_when_it_comes_up():
    """The merges push only the keys they linked into; a key that lost occurrences keeps
    its old, higher heap entry until that reaches the top (``_heap_pop_valid``). "zz" wins
    in the first pass, so the heap starts exact. Then "bc" (11) wins and takes 5 of the 9
    occurrences of "ab", whose entry stays at 9 while "a"+"bc" (5) is pushed: on top, that
    entry must be lowered to 4 and sink, neither taken nor dropped (dropping it, "bx" would
    come before "ab")."""
    data = b"zz\n" * 20 + b"abc\n" * 5 + b"abx\n" * 4 + b"bc\n" * 6
    simple, incremental = both([data], 0)
    assert incremental == simple
    merged = [key for key in incremental if key in (b"zz", b"bc", b"abc", b"ab", b"bx", b"abx")]
    assert merged == [b"zz", b"bc", b"abc", b"ab", b"abx"]


def test_any_bytes_like_block():
    """Blocks may be bytes, bytearray or memoryview (the compiled scan reads them read-only)."""
    data = TANG300.read_bytes()
    expected = train_vocabulary([data], 1000)
    assert train_vocabulary([bytearray(data)], 1000) == expected
    assert train_vocabulary([memoryview(data)], 1000) == expected


def test_blocks_do_not_matter():
    """Cutting the corpus into blocks at line ends changes nothing."""
    data = TANG300.read_bytes()
    lines = data.split(b"\n")
    blocks = [b"\n".join(lines[i : i + 97]) for i in range(0, len(lines), 97)]
    assert train_vocabulary(blocks, 0) == train_vocabulary([data], 0)


@pytest.mark.parametrize("unit,repeat", [("天地", 100_000), ("一二三四五六七八", 20_000), ("ab", 150_000)])
def test_one_long_line(unit, repeat):
    """Q20.5: one huge segment, with overlapping pairs and 24-byte (Q9) repeats."""
    line = (unit * repeat).encode()
    simple, incremental = both([line], 0)
    assert incremental == simple


@pytest.mark.parametrize("seed", range(60))
def test_growth_changes_nothing(seed):
    """Tables that start almost empty grow in every stage, on one thread and, each part's
    key table and store, on threads of their own (and backwards)."""
    rng = random.Random(20_000 + seed)
    data = random_corpus(rng, invalid=seed % 3 == 0)
    vocab_size = rng.choice([0, 300, 500, 1000])
    simple, incremental = both([data], vocab_size, TINY_TABLES)
    assert incremental == simple
    parts = in_parts(data, 3, rng)
    assert train_vocabulary(parts[0], vocab_size, parts=parts[1:], tuning=TINY_TABLES) == simple


def _tunings() -> st.SearchStrategy[Tuning]:
    """Any tuning the engine accepts, within sizes a small corpus reaches."""
    return st.builds(
        Tuning, key_capacity=st.integers(1, 1 << 14), growth=st.sampled_from([0, 0.1, 0.5, 2]),
        store_types=st.integers(1, 1 << 12), store_tokens=st.integers(1, 1 << 16), stores_for_corpus=st.booleans(),
        index_start=st.sampled_from([1, 16, 1 << 20]), reserve_rows=st.booleans(), pieces=st.integers(1, 64),
        split_count_at=st.sampled_from([0, 64, 1 << 22]), first_share=st.sampled_from([0.1, 0.46, 0.9]),
        new_in_later=st.sampled_from([0, 0.6, 3]), renumber_here=st.sampled_from([0, 0.4, 1]),
        parallel_merges_at=st.sampled_from([0, 64, 1 << 22]), class_shift=st.integers(0, 12),
        steps_per_call=st.sampled_from([1, 3, 256]), compact_at=st.sampled_from([1, 2, 8]),
        heap_spare=st.sampled_from([0, 1024]), follower=st.booleans(), parallel_from=st.sampled_from([0, 2, 32]),
        slow_share=st.sampled_from([0, 4]), bench_first=st.integers(0, 3), bench_most=st.integers(0, 64))


@settings(max_examples=150, deadline=None)
@given(tuning=_tunings(), seed=st.integers(0, 1 << 30), threads=st.sampled_from(["1", "2"]))
def test_any_tuning_gives_the_same_vocabulary(tuning, seed, threads):
    """Whatever the sizes, shares and thresholds, on one thread or two, the vocabulary is the
    reference engine's: tuning decides how the work is split, never what is learned."""
    rng = random.Random(seed)
    data = random_corpus(rng, invalid=seed % 2 == 0)
    vocab_size = rng.choice(VOCAB_SIZES)
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("BBPE_THREADS", threads)
        incremental = train_vocabulary([data], vocab_size, tuning=tuning)
    assert incremental == train_simple([data], vocab_size)


@pytest.mark.parametrize(("change", "message"), [
    ({"pieces": 0}, "pieces must be at least 1"), ({"growth": -1}, "growth must be a float >= 0"),
    ({"follower": 1}, "follower must be a bool"), ({"steps_per_call": True}, "steps_per_call must be a int"),
    ({"first_share": 1.0}, "first_share must be in"), ({"class_shift": 1.5}, "class_shift must be a int"),
])
def test_a_tuning_out_of_range_is_refused(change, message):
    with pytest.raises(ValueError, match=message):
        DEFAULT.but(**change)
