"""The scan stage (``engine.scanning``): a corpus cut into consecutive parts, each scanned on
a thread of its own (every other one from its end), gives the vocabulary of one scan; a
failing part raises its own error; the kernels release the GIL while they scan."""

from __future__ import annotations

import random
import sys

import pytest
from conftest import TANG300
from engine_runs import repetitive
from hypothesis import given, settings
from hypothesis import strategies as st
from random_corpora import VOCAB_SIZES, random_corpus
from reference.simple_engine import train_simple
from scan_parts import in_parts

from bbpe.xbbpe import engine
from bbpe.xbbpe.train import train_vocabulary


@pytest.mark.parametrize("seed", range(100))
def test_parts_change_nothing(seed):
    """Scanned in parts on threads of their own, with lists that occur in several parts
    stored once in each, and every other part scanned from its end (``BackwardBlocks``,
    meeting the part before it anywhere), the corpus gives the vocabulary of one scan."""
    rng = random.Random(50_000 + seed)
    data = random_corpus(rng, invalid=seed % 2 == 0)
    parts = in_parts(data, rng.choice([2, 3, 4, 7]), rng, blocks=rng.choice([2, 5, 16, 64]))
    assert len(parts) > 1 or len(data) < 200, "the corpus was not cut"
    vocab_size = rng.choice(VOCAB_SIZES)
    assert train_vocabulary(parts[0], vocab_size, parts=parts[1:]) == train_vocabulary([data], vocab_size)


@settings(max_examples=100, deadline=None)
@given(text=repetitive, vocab_size=st.sampled_from([0, 270, 275, 320]), parts=st.integers(2, 6), rng=st.randoms())
def test_repetitive_text_in_parts(text, vocab_size, parts, rng):
    """The same lists again and again, in every part."""
    data = text.encode()
    split = in_parts(data, parts, rng)
    assert train_vocabulary(split[0], vocab_size, parts=split[1:]) == train_simple([data], vocab_size)


class _PartFailed(Exception):
    pass


def _failing(blocks: list[bytes], after: int):
    """The blocks, then the error a reader could raise, after ``after`` of them."""
    yield from blocks[:after]
    raise _PartFailed(f"read error after {after} blocks")


@pytest.mark.parametrize("failing", [0, 1, 2])
@pytest.mark.parametrize("after", [0, 2])
def test_a_failing_part_raises_its_own_error(failing, after):
    """The parts wait for each other once scanned (``scan``): when one fails, the others
    neither hang nor hide its error behind one of their own."""
    lines = [f"天地{i} 人{i % 7}，\n" for i in range(3000)]
    blocks = ["".join(lines[i : i + 200]).encode() for i in range(0, 3000, 200)]
    parts = [blocks[start : start + 5] for start in range(0, 15, 5)]
    parts[failing] = _failing(parts[failing], after)
    with pytest.raises(_PartFailed, match=f"after {after} blocks"):
        engine.scan(parts, engine.KeyTable())


def test_kernels_release_the_gil():
    """The compiled kernels release the GIL (``kernels.aot``), so the scan's parts run side
    by side and a program's other threads keep running while bbpe trains. Python switches
    threads only every 10 s here: this thread runs during the scan only if the kernels
    let it."""
    import threading
    import time

    data = TANG300.read_bytes() * max(1, (8 << 20) // TANG300.stat().st_size)
    ticks = []
    interval = sys.getswitchinterval()
    sys.setswitchinterval(10)
    try:
        worker = threading.Thread(target=engine.scan, args=([[data]], engine.KeyTable()))
        worker.start()
        while worker.is_alive():
            ticks.append(time.perf_counter())
            time.sleep(0.001)
        worker.join()
    finally:
        sys.setswitchinterval(interval)
    assert len(ticks) >= 5, f"this thread ran {len(ticks)} times during the scan"
