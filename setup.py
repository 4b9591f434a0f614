"""Build bbpe: the Cython codec, and data/ shipped inside the package as bbpe/data.

Compiler directives are set here, once. BBPE_DEBUG=1 turns bounds and initialisation
checks back on for a debug build (``BBPE_DEBUG=1 pip install -e .``).
"""

import os

from Cython.Build import cythonize
from setuptools import Extension, setup

DEBUG = os.environ.get("BBPE_DEBUG", "") not in ("", "0")

directives = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "cdivision": not DEBUG,
    "embedsignature": True,
}

extensions = [
    Extension(
        "bbpe.codec",
        ["bbpe/codec.pyx"],
        extra_compile_args=["-O0", "-g"] if DEBUG else ["-O3"],
    )
]

setup(
    packages=["bbpe", "bbpe.data"],
    package_dir={"bbpe": "bbpe", "bbpe.data": "data"},
    package_data={
        "bbpe": ["*.pxd", "*.pyi", "py.typed", "_umap_buckets.txt", "include/*.h"],
        "bbpe.data": ["*.txt", "*.md"],
    },
    include_package_data=False,  # only the package_data above: not the generated codec.c
    ext_modules=cythonize(extensions, compiler_directives=directives),
    zip_safe=False,
)
