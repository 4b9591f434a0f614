"""Build bbpe: the Cython modules (bbpe.common._fast and XBBPE's codec, bbpe.codec), the
trainer's kernels compiled ahead of time, and data/ shipped inside the package as bbpe/data.

Compiler directives are set here, once. BBPE_DEBUG=1 turns bounds and initialisation
checks back on for a debug build (``BBPE_DEBUG=1 pip install -e .``). The kernels are
compiled by numba's pycc (``bbpe/kernels/build.py``, a few minutes); BBPE_NO_AOT=1 skips that, and a
failure only warns: training then compiles them with numba's JIT on first use.
"""

import importlib.util
import os
import sys

from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

DEBUG = os.environ.get("BBPE_DEBUG", "") not in ("", "0")

directives = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "cdivision": not DEBUG,
    "embedsignature": True,
}

compile_args = ["-O0", "-g"] if DEBUG else ["-O3"]
extensions = [
    # the model-free hot loops and the base of every compiled model (before the codecs, which cimport it)
    Extension("bbpe.common._fast", ["bbpe/common/_fast.pyx"], extra_compile_args=compile_args),
    # XBBPE's codec
    Extension("bbpe.codec", ["bbpe/codec.pyx"], extra_compile_args=compile_args),
    # byte-level BPE: the pre-tokenizers (their Unicode table, unicode_classes.h, beside them) and the merges
    Extension("bbpe.bpe._pretokenize", ["bbpe/bpe/_pretokenize.pyx"], extra_compile_args=compile_args),
    Extension("bbpe.bpe._codec", ["bbpe/bpe/_codec.pyx"], extra_compile_args=compile_args),
    # WordPiece: BERT's normalizer (its Unicode tables, bert_tables.h, beside it), pre-tokenizer and encoder
    Extension("bbpe.wordpiece._codec", ["bbpe/wordpiece/_codec.pyx"], extra_compile_args=compile_args),
]



# the numba kernel packages compiled ahead of time, each into the extension its aot.py names
KERNEL_PACKAGES = ["bbpe.xbbpe.kernels", "bbpe.pairmerge.kernels"]


class build_ext_and_kernels(build_ext):
    def run(self):
        super().run()
        if os.environ.get("BBPE_NO_AOT", "") not in ("", "0"):
            return
        here = os.path.dirname(os.path.abspath(__file__))
        spec = importlib.util.spec_from_file_location("_bbpe_kernel_build", os.path.join(here, "bbpe", "kernels", "build.py"))
        builder = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(builder)
        for package in KERNEL_PACKAGES:
            relative = os.path.join(*package.split("."))
            output_dir = os.path.join(here, relative) if self.inplace else os.path.join(os.path.abspath(self.build_lib), relative)
            try:
                path = builder.build(package, os.path.join(here, "bbpe"), output_dir)
                print(f"bbpe: compiled {package} ahead of time: {path}")
            except Exception as err:  # noqa: BLE001 - any failure leaves the JIT path, which works
                print(f"bbpe: WARNING: could not compile {package} ahead of time ({err!r}); "
                      "training will compile them with numba's JIT on first use", file=sys.stderr)


setup(
    cmdclass={"build_ext": build_ext_and_kernels},
    packages=["bbpe", "bbpe.bpe", "bbpe.common", "bbpe.xbbpe", "bbpe.xbbpe.engine", "bbpe.xbbpe.kernels",
              "bbpe.kernels", "bbpe.pairmerge", "bbpe.pairmerge.kernels", "bbpe.wordpiece", "bbpe.data"],
    package_dir={"bbpe": "bbpe", "bbpe.data": "data"},
    package_data={
        "bbpe": ["*.pxd", "*.pyi", "py.typed", "include/*.h"],
        "bbpe.common": ["*.pxd", "*.pyi"],  # codec.pxd cimports _fast.pxd
        "bbpe.bpe": ["*.pxd", "*.pyi", "*.h"],
        "bbpe.wordpiece": ["*.pyi", "*.h"],
        "bbpe.xbbpe": ["map_order_buckets.txt"],
        "bbpe.data": ["*.txt", "*.md"],
    },
    include_package_data=False,  # only the package_data above: not the generated codec.c
    ext_modules=cythonize(extensions, compiler_directives=directives),
    zip_safe=False,
)
