# cython: language_level=3
"""The encoder and decoder (QUIRKS Q13-Q16), in C with the GIL released.

Encoding cuts the text at each ``<...>`` tag (Q13), cuts each piece into chars by lead
byte (Q2) and grows a match from every char while the match plus the next char is a key
(Q14); a single char that is not a key is written as its bytes (Q15). No merge ranks and no
pre-split are needed, so the work per input byte is one hash step and one probe.

By default nothing is lost: a match stops when the next char would make it 24 bytes or
more, and a char cut short at the end of a piece keeps just its bytes, so
``decode(encode(x)) == x`` for every byte string. ``BBPE_BUG_COMPAT`` reproduces the
reference instead: it swallows that next char (Q14) and pads a cut char with NUL (Q20.1).
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from libc.stdint cimport int64_t, uint8_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memchr, memcmp, memcpy, memset

from .errors import UnknownIdError

cdef uint64_t _FNV_OFFSET = 0xCBF29CE484222325ULL
cdef uint64_t _FNV_PRIME = 0x100000001B3ULL


# ----------------------------------------------------------------------------- hashing

cdef inline uint64_t _fnv(uint64_t h, const uint8_t* p, size_t n) noexcept nogil:
    # FNV-1a continues byte by byte, so the hash of a match grown by one char costs only
    # that char's bytes
    cdef size_t i
    for i in range(n):
        h = (h ^ p[i]) * _FNV_PRIME
    return h


cdef inline uint64_t _slot(uint64_t h) noexcept nogil:
    h ^= h >> 32
    h *= 0x9E3779B97F4A7C15ULL
    return h ^ (h >> 29)


cdef inline int64_t _probe(const bbpe_model* m, const uint8_t* key, size_t n, uint64_t h) noexcept nogil:
    cdef uint64_t i = _slot(h) & m.table_mask
    cdef int64_t kid
    while True:
        kid = m.table[i]
        if kid < 0:
            return -1
        if m.lens[kid] == n and memcmp(m.keys + BBPE_KEY_BYTES * kid, key, n) == 0:
            return kid
        i = (i + 1) & m.table_mask


cdef int64_t bbpe_lookup(const bbpe_model* model, const uint8_t* key, size_t n) noexcept nogil:
    if n > BBPE_KEY_BYTES:
        return -1
    return _probe(model, key, n, _fnv(_FNV_OFFSET, key, n))


# ----------------------------------------------------------------------------- encoding

cdef inline size_t _char_len(uint8_t lead) noexcept nogil:
    # GetWordSize (Q2): the lead byte alone decides; 80-BF and F8-FF are 1-byte chars
    if lead < 0x80:
        return 1
    if (lead & 0xE0) == 0xC0:
        return 2
    if (lead & 0xF0) == 0xE0:
        return 3
    if (lead & 0xF8) == 0xF0:
        return 4
    return 1


cdef inline size_t _load_char(uint8_t* dst, const uint8_t* s, size_t pos, size_t n, size_t full,
                              bint compat) noexcept nogil:
    """Copy the char at s[pos] (full length `full`) to dst; return its key length.

    A char cut short by the end of the piece keeps the bytes it has; Q20.1: the reference
    reads on past the end, which gives NUL (the string's terminator) for the first missing
    byte and undefined bytes after it, emulated as NUL.
    """
    cdef size_t have = n - pos
    if have >= full:
        memcpy(dst, s + pos, full)
        return full
    memcpy(dst, s + pos, have)
    if not compat:
        return have
    memset(dst + have, 0, full - have)
    return full


cdef int64_t _encode_piece(const bbpe_model* m, const uint8_t* s, size_t n, int64_t* dst,
                           int64_t out, size_t cap, bint compat) noexcept nogil:
    cdef uint8_t match[BBPE_KEY_BYTES + 4]
    cdef size_t pos = 0, full, mlen, clen, k
    cdef uint64_t h, h2
    cdef int64_t kid, kid2
    while pos < n:
        full = _char_len(s[pos])
        mlen = _load_char(match, s, pos, n, full, compat)
        h = _fnv(_FNV_OFFSET, match, mlen)
        kid = _probe(m, match, mlen, h)
        pos += full
        while pos < n:
            full = _char_len(s[pos])
            clen = _load_char(match + mlen, s, pos, n, full, compat)  # room: 23 + 4 bytes
            if mlen + clen >= BBPE_KEY_BYTES:
                # WordIdKey::Append refuses: the match cannot grow. Q14: the reference
                # then finds the unchanged match in the vocabulary and drops this char.
                if compat and kid >= 0:
                    pos += full
                    continue
                break
            h2 = _fnv(h, match + mlen, clen)
            kid2 = _probe(m, match, mlen + clen, h2)
            if kid2 < 0:
                break
            kid = kid2
            h = h2
            mlen += clen
            pos += full
        if kid >= 0:
            if <size_t>out >= cap:
                return BBPE_ERR_CAPACITY
            dst[out] = kid
            out += 1
        else:
            # only a single char can miss the vocabulary: write its bytes (Q15)
            if out + mlen > cap:
                return BBPE_ERR_CAPACITY
            for k in range(mlen):
                dst[out] = m.byte_ids[match[k]]
                out += 1
    return out


cdef int64_t bbpe_encode_into(const bbpe_model* model, const uint8_t* src, size_t n,
                              int64_t* dst, size_t cap, int flags) noexcept nogil:
    cdef bint compat = (flags & BBPE_BUG_COMPAT) != 0
    cdef size_t start = 0, lt, gt
    cdef const uint8_t* p
    cdef int64_t out = 0
    while start < n:
        # Q13: the regex <[^>]*> takes a '<' and everything up to the next '>'; a '<' with
        # no '>' after it starts no tag, and then neither does any later one
        p = <const uint8_t*>memchr(src + start, 60, n - start)
        if p == NULL:
            break
        lt = p - src
        p = <const uint8_t*>memchr(src + lt + 1, 62, n - lt - 1)
        if p == NULL:
            break
        gt = p - src
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


cdef int64_t bbpe_decode_into(const bbpe_model* model, const int64_t* ids, size_t n,
                              uint8_t* dst, size_t cap, size_t* bad) noexcept nogil:
    cdef size_t i, klen, out = 0
    cdef int64_t kid
    for i in range(n):
        kid = ids[i]
        if kid < 0 or kid >= model.n_keys:
            bad[0] = i
            return BBPE_ERR_UNKNOWN_ID
        klen = model.lens[kid]
        if out + klen > cap:
            return BBPE_ERR_CAPACITY
        memcpy(dst + out, model.keys + BBPE_KEY_BYTES * kid, klen)
        out += klen
    return out


# ----------------------------------------------------------------------------- Python level

cdef class Model:
    """A vocabulary compiled for encoding and decoding (owns the memory of ``view``).

    ``Model(keys, lens)``: ``keys`` holds 24 bytes per id (the key, zero padded), ``lens``
    one byte per id. Keys must be distinct and every one-byte key must be present.

    >>> m = Model(b"".join(bytes([b]) + bytes(23) for b in range(256)), bytes([1] * 256))
    >>> m.encode(b"hi"), m.decode([104, 105])
    ([104, 105], b'hi')
    """

    def __cinit__(self, bytes keys, bytes lens):
        cdef Py_ssize_t n = len(lens), i
        cdef uint64_t size = 16, h, slot
        cdef const uint8_t* k
        if len(keys) != BBPE_KEY_BYTES * n:
            raise ValueError("keys must hold 24 bytes per id")
        self._keys = keys
        self._lens = lens
        while size < 2 * <uint64_t>n:
            size *= 2
        self._table = <int64_t*>malloc(size * sizeof(int64_t))
        if self._table == NULL:
            raise MemoryError()
        for i in range(<Py_ssize_t>size):
            self._table[i] = -1
        memset(self.view.byte_ids, 0xFF, sizeof(self.view.byte_ids))
        self.view.n_keys = n
        self.view.keys = <const uint8_t*>PyBytes_AS_STRING(keys)
        self.view.lens = <const uint8_t*>PyBytes_AS_STRING(lens)
        self.view.table = self._table
        self.view.table_mask = size - 1
        for i in range(n):
            k = self.view.keys + BBPE_KEY_BYTES * i
            if self.view.lens[i] > BBPE_KEY_BYTES:
                raise ValueError(f"id {i}: key length {self.view.lens[i]} > 24")
            if bbpe_lookup(&self.view, k, self.view.lens[i]) >= 0:
                raise ValueError(f"id {i}: its key is already the key of another id")
            h = _fnv(_FNV_OFFSET, k, self.view.lens[i])
            slot = _slot(h) & self.view.table_mask
            while self._table[slot] >= 0:
                slot = (slot + 1) & self.view.table_mask
            self._table[slot] = i
            if self.view.lens[i] == 1:
                self.view.byte_ids[k[0]] = i
        for i in range(256):
            if self.view.byte_ids[i] < 0:
                raise ValueError(f"the vocabulary has no key for byte 0x{i:02x}")

    def __dealloc__(self):
        free(self._table)

    @property
    def n_keys(self):
        return self.view.n_keys

    def lookup(self, const uint8_t[::1] key):
        """Id of the key, or -1."""
        return bbpe_lookup(&self.view, &key[0] if key.shape[0] else NULL, key.shape[0])

    def encode(self, const uint8_t[::1] data, bint bug_compat=False):
        """UTF-8 bytes -> list of ids."""
        cdef size_t n = data.shape[0], cap = n + 16
        cdef int64_t count
        cdef int64_t* buf
        cdef const uint8_t* src = &data[0] if n else NULL
        cdef int flags = BBPE_BUG_COMPAT if bug_compat else 0
        while True:
            buf = <int64_t*>malloc(cap * sizeof(int64_t))
            if buf == NULL:
                raise MemoryError()
            with nogil:
                count = bbpe_encode_into(&self.view, src, n, buf, cap, flags)
            if count != BBPE_ERR_CAPACITY:
                break
            free(buf)
            cap = 4 * n + 16  # every id covers a byte, or a NUL padding a cut char (<= 3 per piece)
        try:
            return [buf[i] for i in range(count)]
        finally:
            free(buf)

    def encode_lines(self, const uint8_t[::1] data, bint last_para_end, bint bug_compat=False):
        """Encode the training texts of a block of whole lines (QUIRKS Q18).

        Every non-empty line is a text; a line followed by an empty line, or the block's
        last line when ``last_para_end``, is encoded with its LF. Returns two bytearrays of
        native int64: the length of each text's encoding, and all the ids.
        """
        cdef size_t n = data.shape[0], a = 0, b, i, lt = 0, nlf = 0
        cdef const uint8_t* src = &data[0] if n else NULL
        cdef const uint8_t* p
        cdef int flags = BBPE_BUG_COMPAT if bug_compat else 0
        cdef int64_t count = 0, out = 0, ntexts = 0
        for i in range(n):
            lt += src[i] == 60
            nlf += src[i] == 10
        # an id covers an input byte, or (bug_compat) a NUL padding a cut char: at most 3
        # per piece, and a text has at most 2 pieces per '<' plus one
        cdef size_t cap = n + 1 + 3 * (2 * lt + nlf + 2)
        ids = bytearray(cap * sizeof(int64_t))
        lengths = bytearray((nlf + 1) * sizeof(int64_t))
        cdef int64_t* dst = <int64_t*><char*>ids
        cdef int64_t* lens = <int64_t*><char*>lengths
        with nogil:
            while a < n:
                p = <const uint8_t*>memchr(src + a, 10, n - a)
                if p == NULL:
                    break  # a last line without LF: below
                b = p - src
                if b > a:
                    # the text keeps its LF where the paragraph ends
                    if (b + 1 < n and src[b + 1] == 10) or (b + 1 == n and last_para_end):
                        count = bbpe_encode_into(&self.view, src + a, b + 1 - a, dst + out, cap - out, flags)
                    else:
                        count = bbpe_encode_into(&self.view, src + a, b - a, dst + out, cap - out, flags)
                    if count < 0:
                        break
                    lens[ntexts] = count
                    ntexts += 1
                    out += count
                a = b + 1
        if a < n and count >= 0:  # the end of the file, without LF: add it if it ends a paragraph
            text = bytes(data[a:n]) + (b"\n" if last_para_end else b"")
            count = bbpe_encode_into(&self.view, <const uint8_t*>PyBytes_AS_STRING(text), len(text), dst + out,
                                     cap - out, flags)
            lens[ntexts] = count
            ntexts += 1
            out += count
        if count < 0:
            raise RuntimeError("encode_lines: output bound exceeded")  # cannot happen: see cap
        del ids[out * sizeof(int64_t):]
        del lengths[ntexts * sizeof(int64_t):]
        return lengths, ids

    def decode(self, const int64_t[::1] ids):
        """Array of int64 ids -> bytes. Raises UnknownIdError."""
        cdef size_t n = ids.shape[0], bad = 0
        cdef const int64_t* src = &ids[0] if n else NULL
        cdef int64_t size, written
        with nogil:
            size = bbpe_decoded_size(&self.view, src, n, &bad)
        if size == BBPE_ERR_UNKNOWN_ID:
            raise UnknownIdError(ids[bad], bad, self.view.n_keys)
        out = PyBytes_FromStringAndSize(NULL, size)
        cdef uint8_t* dst = <uint8_t*>PyBytes_AS_STRING(out)
        with nogil:
            written = bbpe_decode_into(&self.view, src, n, dst, size, &bad)
        return out
