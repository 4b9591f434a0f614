"""What the numba kernels of every model share: the decorators and LLVM intrinsics they are
compiled with (``support``), their build ahead of time into an extension module
(``build``, which setup.py runs) and their loading at run time, from that extension or else
through numba's JIT with a cache keyed on their sources (``loading``).

A model's kernels live in a package of their own (``bbpe.xbbpe.kernels``,
``bbpe.pairmerge.kernels``) with an ``aot.py`` that says what it exports: the extension's
name, its kernel modules and each exported kernel's signature. Nothing here imports numba
until a kernel is compiled or loaded."""
