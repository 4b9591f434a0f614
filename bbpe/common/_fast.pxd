# cython: language_level=3
# The C-level contract between bbpe's facade and a compiled model: every model's codec
# (XBBPE's bbpe.codec.Model, BPE's) derives its Cython class from CompiledModel, and
# TokenizerBase.encode (in _fast.pyx) reaches any of them through one vtable call, from
# Cython to C without a Python frame. bbpe/codec.pxd cimports it, so it ships with the
# package; its layout is part of what codec.pxd's BBPE_ABI_VERSION versions.

cdef enum:
    # The one flag TokenizerBase.encode passes: a tokenizer's ``bug_compat`` (XBBPE's
    # BBPE_BUG_COMPAT in codec.pxd, the same bit); a model without such a mode ignores it.
    MODEL_BUG_COMPAT = 1


cdef class CompiledModel:
    # A text (str, bytes or a bytes-like object) -> its ids as a new list of ints; flags
    # are the model's own (MODEL_BUG_COMPAT). The base raises TypeError.
    cdef list _encode_list(self, object data, int flags)
