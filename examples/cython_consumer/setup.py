"""A tiny package that cimports bbpe.codec and encodes in a prange (OpenMP).

    pip install --no-build-isolation ./examples/cython_consumer    # with bbpe installed
"""

from Cython.Build import cythonize
from setuptools import Extension, setup

setup(
    name="cython-consumer",
    version="0.1",
    packages=["cython_consumer"],
    ext_modules=cythonize(
        [Extension("cython_consumer._batch", ["cython_consumer/_batch.pyx"],
                   extra_compile_args=["-fopenmp"], extra_link_args=["-fopenmp"])],
        compiler_directives={"language_level": 3, "boundscheck": False, "wraparound": False},
    ),
)
