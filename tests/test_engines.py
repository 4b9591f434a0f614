"""The incremental engine against the simple one (which recounts every pair on every merge).

Both must give the same vocabulary, in the same order, on any corpus and vocab size; the
simple engine is itself checked against the C++ oracle in test_parity.py.
"""

from __future__ import annotations

import random

import pytest
from conftest import SONG100, TANG300
from hypothesis import given, settings
from hypothesis import strategies as st
from random_corpora import VOCAB_SIZES, random_corpus

from bbpe.train import train_vocabulary


def both(blocks: list[bytes], vocab_size: int) -> tuple[list[bytes], list[bytes]]:
    return (train_vocabulary(blocks, vocab_size, engine="simple"),
            train_vocabulary(blocks, vocab_size, engine="incremental"))


@pytest.mark.parametrize("seed", range(300))
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


repetitive = st.lists(st.sampled_from(["天地", "人", "天", "地人", "一二三四五六七", "八", "a", "ab", "，", " ",
                                       "\n", "<P>", "é", "𡵓", "ゃ"]), max_size=300).map("".join)


@settings(max_examples=200, deadline=None)
@given(text=repetitive, vocab_size=st.sampled_from([0, 270, 271, 275, 290, 320]))
def test_repetitive_text(text, vocab_size):
    """Few distinct chars: long keys, overlapping pairs (aaa), Q9 repeats, deep cascades."""
    simple, incremental = both([text.encode()], vocab_size)
    assert incremental == simple


def test_blocks_do_not_matter():
    """Cutting the corpus into blocks at line ends changes nothing."""
    data = TANG300.read_bytes()
    lines = data.split(b"\n")
    blocks = [b"\n".join(lines[i : i + 97]) for i in range(0, len(lines), 97)]
    assert train_vocabulary(blocks, 0) == train_vocabulary([data], 0)
