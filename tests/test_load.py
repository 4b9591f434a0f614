"""Training on a busy machine: the merges' waits sleep instead of spinning, the follower
sits out while it is not getting a CPU, and memory that runs out ends in one clear error
with nothing half-written. (How fast, under load, is benchmarks/bench_load.py's job.)"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import SONG100, TANG300
from engine_runs import two_classes
from random_corpora import VOCAB_SIZES, random_corpus
from reference.simple_engine import train_simple

import bbpe
from bbpe import cli
from bbpe.common import resources
from bbpe.common.corpus import Corpus
from bbpe.xbbpe import engine, pipeline
from bbpe.xbbpe.kernels import tables as L
from bbpe.xbbpe.train import train_vocabulary


def test_a_follower_is_too_slow_once_the_leader_waits_a_quarter_of_its_time():
    ms = 1_000_000

    def too_slow(waited, elapsed):
        return engine.K.too_slow(waited, elapsed, 4)

    assert not too_slow(ms // 4, ms // 2)  # too short a wait to say anything
    assert not too_slow(10 * ms, 40 * ms)
    assert too_slow(10 * ms, 40 * ms - 1)
    assert too_slow(ms, 2 * ms)
    assert not too_slow(0, 0)
    assert not engine.K.too_slow(ms, 2 * ms, 0)  # 0: never


def test_the_follower_sits_out_longer_each_time_it_is_found_slow():
    """After a call in which the follower was too slow it sits out 2, 4, 8, then 8 calls
    (``_Bench(2, 8)``); a call in which it kept up brings the next wait back to 2."""
    from bbpe.xbbpe.engine.merges import _Bench

    bench = _Bench(2, 8)
    outcomes = iter([False, True, True, True, True, False, True, False])  # too slow, in calls it plays
    log = []
    for slow in outcomes:
        while not bench.follower_plays():
            log.append("-")
        log.append("S" if slow else "P")
        bench.played(slow)
    assert "".join(log) == "P" "S" "--S" "----S" "--------S" "--------P" "S" "--P"


def _two_classes(monkeypatch, **changes) -> tuple[engine.Tuning, list[int]]:
    """``two_classes`` with the follower free to sit out, 16 steps a call (and ``changes``);
    returns the tuning and the calls of the merge kernel, 1 for each with a follower and 0
    for each without."""
    tuning, _ = two_classes(monkeypatch, 2, slow_share=engine.DEFAULT.slow_share,
                            base=engine.DEFAULT.but(steps_per_call=16, **changes))
    calls: list[int] = []
    run = engine.Merger._run
    monkeypatch.setattr(engine.Merger, "_run", lambda self, w, size, limit, pool:
                        calls.append(int(pool is not None)) or run(self, w, size, limit, pool))
    return tuning, calls


@pytest.fixture
def one_cpu():
    """This thread, and the threads it starts, on one CPU: a partner thread then runs only
    when the other one sleeps or is preempted, as on a machine whose other CPUs are busy."""
    if not hasattr(os, "sched_setaffinity"):
        pytest.skip("needs os.sched_setaffinity (Linux)")
    cpus = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(cpus)})
    try:
        yield
    finally:
        os.sched_setaffinity(0, cpus)


def test_on_one_cpu_the_leader_sleeps_and_the_follower_sits_out(monkeypatch, one_cpu):
    """Two merge threads on one CPU: the leader's waits outlast the spin and sleep (SYNC_
    BLOCKED), the follower is benched for most calls, and the vocabulary is the simple
    engine's."""
    tuning, calls = _two_classes(monkeypatch)
    merger_sync = []
    init = engine.Merger.__init__
    monkeypatch.setattr(engine.Merger, "__init__",
                        lambda self, first: init(self, first) or merger_sync.append(self.sync))
    data = TANG300.read_bytes() + b"\n" + SONG100.read_bytes()
    assert train_vocabulary([data], 0, tuning=tuning) == train_simple([data], 0)
    sync = merger_sync[-1]
    assert sync[L.SYNC_HANDED] > 0 and sync[L.SYNC_BLOCKED] > 0
    assert calls.count(0) > 2 * calls.count(1), f"{calls.count(1)} of {len(calls)} calls had the follower"


