"""Load test: bbpe training and encoding on a busy machine.

    python benchmarks/bench_load.py                  # zh-large at 8000 and 32000, README table
    python benchmarks/bench_load.py --vocab 8000 --ks 1,2

For each vocabulary size: k = 1, 2, 4, 8 ``bbpe train`` processes started at the same
moment against the same k run one after another (each output compared with the training
alone, byte for byte), and one training beside 1 and 2 CPU-bound processes against the
same training alone with ``BBPE_THREADS=1``. Then ``encode_batch`` with its default
thread count, alone and beside a CPU-bound process. Every process is a child of its own,
started from / so that the installed bbpe runs. Prints each wall time, the sums and the
ratios, and writes the table into benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from _common import Run, corpus, machine, measure, publish, versions

TIMEOUT = 900


def train_cmd(path: Path, vocab: int, out: Path) -> list[str]:
    return [sys.executable, "-m", "bbpe", "train", str(path), "--vocab-size", str(vocab), "-o", str(out), "-q"]


def run_together(cmds: list[list[str]], env: dict[str, str] | None = None) -> list[Run]:
    """Start every command at once; each one's wall time from the common start to its own
    exit (os.wait4 on whichever ends first)."""
    start = time.perf_counter()
    procs = {subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd="/").pid: i
             for i, cmd in enumerate(cmds)}
    runs: list[Run | None] = [None] * len(cmds)
    deadline = start + TIMEOUT
    while procs:
        pid, status, usage = os.wait4(-1, 0)
        if pid not in procs:
            continue
        wall = time.perf_counter() - start
        code = os.waitstatus_to_exitcode(status)
        runs[procs.pop(pid)] = Run(wall, usage.ru_maxrss / 1024, code == 0, "" if code == 0 else f"exit {code}")
        if time.perf_counter() > deadline:
            for other in procs:
                os.kill(other, 9)
    return [run for run in runs if run is not None]


@contextmanager
def busy(n: int):
    """n CPU-bound processes for as long as the block runs."""
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    time.sleep(0.3)  # let them get going
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


def same_output(outs: list[Path], alone: Path) -> bool:
    expected = alone.read_bytes()
    return all(out.read_bytes() == expected for out in outs)


def training_rows(path: Path, vocab: int, ks: list[int], tmp: Path) -> list[str]:
    alone_out = tmp / f"alone-{vocab}.bin"
    measure(train_cmd(path, vocab, alone_out))  # warm-up: the page cache, the kernels' .so
    alone = measure(train_cmd(path, vocab, alone_out))
    one_thread = measure(train_cmd(path, vocab, tmp / "one.bin"), env={**os.environ, "BBPE_THREADS": "1"})
    print(f"vocab {vocab}: alone {alone.wall:.2f} s, one thread alone {one_thread.wall:.2f} s", flush=True)
    rows = [f"| {vocab} | alone | {alone.wall:.2f} | – | – | – |",
            (f"| {vocab} | alone, `BBPE_THREADS=1` | {one_thread.wall:.2f} | – | – | "
             f"{'yes' if same_output([tmp / 'one.bin'], alone_out) else '**no**'} |")]
    for k in ks:
        outs = [tmp / f"k{k}-{i}.bin" for i in range(k)]
        sequential = [measure(train_cmd(path, vocab, out)) for out in outs]
        in_turn = sum(run.wall for run in sequential)
        together = run_together([train_cmd(path, vocab, out) for out in outs])
        ok = all(run.ok for run in together) and same_output(outs, alone_out)
        worst = max(run.wall for run in together)
        walls = ", ".join(f"{run.wall:.2f}" for run in sorted(together, key=lambda r: r.wall))
        print(f"  k={k}: one after another {in_turn:.2f} s; at once {walls} s; "
              f"slowest / one after another {worst / in_turn:.2f}; same output: {ok}", flush=True)
        rows.append(f"| {vocab} | {k} at once (one after another: {in_turn:.2f} s) | {walls} | {in_turn:.2f} | "
                    f"**{worst / in_turn:.2f}** | {'yes' if ok else '**no**'} |")
    for hogs in (1, 2):
        out = tmp / f"beside{hogs}.bin"
        with busy(hogs):
            run = measure(train_cmd(path, vocab, out))
            # the floor: one thread, which no hand-over can slow, beside the same processes
            floor = measure(train_cmd(path, vocab, tmp / "floor.bin"), env={**os.environ, "BBPE_THREADS": "1"})
        ok = run.ok and same_output([out], alone_out)
        print(f"  beside {hogs} busy process(es): {run.wall:.2f} s, / one thread alone "
              f"{run.wall / one_thread.wall:.2f}; one thread beside them {floor.wall:.2f} s "
              f"({floor.wall / one_thread.wall:.2f}); same output: {ok}", flush=True)
        some = f"{hogs} CPU-bound process{'es' if hogs > 1 else ''}"
        rows.append(f"| {vocab} | beside {some} | {run.wall:.2f} | {one_thread.wall:.2f} | "
                    f"**{run.wall / one_thread.wall:.2f}** | {'yes' if ok else '**no**'} |")
        rows.append(f"| {vocab} | `BBPE_THREADS=1` beside {some} | {floor.wall:.2f} | {one_thread.wall:.2f} | "
                    f"{floor.wall / one_thread.wall:.2f} | – |")
    return rows


ENCODE = """
import gc, sys, time
import bbpe
tok = bbpe.Tokenizer.load(sys.argv[1])
lines = open(sys.argv[2], encoding="utf-8").read().splitlines()
size = sum(len(line.encode()) for line in lines)
threads = None if sys.argv[3] == "default" else int(sys.argv[3])
best = float("inf")
for _ in range(3):
    gc.collect()
    start = time.perf_counter()
    ids = tok.encode_batch(lines, num_threads=threads)
    best = min(best, time.perf_counter() - start)
    del ids
