"""What XBBPE's kernel package is when the build compiles it ahead of time
(``bbpe.kernels.build``, which setup.py runs): the extension's name and the kernel modules
whose functions the drivers call (``kernels`` takes them from here too). Each exported
kernel's signature is beside it (``@exported``): the arrays the Python side
(``bbpe.xbbpe.engine``, ``map_order``) passes, all C-contiguous; the scan's input buffer is
read-only.
"""

from __future__ import annotations

MODULE = "_aot_kernels"
# the kernel modules whose functions the drivers call (``kernels`` takes them from here too)
MODULES = ("keys", "text", "scan", "layout", "first_pass", "linking", "key_states", "heap", "lists", "pair_keys",
           "handover", "merges", "map_order")
