"""Training benchmark: bbpe against HF tokenizers, sentencepiece, YouTokenToMe, rustbpe and
the C++ reference, each in its own process, in one run, on the same machine.

    python benchmarks/bench_train.py                 # all configurations, README table
    python benchmarks/bench_train.py --quick         # zh-large at 8000 only
    python benchmarks/bench_train.py --no-reference  # without the C++ program (slow)

Corpora come from ../shared/corpora/build.sh (built into $BBPE_CORPORA, default
/tmp/bbpe-corpora, when missing). Wall time is the best of --repeat runs; peak RSS is that
run's own (os.wait4). bbpe runs as `bbpe train ... -q`, which also writes the reference's
.bin with the stored encodings of every line; its kernels are compiled at install time
(the JIT fallback's cold start is timed separately). The trainers of one configuration
run in rounds, each once per round, each measured run right after an unmeasured one of
its own (``best_of_rounds``). Prints the ratios bbpe/other and writes the table into
benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import HERE, SHARED, Run, best_of, best_of_rounds, corpus, machine, measure, publish, versions

CONFIGS = [("zh-large", 8000), ("zh-large", 32000), ("en-large", 32000), ("mixed", 8000)]
ANCHORS = ["sentencepiece", "youtokentome", "tokenizers", "rustbpe"]
REFERENCE_TIMEOUT = 600


def bbpe_cmd(path: Path, vocab: int, out: Path) -> list[str]:
    return [sys.executable, "-m", "bbpe", "train", str(path), "--vocab-size", str(vocab), "-o", str(out), "-q"]


def bbpe_alone(path: Path, vocab: int, outdir: Path, repeat: int) -> Run:
    """bbpe's best of ``repeat`` runs on its own, writing into ``outdir``."""
    return best_of(bbpe_cmd(path, vocab, outdir / "bbpe.bin"), repeat, outdir=outdir)


def build_reference(tmp: Path) -> Path | None:
    src = SHARED / "reference" / "xbbpe"
    if not (src / "XBBPE.cpp").exists() or shutil.which("make") is None:
        return None
    dst = tmp / "xbbpe"
    shutil.copytree(src, dst)
    for p in dst.rglob("*"):
        p.chmod(p.stat().st_mode | 0o200)
    subprocess.run(["make", "-C", str(dst), "xbbpe"], check=True, capture_output=True)
    return dst / "xbbpe"


def fmt(run: Run) -> tuple[str, str]:
    if not run.ok:
        return "–", "–"
    return f"{run.wall:.2f}", f"{run.rss_mb:.0f}"


