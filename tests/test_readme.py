"""The snippets of README.md and docs/*.md run as pasted (issue 31).

Every fenced block of those files whose language is Python (``python``, ``py``, ``python3``)
or a shell (``sh``, ``bash``, ``shell``) is a test, and runs exactly as it is written there,
as a reader pastes it:

* one session per file: its blocks run in the order of the file, the Python ones in one
  namespace (a ``__main__`` module, as in one interpreter) and the shell ones with ``bash -e
  -o pipefail`` (``bbpe`` on PATH), all in one working directory. So a block may use what an
  earlier block of the same file defined (the README's sections all use the ``tok`` its first
  block trains), never what another file did;
* the working directory holds what a reader has around (``reader_dir``): the checkout's
  ``data/tang300.txt``, a ``big.txt``, an ``a.txt`` and a ``b.txt`` (the corpus, whole and
  in two halves) and the ``tang300.bin`` the README's first command trains;
* a Python block fails on any exception and on a DeprecationWarning, PendingDeprecationWarning
  or FutureWarning its own lines trigger (a stale call); a shell block on a non-zero exit.

Not run: blocks in other languages (``text``, ``pycon``, ``console``, ``cython``, ``c``,
none); README.md's first block (the set-up commands, ``pip install .``, which CI runs); and a
block right after an ``<!-- not run: why -->`` line (a synopsis, pseudo-code). A block that
needs an optional package that is not installed (transformers, torch, datasets) is skipped,
naming the package, and so is a later block that fails on a name only the skipped one defines.

docs/*.md are collected too, so a Python or shell block added there runs; today their blocks
are diagrams and an annotated hexdump, fenced without a language. New sections and files'
blocks are picked up with no change here.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import traceback
import types
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO, TANG300

import bbpe

README = REPO / "README.md"
FILES = [README, *sorted((REPO / "docs").glob("*.md"))]
PYTHON = {"python", "py", "python3"}
SHELL = {"sh", "bash", "shell"}
# optional packages a block may need, and how to get them; a module that implies one of them
OPTIONAL = {"transformers": "pip install 'bbpe[hf]'", "torch": "pip install torch", "datasets": "pip install datasets"}
IMPLIES = {"bbpe.hf": "transformers"}
STALE = (DeprecationWarning, PendingDeprecationWarning, FutureWarning)
SHELL_TIMEOUT = 120  # seconds

FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([^\s`]*)[^`]*$")
NOT_RUN = re.compile(r"^\s*<!--\s*not run\b")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # of the opening fence, from 1
    lang: str
    source: str
    not_run: bool  # marked <!-- not run ... --> on the line before

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(REPO).as_posix()}:{self.line}"


def blocks_of(path: Path) -> list[Block]:
    """The fenced blocks of a Markdown file (an unclosed one runs to the end, as in CommonMark)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks = []
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        indent, fence, lang = len(opening[1]), opening[2], opening[3].lower()
        closing = re.compile(rf"^\s*{re.escape(fence[0])}{{{len(fence)},}}\s*$")
        end = i + 1
        while end < len(lines) and not closing.match(lines[end]):
            end += 1
        body = [line[min(indent, len(line) - len(line.lstrip())):] for line in lines[i + 1:end]]
        marked = i > 0 and NOT_RUN.match(lines[i - 1]) is not None
        blocks.append(Block(path, i + 1, lang, "\n".join(body) + "\n", marked))
        i = end + 1
    return blocks


def runs(block: Block, first: Block | None) -> bool:
    return block.lang in PYTHON | SHELL and not block.not_run and block != first


def snippets() -> list[Block]:
    found = []
    for path in FILES:
        blocks = blocks_of(path)
        found += [block for block in blocks if runs(block, blocks[0] if path == README else None)]
    return found


SNIPPETS = snippets()


def needed_package(source: str) -> str | None:
    """The optional package, not installed, that the block imports (or None)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        for name in names:
            package = IMPLIES.get(name, name.partition(".")[0])
            if package in OPTIONAL and importlib.util.find_spec(package) is None:
                return package
    return None


def missing_package(error: BaseException | None) -> str | None:
    """The optional, uninstalled package whose absence raised ``error`` (or one it chains to)."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, ModuleNotFoundError) and error.name:
            package = error.name.partition(".")[0]
            if package in OPTIONAL and importlib.util.find_spec(package) is None:
                return package
        error = error.__cause__ or error.__context__
    return None


def skip_reason(block: Block, package: str) -> str:
    return f"{block.where} needs {package}, which is not installed ({OPTIONAL[package]})"


@contextmanager
def main_module(module: types.ModuleType, cwd: Path) -> Iterator[None]:
    """``module`` as ``__main__`` (pickle finds what the snippets define) and ``cwd`` as the directory."""
    saved_main, saved_cwd = sys.modules["__main__"], os.getcwd()
    sys.modules["__main__"] = module
    os.chdir(cwd)
    try:
        with warnings.catch_warnings():
            for category in STALE:
                warnings.filterwarnings("error", category=category, module=r"__main__\Z")
            yield
    finally:
        os.chdir(saved_cwd)
        sys.modules["__main__"] = saved_main


