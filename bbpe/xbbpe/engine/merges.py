"""The merge stage (``Merger``): one merge after the other, with the follower on a thread
of its own where there are two classes of slots, sitting out while it does not keep up
(``_Bench``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext

import numpy as np

from ...common.progress import ProgressFn
from ...common.resources import training_threads
from ..kernels import kernels as K
from ..kernels import tables as L
from .first_pass import FirstPass
from .keytable import _NO_CLASS_1, key_states


class _Bench:
    """When the merges' follower sits out. A call of the merge kernel in which the
    follower kept the leader waiting a quarter of the time or more (``too_slow``: its CPU
    is taken by other work, another training, a busy process) is followed by calls
    without it, twice as many each time it is found slow again, up to ``most``; a call
    in which it kept up brings it back to ``first``. So a loaded machine costs a few
    slow hand-overs per try, an idle one nothing, and a load that goes away gives the
    thread back."""

    def __init__(self, first: int, most: int) -> None:
        self.first, self.most = first, most
        self.length = first  # calls it sits out when next found slow
        self.left = 0  # calls it still sits out

    def follower_plays(self) -> bool:
        if self.left:
            self.left -= 1
            return False
        return True

    def played(self, too_slow: bool) -> None:
        if too_slow:
            self.left, self.length = self.length, min(2 * self.length, self.most)
        else:
            self.length = self.first


class Merger:
    """The incremental state: slots, occurrence lists, the heap; ``merges`` drives it.

    With two classes of slots (``FirstPass.classes``) and a thread to spare, each call of
    the merge kernel has a follower on a thread of its own (``follow_merges``), which
    applies each step's winner in class 1 while this thread does class 0.
    """

    def __init__(self, first: FirstPass) -> None:
        """The state after ``first.run()``, which linked the lists when it found a winner."""
        keys = self.keys = first.keys
        self.tuning = first.tuning
        self.S = first.S
        self.nslots = self.S.shape[0]
        assert first.smul is not None, "the first pass links the lists before there is anything to merge"
        self.smul = first.smul
        self.classes = first.classes
        self.smeta = np.zeros(2, dtype=np.int64)  # slots merged away since the last compaction, steps
        self.fmeta = np.zeros(2, dtype=np.int64)  # rows in the free list, tombstones in the index
        kst, kst1 = key_states(keys, self.classes)
        kst[: first.nchars, L.FLAGS] |= L.TOKEN
        if first.best >= 0:
            kst[first.best, L.FLAGS] |= L.TOKEN
        self._heap_arrays(2 * K.count_live(kst, kst1, self.classes, keys.nkeys) + self.tuning.heap_spare)
        K.heap_rebuild(self.hocc, self.htail, self.hkey, self.hmeta, kst, kst1, self.classes, keys.nkeys)
        # The keys each step changed, per class. A step hands class 1's list to the
        # follower only if it has room for the step (four per site): it starts with room
        # for the key that occurs most there now (np.empty: only what is written costs).
        self.dirty = np.empty(1024, dtype=np.int32)
        self.dirty1, self.pvals1, self.frees0 = _NO_CLASS_1[1:]
        if self.classes == 2:
            self.dirty1 = np.empty(4 * int(kst1[: keys.nkeys, L.OCC].max(initial=0)) + 1024, dtype=np.int32)
            self.pvals1 = np.empty(self.dirty1.shape[0], dtype=np.int64)  # class 1's keys for the heap
            # class 0's keys whose rows the follower frees
            self.frees0 = np.empty(4 * int(kst[: keys.nkeys, L.OCC].max(initial=0)) + 1024, dtype=np.int32)
        self.sync = np.zeros(L.SYNC_SIZE, dtype=np.int64)  # how the kernel and its follower talk
        self.sync[L.SYNC_SLOW_SHARE] = self.tuning.slow_share
        self.lock = np.zeros(1, dtype=np.int64)  # held while either of them makes a key

    def _heap_arrays(self, capacity: int) -> None:
        self.hocc = np.empty(capacity, dtype=np.int32)
        self.htail = np.empty(capacity, dtype=np.int32)
        self.hkey = np.empty(capacity, dtype=np.int32)
        self.hmeta = np.zeros(2, dtype=np.int64)  # size, and the keys a step asked room for

    def mark_in_vocab(self, keys: list[bytes]) -> None:
        """Flag these keys (those in the table) as in the vocabulary."""
        rows = self.keys.find_all(keys)
        key_states(self.keys, self.classes)[0][rows[rows >= 0], L.FLAGS] |= L.IN_VOCAB

    def merges(self, size: int, limit: int, progress: ProgressFn | None = None) -> Iterator[bytes]:
        """The winners' keys, one per merge, until the vocabulary reaches ``limit`` or no
        pair occurs twice; ``size`` is the vocabulary size before the first of them."""
        keys = self.keys
        winners = np.empty(self.tuning.steps_per_call, dtype=np.int32)
        size_before = size
        total = limit - size if limit - size < 1 << 24 else 0  # 0: no limit
        if progress:
            progress("merge", 0, total)
        threaded = self.classes == 2 and self.tuning.follower and training_threads() > 1
        bench = _Bench(self.tuning.bench_first, self.tuning.bench_most)
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="bbpe-merges") if threaded else nullcontext() as pool:
            while size < limit:
                with_follower = pool is not None and bench.follower_plays()
                waited, start = int(self.sync[L.SYNC_WAITED]), time.perf_counter_ns()
                status, steps, size = self._run(winners, size, limit, pool if with_follower else None)
                if with_follower:  # over the whole call: its first hand-over waits for the thread to start
                    bench.played(K.too_slow(int(self.sync[L.SYNC_WAITED]) - waited, time.perf_counter_ns() - start,
                                            self.tuning.slow_share))
                raw, lens = keys.rows(winners[:steps])
                yield from (row[:n].tobytes() for row, n in zip(raw, lens.tolist()))
                if progress:  # the keys added: a winner that is a key already (Q9) adds none
                    progress("merge", size - size_before, total)
                if status == L.NEED_ROWS:
                    keys.reserve_rows(int(self.hmeta[1]) + keys.nkeys // 2)
                elif status not in (0, L.RESTART):
                    return
                if self.tuning.compact_at * self.smeta[0] > self.nslots:
                    self._compact()

    def _run(self, winners: np.ndarray, size: int, limit: int,
             pool: ThreadPoolExecutor | None) -> tuple[int, int, int]:
        """One call of the merge kernel, with its follower on the pool's thread if there is
        a pool: (status, steps, vocabulary size)."""
        keys = self.keys
        kst, kst1 = key_states(keys, self.classes)
        finger = keys.per_key("finger", np.int32)
        finger1 = keys.per_key("finger1", np.int32) if self.classes == 2 else _NO_CLASS_1[1]
        free = keys.per_key("free", np.int32)
        follower = None
        if pool is not None:
            self.sync[L.SYNC_STOPPED] = 0
            follower = pool.submit(self._follow, int(self.sync[L.SYNC_CMD]), keys.slots, kst, kst1, finger1,
                                   self.dirty1, self.pvals1, free)
        try:
            (status, steps, size, keys.slots, self.hocc, self.htail, self.hkey, self.dirty, self.dirty1,
             self.pvals1) = K.run_merges(
                self.tuning.steps_per_call, size, limit, winners, self.S, self.smul, keys.words, keys.slots, keys.meta, kst,
                kst1, self.classes, finger, finger1, free, self.fmeta, self.hocc, self.htail, self.hkey, self.hmeta,
                self.smeta, self.dirty, self.dirty1, self.pvals1, self.frees0, self.sync, self.lock,
                follower is not None, self.tuning.parallel_from)
        finally:
            if follower is not None:
                K.stop_follower(self.sync)  # wakes it if it sleeps
                follower.result()  # its error, if it had one
        if status == L.FOLLOWER_FAILED:  # and it had none
            raise RuntimeError("bbpe: the merges' follower stopped before the leader was done")
        return status, steps, size

    def _follow(self, seen: int, slots: np.ndarray, kst: np.ndarray, kst1: np.ndarray, finger1: np.ndarray,
                dirty1: np.ndarray, pvals1: np.ndarray, free: np.ndarray) -> None:
        """The follower (``follow_merges``) on the arrays the kernel gets; once it stops,
        for whatever reason, the kernel is told so (a kernel still waiting for it gives up)."""
        keys = self.keys
        try:
            K.follow_merges(seen, self.sync, self.S, self.smul, keys.words, slots, keys.meta, kst, kst1, finger1,
                            dirty1, pvals1, self.frees0, free, self.fmeta, self.lock)
        finally:
            K.follower_stopped(self.sync)

    def _compact(self) -> None:
        """Drop the slots merged away: less memory, denser walks."""
        keys = self.keys
        kst, kst1 = key_states(keys, self.classes)
        n = K.compact_slots(self.S, self.nslots, self.smul, kst, kst1, self.classes, keys.nkeys)
        self.S.resize((n, 4), refcheck=False)
        self.smul.resize(n, refcheck=False)
        self.nslots = n
        self.smeta[0] = 0
        K.heap_rebuild(self.hocc, self.htail, self.hkey, self.hmeta, kst, kst1, self.classes, keys.nkeys)
