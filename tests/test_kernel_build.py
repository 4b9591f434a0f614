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


def test_bpe_training_runs_compiled_kernels():
    """The pair-merge engine's kernels are compiled at build time too: training a BPE loads
    neither numba nor LLVM."""
    from bbpe.pairmerge import kernels as _compiled

    assert _compiled.AHEAD_OF_TIME, "the kernels were not compiled at build time (see the build log)"
    code = (f"import sys, bbpe; bbpe.BPE.train({str(TANG300)!r}, vocab_size=600, show_progress=False); "
            "print('numba' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=TANG300.parent)
    assert out.stdout.strip() == "False"


@pytest.mark.slow  # an ahead-of-time build: a minute
def test_ahead_of_time_build_leaves_no_jit_cache(tmp_path):
    """``bbpe.kernels.build`` compiles a kernel package from a source tree alone (no bbpe
    installed from it, no Cython extension), writes no numba cache next to the sources
    (entries made there would be loaded by the JIT fallback) and puts numba's cache
    directory back."""
    import importlib.util
    import shutil

    import numpy as np

    from bbpe import kernels as shared
    from bbpe.pairmerge import kernels

    root = tmp_path / "src" / "bbpe"
    for package, target in ((shared, root / "kernels"), (kernels, root / "pairmerge" / "kernels")):
        target.mkdir(parents=True)
        for source in Path(package.__file__).parent.glob("*.py"):
            shutil.copy(source, target / source.name)
    code = ("import importlib.util, sys; from numba.core import config; before = config.CACHE_DIR; "
            "spec = importlib.util.spec_from_file_location('build', sys.argv[1]); "
            "build = importlib.util.module_from_spec(spec); spec.loader.exec_module(build); "
            "print(build.build('bbpe.pairmerge.kernels', sys.argv[2], sys.argv[3])); "
            "print(config.CACHE_DIR == before, 'bbpe' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(root / "kernels" / "build.py"), str(root), str(tmp_path)],
                         capture_output=True, text=True, check=True, cwd=tmp_path)
    *_, path, flags = out.stdout.strip().splitlines()
    assert flags == "True False", "the build left numba's cache directory or its stand-in modules behind"
    built = Path(path)
    assert built.exists()
    assert not list(root.rglob("*.nbi")) and not list(root.rglob("*.nbc"))
    spec = importlib.util.spec_from_file_location("_aot_kernels", built)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    args = lambda: (np.array([0, 1, 0, 1, 2, 0, 1], dtype=np.int32), np.array([0, 4, 7], dtype=np.int64),
                    np.array([3, 2], dtype=np.int64), np.array([97, 98, 99], dtype=np.int32),
                    np.array([0, 1, 2, 3], dtype=np.int64), 10, 0, 1 << 62, 0, np.zeros(2, dtype=np.int64))
    ours, theirs = module.train_merges(*args()), kernels.jit_kernels().train_merges(*args())
    assert ours[0].tolist() == theirs[0].tolist() and ours[1] == theirs[1] > 3


@pytest.mark.parametrize("package", ["bbpe.xbbpe.kernels", "bbpe.pairmerge.kernels"])
def test_compiled_kernels_are_the_exported_ones(package):
    """The build compiles exactly the kernels that carry a signature (``@exported``)."""
    import importlib

    kernels = importlib.import_module(package)
    assert kernels.AHEAD_OF_TIME, "the kernels were not compiled at build time (see the build log)"
    marked = {name: f for name, f in vars(kernels.jit_kernels()).items() if hasattr(f, "aot_signature")}
    compiled = {name for name in dir(kernels.kernels) if not name.startswith("__")}
    assert compiled == set(marked)