@pytest.mark.parametrize("seed", range(40))
def test_merges_on_one_cpu_change_nothing(seed, monkeypatch, one_cpu):
    """Random corpora with the two merge threads sharing one CPU: every wait, sleep and
    wake-up path of the hand-overs, and the follower benched and brought back."""
    tuning, _ = _two_classes(monkeypatch, bench_most=2)  # the follower comes back often
    rng = random.Random(90_000 + seed)
    data = random_corpus(rng, invalid=seed % 2 == 0)
    vocab_size = rng.choice(VOCAB_SIZES)
    assert train_vocabulary([data], vocab_size, tuning=tuning) == train_simple([data], vocab_size)


def test_a_follower_that_stops_early_is_an_error_not_a_hang(monkeypatch):
    """The leader's waits give up once the follower's thread has stopped, for whatever
    reason: a follower that returned without being told to (a bug) is an error, neither
    a hang nor a vocabulary cut short."""
    tuning, _ = _two_classes(monkeypatch)
    monkeypatch.setattr(engine.K, "follow_merges", lambda *args: 0)
    with pytest.raises(RuntimeError, match="the merges' follower stopped before the leader was done"):
        train_vocabulary([TANG300.read_bytes()], 0, tuning=tuning)


def _array_memory_error() -> MemoryError:
    """A real numpy allocation failure (it knows the size it asked for)."""
    try:
        np.empty(1 << 62, dtype=np.uint8)
    except MemoryError as err:
        return err
    raise AssertionError("numpy allocated 4 EiB")


@pytest.mark.parametrize(("kernel", "stage"), [("scan_types", "scanning the corpus"),
                                               ("run_merges", "merging"),
                                               ("_encode_lines", "encoding the training texts")])
def test_memory_running_out_names_the_stage_and_the_size(kernel, stage, monkeypatch, tmp_path):
    """A MemoryError in any stage becomes bbpe's InsufficientMemoryError, whose message
    names the corpus, the stage and what the allocation asked for; ``bbpe train`` prints
    it as one line, exits 1 and leaves no file."""
    err = _array_memory_error()

    def failing(*args, **kwargs):
        raise err

    if kernel == "_encode_lines":
        from bbpe.xbbpe import encodings as trainenc

        monkeypatch.setattr(trainenc, "_encode_lines", failing)
    else:
        monkeypatch.setattr(engine.K, kernel, failing)
    message = rf"tang300.txt: memory ran out while {stage} \(an allocation of {2**42:,}.0 MB failed"
    with pytest.raises(bbpe.InsufficientMemoryError, match=message) as caught:
        bbpe.Tokenizer.train(TANG300, 4000)
    assert caught.value.__cause__ is err
    out = tmp_path / "m.bin"
    with pytest.MonkeyPatch.context() as m:
        errors: list[str] = []
        m.setattr(cli.sys, "stderr", type("Err", (), {"write": lambda self, s: errors.append(s),
                                                       "flush": lambda self: None})())
        assert cli.main(["train", str(TANG300), "-n", "4000", "-o", str(out), "-q"]) == 1
    lines = "".join(errors).splitlines()
    assert len(lines) == 1 and lines[0].startswith("bbpe: error: ") and f"while {stage}" in lines[0]
    assert list(tmp_path.iterdir()) == []


