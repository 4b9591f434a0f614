"""Training's progress callback: every stage reports, the counts are monotonic and end where
the work ends, on one thread or several; ``common/progress.py`` states the contract."""

from __future__ import annotations

import itertools
import warnings

import pytest
from conftest import TANG300

STAGES = ["scan", "count", "merge", "encode"]


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


def _reports(train, *args, **options) -> list[tuple[str, int, int | None]]:
    calls: list[tuple[str, int, int | None]] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "nothing was learned", for the corpora that learn nothing
        train(*args, progress=lambda stage, done, total: calls.append((stage, done, total)), **options)
    return calls


def _check_contract(calls: list[tuple[str, int, int | None]]) -> dict[str, list[tuple[int, int | None]]]:
    """Every stage, in order, starts at 0 and ends at its total; done never goes down nor
    past a known total. Returns each stage's (done, total) reports."""
    assert [stage for stage, _ in itertools.groupby(stage for stage, _, _ in calls)] == STAGES
    by_stage = {stage: [(done, total) for _, done, total in group] for stage, group in
                itertools.groupby(calls, key=lambda call: call[0])}
    for stage, reports in by_stage.items():
        assert len(reports) >= 2 and reports[0][0] == 0, (stage, reports)
        done, total = reports[-1]
        assert total is not None and done == total, (stage, reports)
        assert all(a[0] <= b[0] for a, b in itertools.pairwise(reports)), (stage, reports)
        assert all(total is None or 0 <= done <= total for done, total in reports), (stage, reports)
    return by_stage


@pytest.mark.parametrize("vocab_size,options", [
    (800, {}),  # the first pass's singles fill the vocabulary: no merge
    (100, {}),  # 270 entries: nothing is learned, only the encoding has work
    (0, {}),  # no limit
    (2000, {"encodings": False}),  # no encoding
    (2000, {"output": "model.json"}),  # the JSON file holds no encodings either
])
def test_every_stage_starts_and_ends(tmp_path, vocab_size, options):
    import bbpe

    if "output" in options:
        options = {"output": tmp_path / options["output"]}
    _check_contract(_reports(bbpe.Tokenizer.train, TANG300, vocab_size, **options))


@pytest.mark.parametrize("lines", [[], ["天地一人"], ["天地一人", "天地二人"], ["", "", ""]])
def test_tiny_corpora_report_every_stage(lines):
    import bbpe

    _check_contract(_reports(bbpe.Tokenizer.train_from_iterator, lines, 0))


def test_a_stage_with_nothing_to_do_is_zero_of_zero():
    import bbpe

    stages = _check_contract(_reports(bbpe.Tokenizer.train, TANG300, 800, encodings=False))
    assert stages["merge"] == [(0, 0), (0, 0)] and stages["encode"] == [(0, 0), (0, 0)]


def test_merges_without_a_limit_have_no_total_until_they_end():
    """tqdm's convention: total None while it is unknown; the end says how many there were."""
    import bbpe

    merges = _check_contract(_reports(bbpe.Tokenizer.train, TANG300, 0))["merge"]
    assert all(total is None for _, total in merges[:-1])
    assert merges[-1][0] == merges[-1][1] > 0


def test_merges_that_run_out_of_pairs_end_at_the_keys_added():
    """The total is the room the limit leaves; a corpus that runs out of pairs first ends the
    stage with its total lowered to what was added, not short of a total never reached."""
    import bbpe

    merges = _check_contract(_reports(bbpe.Tokenizer.train, TANG300, 100_000))["merge"]
    room = merges[0][1]
    assert room is not None and room > 90_000 and all(total == room for _, total in merges[:-1])
    assert 0 < merges[-1][0] == merges[-1][1] < room


def test_gbk_bytes_never_pass_the_total(tmp_path):
    """In GBK mode the trainer counts the UTF-8 bytes it reads against the GBK file's size
    (half as many again for Chinese): done stays within the total all the same."""
    import bbpe

    corpus = tmp_path / "gbk.txt"
    corpus.write_bytes(TANG300.read_text().replace("・", "·").encode("gbk"))
    _check_contract(_reports(bbpe.Tokenizer.train, corpus, 2000, gbk=True))
