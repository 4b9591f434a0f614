"""The kernels as the build makes them: compiled ahead of time (training loads neither numba
nor LLVM), the JIT fallback agreeing with them, and a build that leaves no JIT cache."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import TANG300
from random_corpora import random_corpus

from bbpe.xbbpe.train import train_vocabulary


def test_training_runs_compiled_kernels():
    """The build compiles the kernels ahead of time (setup.py, bbpe/xbbpe/kernels/aot.py):
    training loads neither numba nor LLVM."""
    from bbpe.xbbpe import kernels as _compiled

    assert _compiled.AHEAD_OF_TIME, "the kernels were not compiled at build time (see the build log)"
    code = f"import sys, bbpe; bbpe.Tokenizer.train({str(TANG300)!r}, 2000); print('numba' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=TANG300.parent)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("seed", range(20))
def test_jit_kernels_agree_with_compiled_ones(seed, monkeypatch):
    """The fallback (numba's JIT, BBPE_JIT=1) gives what the compiled kernels give."""
    from bbpe.xbbpe import kernels

    rng = random.Random(30_000 + seed)
    data = random_corpus(rng, invalid=seed % 2 == 0)
    vocab_size = rng.choice([0, 300, 1000])
    compiled = train_vocabulary([data], vocab_size)
    for name, function in vars(kernels.jit_kernels()).items():  # what every driver calls through
        monkeypatch.setattr(kernels.kernels, name, function, raising=False)
    assert train_vocabulary([data], vocab_size) == compiled


@pytest.mark.slow  # a whole ahead-of-time build: over a minute
def test_ahead_of_time_build_leaves_no_jit_cache(tmp_path):
    """``aot.build`` compiles from the kernel package's sources alone and writes no numba
    cache next to them (entries naming its stand-in package would break the JIT fallback
    there)."""
    import importlib.util
    import shutil

    import numpy as np

    from bbpe.xbbpe import kernels

    src = tmp_path / "src"
    src.mkdir()
    for source in Path(kernels.__file__).parent.glob("*.py"):
        shutil.copy(source, src / source.name)
    code = ("import importlib.util, sys; from numba.core import config; before = config.CACHE_DIR; "
            "spec = importlib.util.spec_from_file_location('aot', sys.argv[1]); "
            "aot = importlib.util.module_from_spec(spec); spec.loader.exec_module(aot); "
            "print(aot.build(sys.argv[2], sys.argv[3])); print(config.CACHE_DIR == before)")
    out = subprocess.run([sys.executable, "-c", code, str(src / "aot.py"), str(tmp_path), str(src)],
                         capture_output=True, text=True, check=True)
    *_, path, cache_dir_restored = out.stdout.strip().splitlines()
    assert cache_dir_restored == "True", "the build left numba's cache directory pointing at its temporary one"
    built = Path(path)
    assert built.exists()
    assert not list(src.rglob("*.nbi")) and not list(src.rglob("*.nbc"))
    spec = importlib.util.spec_from_file_location("_aot_kernels", built)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    keys = np.zeros((2, 24), dtype=np.uint8)
    keys[0, :3] = list("天".encode())
    keys[1, :2] = [97, 98]
    lens = np.array([3, 2], dtype=np.int64)
    assert module.blog_hashes(keys, lens).tolist() == kernels.jit_kernels().blog_hashes(keys, lens).tolist()