class Session:
    """One reader going through one file: a directory, an interpreter, a shell."""

    def __init__(self, workdir: Path, path_dir: Path):
        self.workdir = workdir
        self.module = types.ModuleType("__main__")
        self.env = dict(os.environ, PATH=os.pathsep.join([str(path_dir), os.environ.get("PATH", "")]))
        self.skipped: list[tuple[Block, str]] = []
        self.failed: list[Block] = []

    def run(self, block: Block) -> tuple[str, str]:
        """("passed" | "skipped" | "failed", the reason or the error)."""
        outcome = self._python(block) if block.lang in PYTHON else self._shell(block)
        if outcome[0] == "skipped":
            self.skipped.append((block, outcome[1]))
        elif outcome[0] == "failed":
            if self.failed:
                outcome = ("failed", f"{outcome[1]}\n(after the failure of {self.failed[0].where})")
            self.failed.append(block)
        return outcome

    def _python(self, block: Block) -> tuple[str, str]:
        package = needed_package(block.source)
        if package is not None:
            return "skipped", skip_reason(block, package)
        # blank lines first: tracebacks give the file's own line numbers
        code = compile("\n" * block.line + block.source, str(block.path), "exec")
        try:
            with main_module(self.module, self.workdir):
                exec(code, self.module.__dict__)  # noqa: S102 (running the snippets is the test)
        except (Exception, SystemExit) as error:  # noqa: BLE001 (whatever a snippet raises, it fails)
            package = missing_package(error)
            if package is not None:
                return "skipped", skip_reason(block, package)
            if isinstance(error, NameError) and self.skipped:
                reason = self.skipped[-1][1]
                return "skipped", f"{block.where} uses {error.name!r}, from a skipped block: {reason}"
            own = error.__traceback__.tb_next if error.__traceback__ else None  # from the snippet's frame on
            trace = traceback.format_exception(type(error), error, own)
            return "failed", f"{block.where} does not run as pasted:\n{''.join(trace)}"
        return "passed", ""

    def _shell(self, block: Block) -> tuple[str, str]:
        if shutil.which("bash") is None:
            return "skipped", f"{block.where} is a shell block and bash is not installed"
        try:
            result = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", block.source], cwd=self.workdir,
                                    env=self.env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                    timeout=SHELL_TIMEOUT, check=False)
        except subprocess.TimeoutExpired:
            return "failed", f"{block.where} did not end in {SHELL_TIMEOUT} s"
        if result.returncode != 0:
            return "failed", (f"{block.where} exits with {result.returncode}:\n"
                              f"--- stdout\n{result.stdout[-3000:]}--- stderr\n{result.stderr[-3000:]}")
        return "passed", ""


@pytest.fixture(scope="session")
def reader_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What the snippets refer to: the corpus where the checkout has it, big.txt, a.txt + b.txt, tang300.bin."""
    root = tmp_path_factory.mktemp("reader")
    (root / "data").mkdir()
    shutil.copyfile(TANG300, root / "data" / "tang300.txt")
    shutil.copyfile(TANG300, root / "big.txt")
    corpus = TANG300.read_bytes()
    half = corpus.index(b"\n", len(corpus) // 2) + 1
    (root / "a.txt").write_bytes(corpus[:half])
    (root / "b.txt").write_bytes(corpus[half:])
    bbpe.Tokenizer.train(TANG300, 800).save(root / "tang300.bin")  # the first block's `bbpe train`
    return root


@pytest.fixture(scope="session")
def path_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory with this interpreter's ``bbpe`` command, for PATH."""
    scripts = Path(sysconfig.get_path("scripts"))
    if (scripts / "bbpe").exists():
        return scripts
    wrapper = tmp_path_factory.mktemp("bin") / "bbpe"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m bbpe "$@"\n')
    wrapper.chmod(0o755)
    return wrapper.parent


@pytest.fixture(scope="session")
def outcome(tmp_path_factory: pytest.TempPathFactory, reader_dir: Path, path_dir: Path
            ) -> Callable[[Block], tuple[str, str]]:
    """A block's outcome, from running its whole file once, block after block, in one session."""
    outcomes: dict[Block, tuple[str, str]] = {}

    def of(block: Block) -> tuple[str, str]:
        if block not in outcomes:
            workdir = tmp_path_factory.mktemp(block.path.stem)
            shutil.copytree(reader_dir, workdir, dirs_exist_ok=True)
            session = Session(workdir, path_dir)
            for other in SNIPPETS:
                if other.path == block.path:
                    outcomes[other] = session.run(other)
        return outcomes[block]

    return of


@pytest.mark.parametrize("block", SNIPPETS, ids=[f"{block.where}-{block.lang}" for block in SNIPPETS])
def test_snippet_runs_as_pasted(block: Block, outcome: Callable[[Block], tuple[str, str]]) -> None:
    status, detail = outcome(block)
    if status == "skipped":
        pytest.skip(detail)
    if status == "failed":
        pytest.fail(detail, pytrace=False)


def test_snippets_are_found() -> None:
    """The extraction works: the README's Python blocks are there to run."""
    assert sum(block.path == README and block.lang in PYTHON for block in SNIPPETS) >= 4


def test_first_readme_block_is_the_setup() -> None:
    """The one block left out without a mark must stay the set-up commands, not a snippet put first."""
    first = blocks_of(README)[0]
    assert "pip install" in first.source, f"README.md's first block is no longer the set-up commands: {first.where}"


def test_not_run_marks_precede_blocks() -> None:
    """Each ``<!-- not run -->`` mark sits right before a block (a stray one would mark nothing)."""
    for path in FILES:
        lines = path.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines, 1):
            if NOT_RUN.match(line):
                assert number < len(lines) and FENCE.match(lines[number]), \
                    f"{path.relative_to(REPO)}:{number}: a not-run mark with no block right after it"
