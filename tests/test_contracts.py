"""Contracts that drift silently unless something checks them: the codec's type stub
against the compiled module (mypy's stubtest), the package's types (mypy), and the
linters on the Python and Cython sources. Each runs the tool as a user would; the test extra installs them, pinned."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys

import pytest
from conftest import REPO, TESTS

CYTHON_SOURCES = ["bbpe/codec.pyx", "bbpe/codec.pxd", "bbpe/common/_fast.pyx", "bbpe/common/_fast.pxd",
                  "bbpe/common/_cpython.pxd", "bbpe/bpe/_codec.pyx", "bbpe/bpe/_codec.pxd", "bbpe/bpe/_pretokenize.pyx",
                  "bbpe/bpe/_pretokenize.pxd", "examples/cython_consumer/cython_consumer/_batch.pyx"]


def _needs(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed (pip install '.[test]' installs it)")


def test_the_codec_stub_matches_the_compiled_module(tmp_path):
    """bbpe/codec.pyi declares every public name of bbpe.codec with the runtime's
    signatures (the installed copy, run from elsewhere than the source tree)."""
    _needs("mypy")
    proc = subprocess.run([sys.executable, "-m", "mypy.stubtest", "bbpe.codec", "bbpe.common._fast",
                           "bbpe.bpe._pretokenize", "bbpe.bpe._codec", "bbpe.wordpiece._codec", "--allowlist",
                           str(TESTS / "stubtest_allowlist.txt")],
                          capture_output=True, text=True, cwd=tmp_path, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_is_clean(tmp_path):
    """The whole package type-checks (pyproject.toml's [tool.mypy]: the untyped
    dependencies are Any), the codec through its stub."""
    _needs("mypy")
    proc = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path), "bbpe"],
                          capture_output=True, text=True, cwd=REPO, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff_is_clean():
    _needs("ruff")
    ruff = shutil.which("ruff") or pytest.skip("the ruff command is not on PATH")
    proc = subprocess.run([ruff, "check", "--no-cache", "."], capture_output=True, text=True, cwd=REPO, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_cython_lint_is_clean():
    _needs("cython_lint")
    lint = shutil.which("cython-lint") or pytest.skip("the cython-lint command is not on PATH")
    proc = subprocess.run([lint, *CYTHON_SOURCES], capture_output=True, text=True, cwd=REPO, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_numba_is_within_the_cap_and_still_has_pycc():
    """``numba.pycc`` is deprecated: pyproject.toml caps numba (docs/design.md, "When
    numba.pycc goes"), and the installed numba must be inside the cap and still have
    pycc, so that a numba without it shows here first."""
    import re

    import numba

    pyproject = (REPO / "pyproject.toml").read_text()
    caps = re.findall(r'"numba>=([\d.]+),<([\d.]+)"', pyproject)
    assert len(caps) == 2 and len(set(caps)) == 1, "the build and the runtime must ask for the same numba"
    low, high = (tuple(int(x) for x in v.split(".")) for v in caps[0])
    installed = tuple(int(x) for x in re.findall(r"\d+", numba.__version__)[:2])
    assert low <= installed < high, f"numba {numba.__version__} is outside {caps[0]}"
    assert importlib.util.find_spec("numba.pycc") is not None, "this numba has no pycc"

