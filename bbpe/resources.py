"""How much memory training will need, and how much there is: fail early, not in the OOM killer.

The estimate comes from measured peaks (docs/training.md): a fixed cost (Python, numpy and
bbpe: about 60 MB with the kernels compiled ahead of time, 170 MB when numba's JIT and its
LLVM run them) plus at most 14 bytes per corpus byte (zh-large at vocab 32000 needed about
9; English needs far less, since its distinct segments repeat).
"""

from __future__ import annotations

import ctypes
import sys

from .errors import InsufficientMemoryError

FIXED_BYTES = 60 << 20
FIXED_BYTES_JIT = 170 << 20
BYTES_PER_CORPUS_BYTE = 14


def training_estimate(corpus_bytes: int, gbk: bool = False) -> int:
    """Peak bytes a training run on a corpus of this size may need (GBK grows by up to 1.5x
    as UTF-8)."""
    from ._compiled import AHEAD_OF_TIME  # training loads the kernels next anyway

    fixed = FIXED_BYTES if AHEAD_OF_TIME else FIXED_BYTES_JIT
    return fixed + int(BYTES_PER_CORPUS_BYTE * corpus_bytes * (1.5 if gbk else 1))


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


def cpu_quota() -> int | None:
    """CPUs' worth of time the cgroup gives this process (its CFS quota over its period,
    rounded up), as a container's ``--cpus`` sets it; None if there is no quota or it
    cannot be read. The CPUs a process may run on (affinity) can be more: threads
    beyond the quota only wait, and a thread that spins waiting (the merges' follower)
    takes time from the one it waits for."""
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


def check_training_memory(name: str, corpus_bytes: int, gbk: bool = False) -> None:
    """Raise InsufficientMemoryError if training on this corpus would likely not fit."""
    need = training_estimate(corpus_bytes, gbk)
    have = available_memory()
    if have is not None and need > have:
        raise InsufficientMemoryError(
            f"{name}: training on {corpus_bytes / 2**20:,.0f} MB may need up to {need / 2**20:,.0f} MB of memory "
            f"and {have / 2**20:,.0f} MB are available; to try anyway, pass memory_check=False "
            "(bbpe train --no-memory-check)")



_M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter number


def fix_mmap_threshold(threshold: int = 1 << 20) -> bool:
    """Make glibc give freed arrays of ``threshold`` bytes or more back to the system.

    glibc serves large allocations with mmap (returned on free), but raises that threshold
    each time such a block is freed, up to 32 MB: after the first 4 MB chunk of the corpus
    is freed, arrays of a few MB come from the heap, and what they leave when freed stays
    in the process. Fixing the threshold lowered the CLI's peak RSS on zh-large by 20-30 MB
    (docs/training.md). It is process-wide, so only ``bbpe train`` calls it; a program of
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
