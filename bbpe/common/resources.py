"""What training may use of the machine: threads, and memory (fail early, not in the OOM
killer; and if memory runs out all the same, say so in one line).

The memory estimate comes from measured peaks (docs/training.md): a fixed cost (Python,
numpy and bbpe: about 60 MB with the kernels compiled ahead of time, 170 MB when numba's
JIT and its LLVM run them) plus at most 14 bytes per corpus byte (zh-large at vocab 32000
needed about 9; English needs far less, since its distinct segments repeat). An
address-space limit (``ulimit -v``, RLIMIT_AS) counts what is reserved, not what is
touched: about 160 MB for Python, numpy and bbpe, and for each thread its stack and the 64 MB
that glibc's malloc reserves for a thread's arena (zh-large at 32000: 823 MB of address
space at a 297 MB peak RSS).
"""

from __future__ import annotations

import ctypes
import functools
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from ..errors import InsufficientMemoryError

FIXED_BYTES = 60 << 20
FIXED_BYTES_JIT = 170 << 20
BYTES_PER_CORPUS_BYTE = 14
FIXED_ADDRESS_SPACE = 160 << 20  # Python, numpy, bbpe and its kernels, mapped
ARENA_BYTES = 64 << 20  # what glibc's malloc reserves for a thread's own arena (HEAP_MAX_SIZE)
MAX_THREADS = 4


