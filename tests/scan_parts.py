"""The scan's parts (``Corpus.training_parts``) taken as threads would take them."""

from __future__ import annotations

import random
from collections.abc import Iterable

from bbpe.common.blocks import BackwardBlocks, meeting_parts, memory_reader, part_cuts


def take_in_turns(parts: list[Iterable], rng: random.Random) -> list[list[bytes]]:
    """Every part's blocks (copied: a block's buffer is read into again for the next),
    taken one at a time from a part chosen at random, as threads running at changing
    speeds would, so that two parts that meet do so anywhere."""
    its = [iter(part) for part in parts]
    got: list[list[bytes]] = [[] for _ in parts]
    running = list(range(len(parts)))
    while running:
        k = rng.choice(running)
        block = next(its[k], None)
        if block is None:
            running.remove(k)
        else:
            got[k].append(bytes(block))
    return got


def in_parts(data: bytes, parts: int, rng: random.Random, blocks: int = 16) -> list:
    """``data`` cut as ``Corpus.training_parts`` cuts a corpus for ``parts`` threads, into
    about ``blocks`` blocks, taken in turns: a list of blocks for each part, a
    ``BackwardBlocks`` (last block first) for the second of each pair."""
    with memory_reader(data) as read_into:
        cuts = part_cuts(read_into, len(data), max(parts, blocks))
    if len(cuts) < 3:
        return [[data]]
    live = meeting_parts(lambda: memory_reader(data), cuts, parts)
    return [BackwardBlocks(got) if isinstance(part, BackwardBlocks) else got
            for part, got in zip(live, take_in_turns(live, rng))]


def in_corpus_order(part: Iterable[bytes]) -> list[bytes]:
    """A part's blocks in the order they stand in the corpus."""
    blocks = list(part)
    return blocks[::-1] if isinstance(part, BackwardBlocks) else blocks
