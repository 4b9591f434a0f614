# cython: language_level=3
# The C-level contract between bbpe's facade and a compiled model: every model's codec
# (XBBPE's bbpe.codec.Model, BPE's) derives its Cython class from CompiledModel, and
# TokenizerBase.encode (in _fast.pyx) reaches any of them through one vtable call, from
# Cython to C without a Python frame. bbpe/codec.pxd cimports it, so it ships with the
# package; its layout is part of what codec.pxd's BBPE_ABI_VERSION versions.

from libc.stdint cimport int64_t, uint8_t

cdef enum:
    # The one flag TokenizerBase.encode passes: a tokenizer's ``bug_compat`` (XBBPE's
    # BBPE_BUG_COMPAT in codec.pxd, the same bit); a model without such a mode ignores it.
    MODEL_BUG_COMPAT = 1


# The length of the longest prefix of s[0:n] that is whole valid UTF-8 (Python's strict
# decoder's); *invalid: whether what follows is invalid rather than a char the end cuts.
# Every codec checks bytes input with it.
cdef Py_ssize_t _utf8_valid_prefix(const uint8_t* s, Py_ssize_t n, bint* invalid) noexcept nogil


cdef class CompiledModel:
    # A text (str, bytes or a bytes-like object) -> its ids as a new list of ints; flags
    # are the model's own (MODEL_BUG_COMPAT). The base raises TypeError.
    cdef list _encode_list(self, object data, int flags)


# Reading the ids a codec decodes: a list's, checked, into a malloc'd array (*out, the
# caller frees it); any other ids as a C-contiguous int64 numpy array, to be checked.
cdef Py_ssize_t _list_ids(list ids, int64_t n_keys, int64_t** out) except -1
cdef object _id_array(object ids, int64_t n_keys)
# a list item that is not exactly an int as an id (bool, numpy integer...), or TypeError
cdef int64_t _as_id(object item, Py_ssize_t pos, int64_t n_keys) except? -2