def training_threads() -> int:
    """Threads for training (the scan, the count, the first pass, the merges, the stored
    encodings): ``BBPE_THREADS`` if it is set, else the CPUs this process may run on and
    its cgroup's CPU quota allow (``cpu_quota``), at most 4. Where the work is shared by
    threads that hand over to each other (the merges), it goes back to one thread while
    the other is not getting a CPU (``engine.Merger``)."""
    value = os.environ.get("BBPE_THREADS", "")
    if value:
        if not value.isdigit() or int(value) < 1:
            raise ValueError(f"BBPE_THREADS must be a whole number of threads, 1 or more; got {value!r}")
        return int(value)
    return min(MAX_THREADS, usable_cpus())


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity) that its cgroup's CPU quota lets it
    use: a thread beyond them only waits for a CPU. The quota is read once per process
    (``cpu_quota`` is cached: ``encode_batch`` asks on every call, and reading the
    cgroup's files takes about 90 µs)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, cpu_quota() or cpus))


def training_estimate(corpus_bytes: int, gbk: bool = False, jit: bool = False,
                      per_byte: int = BYTES_PER_CORPUS_BYTE) -> int:
    """Peak bytes a training run on a corpus of this size may need (GBK grows by up to 1.5x
    as UTF-8; numba's JIT, when the kernels were not compiled ahead of time, costs more);
    ``per_byte``: the model's trainer's bytes per corpus byte (XBBPE's by default)."""
    fixed = FIXED_BYTES_JIT if jit else FIXED_BYTES
    return fixed + int(per_byte * corpus_bytes * (1.5 if gbk else 1))


def available_memory() -> int | None:
    """Bytes this process can still use: the smaller of the cgroup's room and the system's
    MemAvailable; None if neither can be read."""
    limits = []
    for limit_file, usage_file in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                                   ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                                    "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        try:
            limit, usage = _read(limit_file), int(_read(usage_file))
        except (OSError, ValueError):
            continue
        if limit.isdigit() and int(limit) < 1 << 60:
            limits.append(int(limit) - usage)
        break
    try:
        for line in _read("/proc/meminfo").splitlines():
            if line.startswith("MemAvailable:"):
                limits.append(int(line.split()[1]) * 1024)
                break
    except (OSError, ValueError):
        pass
    return min(limits) if limits else None


@functools.cache
def cpu_quota() -> int | None:
    """CPUs' worth of time the cgroup gives this process (its CFS quota over its period,
    rounded up), as a container's ``--cpus`` sets it; None if there is no quota or it
    cannot be read. The CPUs a process may run on (affinity) can be more: threads
    beyond the quota only wait. Read once per process (``cpu_quota.cache_clear()``
    reads it again)."""
    for quota_file, period_file in (("/sys/fs/cgroup/cpu.max", None),
                                    ("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "/sys/fs/cgroup/cpu/cpu.cfs_period_us"),
                                    ("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us",
                                     "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us")):
        try:
            if period_file is None:
                quota, period = _read(quota_file).split()[:2]
            else:
                quota, period = _read(quota_file), _read(period_file)
        except (OSError, ValueError):
            continue
        if quota in ("max", "-1") or not quota.isdigit() or not period.isdigit() or int(period) == 0:
            return None
        return max(1, -(-int(quota) // int(period)))
    return None


def _read(path: str) -> str:
    with open(path) as f:
        return f.read().strip()


def address_space_estimate(corpus_bytes: int, gbk: bool = False, threads: int = 1) -> int:
    """Address space a training run on ``threads`` threads may reserve: what it touches,
    plus Python's and numpy's mappings, plus a stack and a malloc arena for each thread
    it starts (the training threads, the pools beside them; measured: zh-large on two
    threads 823 MB, en-large 682 MB, mixed 598 MB, tang300 on one thread 306 MB)."""
    stack = _soft_limit("RLIMIT_STACK") or 8 << 20
    started = threads + 3 if threads > 1 else 2
    return FIXED_ADDRESS_SPACE + training_estimate(corpus_bytes, gbk) - FIXED_BYTES + started * (stack + ARENA_BYTES)


def address_space_limit() -> int | None:
    """The process's RLIMIT_AS (``ulimit -v``) in bytes; None without such a limit."""
    return _soft_limit("RLIMIT_AS")


def _soft_limit(name: str) -> int | None:
    try:
        import resource
    except ImportError:  # not POSIX
        return None
    soft = resource.getrlimit(getattr(resource, name))[0]
    return None if soft == resource.RLIM_INFINITY else soft


def check_training_memory(name: str, corpus_bytes: int, gbk: bool = False, jit: bool = False,
                          per_byte: int = BYTES_PER_CORPUS_BYTE) -> None:
    """Raise InsufficientMemoryError if training on this corpus would likely not fit in
    the memory available or in the process's address-space limit."""
    mb = 2**20
    need = training_estimate(corpus_bytes, gbk, jit, per_byte)
    have = available_memory()
    if have is not None and need > have:
        raise InsufficientMemoryError(
            f"{name}: training on {corpus_bytes / mb:,.0f} MB may need up to {need / mb:,.0f} MB of memory "
            f"and {have / mb:,.0f} MB are available; to try anyway, pass memory_check=False "
            "(bbpe train --no-memory-check)")
    limit = address_space_limit()
    if limit is not None:
        from .corpus import MIN_PART_BYTES  # a smaller corpus is read on one thread

        threads = training_threads() if corpus_bytes >= MIN_PART_BYTES else 1
        reserve = address_space_estimate(corpus_bytes, gbk, threads)  # the process's whole address space
        if reserve > limit:
            hint = "BBPE_THREADS=1 needs less, " if threads > 1 else ""
            raise InsufficientMemoryError(
                f"{name}: training on {corpus_bytes / mb:,.0f} MB on {threads} thread(s) may reserve up to "
                f"{reserve / mb:,.0f} MB of address space and the process's limit (ulimit -v) is "
                f"{limit / mb:,.0f} MB; {hint}to try anyway, pass memory_check=False (bbpe train --no-memory-check)")


_STAGE_NAMES = {"read": "reading the corpus", "scan": "scanning the corpus", "count": "counting pairs",
                "merge": "merging", "vocabulary": "building the vocabulary",
                "encode": "encoding the training texts"}


class MemoryGuard:
    """Turns a MemoryError (or a thread that could not get its stack) in a training run
    into bbpe's ``InsufficientMemoryError``, whose one line says at which stage memory ran
    out and how much the failed allocation asked for (``with guard.watching():``).

    ``report`` is the run's progress callback (or None), which the guard wraps to learn
    the stage: ``guard.progress`` goes to the trainer, ``guard.stage(name)`` marks the
    stages that report no progress.
    """

    def __init__(self, name: str, report: Callable[[str, int, int], None] | None) -> None:
        self.name = name
        self.current = "read"
        self._report = report

    def progress(self, stage: str, done: int, total: int) -> None:
        self.current = stage
        if self._report is not None:
            self._report(stage, done, total)

    def stage(self, name: str) -> None:
        self.current = name

    @contextmanager
    def watching(self) -> Iterator[MemoryGuard]:
        try:
            yield self
        except InsufficientMemoryError:
            raise
        except MemoryError as err:
            size = getattr(err, "_total_size", None)  # numpy's _ArrayMemoryError knows it
            raise self._error(f"an allocation of {size / 2**20:,.1f} MB failed" if size else
                              "an allocation failed") from err
        except RuntimeError as err:
            if "can't start new thread" not in str(err):
                raise
            raise self._error("a new thread's stack could not be mapped") from err

    def _error(self, what: str) -> InsufficientMemoryError:
        room = address_space_limit()
        limit = f"; the address-space limit (ulimit -v) is {room / 2**20:,.0f} MB" if room else ""
        stage = _STAGE_NAMES.get(self.current, self.current)
        return InsufficientMemoryError(f"{self.name}: memory ran out while {stage} ({what}{limit})")


_M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter number


def fix_mmap_threshold(threshold: int = 1 << 20) -> bool:
    """Make glibc give freed arrays of ``threshold`` bytes or more back to the system.

    glibc serves large allocations with mmap (returned on free), but raises that threshold
    each time such a block is freed, up to 32 MB: after the first 4 MB chunk of the corpus
    is freed, arrays of a few MB come from the heap, and what they leave when freed stays
    in the process (docs/perf-notes.md has what fixing it saves). It is process-wide, so only ``bbpe train`` calls it; a program of
    your own can set ``MALLOC_MMAP_THRESHOLD_=1048576`` in the environment instead.
    Returns whether glibc took it.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None)
        return bool(libc.mallopt(_M_MMAP_THRESHOLD, threshold))
    except (OSError, AttributeError):
        return False  # not glibc (musl has no mallopt)
