"""What the pair-merge engine's kernel package is when the build compiles it ahead of time
(``bbpe.kernels.build``, which setup.py runs): the extension's name and the kernel modules.
Each exported kernel's signature is beside it (``@exported``; all arrays C-contiguous)."""

from __future__ import annotations

MODULE = "_aot_kernels"
MODULES = ("arrays", "pair_table", "queue", "tokens", "words", "merge_loop", "likelihood", "counting")
