# cython: language_level=3
# The C-level contract of bbpe's XBBPE codec: other Cython modules `cimport bbpe.codec`.
#
# A `bbpe_model` is a read-only view of one vocabulary, owned by a `Model` object: keep the
# object alive while you use the view (`&model.view`). The functions below never touch
# Python objects and never allocate, so they run without the GIL, from many threads on one
# model at once. Plain C extensions get the same functions through the capsule declared in
# bbpe/bbpe.h (`bbpe.get_include()`).

from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t

from bbpe.common._fast cimport CompiledModel

cdef enum:
    # The layout of the structs, of the class Model (with its base, bbpe/common/_fast.pxd's
    # CompiledModel) and the functions' signatures below, as this file declares them:
    # compiled into a consumer, compared with the installed codec's by bbpe_check_abi.
    # Bumped (with BBPE_CAPI_VERSION in bbpe.h) on any change to them. 2: Model derives
    # from CompiledModel (its methods' table changed).
    BBPE_ABI_VERSION = 2
    BBPE_KEY_BYTES = 24            # sizeof(WordIdKey::idKey)
    BBPE_BUG_COMPAT = 1            # flag: reproduce the reference's lossy encoding (Q14, Q20.1)
    BBPE_ERR_CAPACITY = -1         # the output buffer is too small
    BBPE_ERR_UNKNOWN_ID = -2       # decode: an id that is not in the vocabulary

ctypedef struct bbpe_model:
    int64_t n_keys                 # ids are 0 .. n_keys-1
    const uint8_t* keys            # n_keys * 24 bytes: the key of id i at keys + 24*i
    const uint8_t* lens            # n_keys key lengths
    int64_t byte_ids[256]          # id of each one-byte key (byte fallback, Q15)
    # The encoder's trie: (node, next char) -> node. A node is the slot of its own entry,
    # so an entry is just its key, parent node << 35 | char length << 32 | char bytes
    # (0 = empty; the parent of a first char is ROOT). The greedy match (Q14) only grows
    # through keys, so at most one probe per char, and none where ``child_bits`` says
    # that no key extends the match by that char.
    const uint64_t* trans          # open addressing, load <= 1/2
    uint64_t trans_mask            # table size - 1 (a power of two)
    int trans_shift                # 64 - log2(table size)
    # the id of the key ending at each node, or -1 (a first char that is no key but starts one)
    const int32_t* slot_id
    int32_t root_byte[256]         # the node of each 1-byte char at the start, or -1
    # The decoder's table: the keys end to end (dec_bytes, 24 bytes of slack at the end),
    # id i at dec_bytes[dec_off[i]:dec_off[i+1]]: a third of the 24-byte keys' footprint
    const uint32_t* dec_off
    const uint8_t* dec_bytes
    # Any key by its bytes (lookup): open addressing on FNV-1a, id or -1
    const int64_t* table
    uint64_t table_mask
    # Per trie node, one bit per child char's bucket (32 buckets by the char's code): a
    # step whose bit is clear misses without a probe, and most steps of a match miss; a
    # node without children has none set. (Last, so that the fields before it stay where
    # they were.)
    const uint32_t* child_bits

ctypedef struct bbpe_stream:       # incremental decoding: bytes of an unfinished UTF-8 char
    uint8_t pending[8]
    int npending

# Encode src[0:n] (UTF-8 bytes) into dst; returns the number of ids written, or
# BBPE_ERR_CAPACITY. n ids always suffice without BBPE_BUG_COMPAT; with it,
# n + 3 * (2 * (number of '<') + 1).
cdef int64_t bbpe_encode_into(const bbpe_model* model, const uint8_t* src, size_t n,
                              int64_t* dst, size_t cap, int flags) noexcept nogil

# The same into 32-bit ids.
cdef int64_t bbpe_encode_into32(const bbpe_model* model, const uint8_t* src, size_t n,
                                int32_t* dst, size_t cap, int flags) noexcept nogil

# Number of bytes the ids decode to, or BBPE_ERR_UNKNOWN_ID with *bad set to the position
# of the first unknown id.
cdef int64_t bbpe_decoded_size(const bbpe_model* model, const int64_t* ids, size_t n,
                               size_t* bad) noexcept nogil

# Decode ids into dst; returns the number of bytes written, BBPE_ERR_UNKNOWN_ID (with *bad
# set) or BBPE_ERR_CAPACITY.
cdef int64_t bbpe_decode_into(const bbpe_model* model, const int64_t* ids, size_t n,
                              uint8_t* dst, size_t cap, size_t* bad) noexcept nogil

# Streaming decode: append the bytes of one id and write to dst only whole UTF-8 chars (and
# bytes that can never start one); returns the bytes written, BBPE_ERR_UNKNOWN_ID or
# BBPE_ERR_CAPACITY (cap >= 32 always suffices). bbpe_stream_flush writes what is left.
cdef int64_t bbpe_decode_stream(const bbpe_model* model, bbpe_stream* state, int64_t token,
                                uint8_t* dst, size_t cap) noexcept nogil
cdef int64_t bbpe_stream_flush(bbpe_stream* state, uint8_t* dst, size_t cap) noexcept nogil

# Id of a key (any bytes, n <= 24), or -1.
cdef int64_t bbpe_lookup(const bbpe_model* model, const uint8_t* key, size_t n) noexcept nogil

# The BBPE_ABI_VERSION the installed codec was compiled with.
cdef int bbpe_abi_version() noexcept nogil


# Call once, at your module's import, before any of the above: raises ImportError if the
# installed bbpe's codec has another ABI than the codec.pxd this module was compiled with
# (rebuild your module against the installed bbpe then).
cdef inline int bbpe_check_abi() except -1:
    cdef int installed = bbpe_abi_version()
    if installed != BBPE_ABI_VERSION:
        raise ImportError(f"bbpe's codec has ABI version {installed}; this module was compiled against "
                          f"version {BBPE_ABI_VERSION}: rebuild it against the installed bbpe")
    return 0


# XBBPE's compiled model; TokenizerBase.encode calls its _encode_list through the base.
cdef class Model(CompiledModel):
    cdef bbpe_model view
    cdef bytes _keys
    cdef bytes _lens
    cdef int64_t* _table
    cdef uint64_t* _trans
    cdef int32_t* _slot_id
    cdef uint32_t* _child_bits
    cdef uint32_t* _dec_off
    cdef uint8_t* _dec_bytes
    cdef tuple _ints               # one shared Python int per id: lists are built by incref

    cdef _build_transitions(self)
    cdef _build_decoder(self)
    cdef list _as_list(self, const int32_t* ids, int64_t count)
    cdef list _encode_list(self, object data, int flags)
    cdef int64_t _encode_many(self, list texts, int flags, int32_t** ids_out, int64_t* offs) except -2
    cdef object _decode(self, object ids, const char* errors)
