# cython: language_level=3
# The C-level contract between bbpe's facade and a compiled model: every model's codec
# (XBBPE's bbpe.codec.Model, BPE's) derives its Cython class from CompiledModel, and
# TokenizerBase.encode (in _fast.pyx) reaches any of them through one vtable call, from
# Cython to C without a Python frame. bbpe/codec.pxd cimports it, so it ships with the
# package; its layout is part of what codec.pxd's BBPE_ABI_VERSION versions.

from libc.stdint cimport int32_t, int64_t, uint8_t

from bbpe.common._cpython cimport _text

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


cdef class BatchModel(CompiledModel):
    # A compiled model that encodes one text without the GIL (BPE's, WordPiece's): its batch
    # calls, encode_many and encode_lists, are this class's, over the hooks below.
    cdef tuple _ints               # one shared Python int per id: lists are built by incref

    cdef int64_t _encode_many(self, list texts, int32_t** ids_out, int64_t* offs) except -2
    # a text as the encoder takes it: exactly a str or bytes (TypeError naming what it is)
    cdef object _text_of(self, object data)
    # the hooks: the number of ids; the texts of texts[start:stop] as the model takes them;
    # a text's scratch memory, made and freed; at most how many ids a text gives; a text's
    # ids into dst (its count, or an error code below 0) without the GIL, or with it when
    # _with_gil (each text then through _encode_gil, whose errors are raised); an error code
    # raised as the exception it stands for, ``where`` before its message
    cdef int64_t _n_ids(self) noexcept nogil
    cdef list _batch_items(self, list texts, Py_ssize_t start, object stop)
    cdef void* _work_new(self) except NULL
    cdef void _work_release(self, void* work) noexcept
    cdef size_t _bound(self, const _text* t) noexcept nogil
    cdef int64_t _encode_nogil(self, const _text* t, bint is_bytes, int32_t* dst, void* work) noexcept nogil
    cdef bint _with_gil(self)
    cdef int64_t _encode_gil(self, object data, int32_t* dst, void* work) except -2
    cdef int _raise_code(self, int64_t code, void* work, str where) except -1


# Reading the ids a codec decodes: a list's, checked, into a malloc'd array (*out, the
# caller frees it); any other ids as a C-contiguous int64 numpy array, to be checked.
cdef Py_ssize_t _list_ids(list ids, int64_t n_keys, int64_t** out) except -1
cdef object _id_array(object ids, int64_t n_keys)
# a list item that is not exactly an int as an id (bool, numpy integer...), or TypeError
cdef int64_t _as_id(object item, Py_ssize_t pos, int64_t n_keys) except? -2
