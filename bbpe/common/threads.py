"""The ways bbpe spreads work over threads: three for training, and the long-lived pool that
encoding batches share. The compiled kernels and the codec release the GIL, so the threads
run side by side."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from typing import TypeVar, cast

T = TypeVar("T")
R = TypeVar("R")


def on_threads(task: Callable[[int], T], n: int) -> list[T]:
    """[task(0), ..., task(n - 1)], task(0) on this thread and each other on one of its own;
    an exception in any of them is raised here."""
    if n == 1:
        return [task(0)]
    with ThreadPoolExecutor(max_workers=n - 1, thread_name_prefix="bbpe") as pool:
        futures = [pool.submit(task, i) for i in range(1, n)]
        return [task(0)] + [future.result() for future in futures]


def side_by_side(first: Callable[[], T], second: Callable[[], R]) -> tuple[T, R]:
    """(first(), second()): ``first`` on this thread, ``second`` on one of its own (two
    different jobs, each with its own result type; ``on_threads`` runs one job n times)."""
    out = on_threads(lambda i: first() if i == 0 else second(), 2)
    return cast(T, out[0]), cast(R, out[1])


def bounded_map(pool: ThreadPoolExecutor, fn: Callable[[T], R], items: Iterable[T], ahead: int) -> Iterator[R]:
    """``pool.map`` in order, but with at most ``ahead`` items in flight (memory stays flat)."""
    pending: deque = deque()
    for item in items:
        pending.append(pool.submit(fn, item))
        if len(pending) > ahead:
            yield pending.popleft().result()
    while pending:
        yield pending.popleft().result()


def pipelined(task: Callable[[T], None], items: Sequence[T], threaded: bool) -> Iterator[T]:
    """Each item once task(item) is done, in order. When ``threaded``, the tasks run one
    after the other on a thread of their own, one item ahead of the caller, so that the
    caller's work on an item overlaps the task on the next; an exception there is raised
    here, and the items after it are not taken."""
    if not threaded:
        for item in items:
            task(item)
            yield item
        return
    failed: list[T] = []

    def guarded(item: T) -> None:
        if not failed:
            try:
                task(item)
            except BaseException:
                failed.append(item)
                raise

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="bbpe-pipeline") as pool:
        for item, _ in zip(items, bounded_map(pool, guarded, items, ahead=1)):
            yield item


@cache
def shared_pool(threads: int) -> ThreadPoolExecutor:
    """One long-lived pool per thread count, for encoding batches (starting threads per
    call would cost more than small batches take)."""
    return ThreadPoolExecutor(max_workers=threads, thread_name_prefix="bbpe")
