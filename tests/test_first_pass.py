"""The first-pass stage (``engine.first_pass``): the walk in pieces beside the linking, the
count in two halves on two threads, errors on its threads, and the size of the index it
copies. Each gives the reference engine's vocabulary, or the count of one whole pass."""

from __future__ import annotations

import random

import numpy as np
import pytest
from conftest import TANG300
from engine_runs import TINY_TABLES, both
from random_corpora import VOCAB_SIZES, random_corpus

from bbpe.xbbpe import engine
from bbpe.xbbpe.engine import DEFAULT, Tuning
from bbpe.xbbpe.train import train_vocabulary


@pytest.mark.parametrize("seed", range(24))
def test_first_pass_in_pieces_changes_nothing(seed, monkeypatch):
    """The first pass walks the types in pieces of the slot order, on a thread of its own
    while the linking follows (``FirstPass.run``); the singles' order comes from the type
    numbers (Q7), not from the walk. Any number of pieces, on one thread or two, gives
    the simple engine's vocabulary."""
    rng = random.Random(50_000 + seed)
    tuning = DEFAULT.but(pieces=rng.choice([1, 2, 3, 7, 64]))
    monkeypatch.setenv("BBPE_THREADS", str(1 + seed % 2))
    data = random_corpus(rng, invalid=seed % 3 == 0)
    simple, incremental = both([data], rng.choice(VOCAB_SIZES), tuning)
    assert incremental == simple


def _counted(data: bytes, tuning: Tuning) -> tuple[np.ndarray, ...]:
    """The pair count of ``FirstPass._count`` on data: (key rows, pair keys of the slots,
    the table's entries sorted)."""
    keys = engine.KeyTable(tuning)
    first = engine.FirstPass(engine.scan([[data]], keys, tuning=tuning), keys, tuning)
    if tuning.reserve_rows:
        keys.reserve_rows(int(first.tlen.sum()))
    table = first._count(None)
    entries = table[table[:, 2] != 0]
    return keys.words[: keys.nkeys].copy(), first.S[:, 1].copy(), entries[np.argsort(entries[:, 0])]


@pytest.mark.parametrize("seed", range(40))
def test_counting_in_two_halves_changes_nothing(seed, monkeypatch):
    """On a large corpus the later half of the slot order is counted on a thread of its own
    and folded in afterwards (``FirstPass._count``): the key rows, every slot's pair key
    and every pair's count and last slot are what one count of the whole makes, also when
    the rows must grow while the halves are folded together (``TINY_TABLES``)."""
    base = TINY_TABLES if seed % 2 else DEFAULT
    monkeypatch.setenv("BBPE_THREADS", "2")
    rng = random.Random(60_000 + seed)
    data = random_corpus(rng, invalid=seed % 3 == 0)
    folded = []
    merge_counts = engine.K.merge_counts
    monkeypatch.setattr(engine.K, "merge_counts", lambda *args: folded.append(1) or merge_counts(*args))
    whole = _counted(data, base.but(split_count_at=1 << 62))
    assert not folded
    halves = _counted(data, base.but(split_count_at=0))
    assert folded or len(whole[2]) == 0
    for a, b in zip(whole, halves):
        np.testing.assert_array_equal(a, b)
    simple, incremental = both([data], rng.choice(VOCAB_SIZES), base.but(split_count_at=0))
    assert incremental == simple


@pytest.mark.parametrize("threads", ["1", "2"])
def test_an_error_in_the_first_pass_reaches_the_caller(threads, monkeypatch):
    """A piece of the first pass that fails on its thread raises in the trainer's."""
    walked = []
    first_pass = engine.K.first_pass

    def failing(order, *args):
        walked.append(len(order))
        if len(walked) == 3:
            raise MemoryError("the third piece")
        return first_pass(order, *args)

    monkeypatch.setattr(engine.K, "first_pass", failing)
    monkeypatch.setenv("BBPE_THREADS", threads)
    with pytest.raises(MemoryError, match="the third piece"):
        train_vocabulary([TANG300.read_bytes()], 2000, tuning=DEFAULT.but(pieces=5))
    assert len(walked) == 3


def test_the_first_pass_copies_an_index_sized_for_its_keys(monkeypatch):
    """A long segment makes the scan reserve index room for a key per char; the index the
    first pass gets a copy of is rebuilt for the keys there are after the count (one
    1,000,000-char line: a 32 MB copy otherwise)."""
    copied = []
    first_pass = engine.K.first_pass

    def recording(order, base, tlen, tmult, best, S, words, lookup, *rest):
        copied.append(lookup.shape[0])
        return first_pass(order, base, tlen, tmult, best, S, words, lookup, *rest)

    monkeypatch.setattr(engine.K, "first_pass", recording)
    keys = engine.KeyTable()
    types = engine.scan([["天地".encode() * 50_000]], keys)
    assert keys.slots.shape[0] >= 100_000  # the scan made room for a key per char
    engine.FirstPass(types, keys).run()
    assert copied and max(copied) <= 64  # 4 keys then: 2 chars, 2 pairs
