"""Making the merges run on two threads on any corpus, for the tests of the hand-over
(test_engines.py, test_load.py)."""

from __future__ import annotations

from bbpe.xbbpe import engine


def two_classes(monkeypatch, shift: int, follower: bool = True, parallel_from: int = 0,
                slow_share: int = 0) -> list[int]:
    """Make the merges run in two classes of slots (``FirstPass.classes``) however small the
    corpus, with blocks of 2**shift slots, every step handed to the follower that can be;
    returns a list that gets the number of steps each follower did. With ``slow_share`` 0
    the follower never sits out, however slow its tiny steps make it look, so that which
    steps it does does not depend on the machine's load; ``Merger.SLOW_SHARE`` lets it."""
    monkeypatch.setenv("BBPE_THREADS", "2")
    monkeypatch.setattr(engine.FirstPass, "PARALLEL_MERGES_AT", 0)
    monkeypatch.setattr(engine.FirstPass, "CLASS_SHIFT", shift)
    monkeypatch.setattr(engine.Merger, "FOLLOWER", follower)
    monkeypatch.setattr(engine.Merger, "PARALLEL_FROM", parallel_from)
    monkeypatch.setattr(engine.Merger, "SLOW_SHARE", slow_share)
    walks: list[int] = []
    follow = engine.K.follow_merges
    monkeypatch.setattr(engine.K, "follow_merges", lambda *args: walks.append(follow(*args)) or walks[-1])
    return walks