def test_an_address_space_limit_is_checked_before_training(monkeypatch):
    """``ulimit -v``: the check counts the address space a run reserves (stacks, malloc
    arenas), not only what it touches, and refuses at once, naming the limit."""
    size = 20 << 20
    need = resources.address_space_estimate(size, threads=2)
    assert need > resources.training_estimate(size) + 4 * (64 << 20)
    assert resources.address_space_estimate(size, threads=1) < need
    monkeypatch.setattr(resources, "available_memory", lambda: None)
    monkeypatch.setattr(resources, "address_space_limit", lambda: need // 2)
    with pytest.raises(bbpe.InsufficientMemoryError, match=r"big.txt: .*address space.*ulimit -v"):
        resources.check_training_memory("big.txt", size)
    monkeypatch.setattr(resources, "address_space_limit", lambda: 3 * need)
    resources.check_training_memory("big.txt", size)


LIMITED = """
import resource, subprocess, sys
limit = int(sys.argv[1]) << 20
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
sys.argv[1:] = sys.argv[2:]
from bbpe.cli import run
run()
"""


def _vm_size_after_import(where: Path) -> int:
    code = ("import bbpe, bbpe.xbbpe.train, bbpe.cli; "
            "print([l for l in open('/proc/self/status') if l.startswith('VmSize')][0].split()[1])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=where)
    return int(out.stdout) >> 10


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs RLIMIT_AS and /proc (Linux)")
def test_a_real_address_space_limit_ends_in_one_line(tmp_path):
    """``bbpe train`` under RLIMIT_AS, just above what importing it takes: with the memory
    check it refuses at once; without it (``--no-memory-check``) memory runs out in some
    stage. Either way: one line on stderr that says so, exit status 1, no file."""
    base = _vm_size_after_import(tmp_path)  # run from elsewhere than the source tree, as below
    corpus = tmp_path / "corpus.txt"
    rng = random.Random(5)
    corpus.write_text("\n".join("".join(chr(0x4E00 + rng.randrange(3000)) for _ in range(40))
                                for _ in range(50_000)) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()
    outcomes = []
    for extra, check in [(40, True), (40, False), (80, False), (120, False)]:
        args = [sys.executable, "-c", LIMITED, str(base + extra), "train", str(corpus), "-n", "8000",
                "-o", str(out / "m.bin"), "-q"] + ([] if check else ["--no-memory-check"])
        proc = subprocess.run(args, capture_output=True, text=True, timeout=300, check=False, cwd=tmp_path)
        lines = proc.stderr.strip().splitlines()
        if proc.returncode == 0:
            assert (out / "m.bin").exists()
            (out / "m.bin").unlink()
            outcomes.append("trained")
            continue
        assert proc.returncode == 1 and len(lines) == 1, proc.stderr
        assert lines[0].startswith(f"bbpe: error: {corpus}: ")
        assert ("address space" if check else "memory ran out while") in lines[0]
        assert list(out.iterdir()) == []
        outcomes.append("refused" if check else "ran out")
    assert outcomes[0] == "refused" and "ran out" in outcomes, outcomes


def test_a_thread_that_cannot_start_is_a_memory_error(monkeypatch):
    """Under an address-space limit a new thread's stack may not be mapped: Python raises
    RuntimeError("can't start new thread"); training says that memory ran out."""
    from bbpe.common import threads
    from bbpe.xbbpe.engine import first_pass, scanning

    def refused(task, n):
        raise RuntimeError("can't start new thread")

    monkeypatch.setenv("BBPE_THREADS", "2")
    # on_threads where it is defined (side_by_side calls it there) and in each module that imports it
    for module in (threads, first_pass, scanning):
        monkeypatch.setattr(module, "on_threads", refused)
    with pytest.raises(bbpe.InsufficientMemoryError, match="a new thread's stack could not be mapped"):
        pipeline.train(Corpus.from_file(TANG300), 4000, tuning=engine.DEFAULT.but(parallel_merges_at=0))


def test_other_runtime_errors_pass_through(monkeypatch):
    def failing(*args):
        raise RuntimeError("something else")

    monkeypatch.setattr(engine.K, "run_merges", failing)
    with pytest.raises(RuntimeError, match="something else"):
        bbpe.Tokenizer.train(TANG300, 4000)


def test_the_load_benchmark_runs_trainings_at_once(tmp_path):
    """benchmarks/bench_load.py's helper starts its commands together and times each."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    try:
        import bench_load
    finally:
        sys.path.pop(0)
    runs = bench_load.run_together([[sys.executable, "-c", "import time; time.sleep(0.5)"],
                                    [sys.executable, "-c", "import sys; sys.exit(3)"]])
    assert runs[0].ok and runs[0].wall >= 0.5
    assert not runs[1].ok and runs[1].note == "exit 3" and runs[1].wall < runs[0].wall
