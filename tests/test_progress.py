"""Training's progress callback: every stage reports, the counts are monotonic and end where
the work ends, on one thread or several."""

from __future__ import annotations

import pytest
from conftest import TANG300


@pytest.mark.parametrize("threads", [1, 3])
def test_progress_callback(tmp_path, monkeypatch, threads):
    import bbpe
    from bbpe.common import corpus

    monkeypatch.setattr(corpus, "MIN_PART_BYTES", 1024)
    monkeypatch.setenv("BBPE_THREADS", str(threads))

    seen: dict[str, list[tuple[int, int]]] = {}
    tok = bbpe.Tokenizer.train(TANG300, 4000, progress=lambda stage, done, total: seen.setdefault(stage, []).append((done, total)))
    assert set(seen) == {"scan", "count", "merge", "encode"}
    assert seen["scan"][-1] == (TANG300.stat().st_size, TANG300.stat().st_size)
    assert seen["encode"][-1][0] == TANG300.stat().st_size
    merges = seen["merge"][-1][0]
    assert 0 < merges <= 4000 - 270 and all(a[0] <= b[0] for a, b in zip(seen["merge"], seen["merge"][1:]))
    assert len(tok) == 4000
