# cython: language_level=3
"""XBBPE's codec: the encoder and decoder (QUIRKS Q13-Q16), in C with the GIL released.

This is the codec of the XBBPE model; each other model has its own (``bbpe.bpe._codec``),
and each derives its ``Model`` class from ``bbpe.common._fast.CompiledModel``. Its path,
its ``.pxd`` and its capsule are ABI and stay where they are. The model-free hot loops of
the user layer (``TokenizerBase``, ``frame_rows``, ``pad_rows``, ``longest_row``,
``plain_texts``, ``rows_holding``, ``utf8_valid_prefix``) are in ``bbpe.common._fast``,
re-exported here under their old names.

Why this module is long: its C level (the ``noexcept nogil`` functions of codec.pxd and
the capsule of bbpe.h) and the Python classes over it (``Model``, ``StreamDecoder``) share
the compiled trie and its inlined helpers, and Cython inlines only within one module: the
hot loops (a str read from its code units, a list filled from the encoder's buffer) would
pay a call per char or per id across two modules. The CPython helpers that it shares with
``bbpe.common._fast`` are ``cdef inline`` in ``bbpe/common/_cpython.pxd``, compiled into
both. The Python level stays thin; what is not hot (special tokens, batches, files) is in
Python modules, which call here only for the model's own loops: without the GIL the
``.bin`` walk (``walk_encodings``) and the training texts (``encode_lines_into``).

Encoding cuts the text at each ``<...>`` tag (Q13), cuts each piece into chars by lead
byte (Q2) and grows a match from every char while the match plus the next char is a key
(Q14); a single char that is not a key is written as its bytes (Q15). Since a match only
grows through keys, the vocabulary is compiled into a trie of transitions (node, next
char) -> node, and each char costs at most one probe of an integer-keyed table: no merge
ranks, no pre-split, no byte hashing. A str is read from its own code units.

By default nothing is lost: a match stops when the next char would make it 24 bytes or
more, and a char cut short at the end of a piece keeps just its bytes, so
``decode(encode(x)) == x`` for every byte string. ``BBPE_BUG_COMPAT`` reproduces the
reference instead: it swallows that next char (Q14) and pads a cut char with NUL (Q20.1).
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_CheckExact, PyBytes_FromStringAndSize
from cpython.exc cimport PyErr_SetString
from cpython.list cimport PyList_New
from cpython.object cimport PyObject
from cpython.pycapsule cimport PyCapsule_New
from cpython.ref cimport Py_INCREF
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memchr, memcmp, memcpy, memset

from bbpe.common._cpython cimport (
    PyList_CheckExact,
    PyList_GET_ITEM,
    PyList_GET_SIZE,
    PyListObject,
    PyObject_GC_Track,
    PyObject_GC_UnTrack,
    PyTupleObject,
    PyUnicode_CheckExact,
    PyUnicode_DecodeUTF8,
    _add_references,
    _as_text,
    _fill_lists,
    _long_check_exact,
    _long_value,
    _own_copy,
    _text,
)
from bbpe.common._fast cimport MODEL_BUG_COMPAT, _as_id

from bbpe.common import _fast as _shared
from bbpe.common._fast import _plain_text

from .errors import UnknownIdError

# the model-free loops that lived here, under their old names (``from bbpe.codec import ...``)
TokenizerBase = _shared.TokenizerBase
frame_rows = _shared.frame_rows
longest_row = _shared.longest_row
pad_rows = _shared.pad_rows
plain_texts = _shared.plain_texts
rows_holding = _shared.rows_holding
utf8_valid_prefix = _shared.utf8_valid_prefix

if <int>BBPE_BUG_COMPAT != <int>MODEL_BUG_COMPAT:  # TokenizerBase passes the one for its bug_compat
    raise ImportError("bbpe.codec: BBPE_BUG_COMPAT is not bbpe.common._fast's MODEL_BUG_COMPAT")

ctypedef fused id_t:
    int32_t
    int64_t

cdef uint64_t _FNV_OFFSET = 0xCBF29CE484222325ULL
cdef uint64_t _FNV_PRIME = 0x100000001B3ULL
cdef uint64_t _GOLDEN = 0x9E3779B97F4A7C15ULL
cdef uint64_t _ROOT = 0x0FFFFFFF  # the start node of every match
cdef int _CODE_LEN_SHIFT = 32
cdef size_t _NOGIL_BYTES = 4096  # below this, releasing the GIL costs more than the work
cdef int _NODE_SHIFT = 35
cdef size_t _ROUND_IDS = 1 << 18  # encode_lists: ids per round (1 MB, cache-sized)


# ----------------------------------------------------------------------------- chars

cdef inline size_t _char_len(uint8_t lead) noexcept nogil:
    # GetWordSize (Q2): the lead byte alone decides; 80-BF and F8-FF are 1-byte chars. Its
    # twin for numba is bbpe.xbbpe.kernels.text.char_len: a 256-entry table shared by both measured 5-7%
    # slower here (a load in the chain of char positions; these branches predict well)
    if lead < 0x80:
        return 1
    if (lead & 0xE0) == 0xC0:
        return 2
    if (lead & 0xF0) == 0xE0:
        return 3
    if (lead & 0xF8) == 0xF0:
        return 4
    return 1


cdef inline uint64_t _char_code(const uint8_t* s, size_t pos, size_t n, size_t full, bint compat,
                                size_t* klen) noexcept nogil:
    """The char at s[pos] as (length << 32 | bytes); its key length goes to *klen.

    A char cut short by the end of the piece keeps the bytes it has; Q20.1: the reference
    reads on past the end, which gives NUL (the string's terminator) for the first missing
    byte and undefined bytes after it, emulated as NUL (the code's bytes are zero there).
    """
    cdef size_t have = n - pos, k, length = full
    cdef uint64_t code = 0
    if have < full:
        length = full if compat else have
    else:
        have = full
    for k in range(have):
        code |= (<uint64_t>s[pos + k]) << (8 * k)
    klen[0] = length
    return code | (<uint64_t>length << _CODE_LEN_SHIFT)


# ----------------------------------------------------------------------------- str input
#
# A text is a _text (bbpe/common/_cpython.pxd): UTF-8 bytes, or a str's code units, which
# are encoded straight from the str (_next_char), without the GIL and without a UTF-8 copy.
# Lone surrogates count as three bytes (surrogatepass).

cdef inline size_t _text_cap(_text t, int flags) noexcept nogil:
    """Room for the ids of a text: at most one per UTF-8 byte, and with bug_compat up to 3
    NULs padding a cut char per piece (4 per byte is more than enough)."""
    cdef size_t utf8 = t.length if t.kind == 0 else t.length * (2 if t.kind == 1 else 3 if t.kind == 2 else 4)
    return utf8 * (4 if flags & BBPE_BUG_COMPAT else 1) + 16


cdef int64_t _encode_text(const bbpe_model* m, _text t, int32_t* dst, size_t cap, int flags) noexcept nogil:
    """Encode a text into dst (room: _text_cap), bytes or a str's code units."""
    if t.kind == 0:
        return _encode(m, <const uint8_t*>t.data, t.length, dst, cap, flags)
    if t.kind == 1:
        return _encode(m, <const char*>t.data, t.length, dst, cap, flags)
    if t.kind == 2:
        return _encode(m, <const uint16_t*>t.data, t.length, dst, cap, flags)
    return _encode(m, <const uint32_t*>t.data, t.length, dst, cap, flags)


# ----------------------------------------------------------------------------- lookups

cdef inline uint64_t _fnv(uint64_t h, const uint8_t* p, size_t n) noexcept nogil:
    cdef size_t i
    for i in range(n):
        h = (h ^ p[i]) * _FNV_PRIME
    return h


cdef int bbpe_abi_version() noexcept nogil:
    return BBPE_ABI_VERSION


cdef int64_t bbpe_lookup(const bbpe_model* model, const uint8_t* key, size_t n) noexcept nogil:
    if n > BBPE_KEY_BYTES:
        return -1
    cdef uint64_t h = _fnv(_FNV_OFFSET, key, n)
    cdef uint64_t i = ((h ^ (h >> 32)) * _GOLDEN >> 16) & model.table_mask
    cdef int64_t kid
    while True:
        kid = model.table[i]
        if kid < 0:
            return -1
        if model.lens[kid] == n and memcmp(model.keys + BBPE_KEY_BYTES * kid, key, n) == 0:
            return kid
        i = (i + 1) & model.table_mask


cdef inline int64_t _step(const bbpe_model* m, uint64_t node, uint64_t code) noexcept nogil:
    """The node after ``node`` when the match grows by the char ``code``, or -1."""
    cdef uint64_t key = (node << _NODE_SHIFT) | code
    cdef uint64_t i = (key * _GOLDEN) >> m.trans_shift
    cdef uint64_t k
    while True:
        k = m.trans[i]
        if k == key:
            return <int64_t>i
        if k == 0:
            return -1
        i = (i + 1) & m.trans_mask


cdef inline uint32_t _child_bit(uint64_t code) noexcept nogil:
    """The bit of a child char in its parent's ``child_bits``."""
    return (<uint32_t>1) << ((code * _GOLDEN) >> 59)


cdef inline int64_t _start(const bbpe_model* m, uint64_t code) noexcept nogil:
    """The node of a match that starts with the char ``code``, or -1."""
    if (code >> _CODE_LEN_SHIFT) == 1:
        return m.root_byte[code & 0xFF]  # ASCII and stray bytes: no probe
    return _step(m, _ROOT, code)


# ----------------------------------------------------------------------------- encoding

ctypedef fused unit_t:
    uint8_t   # UTF-8 bytes
    char      # a str's Latin-1 code units (char: a C type apart from the UTF-8 bytes)
    uint16_t  # a str's UCS-2 code units
    uint32_t  # a str's UCS-4 code units


cdef inline uint64_t _next_char(const unit_t* s, size_t pos, size_t n, bint compat, size_t* units,
                                size_t* klen) noexcept nogil:
    """The char at s[pos] as (length << 32 | UTF-8 bytes), its UTF-8 length in *klen and
    the units it takes in *units. A code unit of a str is one whole char (a lone surrogate
    as its three bytes, as surrogatepass writes it), so a str needs no UTF-8 copy."""
    cdef uint32_t c
    if unit_t is uint8_t:
        units[0] = _char_len(s[pos])
        return _char_code(s, pos, n, units[0], compat, klen)
    else:
        if unit_t is char:
            c = <uint8_t>s[pos]
        else:
            c = s[pos]
        units[0] = 1
        if c < 0x80:
            klen[0] = 1
            return c | (1ULL << _CODE_LEN_SHIFT)
        if c < 0x800:
            klen[0] = 2
            return (0xC0 | (c >> 6)) | (<uint64_t>(0x80 | (c & 0x3F)) << 8) | (2ULL << _CODE_LEN_SHIFT)
        if c < 0x10000:
            klen[0] = 3
            return ((0xE0 | (c >> 12)) | (<uint64_t>(0x80 | ((c >> 6) & 0x3F)) << 8)
                    | (<uint64_t>(0x80 | (c & 0x3F)) << 16) | (3ULL << _CODE_LEN_SHIFT))
        klen[0] = 4
        return ((0xF0 | (c >> 18)) | (<uint64_t>(0x80 | ((c >> 12) & 0x3F)) << 8)
                | (<uint64_t>(0x80 | ((c >> 6) & 0x3F)) << 16) | (<uint64_t>(0x80 | (c & 0x3F)) << 24)
                | (4ULL << _CODE_LEN_SHIFT))


cdef int64_t _encode_piece(const bbpe_model* m, const unit_t* s, size_t n, id_t* dst, int64_t out,
                           size_t cap, bint compat) noexcept nogil:
    cdef size_t pos = 0, full, first_len, clen, mlen, k
    cdef uint64_t code, first_code
    cdef int64_t node, matched, nxt
    while pos < n:
        first_code = _next_char(s, pos, n, compat, &full, &first_len)
        node = _start(m, first_code)
        matched = node if node >= 0 and m.slot_id[node] >= 0 else -1
        mlen = first_len
        pos += full
        while node >= 0 and pos < n:
            code = _next_char(s, pos, n, compat, &full, &clen)
            if mlen + clen >= BBPE_KEY_BYTES:
                # WordIdKey::Append refuses: the match cannot grow. Q14: the reference
                # then finds the unchanged match in the vocabulary and drops this char.
                if compat and matched >= 0:
                    pos += full
                    continue
                break
            if (m.child_bits[node] & _child_bit(code)) == 0:
                break  # no key extends this one by this char: no probe needed
            nxt = _step(m, <uint64_t>node, code)
            if nxt < 0:
                break
            node = matched = nxt
            mlen += clen
            pos += full
        if matched >= 0:
            if <size_t>out >= cap:
                return BBPE_ERR_CAPACITY
            dst[out] = <id_t>m.slot_id[matched]
            out += 1
        else:
            # only a single char can miss the vocabulary: write its bytes (Q15)
            if out + first_len > cap:
                return BBPE_ERR_CAPACITY
            for k in range(first_len):
                dst[out] = <id_t>m.byte_ids[(first_code >> (8 * k)) & 0xFF]
                out += 1
    return out


cdef inline size_t _find(const unit_t* s, size_t start, size_t n, uint32_t unit) noexcept nogil:
    """The position of the first ``unit`` in s[start:n], or n."""
    cdef const unit_t* p
    if unit_t is uint8_t or unit_t is char:
        p = <const unit_t*>memchr(s + start, unit, n - start)
        return n if p == NULL else <size_t>(p - s)
    else:
        while start < n and s[start] != unit:
            start += 1
        return start


cdef int64_t _encode(const bbpe_model* model, const unit_t* src, size_t n, id_t* dst, size_t cap,
                     int flags) noexcept nogil:
    cdef bint compat = (flags & BBPE_BUG_COMPAT) != 0
    cdef size_t start = 0, lt, gt
    cdef int64_t out = 0
    while start < n:
        # Q13: the regex <[^>]*> takes a '<' and everything up to the next '>'; a '<' with
        # no '>' after it starts no tag, and then neither does any later one
        lt = _find(src, start, n, 60)
        if lt == n:
            break
        gt = _find(src, lt + 1, n, 62)
        if gt == n:
            break
        if lt > start:
            out = _encode_piece(model, src + start, lt - start, dst, out, cap, compat)
            if out < 0:
                return out
        out = _encode_piece(model, src + lt, gt + 1 - lt, dst, out, cap, compat)
        if out < 0:
            return out
        start = gt + 1
    if start < n:
        out = _encode_piece(model, src + start, n - start, dst, out, cap, compat)
    return out


cdef int64_t bbpe_encode_into(const bbpe_model* model, const uint8_t* src, size_t n,
                              int64_t* dst, size_t cap, int flags) noexcept nogil:
    return _encode(model, src, n, dst, cap, flags)


cdef int64_t bbpe_encode_into32(const bbpe_model* model, const uint8_t* src, size_t n,
                                int32_t* dst, size_t cap, int flags) noexcept nogil:
    return _encode(model, src, n, dst, cap, flags)


cdef inline size_t _record_text(int64_t* dst, int64_t* lens, size_t out, int64_t k, int64_t count,
                                bint interleaved) noexcept nogil:
    """``encode_lines_into``: note text k's encoding of ``count`` ids, just written at
    ``dst + out`` (after a free length field when interleaved); returns the next ``out``."""
    if interleaved:
        dst[out] = count
        return out + 1 + <size_t>count
    lens[k] = count
    return out + <size_t>count


cdef inline size_t _lines_need(size_t n, size_t lt, size_t nlf, bint bug_compat, bint interleaved) noexcept nogil:
    """Words ``encode_lines_into`` may write for a block of ``n`` bytes holding ``lt``
    '<' and ``nlf`` LF: an id per input byte (or the LF added to the file's last line),
    or with bug_compat a NUL padding a cut char, at most 3 per piece, a text having at most
    2 pieces per '<' plus one; interleaved, a length field per text."""
    return n + 1 + (3 * (2 * lt + nlf + 2) if bug_compat else 0) + (nlf + 1 if interleaved else 0)


def lines_bound(size_t n, bint bug_compat=False):
    """Words that ``Model.encode_lines_into`` may write for a block of ``n`` bytes, in
    either layout, whatever the block holds; a buffer this large spares it a count."""
    return _lines_need(n, n, n, bug_compat, True)


cdef inline size_t _bound(const uint8_t* src, size_t n, int flags) noexcept nogil:
    """Ids that encoding src[0:n] can write: one per byte, plus (bug_compat) up to 3 NULs
    padding the cut char at the end of each piece."""
    cdef size_t i, lt = 0
    if not (flags & BBPE_BUG_COMPAT):
        return n
    for i in range(n):
        lt += src[i] == 60
    return n + 3 * (2 * lt + 1)


# ----------------------------------------------------------------------------- decoding

cdef int64_t bbpe_decoded_size(const bbpe_model* model, const int64_t* ids, size_t n,
                               size_t* bad) noexcept nogil:
    cdef size_t i
    cdef int64_t total = 0, kid
    for i in range(n):
        kid = ids[i]
        if kid < 0 or kid >= model.n_keys:
            bad[0] = i
            return BBPE_ERR_UNKNOWN_ID
        total += model.lens[kid]
    return total


cdef inline void _copy_key(const bbpe_model* model, int64_t kid, uint8_t* dst, size_t klen,
                           bint room) noexcept nogil:
    """dst <- the key of kid; with room for 24 bytes at dst, one fixed-size copy (the
    bytes past klen are overwritten by the next key or ignored)."""
    if room:
        memcpy(dst, model.dec_bytes + model.dec_off[kid], BBPE_KEY_BYTES)
    else:
        memcpy(dst, model.dec_bytes + model.dec_off[kid], klen)


cdef int64_t bbpe_decode_into(const bbpe_model* model, const int64_t* ids, size_t n,
                              uint8_t* dst, size_t cap, size_t* bad) noexcept nogil:
    cdef size_t i, klen, out = 0
    cdef int64_t kid
    for i in range(n):
        kid = ids[i]
        if kid < 0 or kid >= model.n_keys:
            bad[0] = i
            return BBPE_ERR_UNKNOWN_ID
        klen = model.dec_off[kid + 1] - model.dec_off[kid]
        if out + klen > cap:
            return BBPE_ERR_CAPACITY
        _copy_key(model, kid, dst + out, klen, out + BBPE_KEY_BYTES <= cap)
        out += klen
    return out


cdef inline int _utf8_need(const uint8_t* p, int n) noexcept nogil:
    """For the bytes p[0:n] that start with a lead byte: how many bytes its char needs,
    0 if they can never be (the start of) a valid UTF-8 char."""
    cdef uint8_t c = p[0]
    cdef int need, k
    cdef uint8_t lo = 0x80, hi = 0xBF
    if c < 0x80:
        return 1
    if 0xC2 <= c <= 0xDF:
        need = 2
    elif 0xE0 <= c <= 0xEF:
        need = 3
        if c == 0xE0:
            lo = 0xA0
        elif c == 0xED:
            hi = 0x9F  # no surrogates
    elif 0xF0 <= c <= 0xF4:
        need = 4
        if c == 0xF0:
            lo = 0x90
        elif c == 0xF4:
            hi = 0x8F
    else:
        return 0
    for k in range(1, min(n, need)):
        if not ((lo if k == 1 else 0x80) <= p[k] <= (hi if k == 1 else 0xBF)):
            return 0
    return need


cdef int64_t bbpe_decode_stream(const bbpe_model* model, bbpe_stream* state, int64_t token,
                                uint8_t* dst, size_t cap) noexcept nogil:
    """Append one id's bytes; write out whole chars, keep an unfinished one (see .pxd)."""
    cdef uint8_t buf[BBPE_KEY_BYTES + 8]
    cdef int n, i = 0, need
    cdef size_t out = 0
    if token < 0 or token >= model.n_keys:
        return BBPE_ERR_UNKNOWN_ID
    if cap < <size_t>(state.npending + model.lens[token]):
        return BBPE_ERR_CAPACITY
    memcpy(buf, state.pending, state.npending)
    memcpy(buf + state.npending, model.keys + BBPE_KEY_BYTES * token, model.lens[token])
    n = state.npending + model.lens[token]
    while i < n:
        need = _utf8_need(buf + i, n - i)
        if need == 0:
            need = 1  # never valid: let it through, the caller's error policy decides
        elif i + need > n:
            break  # a char still coming: keep it
        memcpy(dst + out, buf + i, need)
        out += need
        i += need
    state.npending = n - i
    memcpy(state.pending, buf + i, state.npending)
    return out


cdef int64_t bbpe_stream_flush(bbpe_stream* state, uint8_t* dst, size_t cap) noexcept nogil:
    cdef int64_t n = state.npending
    if cap < <size_t>n:
        return BBPE_ERR_CAPACITY
    memcpy(dst, state.pending, n)
    state.npending = 0
    return n


# ----------------------------------------------------------------------------- building

cdef size_t _last_char_start(const uint8_t* k, size_t n) noexcept nogil:
    """Where the last char of a key starts, cutting by lead byte from its first byte."""
    cdef size_t pos = 0, last = 0
    while pos < n:
        last = pos
        pos += _char_len(k[pos])
    return last


cdef uint64_t _key_code(const uint8_t* k, size_t start, size_t n) noexcept nogil:
    """The code of the char of key k at ``start``: a char cut short by the key's end keeps
    the bytes it has, as the encoder codes a char cut by a piece's end."""
    cdef size_t klen
    return _char_code(k, start, n, _char_len(k[start]), False, &klen)


cdef int64_t _insert(bbpe_model* m, uint64_t key) noexcept nogil:
    """Add the entry ``key`` (if new); returns its slot, the node it leads to."""
    cdef uint64_t i = (key * _GOLDEN) >> m.trans_shift
    cdef uint64_t* t = <uint64_t*>m.trans
    while t[i] != 0 and t[i] != key:
        i = (i + 1) & m.trans_mask
    if t[i] == 0:
        t[i] = key
    if (key >> _NODE_SHIFT) != _ROOT:
        (<uint32_t*>m.child_bits)[key >> _NODE_SHIFT] |= _child_bit(key & ((1ULL << _NODE_SHIFT) - 1))
    if (key >> _NODE_SHIFT) == _ROOT and ((key >> _CODE_LEN_SHIFT) & 7) == 1:
        m.root_byte[key & 0xFF] = <int32_t>i
    return <int64_t>i


# ----------------------------------------------------------------------------- Python level

cdef class Model(CompiledModel):
    """XBBPE's compiled model: a vocabulary compiled for encoding and decoding (owns the memory of ``view``).

    ``Model(keys, lens)``: ``keys`` holds 24 bytes per id (the key, zero padded), ``lens``
    one byte per id. Keys must be distinct and every one-byte key must be present.

    >>> m = Model(b"".join(bytes([b]) + bytes(23) for b in range(256)), bytes([1] * 256))
    >>> m.encode(b"hi"), m.decode([104, 105])
    ([104, 105], b'hi')
    """

    def __cinit__(self, bytes keys, bytes lens):
        cdef Py_ssize_t n = len(lens), i
        cdef uint64_t size = 16, slot, h
        cdef const uint8_t* k
        cdef size_t klen
        if len(keys) != BBPE_KEY_BYTES * n:
            raise ValueError("keys must hold 24 bytes per id")
        self._keys = keys
        self._lens = lens
        self.view.n_keys = n
        self.view.keys = <const uint8_t*>PyBytes_AS_STRING(keys)
        self.view.lens = <const uint8_t*>PyBytes_AS_STRING(lens)
        memset(self.view.byte_ids, 0xFF, sizeof(self.view.byte_ids))
        # the byte index (lookup by bytes)
        while size < 2 * <uint64_t>n:
            size *= 2
        self._table = <int64_t*>malloc(size * sizeof(int64_t))
        if self._table == NULL:
            raise MemoryError()
        for i in range(<Py_ssize_t>size):
            self._table[i] = -1
        self.view.table = self._table
        self.view.table_mask = size - 1
        for i in range(n):
            k = self.view.keys + BBPE_KEY_BYTES * i
            klen = self.view.lens[i]
            if klen > BBPE_KEY_BYTES or klen == 0:
                raise ValueError(f"id {i}: key length {klen} is not in 1..24")
            if bbpe_lookup(&self.view, k, klen) >= 0:
                raise ValueError(f"id {i}: its key is already the key of another id")
            h = _fnv(_FNV_OFFSET, k, klen)
            slot = ((h ^ (h >> 32)) * _GOLDEN >> 16) & self.view.table_mask
            while self._table[slot] >= 0:
                slot = (slot + 1) & self.view.table_mask
            self._table[slot] = i
            if klen == 1:
                self.view.byte_ids[k[0]] = i
        for i in range(256):
            if self.view.byte_ids[i] < 0:
                raise ValueError(f"the vocabulary has no key for byte 0x{i:02x}")
        self._build_transitions()
        self._build_decoder()
        self._ints = tuple(range(n))

    cdef _build_transitions(self):
        cdef int64_t n = self.view.n_keys, i, parent, node, entries = 0
        cdef uint64_t size = 16
        cdef int shift = 60
        cdef const uint8_t* k
        cdef size_t klen, start, pos, chars
        cdef set firsts = set()
        cdef int64_t* node_of = NULL
        cdef uint8_t* nchars = NULL
        # one entry per key the greedy can reach, plus one per distinct first char of a
        # 2-char key (a virtual node when that char is no key): counted, then load <= 1/2
        for i in range(n):
            k = self.view.keys + BBPE_KEY_BYTES * i
            klen = self.view.lens[i]
            start = _last_char_start(k, klen)
            if start == 0 or _last_char_start(k, start) == 0:
                entries += 1
                if start != 0:
                    firsts.add(k[:start])
            elif bbpe_lookup(&self.view, k, start) >= 0:
                entries += 1
        entries += len(firsts)
        while size < 2 * <uint64_t>entries + 2:
            size *= 2
            shift -= 1
        if size >= _ROOT:
            raise ValueError(f"{n} keys: too many for the encoder's trie")
        self._trans = <uint64_t*>malloc(size * sizeof(uint64_t))
        self._slot_id = <int32_t*>malloc(size * sizeof(int32_t))
        self._child_bits = <uint32_t*>malloc(size * sizeof(uint32_t))
        node_of = <int64_t*>malloc(n * sizeof(int64_t))
        nchars = <uint8_t*>malloc(n)
        try:
            if (self._trans == NULL or self._slot_id == NULL or self._child_bits == NULL or node_of == NULL
                    or nchars == NULL):
                raise MemoryError()
            memset(self._trans, 0, size * sizeof(uint64_t))
            memset(self._slot_id, 0xFF, size * sizeof(int32_t))
            memset(self._child_bits, 0, size * sizeof(uint32_t))
            self.view.trans = self._trans
            self.view.slot_id = self._slot_id
            self.view.child_bits = self._child_bits
            self.view.trans_mask = size - 1
            self.view.trans_shift = shift
            for i in range(256):
                self.view.root_byte[i] = -1
            for i in range(n):
                node_of[i] = -1
                k = self.view.keys + BBPE_KEY_BYTES * i
                klen = self.view.lens[i]
                pos = chars = 0
                while pos < klen:
                    pos += _char_len(k[pos])
                    chars += 1
                nchars[i] = <uint8_t>chars
            # a node is the slot of its entry, so parents go in before their children:
            # keys by number of chars (at most 24)
            for chars in range(1, BBPE_KEY_BYTES + 1):
                for i in range(n):
                    if nchars[i] != chars:
                        continue
                    k = self.view.keys + BBPE_KEY_BYTES * i
                    klen = self.view.lens[i]
                    start = _last_char_start(k, klen)
                    if start == 0:
                        parent = <int64_t>_ROOT
                    else:
                        parent = bbpe_lookup(&self.view, k, start)
                        if parent >= 0:
                            parent = node_of[parent]  # -1 when the greedy cannot reach it
                        elif _last_char_start(k, start) == 0:
                            # the first char is no key but starts this one: a virtual node
                            parent = _step(&self.view, _ROOT, _key_code(k, 0, start))
                            if parent < 0:
                                parent = _insert(&self.view, (_ROOT << _NODE_SHIFT) | _key_code(k, 0, start))
                        if parent < 0:
                            continue  # a longer prefix is no key: the greedy can never reach this one
                    node = _insert(&self.view, (<uint64_t>parent << _NODE_SHIFT) | _key_code(k, start, klen))
                    node_of[i] = node
                    self._slot_id[node] = <int32_t>i
        finally:
            free(node_of)
            free(nchars)

    cdef _build_decoder(self):
        cdef int64_t n = self.view.n_keys, i
        cdef uint64_t total = 0
        for i in range(n):
            total += self.view.lens[i]
        if total + BBPE_KEY_BYTES >= (<uint64_t>1) << 32:
            raise ValueError(f"{n} keys: too many for the decoder's table")
        self._dec_off = <uint32_t*>malloc((n + 1) * sizeof(uint32_t))
        self._dec_bytes = <uint8_t*>malloc(total + BBPE_KEY_BYTES)
        if self._dec_off == NULL or self._dec_bytes == NULL:
            raise MemoryError()
        memset(self._dec_bytes + total, 0, BBPE_KEY_BYTES)
        total = 0
        for i in range(n):
            self._dec_off[i] = <uint32_t>total
            memcpy(self._dec_bytes + total, self.view.keys + BBPE_KEY_BYTES * i, self.view.lens[i])
            total += self.view.lens[i]
        self._dec_off[n] = <uint32_t>total
        self.view.dec_off = self._dec_off
        self.view.dec_bytes = self._dec_bytes

    def __dealloc__(self):
        free(self._table)
        free(self._trans)
        free(self._slot_id)
        free(self._child_bits)
        free(self._dec_off)
        free(self._dec_bytes)

    @property
    def n_keys(self):
        return self.view.n_keys

    def key_data(self):
        """(keys, lens): what ``Model(keys, lens)`` was built from."""
        cdef Py_ssize_t n = self.view.n_keys
        return (PyBytes_FromStringAndSize(<const char*>self.view.keys, BBPE_KEY_BYTES * n),
                PyBytes_FromStringAndSize(<const char*>self.view.lens, n))

    def __reduce__(self):
        # the keys, not the trie: a pickle is the vocabulary's size, and loading rebuilds
        return (Model, self.key_data())

    def __eq__(self, other):
        if not isinstance(other, Model):
            return NotImplemented
        return self is other or self.key_data() == (<Model>other).key_data()

    __hash__ = None

    def lookup(self, const uint8_t[::1] key):
        """Id of the key, or -1."""
        return bbpe_lookup(&self.view, &key[0] if key.shape[0] else NULL, key.shape[0])

    # ------------------------------------------------------------------ encoding

    cdef list _as_list(self, const int32_t* ids, int64_t count):
        cdef list out = PyList_New(count)
        cdef PyObject** items = (<PyListObject*>out).ob_item
        cdef PyObject** ints = (<PyTupleObject*>self._ints).ob_item
        cdef PyObject* item
        cdef int64_t i
        for i in range(count):
            item = ints[ids[i]]
            Py_INCREF(<object>item)  # the list owns a reference to each shared int
            items[i] = item
        # A list of ints can be in no reference cycle: the cyclic collector need not track
        # it, and each collection then skips it (with millions of result lists alive, the
        # collections of a program that keeps them cost more than the encoding)
        PyObject_GC_UnTrack(<PyObject*>out)
        return out

    def encode(self, data, bint bug_compat=False):
        """A str (UTF-8, lone surrogates with surrogatepass) or bytes-like -> list of ids."""
        return self._encode_list(data, BBPE_BUG_COMPAT if bug_compat else 0)

    cdef list _encode_list(self, object data, int flags):
        cdef _text t
        cdef const uint8_t[::1] view
        cdef int64_t count
        cdef int32_t small[4096]
        cdef int32_t* buf = &small[0]
        cdef size_t cap
        if not (PyBytes_CheckExact(data) or PyUnicode_CheckExact(data)):
            data = _plain_text(data, "text")
        if PyBytes_CheckExact(data) or PyUnicode_CheckExact(data):
            _as_text(data, &t)
        else:
            view = data
            t.kind = 0
            t.length = view.shape[0]
            t.data = &view[0] if t.length else NULL
        cap = _text_cap(t, flags)
        if cap > 4096:
            buf = <int32_t*>malloc(cap * sizeof(int32_t))
            if buf == NULL:
                raise MemoryError()
        try:
            if t.length < _NOGIL_BYTES:
                count = _encode_text(&self.view, t, buf, cap, flags)
            else:
                with nogil:
                    count = _encode_text(&self.view, t, buf, cap, flags)
            if count < 0:
                raise RuntimeError("encode: output bound exceeded")  # cannot happen: see _text_cap
            return self._as_list(buf, count)
        finally:
            if buf != &small[0]:
                free(buf)

    def encode_ids(self, data, bint bug_compat=False):
        """Like ``encode``, but the ids as a bytearray of native int32."""
        cdef const uint8_t[::1] view = data
        cdef Py_ssize_t n = view.shape[0]
        cdef const uint8_t* src = &view[0] if n else NULL
        cdef int flags = BBPE_BUG_COMPAT if bug_compat else 0
        cdef size_t cap = _bound(src, n, flags)
        out = bytearray(cap * sizeof(int32_t))
        cdef int32_t* dst = <int32_t*><char*>out
        cdef int64_t count
        with nogil:
            count = bbpe_encode_into32(&self.view, src, n, dst, cap, flags)
        del out[count * sizeof(int32_t):]
        return out

    cdef int64_t _encode_many(self, list texts, int flags, int32_t** ids_out, int64_t* offs) except -2:
        """Encode texts (str or bytes) with the GIL released; offs[0..m] bound each text's
        ids in *ids_out (malloc'd: the caller frees it)."""
        cdef Py_ssize_t m = len(texts), i
        cdef _text* ts = <_text*>malloc((m + 1) * sizeof(_text))
        cdef size_t total = 0
        cdef int64_t count = 0, out = 0
        cdef int32_t* dst = NULL
        if ts == NULL:
            raise MemoryError()
        try:
            for i in range(m):
                _as_text(texts[i], &ts[i])
                total += _text_cap(ts[i], flags)
            dst = <int32_t*>malloc((total + 1) * sizeof(int32_t))  # untouched beyond what is written
            if dst == NULL:
                raise MemoryError()
            with nogil:
                offs[0] = 0
                for i in range(m):
                    count = _encode_text(&self.view, ts[i], dst + out, total - out, flags)
                    if count < 0:
                        break
                    out += count
                    offs[i + 1] = out
            if count < 0:
                raise RuntimeError("encode_many: output bound exceeded")  # cannot happen: see _text_cap
            ids_out[0] = dst
            dst = NULL
            return out
        finally:
            free(ts)
            free(dst)

    def encode_many(self, list texts, bint bug_compat=False, Py_ssize_t start=0, stop=None):
        """Encode a list of str or bytes (``texts[start:stop]``, so that threads can each
        take a range of one list); the GIL is released while encoding.

        Returns (ids, offsets): bytes of native int32 ids and int64 offsets (text i of the
        range is ids[offsets[i]:offsets[i + 1]]).
        """
        cdef list items = _own_copy(texts, start, stop)
        cdef Py_ssize_t m = len(items)
        cdef int64_t* offs = <int64_t*>malloc((m + 1) * sizeof(int64_t))
        cdef int32_t* ids = NULL
        cdef int64_t count
        if offs == NULL:
            raise MemoryError()
        try:
            count = self._encode_many(items, BBPE_BUG_COMPAT if bug_compat else 0, &ids, offs)
            return (PyBytes_FromStringAndSize(<char*>ids, count * sizeof(int32_t)),
                    PyBytes_FromStringAndSize(<char*>offs, (m + 1) * sizeof(int64_t)))
        finally:
            free(offs)
            free(ids)

    def encode_lists(self, list texts, bint bug_compat=False, Py_ssize_t start=0, stop=None):
        """Encode a list of str or bytes (``texts[start:stop]``) into a list of lists of ids,
        nearly all of it without the GIL, so threads that each take a slice of a batch run
        side by side.

        Texts go in rounds of about a megabyte of ids, each encoded into one reused buffer
        that stays in the CPU's cache. Under the GIL only the lists are made (empty, one
        allocation each); their items are written without it: each is a borrowed pointer
        to the model's shared int for its id, and the references are counted per id and
        added to those ints at the end, under the GIL again (``_add_references``). That is
        safe because the model's tuple of ints keeps every one of them alive throughout,
        and no one sees the lists before they are returned: the outer list is not tracked by
        the collector until it is whole, so ``gc.get_objects()`` on another thread cannot
        reach a list whose items are not written yet."""
        cdef list items = _own_copy(texts, start, stop)
        cdef Py_ssize_t m = len(items), i = 0, j, k
        cdef int flags = BBPE_BUG_COMPAT if bug_compat else 0
        cdef _text* ts = <_text*>malloc((m + 1) * sizeof(_text))
        cdef int64_t* offs = <int64_t*>malloc((m + 1) * sizeof(int64_t))
        cdef PyObject*** slots = <PyObject***>malloc((m + 1) * sizeof(PyObject**))
        cdef int64_t* refs = <int64_t*>calloc(self.view.n_keys + 1, sizeof(int64_t))
        cdef size_t cap = _ROUND_IDS, need, bound
        cdef int32_t* buf = <int32_t*>malloc(cap * sizeof(int32_t))
        cdef PyObject** ints = (<PyTupleObject*>self._ints).ob_item
        cdef int64_t count = 0
        cdef list out = PyList_New(m)
        PyObject_GC_UnTrack(<PyObject*>out)
        try:
            if ts == NULL or offs == NULL or slots == NULL or refs == NULL or buf == NULL:
                raise MemoryError()
            for k in range(m):
                _as_text(items[k], &ts[k])
            while i < m:
                need = 0
                j = i
                while j < m:
                    bound = _text_cap(ts[j], flags)
                    if j > i and need + bound > cap:
                        break
                    need += bound
                    j += 1
                if need > cap:  # one text larger than a round
                    free(buf)
                    buf = <int32_t*>malloc(need * sizeof(int32_t))
                    if buf == NULL:
                        raise MemoryError()
                    cap = need
                with nogil:
                    offs[i] = 0
                    for k in range(i, j):
                        count = _encode_text(&self.view, ts[k], buf + offs[k], cap - offs[k], flags)
                        if count < 0:
                            break
                        offs[k + 1] = offs[k] + count
                if count < 0:
                    raise RuntimeError("encode_lists: output bound exceeded")  # cannot happen: see _text_cap
                _fill_lists(out, i, j, buf, offs, slots, ints, refs)  # (in C, the items without the GIL)
                i = j
            PyObject_GC_Track(<PyObject*>out)  # whole now; it may hold what the caller adds
            return out
        finally:
            if refs != NULL:
                _add_references(ints, refs, self.view.n_keys)  # before anything can drop a list
            free(ts)
            free(offs)
            free(slots)
            free(refs)
            free(buf)

    def encode_lines_into(self, const uint8_t[::1] data, bint last_para_end, bint bug_compat, int64_t[::1] ids,
                          lengths=None):
        """Encode the training texts (QUIRKS Q18) of a block of whole lines into ``ids``:
        every non-empty line; a line followed by an empty line, or the block's last line
        when ``last_para_end``, is encoded with its LF. With ``lengths`` (an int64 buffer),
        the ids go one after the other into ``ids`` and the length of each text's encoding
        into ``lengths``; without, ``ids`` gets the ``.bin`` layout: each text's length,
        then its ids. Returns (texts, int64 words written to ``ids``).

        The buffers are the caller's, so that the blocks of a large corpus reuse them;
        ``ids`` must hold ``lines_bound(len(data), bug_compat)`` words, ``lengths`` a word
        per LF plus one (ValueError otherwise).
        """
        cdef size_t n = data.shape[0], a = 0, b, i, lt = n, nlf = n, begin
        cdef size_t cap = ids.shape[0]
        cdef const uint8_t* src = &data[0] if n else NULL
        cdef const uint8_t* p
        cdef int flags = BBPE_BUG_COMPAT if bug_compat else 0
        cdef int64_t count = 0, ntexts = 0
        cdef size_t out = 0
        cdef bint interleaved = lengths is None
        cdef int64_t[::1] lens_view
        cdef int64_t* lens = NULL
        cdef int64_t* dst = &ids[0] if cap else NULL
        if not interleaved:
            lens_view = lengths
        cdef bint short_lengths = not interleaved and <size_t>lens_view.shape[0] <= n
        if cap < _lines_need(n, lt, nlf, bug_compat, interleaved) or short_lengths:
            # smaller than the worst case: count what this block can need
            lt = nlf = 0
            for i in range(n):
                lt += src[i] == 60
                nlf += src[i] == 10
            if cap < _lines_need(n, lt, nlf, bug_compat, interleaved):
                raise ValueError(f"encode_lines_into: ids holds {cap} words, this block may need "
                                 f"{_lines_need(n, lt, nlf, bug_compat, interleaved)}")
            if not interleaved and <size_t>lens_view.shape[0] < nlf + 1:
                raise ValueError(f"encode_lines_into: lengths holds {lens_view.shape[0]} words, "
                                 f"this block has up to {nlf + 1} texts")
        if not interleaved:
            lens = &lens_view[0]
        with nogil:
            while a < n:
                p = <const uint8_t*>memchr(src + a, 10, n - a)
                if p == NULL:
                    break  # a last line without LF: below
                b = p - src
                if b > a:
                    if (b + 1 < n and src[b + 1] == 10) or (b + 1 == n and last_para_end):
                        b += 1  # the text ends a paragraph: it keeps its LF
                    begin = out + interleaved
                    count = bbpe_encode_into(&self.view, src + a, b - a, dst + begin, cap - begin, flags)
                    if count < 0:
                        break
                    out = _record_text(dst, lens, out, ntexts, count, interleaved)
                    ntexts += 1
                a = (<size_t>(p - src)) + 1
        if a < n and count >= 0:  # the end of the file, without LF: add it if it ends a paragraph
            text = bytes(data[a:n]) + (b"\n" if last_para_end else b"")
            begin = out + interleaved
            count = bbpe_encode_into(&self.view, <const uint8_t*>PyBytes_AS_STRING(text), len(text), dst + begin,
                                     cap - begin, flags)
            if count >= 0:
                out = _record_text(dst, lens, out, ntexts, count, interleaved)
                ntexts += 1
        if count < 0:
            raise RuntimeError("encode_lines_into: output bound exceeded")  # cannot happen: see _lines_need
        return ntexts, out

    # ------------------------------------------------------------------ decoding

    cdef object _decode(self, object ids, const char* errors):
        """bytes (errors NULL) or str of the ids: a list, or a buffer of native int64."""
        cdef const int64_t[::1] view
        cdef int64_t small_ids[256]
        cdef int64_t* owned = NULL
        cdef const int64_t* src
        cdef Py_ssize_t n
        cdef size_t bad = 0
        cdef int64_t size
        cdef uint8_t small[2048]
        cdef uint8_t* dst = &small[0]
        try:
            if PyList_CheckExact(ids):
                n = _list_ids(ids, &self.view, small_ids, 256, &owned, &size)
                src = owned
            else:
                view = ids
                n = view.shape[0]
                src = &view[0] if n else NULL
                size = bbpe_decoded_size(&self.view, src, n, &bad)
                if size == BBPE_ERR_UNKNOWN_ID:
                    raise UnknownIdError(src[bad], bad, self.view.n_keys)
            # 24 bytes of slack: every key is copied with one fixed-size copy
            if size + BBPE_KEY_BYTES > 2048:
                dst = <uint8_t*>malloc(size + BBPE_KEY_BYTES)
                if dst == NULL:
                    raise MemoryError()
            if size < <int64_t>_NOGIL_BYTES:
                bbpe_decode_into(&self.view, src, n, dst, size + BBPE_KEY_BYTES, &bad)
            else:
                with nogil:
                    bbpe_decode_into(&self.view, src, n, dst, size + BBPE_KEY_BYTES, &bad)
            if errors == NULL:
                return PyBytes_FromStringAndSize(<char*>dst, size)
            return PyUnicode_DecodeUTF8(<char*>dst, size, errors)
        finally:
            if owned != &small_ids[0]:
                free(owned)
            if dst != &small[0]:
                free(dst)

    def decode(self, ids):
        """Ids (a list of ints, or a buffer of native int64) -> bytes. Raises UnknownIdError."""
        return self._decode(ids, NULL)

    def decode_str(self, ids, str errors="replace"):
        """Ids -> str, the bytes decoded as UTF-8 with ``errors``."""
        if errors == "replace":
            return self._decode(ids, b"replace")
        cdef bytes e = errors.encode()
        return self._decode(ids, e)


def walk_encodings(const uint8_t[::1] data, Py_ssize_t offset, int64_t[::1] starts, int64_t[::1] lengths):
    """Walk the stored encodings of a ``.bin`` (u64 length, then that many ids) from
    ``offset``, one per slot of ``starts``: fills starts (the offset of each one's ids) and
    lengths. Returns (offset after the last one, -1, 0), or at the first that does not fit
    in the file (its offset, its index, its length, or -1 when the length field is cut).
    A chain of dependent reads, so it is walked here rather than in numpy."""
    cdef Py_ssize_t size = data.shape[0], k, b
    cdef uint64_t length
    for k in range(starts.shape[0]):
        if offset < 0 or offset + 8 > size:
            return offset, k, -1
        length = 0
        for b in range(8):
            length |= (<uint64_t>data[offset + b]) << (8 * b)
        if length > <uint64_t>((size - offset - 8) // 8):
            return offset, k, length
        starts[k] = offset + 8
        lengths[k] = <int64_t>length
        offset += 8 + 8 * <Py_ssize_t>length
    return offset, -1, 0


cdef int64_t _list_ids(object ids, const bbpe_model* m, int64_t* small, Py_ssize_t nsmall,
                       int64_t** out, int64_t* total) except -1:
    """The ids of a list, checked, into small[] or a malloc'd array (*out, which the
    caller frees when it is not small); *total gets the number of bytes they decode to."""
    cdef Py_ssize_t n = PyList_GET_SIZE(ids), i
    cdef int64_t kid, size = 0
    cdef PyObject* item
    cdef int64_t* buf = small if n <= nsmall else <int64_t*>malloc((n + 1) * sizeof(int64_t))
    if buf == NULL:
        raise MemoryError()
    out[0] = buf
    for i in range(n):
        item = PyList_GET_ITEM(ids, i)  # borrowed: no reference counting per id
        kid = _item_id(item, i, m.n_keys)
        if kid < 0 or kid >= m.n_keys:
            raise UnknownIdError(<object>item, i, m.n_keys)
        buf[i] = kid
        size += m.lens[kid]
    total[0] = size
    return n


cdef inline int64_t _item_id(PyObject* item, Py_ssize_t pos, int64_t n_keys) except? -2:
    """An id given as a Python object: an int (-1 when it does not fit in int64, so the
    caller's range check names it) or anything with ``__index__`` but float."""
    cdef int overflow = 0
    cdef int64_t kid
    if _long_check_exact(item):
        kid = _long_value(item, &overflow)
        return -1 if overflow else kid
    return _as_id(<object>item, pos, n_keys)


cdef class StreamDecoder:
    """Decodes ids one at a time and gives back only whole UTF-8 chars (for streaming
    generation). ``feed(ids)`` -> str; ``flush()`` -> what is left (errors policy).

    >>> d = tok.decoder()                                   # doctest: +SKIP
    >>> d.feed([228]), d.feed([185]), d.feed([157])          # doctest: +SKIP
    ('', '', '九')
    """

    cdef readonly Model model
    cdef bbpe_stream state
    cdef readonly str errors
    # errors="surrogatepass": the start of a surrogate's UTF-8 (ED A0-BF) that the C state
    # gave out as bytes that never start a strict char, held until its char is whole
    cdef bytes _surrogate

    def __cinit__(self, Model model, str errors="replace"):
        self.model = model
        self.errors = errors
        self.state.npending = 0
        self._surrogate = b""

    def feed(self, ids):
        """One id or an iterable of ids -> the whole chars they complete, as str."""
        cdef uint8_t buf[64]
        cdef int64_t written, kid
        cdef Py_ssize_t pos = 0
        parts = []
        if isinstance(ids, int) or getattr(ids, "ndim", None) == 0 or (
                hasattr(ids, "__index__") and not hasattr(ids, "__iter__")):
            ids = (ids,)  # one id: an int, or what ``argmax()`` returns (a numpy integer, a 0-d array)
        for item in ids:
            kid = _item_id(<PyObject*>item, pos, self.model.view.n_keys)
            written = bbpe_decode_stream(&self.model.view, &self.state, kid, buf, sizeof(buf))
            if written == BBPE_ERR_UNKNOWN_ID:
                raise UnknownIdError(item, pos, self.model.view.n_keys)
            if written:
                parts.append(PyBytes_FromStringAndSize(<char*>buf, written))
            pos += 1
        data = b"".join(parts)
        if self.errors == "surrogatepass":
            data, self._surrogate = _cut_surrogate(self._surrogate + data)
        return data.decode("utf-8", self.errors)

    def flush(self):
        """The bytes of an unfinished char, decoded with the errors policy; resets."""
        cdef uint8_t buf[16]
        cdef int64_t written = bbpe_stream_flush(&self.state, buf, sizeof(buf))
        data, self._surrogate = self._surrogate + PyBytes_FromStringAndSize(<char*>buf, written), b""
        return data.decode("utf-8", self.errors)

    @property
    def pending(self):
        """The bytes held back, waiting for the rest of their char."""
        return self._surrogate + PyBytes_FromStringAndSize(<char*>self.state.pending, self.state.npending)

    def __reduce__(self):
        return (_stream_decoder, (self.model, self.errors,
                                  PyBytes_FromStringAndSize(<char*>self.state.pending, self.state.npending),
                                  self._surrogate))


def _cut_surrogate(bytes data):
    """(what decodes now, what waits): with errors="surrogatepass", a surrogate's UTF-8
    (ED A0-BF 80-BF) cut by the end of ``data`` waits for the rest of it."""
    cdef Py_ssize_t n = len(data), k
    for k in range(max(n - 2, 0), n):
        if data[k] == 0xED and (k + 1 == n or 0xA0 <= data[k + 1] <= 0xBF):
            return data[:k], data[k:]
    return data, b""


def _stream_decoder(Model model, str errors, bytes pending, bytes surrogate=b""):
    """A StreamDecoder in the state a pickled one was in (``StreamDecoder.__reduce__``)."""
    cdef StreamDecoder decoder = StreamDecoder(model, errors)
    if len(surrogate) > 2 or _cut_surrogate(surrogate)[1] != surrogate:
        raise ValueError(f"{surrogate!r} is not the start of a surrogate's UTF-8")
    decoder._surrogate = surrogate
    if len(pending) > 8:
        raise ValueError(f"a stream decoder holds at most 8 pending bytes, got {len(pending)}")
    memcpy(decoder.state.pending, PyBytes_AS_STRING(pending), len(pending))
    decoder.state.npending = len(pending)
    return decoder


# ----------------------------------------------------------------------------- the C API
#
# Plain C extensions reach the functions above through this capsule; bbpe/bbpe.h declares
# the same struct (keep them in step, and bump BBPE_CAPI_VERSION on any change).

ctypedef struct bbpe_capi:
    int version
    const bbpe_model* (*model_view)(object) noexcept
    int64_t (*encode_into)(const bbpe_model*, const uint8_t*, size_t, int64_t*, size_t, int) noexcept nogil
    int64_t (*encode_into32)(const bbpe_model*, const uint8_t*, size_t, int32_t*, size_t, int) noexcept nogil
    int64_t (*decoded_size)(const bbpe_model*, const int64_t*, size_t, size_t*) noexcept nogil
    int64_t (*decode_into)(const bbpe_model*, const int64_t*, size_t, uint8_t*, size_t, size_t*) noexcept nogil
    int64_t (*decode_stream)(const bbpe_model*, bbpe_stream*, int64_t, uint8_t*, size_t) noexcept nogil
    int64_t (*stream_flush)(bbpe_stream*, uint8_t*, size_t) noexcept nogil
    int64_t (*lookup)(const bbpe_model*, const uint8_t*, size_t) noexcept nogil

BBPE_CAPI_VERSION = 2  # with BBPE_ABI_VERSION (codec.pxd) and bbpe.h's


cdef const bbpe_model* _model_view(object model) noexcept:
    """The view of a Model (borrowed: keep the object alive), or NULL with TypeError set."""
    if isinstance(model, Model):
        return &(<Model>model).view
    PyErr_SetString(TypeError, "expected a bbpe.codec.Model (Tokenizer.model)")
    return NULL


cdef bbpe_capi _CAPI
_CAPI.version = BBPE_CAPI_VERSION
_CAPI.model_view = _model_view
_CAPI.encode_into = bbpe_encode_into
_CAPI.encode_into32 = bbpe_encode_into32
_CAPI.decoded_size = bbpe_decoded_size
_CAPI.decode_into = bbpe_decode_into
_CAPI.decode_stream = bbpe_decode_stream
_CAPI.stream_flush = bbpe_stream_flush
_CAPI.lookup = bbpe_lookup
_C_API = PyCapsule_New(&_CAPI, "bbpe.codec._C_API", NULL)
