"""How many threads training takes: ``BBPE_THREADS``, checked, and a cgroup's CPU quota."""

from __future__ import annotations

import pytest
from conftest import TANG300


def test_threads_from_the_environment(monkeypatch):
    """``BBPE_THREADS`` sets how many parts the scan may use (and threads the stored
    encodings); anything but a whole number from 1 is refused, naming the value."""
    import bbpe
    from bbpe.common import corpus, resources

    monkeypatch.setattr(corpus, "MIN_PART_BYTES", 1024)
    parts_asked = []
    training_parts = corpus.Corpus.training_parts
    monkeypatch.setattr(corpus.Corpus, "training_parts",
                        lambda self, n: parts_asked.append(n) or training_parts(self, n))
    expected = bbpe.Tokenizer.train(TANG300, 1000).to_bytes()
    for threads in ("1", "3"):
        monkeypatch.setenv("BBPE_THREADS", threads)
        assert resources.training_threads() == int(threads)
        assert bbpe.Tokenizer.train(TANG300, 1000).to_bytes() == expected
        assert parts_asked[-1] == int(threads)
    for bad in ("0", "-2", "two", "1.5"):
        monkeypatch.setenv("BBPE_THREADS", bad)
        with pytest.raises(ValueError, match=f"BBPE_THREADS.*{bad!r}"):
            bbpe.Tokenizer.train(TANG300, 1000)


@pytest.mark.parametrize("files,quota", [
    ({"/sys/fs/cgroup/cpu.max": "150000 100000"}, 2),
    ({"/sys/fs/cgroup/cpu.max": "100000 100000"}, 1),
    ({"/sys/fs/cgroup/cpu.max": "20000 100000"}, 1),
    ({"/sys/fs/cgroup/cpu.max": "max 100000"}, None),
    ({"/sys/fs/cgroup/cpu/cpu.cfs_quota_us": "300000", "/sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000"}, 3),
    ({"/sys/fs/cgroup/cpu/cpu.cfs_quota_us": "-1", "/sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000"}, None),
    ({"/sys/fs/cgroup/cpu.max": "garbage"}, None),
    ({}, None),
])
def test_a_cpu_quota_limits_the_threads(files, quota, monkeypatch, request):
    """A cgroup's CPU quota (a container's --cpus), v2 or v1, caps training's threads: a
    thread past the quota would only wait for a CPU."""
    from bbpe.common import resources

    def read(path: str) -> str:
        if path not in files:
            raise OSError(path)
        return files[path]

    monkeypatch.setattr(resources, "_read", read)
    monkeypatch.delenv("BBPE_THREADS", raising=False)
    monkeypatch.setattr(resources.os, "sched_getaffinity", lambda pid: set(range(8)), raising=False)
    resources.cpu_quota.cache_clear()  # read once per process: read these files
    request.addfinalizer(resources.cpu_quota.cache_clear)
    assert resources.cpu_quota() == quota
    assert resources.training_threads() == min(4, quota or 4)