print(size / best / 1e6)
"""


def encode_speed(model: Path, path: Path, threads: str) -> float:
    out = subprocess.run([sys.executable, "-c", ENCODE, str(model), str(path), threads], capture_output=True,
                         text=True, check=True, cwd="/")
    return float(out.stdout.strip())


def encoding_rows(model: Path, path: Path) -> list[str]:
    alone = encode_speed(model, path, "default")
    one = encode_speed(model, path, "1")
    with busy(1):
        beside = encode_speed(model, path, "default")
    print(f"encode_batch: default threads alone {alone:.1f} MB/s, beside a busy process {beside:.1f} MB/s; "
          f"one thread alone {one:.1f} MB/s", flush=True)
    return [f"| default threads, alone | {alone:.1f} | 1.00 |",
            f"| default threads, beside a CPU-bound process | {beside:.1f} | {beside / alone:.2f} |",
            f"| 1 thread, alone | {one:.1f} | {one / alone:.2f} |"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vocab", default="8000,32000", help="vocabulary sizes, comma-separated")
    ap.add_argument("--ks", default="1,2,4,8", help="numbers of trainings at once, comma-separated")
    ap.add_argument("--no-readme", action="store_true", help="do not rewrite benchmarks/README.md")
    args = ap.parse_args()
    vocabs = [int(v) for v in args.vocab.split(",")]
    ks = [int(k) for k in args.ks.split(",")]
    path = corpus("zh-large")
    rows: list[str] = []
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        for vocab in vocabs:
            rows += training_rows(path, vocab, ks, tmp)
        encode = encoding_rows(tmp / f"alone-{vocabs[-1]}.bin", path)

    method = ("zh-large, `bbpe train ... -q` in processes of their own, each started at the same moment as the "
              "others of its row. *k at once*: each training's wall time from the common start, against the same k "
              "trainings run one after another (ratio: the slowest of them over the sum). *Beside n CPU-bound "
              "processes* (`python -c 'while True: pass'`): against the same training alone on one thread "
              "(`BBPE_THREADS=1`), and, as the floor, that one-thread training beside the same processes (it "
              "has no hand-overs to lose, so what it loses is the machine's). "
              "*Same output*: every `.bin` equals the training's alone, byte for byte.\n")
    encoding = (f"`encode_batch` of zh-large's lines (str, lists of ids kept, the collector on) with the model of "
                f"vocab {vocabs[-1]}, MB/s, best of 3, each in a process of its own:\n")
    title = (f"## Training and encoding on a busy machine ({time.strftime('%Y-%m-%d')}, "
             "`python benchmarks/bench_load.py`)\n")
    lines = [title,
             f"Machine: {machine()}.  ", f"Versions: {versions(['bbpe', 'numpy'])}.\n", method,
             "| vocab | what runs | wall s | compared with s | ratio | same output |",
             "| ---: | --- | --- | ---: | ---: | --- |", *rows, "", encoding,
             "| what runs | MB/s | / alone |", "| --- | ---: | ---: |", *encode]
    publish(lines, "bench_load", readme=not args.no_readme)


if __name__ == "__main__":
    main()
