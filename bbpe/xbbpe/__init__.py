"""The XBBPE port: the C++ byte-level BPE of the seed, exact.

``pipeline`` trains (corpus in, model and ``.bin`` out) through ``train`` (``XBBPE::Train``'s
loop), ``engine`` (the incremental engine's stages, in Python) and ``kernels`` (their numba
kernels, by stage); ``vocab`` is the vocabulary's rules, ``singles`` and ``map_order`` the
C++'s orders (Q7, Q17), ``encodings`` the stored training encodings (Q18) and ``binfile``
the ``.bin`` format. Its codec is ``bbpe.codec`` (Cython), whose path C and Cython code
depend on.
"""
