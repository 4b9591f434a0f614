"""Shared by the benchmarks: the corpora, the machine, and measuring one child process."""

from __future__ import annotations

import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SHARED = Path(os.environ.get("BBPE_SHARED", REPO.parent / "shared"))
CORPORA = Path(os.environ.get("BBPE_CORPORA", Path(tempfile.gettempdir()) / "bbpe-corpora"))


def corpus(name: str) -> Path:
    """A corpus built by ../shared/corpora/build.sh (built into $BBPE_CORPORA if missing)."""
    path = CORPORA / f"{name}.txt"
    if not path.exists():
        build = SHARED / "corpora" / "build.sh"
        print(f"building the corpora into {CORPORA} with {build} ...", file=sys.stderr)
        subprocess.run(["bash", str(build), str(CORPORA)], check=True, stdout=sys.stderr)
    return path


@dataclass
class Run:
    wall: float  # seconds
    rss_mb: float  # peak resident set size of the child
    ok: bool
    note: str = ""


def measure(cmd: list[str], timeout: float = 600, env: dict[str, str] | None = None,
            outdir: Path | None = None) -> Run:
    """Run cmd as a child; its wall time and its own peak RSS (os.wait4's rusage). It runs
    in / so that ``python -m bbpe`` imports the installed package, never a source tree.

    ``outdir``, where cmd writes, is emptied before the clock starts, so that every run
    writes its output afresh, as a first training does, rather than over the previous
    run's (which frees that file's page cache in the run: 0.013 s for bbpe's 57 MB
    ``.bin`` of zh-large, timed inside the process; within noise end to end).
    """
    if outdir is not None:
        shutil.rmtree(outdir, ignore_errors=True)
        outdir.mkdir(parents=True)
    with tempfile.TemporaryFile() as errors:  # not a pipe: a child that fills one would stall
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=errors, env=env, cwd="/")
        # a blocking wait (polling would add up to its interval to every time), and a
        # timer that kills the child at the deadline
        killer = threading.Timer(timeout, proc.kill)
        killer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            killer.cancel()
        wall = time.perf_counter() - start
        errors.seek(0)
        err = errors.read().decode(errors="replace").strip()
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait for it
    if wall >= timeout and proc.returncode == -signal.SIGKILL:
        return Run(timeout, 0.0, False, f"stopped after {timeout:g} s")
    ok = proc.returncode == 0
    return Run(wall, usage.ru_maxrss / 1024, ok, "" if ok else (err.splitlines() or ["failed"])[-1][:120])


def fastest(runs: list[Run]) -> Run:
    """The fastest run that succeeded, or the last one (which says why it failed)."""
    good = [r for r in runs if r.ok]
    return min(good, key=lambda r: r.wall) if good else runs[-1]


def best_of(cmd: list[str], repeat: int, **kw) -> Run:
    return fastest([measure(cmd, **kw) for _ in range(repeat)])


def best_of_rounds(cmds: dict[str, list[str]], repeat: int, outdirs: dict[str, Path] | None = None) -> dict[str, Run]:
    """Each command's best of ``repeat`` runs, made in rounds: every command in turn, once
    per round. The benchmark VM's speed drifts (YouTokenToMe's best of 3 on zh-large at
    8000 took 1.34 s and 1.91 s on one day); in rounds a slow or fast spell falls on all
    the tools alike. Each measured run follows an unmeasured one of the same command, so
    that every tool runs after itself: a run is slower right after another tool's, with
    more time in the kernel (bbpe on zh-large at 8000 right after YouTokenToMe, which
    peaks at 708 MB: 0.88-1.03 s, 0.34-0.50 s of it in the kernel; right after itself
    0.70-0.93 s, 0.16-0.29 s; YouTokenToMe right after bbpe 1.43-1.51 s, right after
    itself 1.34-1.42 s). A command that failed is not run again. ``outdirs`` names the
    directory each command writes to (see ``measure``)."""
    runs: dict[str, list[Run]] = {name: [] for name in cmds}
    for _ in range(repeat):
        for name, cmd in cmds.items():
            if not runs[name] or runs[name][-1].ok:
                outdir = (outdirs or {}).get(name)
                measure(cmd, outdir=outdir)  # the warm-up, not kept
                runs[name].append(measure(cmd, outdir=outdir))
    return {name: fastest(tried) for name, tried in runs.items()}


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{cpu}, {os.cpu_count()} cores, {mem:.0f} GiB RAM, Linux {platform.release()}, Python {platform.python_version()}"


def versions(names: list[str]) -> str:
    out = []
    for name in names:
        try:
            out.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            out.append(f"{name} (not installed)")
    if shutil.which("g++"):
        out.append(subprocess.run(["g++", "--version"], capture_output=True, check=False, text=True).stdout.splitlines()[0])
    return ", ".join(out)


def replace_section(readme: Path, marker: str, text: str) -> None:
    """Put text between <!-- marker --> and <!-- /marker --> in readme (added if absent)."""
    begin, end = f"<!-- {marker} -->", f"<!-- /{marker} -->"
    body = readme.read_text() if readme.exists() else "# Benchmarks\n"
    block = f"{begin}\n{text.rstrip()}\n{end}"
    if begin in body and end in body:
        body = body[: body.index(begin)] + block + body[body.index(end) + len(end) :]
    else:
        body = body.rstrip() + "\n\n" + block + "\n"
    readme.write_text(body)


def publish(lines: list[str], marker: str, readme: bool) -> None:
    """Print a benchmark's table and, if ``readme``, put it in its section of
    benchmarks/README.md (``replace_section``)."""
    table = "\n".join(lines)
    print("\n" + table)
    if readme:
        replace_section(HERE / "README.md", marker, table)

