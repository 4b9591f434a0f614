# cython: language_level=3
# The C-level contract of bbpe's codec: other Cython modules `cimport bbpe.codec`.
#
# A `bbpe_model` is a read-only view of one vocabulary; it is owned by a `Model` object
# (keep the object alive while you use the view). The functions below never touch Python
# objects and never allocate, so they can run with the GIL released and from many threads
# on one model at once.

from libc.stdint cimport int64_t, uint8_t, uint64_t

cdef enum:
    BBPE_KEY_BYTES = 24            # sizeof(WordIdKey::idKey)
    BBPE_BUG_COMPAT = 1            # flag: reproduce the reference's lossy encoding (Q14, Q20.1)
    BBPE_ERR_CAPACITY = -1         # the output buffer is too small
    BBPE_ERR_UNKNOWN_ID = -2       # decode: an id that is not in the vocabulary

ctypedef struct bbpe_model:
    int64_t n_keys                 # ids are 0 .. n_keys-1
    const uint8_t* keys            # n_keys * 24 bytes: the key of id i at keys + 24*i
    const uint8_t* lens            # n_keys key lengths
    int64_t byte_ids[256]          # id of each one-byte key (byte fallback, Q15)
    const int64_t* table           # open-addressing index: id, or -1 for an empty slot
    uint64_t table_mask            # table size - 1 (a power of two)

# Encode src[0:n] (UTF-8 bytes) into dst; returns the number of ids written, or
# BBPE_ERR_CAPACITY. n + 3 * (number of '<' * 2 + 1) ids always suffice; n suffice without
# BBPE_BUG_COMPAT.
cdef int64_t bbpe_encode_into(const bbpe_model* model, const uint8_t* src, size_t n,
                              int64_t* dst, size_t cap, int flags) noexcept nogil

# Number of bytes the ids decode to, or BBPE_ERR_UNKNOWN_ID with *bad set to the position
# of the first unknown id.
cdef int64_t bbpe_decoded_size(const bbpe_model* model, const int64_t* ids, size_t n,
                               size_t* bad) noexcept nogil

# Decode ids into dst; returns the number of bytes written, BBPE_ERR_UNKNOWN_ID (with *bad
# set) or BBPE_ERR_CAPACITY.
cdef int64_t bbpe_decode_into(const bbpe_model* model, const int64_t* ids, size_t n,
                              uint8_t* dst, size_t cap, size_t* bad) noexcept nogil

# Id of a key (any bytes, n <= 24), or -1.
cdef int64_t bbpe_lookup(const bbpe_model* model, const uint8_t* key, size_t n) noexcept nogil


cdef class Model:
    cdef bbpe_model view
    cdef bytes _keys
    cdef bytes _lens
    cdef int64_t* _table
