"""Shared fixtures: paths to the test data and, when g++ is there, the reference oracle.

The oracle is the blog's C++ built from ``../shared/reference/xbbpe`` (or ``$BBPE_REFERENCE``)
in a temporary directory, once per session; tests that need it are skipped, with the
reason, when the sources or g++/make are missing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
# test the installed package, never the source tree (which has no compiled codec)
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != REPO]
sys.path.insert(0, str(TESTS))  # the helper modules beside this file (tests/ is no package)

DATA = TESTS / "data"
REFERENCE = Path(os.environ.get("BBPE_REFERENCE", REPO.parent / "shared" / "reference" / "xbbpe"))
TANG300 = REPO / "data" / "tang300.txt"
SONG100 = DATA / "corpora" / "song100.txt"

from oracle import Oracle

__all__ = ["DATA", "REFERENCE", "REPO", "SONG100", "TANG300", "TESTS", "Oracle"]


@pytest.fixture(scope="session")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> Oracle:
    """The reference ``xbbpe`` built into a temporary directory."""
    if not (REFERENCE / "XBBPE.cpp").exists():
        pytest.skip(f"reference sources not found at {REFERENCE} (set BBPE_REFERENCE)")
    if shutil.which("g++") is None or shutil.which("make") is None:
        pytest.skip("g++ or make is not installed: cannot build the reference oracle")
    build = tmp_path_factory.mktemp("xbbpe")
    src = build / "xbbpe"
    shutil.copytree(REFERENCE, src)
    for path in src.rglob("*"):
        path.chmod(path.stat().st_mode | 0o200)  # ../shared is read-only
    result = subprocess.run(["make", "-C", str(src), "xbbpe"], capture_output=True, check=False, text=True)
    if result.returncode != 0:
        pytest.fail(f"building the oracle failed:\n{result.stderr}")
    return Oracle(src / "xbbpe")
