"""Running the incremental engine the ways the engine tests need: beside the reference
engine (``both``), with tables that start almost empty (``TINY_TABLES``) and with the
merges on two threads on any corpus (``two_classes``). Each is a ``Tuning`` the test
passes to ``train_vocabulary``: it changes how the engine works, never what it learns."""

from __future__ import annotations

from hypothesis import strategies as st
from reference.simple_engine import train_simple

from bbpe.xbbpe import engine
from bbpe.xbbpe.engine import DEFAULT, Tuning
from bbpe.xbbpe.train import train_vocabulary

# Texts of few distinct chars: long keys, overlapping pairs (aaa), Q9 repeats, deep cascades
repetitive = st.lists(st.sampled_from(["天地", "人", "天", "地人", "一二三四五六七", "八", "a", "ab", "，", " ",
                                       "\n", "<P>", "é", "𡵓", "ゃ"]), max_size=300).map("".join)

# Every table of the incremental engine starts almost empty, so that it grows in each
# stage, with freed key rows waiting for reuse, and the heap fills up: the growth paths
# that a large corpus takes.
TINY_TABLES = DEFAULT.but(key_capacity=16, growth=0, reserve_rows=False, stores_for_corpus=False, store_types=16,
                          store_tokens=64, heap_spare=0)


def both(blocks: list[bytes], vocab_size: int, tuning: Tuning = DEFAULT) -> tuple[list[bytes], list[bytes]]:
    """The reference engine's vocabulary and the incremental engine's."""
    return train_simple(blocks, vocab_size), train_vocabulary(blocks, vocab_size, tuning=tuning)


def two_classes(monkeypatch, shift: int, follower: bool = True, parallel_from: int = 0, slow_share: int = 0,
                base: Tuning = DEFAULT) -> tuple[Tuning, list[int]]:
    """A tuning (from ``base``) that runs the merges in two classes of slots
    (``FirstPass.classes``) however small the corpus, with blocks of 2**shift slots, every
    step handed to the follower that can be, on two threads; and a list that gets the
    number of steps each follower did. With ``slow_share`` 0 the follower never sits out,
    however slow its tiny steps make it look, so that which steps it does does not depend
    on the machine's load."""
    monkeypatch.setenv("BBPE_THREADS", "2")
    walks: list[int] = []
    follow = engine.K.follow_merges
    monkeypatch.setattr(engine.K, "follow_merges", lambda *args: walks.append(follow(*args)) or walks[-1])
    tuning = base.but(parallel_merges_at=0, class_shift=shift, follower=follower, parallel_from=parallel_from,
                      slow_share=slow_share)
    return tuning, walks
