"""The C-level API, from the outside: the example consumers built against the installed bbpe."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap

import pytest
from conftest import DATA, REPO

import bbpe

EXAMPLES = REPO / "examples"


def build(example: str, tmp_path) -> str:
    """Copy an example out of the checkout, build it in place, return its directory."""
    if shutil.which("gcc") is None and shutil.which("cc") is None:
        pytest.skip("no C compiler")
    pytest.importorskip("Cython")
    src = tmp_path / example
    shutil.copytree(EXAMPLES / example, src)
    r = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=src, capture_output=True, check=False, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    return str(src)


def run(where: str, code: str) -> str:
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=where, capture_output=True, check=False, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


def test_header_and_pxd_are_installed():
    from pathlib import Path

    assert (Path(bbpe.get_include()) / "bbpe.h").exists()
    assert (Path(bbpe.__file__).parent / "codec.pxd").exists()
    assert (Path(bbpe.__file__).parent / "__init__.pxd").exists()


def test_cython_consumer_encodes_in_prange(tmp_path):
    where = build("cython_consumer", tmp_path)
    out = run(where, f"""
        import random, bbpe
        from cython_consumer import count_tokens
        tok = bbpe.Tokenizer.load({str(DATA / "golden" / "tang300_v1.bin")!r})
        lines = open({str(REPO / "data" / "tang300.txt")!r}, "rb").read().split(b"\\n")
        rng = random.Random(0)
        texts = lines + [bytes(rng.randrange(256) for _ in range(rng.randrange(60))) for _ in range(500)]
        for compat in (False, True):
            got = count_tokens(tok.model, texts, num_threads=2, bug_compat=compat)
            assert got == [len(tok.encode(t, bug_compat=compat)) for t in texts]
        print("ok", len(texts))
    """)
    assert out.startswith("ok")


def test_plain_c_consumer(tmp_path):
    where = build("c_consumer", tmp_path)
    out = run(where, f"""
        import random, bbpe, bbpe_c_demo
        tok = bbpe.Tokenizer.load({str(DATA / "golden" / "tang300_v800.bin")!r})
        rng = random.Random(1)
        for text in [b"", "床前明月光".encode(), b"<S>abc</S>"] + [rng.randbytes(rng.randrange(80)) for _ in range(300)]:
            ids = bbpe_c_demo.encode(tok.model, text)
            assert ids == tok.encode(text), text
            assert bbpe_c_demo.decode(tok.model, ids) == text
        try:
            bbpe_c_demo.encode(object(), b"x")
        except TypeError as err:
            assert "bbpe.codec.Model" in str(err)
        else:
            raise AssertionError("no TypeError")
        print("ok")
    """)
    assert out.startswith("ok")


def test_a_cython_consumer_checks_the_abi_it_was_built_for(tmp_path):
    """A consumer compiled against another ``BBPE_ABI_VERSION`` than the installed codec's
    refuses to import (``bbpe_check_abi``), instead of reading a struct laid out otherwise."""
    where = build("cython_consumer", tmp_path)
    assert run(where, "import cython_consumer; print('ok')").startswith("ok")
    # the same consumer, compiled against a codec.pxd that declares the next version
    from pathlib import Path

    other = tmp_path / "other"
    package = other / "bbpe"
    package.mkdir(parents=True)
    installed = Path(bbpe.__file__).parent
    (package / "__init__.pxd").write_text("")
    pxd = (installed / "codec.pxd").read_text()
    assert "BBPE_ABI_VERSION = 2" in pxd
    (package / "codec.pxd").write_text(pxd.replace("BBPE_ABI_VERSION = 2", "BBPE_ABI_VERSION = 3"))
    src = tmp_path / "consumer2"
    shutil.copytree(EXAMPLES / "cython_consumer", src)
    setup = (src / "setup.py").read_text()
    assert "compiler_directives=" in setup
    (src / "setup.py").write_text(setup.replace("compiler_directives=", f"include_path=[{str(other)!r}], "
                                                                       "compiler_directives="))
    r = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=src, capture_output=True,
                       check=False, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    r = subprocess.run([sys.executable, "-c", "import cython_consumer"], cwd=src, capture_output=True, check=False,
                       text=True)
    assert r.returncode != 0 and "ABI version 2" in r.stderr and "version 3" in r.stderr, r.stderr[-2000:]

