# cython: language_level=3
# The C-level contract of BPE's codec (bbpe/bpe/_codec.pyx): BPE by merge ranks, over bytes
# (byte-level BPE) or chars.
# Other Cython modules `cimport bbpe.bpe._codec` to reach a BpeCodec's compiled model, as
# they reach XBBPE's through bbpe/codec.pxd. A `bpe_model` is a read-only view owned by its
# BpeCodec: keep the object alive while you use `&codec.m`. Nothing here is in the C API
# capsule of bbpe.h (that one is XBBPE's).
#
# Inside the codec a token is its trie slot, not its id: the walk that finds a token then
# holds everything the search needs of it (bpe_node), with no second lookup by id.

from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t

from bbpe.common._cpython cimport _text
from bbpe.common._fast cimport BatchModel

cdef enum:
    BPE_ERR_CAPACITY = -1          # the output buffer is too small
    BPE_ERR_UNKNOWN_ID = -2        # decode: an id that is not in the vocabulary
    BPE_ERR_INTERNAL = -3          # the merge search lost its way (cannot happen: a bug)
    BPE_ERR_MEMORY = -4            # malloc failed
    BPE_ERR_UTF8 = -5              # bytes that are not UTF-8 (the offset: the work's `bad`)
    PIECES_WHOLE = -1              # no pre-tokenizer: the whole text is one piece

ctypedef struct bpe_node:          # a slot of the double-array trie of the tokens: one cache line
    int32_t base                   # its children are at base + byte
    # check: its parent's slot << 1 | 1 where a token that merging makes ends (-1: a free slot; the root: -2)
    int32_t check
    int32_t id                     # the token whose bytes end here, or -1
    # rank: the rank of the merge that makes it when its bytes are merged alone; -1 a unit, -2
    # none (merging never makes it, or no token)
    int32_t rank
    int32_t left                   # the slots of that merge's two parts (a byte: itself)
    int32_t right
    uint64_t filter                # bit _pair_bit(right) of each right part it has a pair with
    # For the pair check's shortcut: the parts along its right edge (it, its right part, that
    # one's right part... down to a byte) and along its left edge. If no bit of ``right_sig``
    # (the _sig_bit of every right part that any part along its right edge has a pair with)
    # is in the next token's ``left_bits`` (the _sig_bit of each part along its left edge),
    # no merge can cross the boundary between the two: they are compatible.
    uint64_t right_sig[2]
    uint64_t left_bits[2]

ctypedef struct bpe_aux:           # per slot, what the search needs only now and then
    uint32_t pairs                 # its group of pairs (it on the left): start << 5 | log2(size)
    int32_t shorter                # the longest shorter prefix that merging makes (a slot), or -1
    int32_t length                 # its bytes
    int32_t unused

ctypedef struct bpe_pair:          # a slot of a left token's group of pairs
    int32_t right                  # the right token's slot; -1: an empty slot
    int32_t rank                   # lower merges first

ctypedef struct bpe_char:          # the walk from the root over one whole char, U+0080..U+FFFF
    int32_t slot                   # the slot after its bytes, or -1 (no token starts with them)
    int32_t base                   # that slot's base
    int32_t best                   # the slot of the longest token within its bytes that merging makes, or -1
    int32_t best_len               # that token's length

ctypedef struct bpe_model:
    int64_t n_keys                 # ids 0 .. n_keys-1
    const uint32_t* tok_off        # token i is tok_bytes[tok_off[i]:tok_off[i+1]]
    const uint8_t* tok_bytes
    const int32_t* slot_of         # the trie slot of each id
    const bpe_node* da             # the trie; slot 0 is the root
    const bpe_aux* aux
    const bpe_char* chars          # by code point (65536): the walks from the root over a 2- or 3-byte char
    const bpe_pair* pairs          # the groups of pairs (bpe_aux.pairs), open addressing
    const int32_t* pair_new        # the slot of what each pair makes
    int32_t byte_slot[256]         # the slot of each byte's token, or -1
    int pattern                    # a PIECES_* of bbpe/bpe/_pretokenize.pxd, or PIECES_WHOLE
    bint ignore_merges             # a piece that is a token is that token
    bint keep_gaps                 # PIECES_REGEX: the text between matches is a piece too
    bint backtrack                 # the backtracking search is exact for these tokens (else: the heap)
    bint all_bytes                 # every byte is a token (never with char_units)
    int32_t unk_slot               # HF: the token of a unit that is none (its slot), or -1 (dropped)
    bint fuse_unk                  # HF: consecutive unknown units give one unk token
    bint prefix_space              # HF ByteLevel's add_prefix_space: a space before a text not starting with one
    # the units merging starts from: bytes (byte-level BPE), or chars (HF's BPE without ByteLevel,
    # whose vocabulary holds chars: a char that is no token is unknown, as a byte is otherwise)
    bint char_units

ctypedef struct bpe_work:          # one thread's scratch memory (grown as needed, freed by its owner)
    uint8_t* utf8                  # a str's UTF-8
    size_t utf8_cap
    uint64_t* dead                 # the search: positions where no encoding can continue
    size_t dead_cap                # in words
    int32_t* sym                   # the heap: per symbol slot, prev, next
    size_t sym_cap
    uint64_t* heap                 # the heap: rank << 32 | position
    size_t heap_cap
    int64_t* spans                 # PIECES_REGEX: the pieces' byte offsets (start, end)
    size_t spans_cap
    int64_t bad                    # BPE_ERR_UTF8: where
    uint64_t dead_small[32]        # `dead` for pieces of up to 2047 bytes: no malloc


cdef class BpeCodec(BatchModel):
    cdef bpe_model m
    cdef bytes _tok_data           # the tokens end to end
    cdef uint32_t* _tok_off
    cdef int32_t* _slot_of
    cdef bpe_node* _da
    cdef int64_t _da_size
    cdef bpe_aux* _aux
    cdef bpe_char* _chars
    cdef bpe_pair* _pairs
    cdef int32_t* _pair_new
    cdef object _merges            # int32 array (m, 2), or None
    cdef object _pattern           # what the constructor got: an int, a regex object, or None
    cdef object _normalizer        # None, or "NFC"
    cdef object _regex             # PIECES_REGEX: the compiled pattern
    cdef bint _ignore_arg

    cdef _build_trie(self)
    cdef _build_pairs(self, merges)
    cdef _build_groups(self, const int32_t* quads, int64_t count)
    cdef _build_canon(self, const int32_t* quads, int64_t count)
    cdef _build_info(self)
    cdef _build_chars(self)
    cdef _build_sigs(self)
    cdef list _as_list(self, const int32_t* ids, int64_t count)
    cdef object _text_of(self, object data)
    cdef int64_t _spans(self, object data, bint from_utf8, const uint8_t* s, size_t n, bpe_work* w) except -1
    cdef list _encode_list(self, object data, int flags)
    cdef int64_t _encode_one(self, object data, int32_t* dst, bpe_work* w) except -2
    cdef object _decode(self, object ids, const char* errors)
    cdef int64_t _n_ids(self) noexcept nogil
    cdef list _batch_items(self, list texts, Py_ssize_t start, object stop)
    cdef void* _work_new(self) except NULL
    cdef void _work_release(self, void* work) noexcept
    cdef size_t _bound(self, const _text* t) noexcept nogil
    cdef int64_t _encode_nogil(self, const _text* t, bint is_bytes, int32_t* dst, void* work) noexcept nogil
    cdef bint _with_gil(self)
    cdef int64_t _encode_gil(self, object data, int32_t* dst, void* work) except -2
    cdef int _raise_code(self, int64_t code, void* work, str where) except -1
