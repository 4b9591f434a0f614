"""The engine's tuning: every size, share and threshold that decides how training splits,
sizes and schedules its work, in one object (``Tuning``).

None of them changes what is learned: any value a field accepts gives the same vocabulary
(the tests run the engine with tables that start almost empty, the merges in one call per
step, the follower off, and so on, and compare it with the reference engine). The defaults
are what the benchmarks chose on a 2-core machine; docs/perf-notes.md has the measurements.
``scan``, ``KeyTable``, ``FirstPass`` and ``Merger`` take one (``DEFAULT`` when none is
given); the merger uses its first pass's.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace


@dataclass(frozen=True)
class Tuning:
    """How the engine sizes and splits its work (never what it learns).

    Key table (``KeyTable``):
      key_capacity: key rows to start with (they cost no memory until used).
      growth: what grows grows by this times the keys there are, so growing stays rare.
    Scan (``TypeStore``):
      store_types, store_tokens: the least a part's type store starts with.
      stores_for_corpus: size each store for its share of the corpus (a type per 24
        bytes, a token per byte): reserved, not touched, so it spares the copies of growing.
      index_start: the largest hash index a store starts with (4 MB of entries).
    First pass (``FirstPass``):
      reserve_rows: key rows for every pair up front (lazily zeroed).
      pieces: pieces of the slot order the first pass hands to the linking one by one.
      split_count_at: slots from which the pairs are counted in two halves on two threads
        (below it, the second table costs more memory than the halves gain).
      first_share: the first thread's share of the slots then: under half, since it also
        appends its pairs' keys as rows where the other only numbers its pairs.
      new_in_later: the guessed share of the later half's pairs that are new keys (the
        index is sized for it, and made again if the guess was short).
      renumber_here: the share of the later half this thread renumbers beside the other.
      parallel_merges_at: slots from which the merges run in two classes on two threads.
      class_shift: the classes alternate in blocks of 2**class_shift slots (64 KB of the
        slot table): small enough that nearly every pair's occurrences fall evenly into
        both, large enough that the threads rarely write one cache line.
    Merges (``Merger``):
      steps_per_call: merge steps per call of the merge kernel.
      compact_at: squeeze the merged-away slots out once 1/compact_at of them are left.
      heap_spare: the heap starts with room for two entries per live key, plus this.
      follower: with two classes, apply class 1 on a second thread (off: both on one).
      parallel_from: a step goes to both threads from this many occurrences of its winner.
      slow_share: the follower is too slow once the leader waits 1/slow_share of its time
        (0: never).
      bench_first, bench_most: calls without the follower after one in which it was too
        slow, doubling up to ``bench_most`` in a row (``merges._Bench``).
    """

    key_capacity: int = 1 << 14
    growth: float = 0.5
    store_types: int = 1 << 12
    store_tokens: int = 1 << 16
    stores_for_corpus: bool = True
    index_start: int = 1 << 20
    reserve_rows: bool = True
    pieces: int = 16
    split_count_at: int = 1 << 22
    first_share: float = 0.46
    new_in_later: float = 0.6
    renumber_here: float = 0.4
    parallel_merges_at: int = 1 << 22
    class_shift: int = 12
    steps_per_call: int = 256
    compact_at: int = 2
    heap_spare: int = 1024
    follower: bool = True
    parallel_from: int = 32
    slow_share: int = 4
    bench_first: int = 2
    bench_most: int = 64

    def __post_init__(self) -> None:
        for field in fields(self):
            value = getattr(self, field.name)
            kind = bool if field.type == "bool" else float if field.type == "float" else int
            if kind is float:
                ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0
            else:
                ok = isinstance(value, int) and (kind is bool) == isinstance(value, bool) and value >= 0
            if not ok:
                raise ValueError(f"Tuning.{field.name} must be a {kind.__name__} >= 0, got {value!r}")
        for name in ("key_capacity", "store_types", "store_tokens", "pieces", "steps_per_call", "compact_at"):
            if getattr(self, name) < 1:
                raise ValueError(f"Tuning.{name} must be at least 1, got {getattr(self, name)!r}")
        if not 0 < self.first_share < 1 or not 0 <= self.renumber_here <= 1:
            raise ValueError("Tuning.first_share must be in (0, 1) and renumber_here in [0, 1]")

    def but(self, **changes: object) -> Tuning:
        """This tuning with ``changes`` (``dataclasses.replace``)."""
        return replace(self, **changes)  # type: ignore[arg-type]


DEFAULT = Tuning()
