"""Shared by the benchmarks: the corpora, the machine, and measuring one child process."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
import tempfile
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


def measure(cmd: list[str], timeout: float = 600, env: dict[str, str] | None = None) -> Run:
    """Run cmd as a child; its wall time and its own peak RSS (os.wait4's rusage). It runs
    in / so that ``python -m bbpe`` imports the installed package, never a source tree."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd="/")
    deadline = start + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() > deadline:
            proc.kill()
            os.wait4(proc.pid, 0)
            return Run(timeout, 0.0, False, f"stopped after {timeout:.0f} s")
        time.sleep(0.005)
    wall = time.perf_counter() - start
    err = proc.stderr.read().decode(errors="replace").strip() if proc.stderr else ""
    proc.returncode = os.waitstatus_to_exitcode(status)
    ok = proc.returncode == 0
    return Run(wall, usage.ru_maxrss / 1024, ok, "" if ok else (err.splitlines() or ["failed"])[-1][:120])


def best_of(cmd: list[str], repeat: int, **kw) -> Run:
    runs = [measure(cmd, **kw) for _ in range(repeat)]
    good = [r for r in runs if r.ok]
    return min(good, key=lambda r: r.wall) if good else runs[-1]


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