def ratio(a: Run, b: Run) -> tuple[str, str]:
    if not (a.ok and b.ok):
        return "–", "–"
    return f"{a.wall / b.wall:.2f}", f"{a.rss_mb / b.rss_mb:.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="zh-large at 8000 only")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--no-readme", action="store_true", help="do not rewrite benchmarks/README.md")
    ap.add_argument("--no-reference", action="store_true",
                    help=f"leave out the C++ reference (up to {REFERENCE_TIMEOUT} s per configuration)")
    args = ap.parse_args()
    configs = CONFIGS[:1] if args.quick else CONFIGS
    lines = []
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        reference = None if args.no_reference else build_reference(tmp)
        small = bbpe_cmd(corpus("zh-small"), 2000, tmp / "small.bin")
        first = measure(small)  # the first run after installing
        jit_cold = measure(small, env={**os.environ, "BBPE_JIT": "1", "NUMBA_CACHE_DIR": str(tmp / "numba-cold")})
        jit_warm = measure(small, env={**os.environ, "BBPE_JIT": "1", "NUMBA_CACHE_DIR": str(tmp / "numba-cold")})
        warm = measure(small)
        rows = []
        for name, vocab in configs:
            path = corpus(name)
            outdirs = {tool: tmp / f"out-{tool}" for tool in ("bbpe", *ANCHORS)}
            cmds = {"bbpe": bbpe_cmd(path, vocab, outdirs["bbpe"] / "bbpe.bin")}
            for tool in ANCHORS:
                cmds[tool] = [sys.executable, str(HERE / "_trainers.py"), tool, str(path), str(vocab),
                              str(outdirs[tool])]
            results = best_of_rounds(cmds, args.repeat, outdirs=outdirs)
            ours = results["bbpe"]
            if reference:
                results["C++ reference"] = measure([str(reference), "train", str(path), str(vocab),
                                                    str(tmp / "ref.bin")], timeout=REFERENCE_TIMEOUT)
                ref = results["C++ reference"]
                if ref.ok and (tmp / "ref.bin").read_bytes() != (outdirs["bbpe"] / "bbpe.bin").read_bytes():
                    ref.note = "DIFFERENT .bin"
            for tool, run in results.items():
                w, r = fmt(run)
                tw, tr = ratio(ours, run) if tool != "bbpe" else ("1.00", "1.00")
                note = run.note if not run.ok or run.note else ""
                rows.append(f"| {name} | {vocab} | {tool} | {w} | {r} | {tw} | {tr} | {note} |")
                print(f"{name:9s} {vocab:6d} {tool:14s} {w:>8s} s {r:>6s} MB   bbpe/this: time {tw:>6s} rss {tr:>6s} {note}",
                      flush=True)

        # scaling: half of zh-large against all of it, and one 1,000,000-char line
        full = corpus("zh-large")
        data = full.read_bytes()
        half = tmp / "zh-half.txt"
        half.write_bytes(data[: data.index(b"\n", len(data) // 2) + 1])
        t_half = bbpe_alone(half, 32000, tmp / "out-half", args.repeat)
        t_full = bbpe_alone(full, 32000, tmp / "out-full", args.repeat)
        longline = tmp / "longline.txt"
        longline.write_text("天地" * 500_000 + "\n")
        t_long = bbpe_alone(longline, 0, tmp / "out-long", args.repeat)

    stamp = time.strftime("%Y-%m-%d")
    lines.append(f"## Training ({stamp}, `python benchmarks/bench_train.py`)\n")
    lines.append(f"Machine: {machine()}.  ")
    lines.append(f"Versions: {versions(['bbpe', 'numba', 'numpy', 'tokenizers', 'sentencepiece', 'youtokentome', 'rustbpe'])}.\n")
    lines.append(f"Wall seconds (best of {args.repeat}, in rounds: every trainer once per round, each measured run "
                 "right after an unmeasured one of its own) and peak RSS of each trainer's own process, same run. "
                 "The last two columns are bbpe divided by that tool (below 1: bbpe is faster / leaner). bbpe's time includes "
                 "writing the reference's `.bin` with the stored encoding of every line.\n")
    lines.append("| corpus | vocab | tool | wall s | peak RSS MB | bbpe/tool time | bbpe/tool RSS | note |")
    lines.append("| --- | ---: | --- | ---: | ---: | ---: | ---: | --- |")
    lines += rows
    lines.append("")
    lines.append(f"* Start-up, zh-small at 2000: the first run after installing {first.wall:.2f} s, later runs "
                 f"{warm.wall:.2f} s, {warm.rss_mb:.0f} MB (the kernels are compiled at install time). With "
                 f"`BBPE_JIT=1` (numba's JIT, the fallback): {jit_cold.wall:.1f} s on a cold cache, then "
                 f"{jit_warm.wall:.2f} s, {jit_warm.rss_mb:.0f} MB.")
    lines.append(f"* Doubling the corpus: zh-large first half {t_half.wall:.2f} s, all of it {t_full.wall:.2f} s "
                 f"(x{t_full.wall / t_half.wall:.2f}) at vocab 32000.")
    lines.append(f"* One 1,000,000-char line (`天地` x 500,000), no vocab limit: {t_long.wall:.2f} s, "
                 f"{t_long.rss_mb:.0f} MB (the C++ reference: 331 s, QUIRKS Q20.5).")
    publish(lines, "bench_train", readme=not args.no_readme)


if __name__ == "__main__":
    main()
