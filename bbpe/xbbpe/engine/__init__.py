"""The scalable training engine: the arrays the kernels work on, and how they grow.

Three stages, each a few numba kernels (``bbpe.xbbpe.kernels``): **scan** cuts the corpus into
lists and stores each distinct list once, as a type with its multiplicity and last
occurrence, numbered in first-occurrence order (a large corpus in consecutive parts, a
thread and a type store each, which the kernels allow by releasing the GIL); **first
pass** lays the types out as slots, counts the pairs, runs the C++ first pass (Q6) on
them and links the surviving pairs into occurrence lists (the first pass on a thread of
its own, a piece ahead of the linking); **merges** applies one merge after the other,
updating counts only around the merged positions, with a lazy heap choosing the winner
(Q5).
Growth: what is touched all over as it fills (the key index, the pair table, the heap)
grows inside the kernels; the rest is reserved here, as ``np.zeros`` whose pages cost no
memory until used, and a kernel that might outgrow it stops and reports, so that the
arrays grow here before it is called again. The kernels come from ``bbpe.xbbpe.kernels`` (compiled
ahead of time, or numba's JIT).

Trade-off: exact C++ results with memory proportional to the *distinct* lists: a slot
costs 16 bytes (20 during the merges), a key about 50 (docs/training.md has the measured
figures).

One module per stage: ``keytable`` (the key table and the per-key arrays), ``scanning``,
``first_pass`` (layout, count, first pass, linking) and ``merges``; ``tuning`` holds every
size and threshold they use, as one object the caller passes (``Tuning``).
"""

from ..kernels import kernels as K  # the one object every stage calls its kernels through
from .first_pass import FirstPass
from .keytable import KeyTable, key_states
from .merges import Merger
from .scanning import ScannedTypes, TypeStore, scan
from .tuning import DEFAULT, Tuning

__all__ = ["DEFAULT", "FirstPass", "K", "KeyTable", "Merger", "ScannedTypes", "Tuning", "TypeStore", "key_states",
           "scan"]
