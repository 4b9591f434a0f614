# cython: language_level=3
"""BPE's codec: byte-level BPE by merge ranks (tiktoken's encodings, HF tokenizers' ``BPE``
models), in C with the GIL released.

A text goes str -> UTF-8 (lone surrogates become U+FFFD, as tiktoken does) -> pieces (the
pre-tokenizer: a compiled scanner of bbpe/bpe/_pretokenize.pxd, a ``regex`` pattern, or the
whole text) -> each piece merged into ids. Merging is defined as tiktoken's
``byte_pair_merge`` and HF's ``Word::merge_all`` do it: start from the bytes, repeatedly merge
the adjacent pair of lowest rank, the leftmost on ties. With tiktoken's semantics (``merges``
None) the rank of merging two parts is the id of the token they make, if there is one; with
HF's, the pair's position in ``merges``.

Doing that literally is quadratic in a piece (tiktoken#195: a Chinese clause is one piece of
30-300 bytes), or n log n with a heap. This codec finds the same ids without replaying the
merges, by GitHub's backtracking search (github/rust-gems, crates/bpe): take the longest
token at the current position, keep it if it is *compatible* with the one before (merging the
two tokens' bytes alone gives those two tokens back), else try its next shorter prefix token,
and backtrack when none fits; a bit per position remembers where no encoding can continue, so
the search stays linear. Any sequence of tokens that are pairwise compatible is the BPE
encoding (it is unique), so the search is exact. Whether two tokens are compatible is decided
by unwinding their merge trees at the boundary between them (``_valid``): at most a few pair
lookups, no re-encoding.

That check holds when merging any token's bytes alone applies its merges in rank order, which
the constructor verifies: it computes each token's last merge (``bpe_node``) by that same
check, rank by rank, and for any token it cannot reach that way runs the literal heap merge;
if the heap reaches it after all, the vocabulary is not one the check understands, and every
piece goes through the heap (``_heap_piece``). The heap also takes pieces holding a byte that
is no token (HF: the unk token, or dropped), which the search cannot.

What it costs is memory latency and branches, per token, so the layout serves the search:

- the tokens are a double-array trie, and inside the codec a token *is* its trie slot: a
  slot is one 64-byte cache line holding the trie's base and check, the token's id, the rank
  and parts of its last merge, and its pair filters, so the walk that finds a token also
  brings everything the compatibility check needs of it (bbpe/bpe/_codec.pxd, bpe_node);
- a walk starting at a 2- or 3-byte char reads one entry of a table by code point
  (``bpe_char``) instead of two or three slots;
- most compatibility checks are settled by one AND of two 128-bit signatures (the right
  parts that any part along the first token's right edge has a pair with, against the
  parts along the second's left edge): no pair across the boundary, nothing to unwind;
- the pairs are grouped by left token, each group a small open-addressing table behind a
  64-bit filter of its right parts (most pairs asked for are none);
- a piece that is itself a token is found by the walk that gives the search its first token.

Measured on this design's way (zh-large, o200k_base): the pair table grouped by left token
and its filter took the search from 27 to 66 MB/s, one slot per token instead of id-indexed
tables 66 to 73, the signatures +19%, the table by code point +6%. A first pass of greedy
longest matches followed by a separate pass of checks was tried, and was slower.

Why this module is long: it is one compiled model, all of whose parts share the layout of
``bpe_model`` and inline into each other's loops (the trie and its build, the pair tables,
the search and the heap, the text conversions, the batch encoders), and Cython inlines only
within a module.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_CheckExact, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.list cimport PyList_New
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF
from libc.stdint cimport INT64_MAX, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc, realloc
from libc.string cimport memcpy, memset

from bbpe.bpe._pretokenize cimport (
    PIECES_CL100K,
    PIECES_GPT2,
    PIECES_LLAMA3,
    PIECES_O200K,
    PIECES_QWEN2,
    PIECES_REGEX,
    PIECES_WHITESPACE,
    piece_end,
    piece_is_gap,
)
from bbpe.common._cpython cimport (
    PyList_CheckExact,
    PyListObject,
    PyObject_GC_UnTrack,
    PyTupleObject,
    PyUnicode_CheckExact,
    PyUnicode_DecodeUTF8,
    _as_text,
    _own_copy,
    _put_utf8,
    _text,
)
from bbpe.common._fast cimport BatchModel, _id_array, _list_ids, _utf8_valid_prefix

import unicodedata

import numpy as np

from bbpe.common._fast import _plain_text

from ..errors import UnknownIdError

# the pre-tokenizers, for Python callers (the facade): bbpe/bpe/_pretokenize.pxd's ids
PIECES = {"regex": PIECES_REGEX, "gpt2": PIECES_GPT2, "cl100k": PIECES_CL100K, "o200k": PIECES_O200K,
          "qwen2": PIECES_QWEN2, "llama3": PIECES_LLAMA3, "whitespace": PIECES_WHITESPACE}

cdef size_t _NOGIL_UNITS = 4096  # below this, releasing the GIL costs more than the work
cdef int32_t _NEVER = -2         # bpe_node.rank where merging never makes a token


# ----------------------------------------------------------------------------- scratch memory

cdef int _reserve(void** p, size_t* cap, size_t need, size_t size, bint keep=False) noexcept nogil:
    """Make *p hold at least ``need`` items of ``size`` bytes (its contents kept if ``keep``)."""
    cdef size_t grown
    cdef void* q
    if need <= cap[0]:
        return 0
    grown = need if need > 2 * cap[0] else 2 * cap[0]
    if keep:
        q = realloc(p[0], grown * size)
    else:
        q = malloc(grown * size)
    if q == NULL:
        return BPE_ERR_MEMORY
    if not keep:
        free(p[0])
    p[0] = q
    cap[0] = grown
    return 0


cdef void _work_free(bpe_work* w) noexcept nogil:
    free(w.utf8)
    free(w.dead)
    free(w.sym)
    free(w.heap)
    free(w.spans)
    memset(w, 0, sizeof(bpe_work))


# ----------------------------------------------------------------------------- UTF-8

cdef inline int64_t _utf8_invalid(const uint8_t* s, size_t n) noexcept nogil:
    """The offset where s[0:n] stops being UTF-8 (the start of the bad sequence, as
    UnicodeDecodeError.start says it), or -1 when it is all UTF-8 (the shared check)."""
    cdef bint invalid
    cdef Py_ssize_t valid = _utf8_valid_prefix(s, <Py_ssize_t>n, &invalid)
    return -1 if <size_t>valid == n else valid


ctypedef fused wide_t:
    uint16_t
    uint32_t


cdef size_t _wide_to_utf8(const wide_t* u, size_t length, uint8_t* out, bint* surrogates) noexcept nogil:
    """A str's UCS-2/UCS-4 code units as UTF-8, surrogates as tiktoken leaves them
    (``text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")``): a high one
    followed by a low one is the char they encode, any other one is U+FFFD."""
    cdef size_t i = 0, o = 0
    cdef uint32_t c, d
    while i < length:
        c = u[i]
        if c < 0x80:
            out[o] = <uint8_t>c
            o += 1
            i += 1
            continue
        if 0xD800 <= c <= 0xDFFF:
            surrogates[0] = True
            d = u[i + 1] if i + 1 < length else 0
            if c <= 0xDBFF and 0xDC00 <= d <= 0xDFFF:
                c = 0x10000 + ((c - 0xD800) << 10) + (d - 0xDC00)
                i += 1
            else:
                c = 0xFFFD
        o = _put_utf8(out, o, c)
        i += 1
    return o


cdef size_t _latin1_to_utf8(const uint8_t* u, size_t length, uint8_t* out) noexcept nogil:
    cdef size_t i, o = 0
    for i in range(length):
        o = _put_utf8(out, o, u[i])
    return o


cdef inline size_t _text_cap(const _text* t) noexcept nogil:
    """Bytes of a text's UTF-8, at most (and so its ids, at most: one per byte)."""
    return t.length * (1 if t.kind == 0 else 2 if t.kind == 1 else 3 if t.kind == 2 else 4) + 1


cdef inline uint32_t _first_unit(const _text* t) noexcept nogil:
    """A text's first code unit (a byte of a bytes object); the text is not empty."""
    if t.kind == 0 or t.kind == 1:
        return (<const uint8_t*>t.data)[0]
    if t.kind == 2:
        return (<const uint16_t*>t.data)[0]
    return (<const uint32_t*>t.data)[0]


cdef int _text_utf8(const _text* t, bint is_bytes, bpe_work* w, const uint8_t** s, size_t* n,
                    bint* rewritten, bint prefix_space=False) noexcept nogil:
    """A text's UTF-8: its own bytes (checked when they are a bytes object) or written to
    w.utf8 from a str's code units. ``prefix_space`` (HF ByteLevel's add_prefix_space,
    pre_tokenizers/byte_level.rs): a space goes first when the text is not empty and does
    not start with one. ``rewritten`` is set when the UTF-8 is not the str's own text (lone
    surrogates replaced, a space put first): the regex path then reads the UTF-8."""
    cdef int64_t bad
    cdef size_t o = 0
    if prefix_space and (t.length == 0 or _first_unit(t) == 0x20):
        prefix_space = False
    if t.kind == 0 and is_bytes:
        bad = _utf8_invalid(<const uint8_t*>t.data, t.length)
        if bad >= 0:
            w.bad = bad
            return BPE_ERR_UTF8
    if t.kind == 0 and not prefix_space:  # bytes, or an ASCII str: its own bytes
        s[0] = <const uint8_t*>t.data
        n[0] = t.length
        return 0
    if _reserve(<void**>&w.utf8, &w.utf8_cap, _text_cap(t), 1) < 0:  # (_text_cap has room for the space)
        return BPE_ERR_MEMORY
    if prefix_space:
        w.utf8[0] = 0x20
        o = 1
        rewritten[0] = True
    if t.kind == 0:
        memcpy(w.utf8 + 1, t.data, t.length)
        n[0] = t.length + 1
    elif t.kind == 1:
        n[0] = o + _latin1_to_utf8(<const uint8_t*>t.data, t.length, w.utf8 + o)
    elif t.kind == 2:
        n[0] = o + _wide_to_utf8(<const uint16_t*>t.data, t.length, w.utf8 + o, rewritten)
    else:
        n[0] = o + _wide_to_utf8(<const uint32_t*>t.data, t.length, w.utf8 + o, rewritten)
    s[0] = w.utf8
    return 0


# ----------------------------------------------------------------------------- lookups

cdef inline int32_t _lookup(const bpe_model* m, const uint8_t* s, size_t n) noexcept nogil:
    """The slot of the bytes s[0:n] in the trie (a token's, or a prefix of tokens), or -1."""
    cdef int32_t cur = 0, nxt
    cdef size_t i
    for i in range(n):
        nxt = m.da[cur].base + s[i]
        if (m.da[nxt].check >> 1) != cur:
            return -1
        cur = nxt
    return cur


cdef inline size_t _walk(const bpe_model* m, const uint8_t* s, size_t pos, size_t n, int32_t* best,
                         size_t* end, int32_t* last) noexcept nogil:
    """The walk down the trie over s[pos:n]: *best gets the slot of the longest token that
    merging makes there (or -1), *end where it ends, *last the slot where the walk stopped;
    returns where that is. One slot read per byte (its check and base in one cache line),
    but for a 2- or 3-byte char at pos, one read of m.chars for all of it."""
    cdef const bpe_node* da = m.da
    cdef const bpe_char* ch
    cdef int32_t cur = 0, nxt, check, base
    cdef uint32_t cp
    cdef size_t i = pos
    cdef uint8_t c = s[pos]
    best[0] = -1
    end[0] = pos
    base = da[0].base
    if 0xC2 <= c < 0xF0:
        # only the UTF-8 of a code point (checked: the search takes any bytes) has its walk there
        if c < 0xE0:
            if pos + 2 <= n and (s[pos + 1] & 0xC0) == 0x80:
                cp = ((c & 0x1F) << 6) | (s[pos + 1] & 0x3F)
                i = pos + 2
        elif pos + 3 <= n and (s[pos + 1] & 0xC0) == 0x80 and (s[pos + 2] & 0xC0) == 0x80:
            cp = ((c & 0x0F) << 12) | ((s[pos + 1] & 0x3F) << 6) | (s[pos + 2] & 0x3F)
            if cp >= 0x800 and not (0xD800 <= cp <= 0xDFFF):
                i = pos + 3
        if i != pos:
            ch = m.chars + cp
            if ch.best >= 0:
                best[0] = ch.best
                end[0] = pos + <size_t>ch.best_len
            if ch.slot < 0:
                last[0] = -1
                return pos
            cur = ch.slot
            base = ch.base
    while i < n:
        nxt = base + s[i]
        check = da[nxt].check
        if (check >> 1) != cur:
            break
        cur = nxt
        base = da[nxt].base
        i += 1
        if check & 1:
            best[0] = cur
            end[0] = i
    last[0] = cur
    return i


cdef inline int32_t _longest(const bpe_model* m, const uint8_t* s, size_t pos, size_t n, size_t* length) noexcept nogil:
    """The slot of the longest token that merging makes at s[pos:n] (its length in *length),
    or -1."""
    cdef int32_t best, last
    cdef size_t end
    _walk(m, s, pos, n, &best, &end, &last)
    length[0] = end - pos
    return best


cdef inline uint32_t _pair_hash(int32_t right) noexcept nogil:
    cdef uint32_t x = <uint32_t>right * 0x9E3779B1U
    return x ^ (x >> 15)


cdef inline uint64_t _pair_bit(int32_t right) noexcept nogil:
    """The bit of a right part in its left part's filter (the hash's top bits; the group's
    slot takes its low ones)."""
    return (<uint64_t>1) << ((<uint32_t>right * 0x9E3779B1U) >> 26)


cdef inline const bpe_pair* _pair_get(const bpe_model* m, int32_t left, int32_t right) noexcept nogil:
    """The pair (left, right) (slots), or NULL. Each left token has a 64-bit filter of its
    right parts, which turns most lookups away (most pairs asked for are none), and its own
    small table of pairs, so its lookups stay in a few cache lines."""
    cdef const bpe_pair* group
    cdef uint32_t mask, i, pairs
    if (m.da[left].filter & _pair_bit(right)) == 0:
        return NULL
    pairs = m.aux[left].pairs
    group = m.pairs + (pairs >> 5)
    mask = ((<uint32_t>1) << (pairs & 31)) - 1
    i = _pair_hash(right) & mask
    while True:
        if group[i].right == right:
            return group + i
        if group[i].right < 0:
            return NULL
        i = (i + 1) & mask


cdef inline uint32_t _sig_hash(int32_t slot) noexcept nogil:
    """The bit (0..127) of a slot in bpe_node.right_sig and left_bits."""
    return (<uint32_t>slot * 0x85EBCA77U) >> 25


cdef inline bint _apart(const bpe_node* a, const bpe_node* b) noexcept nogil:
    """True when no part along a's right edge has a pair with a part along b's left edge:
    then a, b are compatible without unwinding anything (false: unwind, _valid)."""
    return ((a.right_sig[0] & b.left_bits[0]) | (a.right_sig[1] & b.left_bits[1])) == 0


cdef inline bint _valid(const bpe_model* m, int32_t t1, int32_t t2, int64_t limit) noexcept nogil:
    """Whether merging the bytes of t1 then t2 (slots) gives t1, t2 (counting only merges of
    rank below ``limit``). Unwinds the two merge trees at the boundary, latest merge first:
    while the parts on either side of it are a and b, a merge of (a, b) would win, unless
    the merge that ended that state came before it (the left one on a tie)."""
    cdef const bpe_pair* e
    cdef const bpe_node* a
    cdef const bpe_node* b
    while True:
        e = _pair_get(m, t1, t2)
        if e != NULL and e.rank < limit:
            return False
        a = m.da + t1
        b = m.da + t2
        if a.rank > b.rank:
            limit = a.rank  # t1 was made last: before, its right part met t2
            t1 = a.right
        elif b.rank < 0:
            return True  # two bytes: nothing left to unwind
        else:
            limit = <int64_t>b.rank + 1  # t2 was made last (on a tie, the right one is)
            t2 = b.left


# ----------------------------------------------------------------------------- merging a piece

cdef int64_t _search(const bpe_model* m, const uint8_t* s, size_t n, int32_t tok, size_t length, int32_t* dst,
                     uint64_t* dead) noexcept nogil:
    """The backtracking search over s[0:n] (n >= 1) from its longest first token ``tok`` (a
    slot, of ``length`` bytes); ``dead`` holds n + 1 cleared bits. Writes the ids to dst
    (room for n: slots while it searches); returns their count."""
    cdef int64_t count = 0, k
    cdef size_t pos = 0, end
    cdef int32_t shorter
    while True:
        end = pos + length
        if ((dead[end >> 6] >> (end & 63)) & 1) == 0 and (
                count == 0 or _apart(m.da + dst[count - 1], m.da + tok) or _valid(m, dst[count - 1], tok, INT64_MAX)):
            dst[count] = tok
            count += 1
            pos = end
            if pos == n:
                break
            tok = _longest(m, s, pos, n, &length)
            if tok < 0:
                return BPE_ERR_INTERNAL  # a byte that is no token: _piece sends those to the heap
            continue
        shorter = m.aux[tok].shorter
        if shorter >= 0:
            tok = shorter
            length = m.aux[tok].length
            continue
        # no token at pos continues the encoding: mark pos dead, take back the token before
        if count == 0:
            return BPE_ERR_INTERNAL  # cannot happen: a byte alone is always an encoding
        dead[pos >> 6] |= (<uint64_t>1) << (pos & 63)
        count -= 1
        tok = dst[count]
        length = m.aux[tok].length
        pos -= length
    for k in range(count):
        dst[k] = m.da[dst[k]].id
    return count


cdef inline void _heap_push(uint64_t* heap, size_t* size, uint64_t item) noexcept nogil:
    cdef size_t i = size[0], parent
    size[0] = i + 1
    while i > 0:
        parent = (i - 1) >> 1
        if heap[parent] <= item:
            break
        heap[i] = heap[parent]
        i = parent
    heap[i] = item


cdef inline uint64_t _heap_pop(uint64_t* heap, size_t* size) noexcept nogil:
    cdef uint64_t top = heap[0], last
    cdef size_t n = size[0] - 1, i = 0, child
    size[0] = n
    if n == 0:
        return top
    last = heap[n]
    while True:
        child = 2 * i + 1
        if child >= n:
            break
        if child + 1 < n and heap[child + 1] < heap[child]:
            child += 1
        if last <= heap[child]:
            break
        heap[i] = heap[child]
        i = child
    heap[i] = last
    return top


cdef inline int32_t _unit(const bpe_model* m, const uint8_t* s, size_t i, size_t n, size_t* length) noexcept nogil:
    """The slot of the token of the unit at s[i] (i < n: a byte, or with char_units the
    char), or -1 when it is no token; its length in bytes into ``length`` (a lead byte whose
    char is cut by n: the rest)."""
    cdef uint8_t c = s[i]
    cdef int32_t slot
    if not m.char_units or c < 0x80:
        length[0] = 1
        return m.byte_slot[c]
    length[0] = 2 if c < 0xE0 else 3 if c < 0xF0 else 4
    if i + length[0] > n:
        length[0] = n - i
        return -1
    slot = _lookup(m, s + i, length[0])
    return slot if slot >= 0 and m.da[slot].id >= 0 else -1


cdef inline bint _all_units_known(const bpe_model* m, const uint8_t* s, size_t n) noexcept nogil:
    """Whether every unit of s[0:n] is a token."""
    cdef size_t i = 0, length
    if m.all_bytes:
        return True
    while i < n:
        if _unit(m, s, i, n, &length) < 0:
            return False
        i += length
    return True


cdef int64_t _heap_piece(const bpe_model* m, const uint8_t* s, size_t n, int32_t* dst, bpe_work* w) noexcept nogil:
    """The merges replayed, as HF's Word::merge_all does them: a heap of (rank, position) over
    a linked list of parts, lowest rank first, then leftmost. A byte that is no token becomes
    the unk token (consecutive ones one, with fuse_unk) or is dropped (HF's merge_word); so
    does a char that is no token, with char_units. n log n. Writes ids to dst (room for n);
    returns their count."""
    cdef int32_t* sym
    cdef int32_t* prev
    cdef int32_t* nxt
    cdef size_t nsym = 0, i = 0, size = 0, length
    cdef int32_t t, pos, right, before
    cdef bint after_unk = False
    cdef const bpe_pair* e
    cdef uint64_t top
    cdef int64_t count = 0
    if _reserve(<void**>&w.sym, &w.sym_cap, 3 * n, sizeof(int32_t)) < 0:
        return BPE_ERR_MEMORY
    if _reserve(<void**>&w.heap, &w.heap_cap, 3 * n + 1, sizeof(uint64_t)) < 0:
        return BPE_ERR_MEMORY
    sym = w.sym
    prev = w.sym + n
    nxt = w.sym + 2 * n
    while i < n:
        t = _unit(m, s, i, n, &length)
        i += length
        if t >= 0:
            sym[nsym] = t
            nsym += 1
            after_unk = False
        elif m.unk_slot >= 0:
            if not (m.fuse_unk and after_unk):
                sym[nsym] = m.unk_slot
                nsym += 1
            after_unk = True
    if nsym == 0:
        return 0
    for i in range(nsym):
        prev[i] = <int32_t>i - 1
        nxt[i] = <int32_t>i + 1
    nxt[nsym - 1] = -1
    for i in range(nsym - 1):
        e = _pair_get(m, sym[i], sym[i + 1])
        if e != NULL:
            _heap_push(w.heap, &size, (<uint64_t>e.rank << 32) | i)
    while size:
        top = _heap_pop(w.heap, &size)
        pos = <int32_t>(top & 0xFFFFFFFFULL)
        if sym[pos] < 0:
            continue  # merged into its left neighbour
        right = nxt[pos]
        if right < 0:
            continue
        e = _pair_get(m, sym[pos], sym[right])
        if e == NULL or <uint64_t>e.rank != (top >> 32):
            continue  # a pair that is gone
        sym[pos] = m.pair_new[e - m.pairs]
        sym[right] = -1
        nxt[pos] = nxt[right]
        if nxt[right] >= 0:
            prev[nxt[right]] = pos
        before = prev[pos]
        if before >= 0:
            e = _pair_get(m, sym[before], sym[pos])
            if e != NULL:
                _heap_push(w.heap, &size, (<uint64_t>e.rank << 32) | <uint32_t>before)
        if nxt[pos] >= 0:
            e = _pair_get(m, sym[pos], sym[nxt[pos]])
            if e != NULL:
                _heap_push(w.heap, &size, (<uint64_t>e.rank << 32) | <uint32_t>pos)
    pos = 0
    while pos >= 0:
        dst[count] = m.da[sym[pos]].id
        count += 1
        pos = nxt[pos]
    return count


cdef int64_t _piece(const bpe_model* m, const uint8_t* s, size_t n, int32_t* dst, bpe_work* w) noexcept nogil:
    """The ids of one piece s[0:n] into dst (room for n); returns their count."""
    cdef int32_t best, last
    cdef size_t end, words
    cdef uint64_t* dead
    if n == 0:
        return 0
    # the walk that finds a piece that is a token, and the search's first token
    if _walk(m, s, 0, n, &best, &end, &last) == n and last >= 0 and (
            end == n or (m.ignore_merges and m.da[last].id >= 0)):
        dst[0] = m.da[last].id  # a token: merging makes it from its bytes, or ignore_merges
        return 1
    if not m.backtrack:
        return _heap_piece(m, s, n, dst, w)
    if not _all_units_known(m, s, n):
        return _heap_piece(m, s, n, dst, w)
    words = (n >> 6) + 1
    if words <= 32:
        dead = w.dead_small
    else:
        if _reserve(<void**>&w.dead, &w.dead_cap, words, sizeof(uint64_t)) < 0:
            return BPE_ERR_MEMORY
        dead = w.dead
    memset(dead, 0, words * sizeof(uint64_t))
    return _search(m, s, n, best, end, dst, dead)


cdef int64_t _merge_text(const bpe_model* m, const uint8_t* s, size_t n, const int64_t* spans, int64_t nspans,
                         int32_t* dst, bpe_work* w) noexcept nogil:
    """The ids of a UTF-8 text into dst (room for n): its pieces are ``spans`` (byte offsets,
    PIECES_REGEX), or the scanner's, or the whole text."""
    cdef int64_t out = 0, r, k
    cdef size_t start = 0, end
    if spans != NULL or m.pattern == PIECES_REGEX:  # (no match: no spans, NULL)
        for k in range(nspans):
            r = _piece(m, s + spans[2 * k], <size_t>(spans[2 * k + 1] - spans[2 * k]), dst + out, w)
            if r < 0:
                return r
            out += r
        return out
    if m.pattern == PIECES_WHOLE:
        return _piece(m, s, n, dst, w)
    while start < n:
        end = <size_t>piece_end(m.pattern, s, <Py_ssize_t>n, <Py_ssize_t>start)
        # (only HF's Whitespace has gaps: no call across modules per piece for the others)
        if m.pattern != PIECES_WHITESPACE or not piece_is_gap(m.pattern, s, <Py_ssize_t>start):
            r = _piece(m, s + start, end - start, dst + out, w)
            if r < 0:
                return r
            out += r
        start = end
    return out


cdef int64_t _encode_text(const bpe_model* m, const _text* t, bint is_bytes, int32_t* dst,
                          bpe_work* w) noexcept nogil:
    """A text (not PIECES_REGEX) into dst (room: _text_cap)."""
    cdef const uint8_t* s
    cdef size_t n
    cdef bint rewritten = False
    cdef int r = _text_utf8(t, is_bytes, w, &s, &n, &rewritten, m.prefix_space)
    if r < 0:
        return r
    return _merge_text(m, s, n, NULL, 0, dst, w)


cdef inline size_t _advance(const uint8_t* s, size_t pos, Py_ssize_t chars) noexcept nogil:
    """The byte offset ``chars`` chars after ``pos`` in valid UTF-8."""
    cdef uint8_t c
    while chars > 0:
        c = s[pos]
        pos += 1 if c < 0x80 else 2 if c < 0xE0 else 3 if c < 0xF0 else 4
        chars -= 1
    return pos


# ----------------------------------------------------------------------------- normalizing

def _nfc(data):
    """HF's NFC normalizer (normalizers/unicode.rs) on one text: a str composed, UTF-8 bytes
    decoded, composed and encoded again (bytes that are not UTF-8 are left for the encoder to
    report); any other object as it is (the encoder names its type)."""
    if PyUnicode_CheckExact(data):
        return data if unicodedata.is_normalized("NFC", data) else unicodedata.normalize("NFC", data)
    if PyBytes_CheckExact(data):
        try:
            text = (<bytes>data).decode("utf-8")
        except UnicodeDecodeError:
            return data
        return data if unicodedata.is_normalized("NFC", text) else unicodedata.normalize("NFC", text).encode("utf-8")
    return data


cdef list _nfc_list(list texts, Py_ssize_t start, object stop):
    """``texts[start:stop]``, each text NFC (``_nfc``), in a list of the codec's own."""
    return _own_copy([_nfc(text) for text in texts[start:stop]], 0, None)


# ----------------------------------------------------------------------------- building

cdef struct _dab:  # the double-array trie, while it is built
    bpe_node* nodes
    int32_t* nf    # the free slots, a doubly linked list
    int32_t* pf
    int64_t cap
    int64_t head
    int64_t tail
    int64_t top    # one past the highest slot taken
    int64_t max_base
    const uint8_t* data
    const uint32_t* off
    int32_t* idx
    int32_t* tmp
    int32_t* counts
    int32_t* slot_of


cdef int _dab_grow(_dab* b, int64_t cap) except -1:
    cdef int64_t i
    cdef void* p
    if cap >= (<int64_t>1 << 30) - 512:
        raise ValueError("too many tokens for the trie")
    p = realloc(b.nodes, cap * sizeof(bpe_node))
    if p == NULL:
        raise MemoryError()
    b.nodes = <bpe_node*>p
    p = realloc(b.nf, cap * sizeof(int32_t))
    if p == NULL:
        raise MemoryError()
    b.nf = <int32_t*>p
    p = realloc(b.pf, cap * sizeof(int32_t))
    if p == NULL:
        raise MemoryError()
    b.pf = <int32_t*>p
    for i in range(b.cap, cap):
        b.nodes[i].base = 0
        b.nodes[i].check = -1
        b.nodes[i].id = -1
        b.nodes[i].rank = _NEVER
        b.nodes[i].left = b.nodes[i].right = <int32_t>i
        b.nodes[i].filter = 0
        b.nodes[i].right_sig[0] = b.nodes[i].right_sig[1] = 0
        b.nodes[i].left_bits[0] = b.nodes[i].left_bits[1] = 0
        b.nf[i] = <int32_t>(i + 1)
        b.pf[i] = <int32_t>(i - 1)
    b.nf[cap - 1] = -1
    b.pf[b.cap] = <int32_t>b.tail
    if b.tail >= 0:
        b.nf[b.tail] = <int32_t>b.cap
    else:
        b.head = b.cap
    b.tail = cap - 1
    b.cap = cap
    return 0


cdef inline void _dab_take(_dab* b, int64_t p) noexcept:
    cdef int32_t before = b.pf[p], after = b.nf[p]
    if before >= 0:
        b.nf[before] = after
    else:
        b.head = after
    if after >= 0:
        b.pf[after] = before
    else:
        b.tail = before
    if p + 1 > b.top:
        b.top = p + 1


cdef int64_t _dab_base(_dab* b, const uint8_t* labels, int nl) except -1:
    """A base where every label's slot is free: the first that fits, from the free list."""
    cdef int64_t p = b.head, base
    cdef int j
    cdef bint ok
    while True:
        if p < 0:
            p = b.cap
            _dab_grow(b, 2 * b.cap)
        base = p - labels[0]
        if base >= 1:
            if base + 256 >= b.cap:
                _dab_grow(b, 2 * b.cap if 2 * b.cap > base + 257 else base + 257)
            ok = True
            for j in range(1, nl):
                if b.nodes[base + labels[j]].check != -1:
                    ok = False
                    break
            if ok:
                return base
        p = b.nf[p]


cdef int _dab_node(_dab* b, int64_t lo, int64_t hi, int64_t depth, int32_t node) except -1:
    """Place the children of ``node``, whose tokens are idx[lo:hi] (they share their first
    ``depth`` bytes), then theirs (the tokens sorted by bytes on the way: an MSD radix sort)."""
    cdef int32_t* cnt = b.counts + 256 * depth
    cdef uint8_t labels[256]
    cdef int nl = 0, j, k
    cdef int64_t i, a, base, start, end
    cdef int32_t t, term = -1
    cdef uint8_t c
    for i in range(lo, hi):
        t = b.idx[i]
        if b.off[t + 1] - b.off[t] == depth:
            if term >= 0:
                raise ValueError(f"tokens {term} and {t} are the same bytes: "
                                 f"{PyBytes_FromStringAndSize(<const char*>b.data + b.off[t], depth)!r}")
            term = t
        else:
            c = b.data[b.off[t] + depth]
            if cnt[c] == 0:
                labels[nl] = c
                nl += 1
            cnt[c] += 1
    b.nodes[node].id = term
    if term >= 0:
        b.slot_of[term] = node
    if nl == 0:
        return 0
    for j in range(1, nl):  # insertion sort: few labels, but at the root
        c = labels[j]
        k = j - 1
        while k >= 0 and labels[k] > c:
            labels[k + 1] = labels[k]
            k -= 1
        labels[k + 1] = c
    base = _dab_base(b, labels, nl)
    b.nodes[node].base = <int32_t>base
    if base > b.max_base:
        b.max_base = base
    for j in range(nl):
        _dab_take(b, base + labels[j])
        b.nodes[base + labels[j]].check = node << 1  # the bits of the tokens merging makes: _build_info
    a = lo
    for j in range(nl):
        k = cnt[labels[j]]
        cnt[labels[j]] = <int32_t>a
        a += k
    for i in range(lo, hi):
        t = b.idx[i]
        if b.off[t + 1] - b.off[t] > depth:
            c = b.data[b.off[t] + depth]
            b.tmp[cnt[c]] = t
            cnt[c] += 1
    memcpy(b.idx + lo, b.tmp + lo, (a - lo) * sizeof(int32_t))
    start = lo
    for j in range(nl):
        end = cnt[labels[j]]
        _dab_node(b, start, end, depth + 1, <int32_t>(base + labels[j]))
        start = end
    for j in range(nl):
        cnt[labels[j]] = 0
    return 0


# ----------------------------------------------------------------------------- Python level

cdef bint _is_one_char(const uint8_t* s, size_t n) noexcept nogil:
    """Whether s[0:n] is the UTF-8 of one char (a lead byte of that length, then
    continuation bytes)."""
    cdef size_t i
    if n == 0 or n > 4 or (n == 1) != (s[0] < 0x80):
        return False
    if n > 1 and n != (2 if 0xC0 <= s[0] < 0xE0 else 3 if 0xE0 <= s[0] < 0xF0 else 4 if 0xF0 <= s[0] < 0xF8 else 0):
        return False
    for i in range(1, n):
        if (s[i] & 0xC0) != 0x80:
            return False
    return True


cdef class BpeCodec(BatchModel):
    """BPE's compiled model: byte-level BPE by merge ranks, ids identical to tiktoken's and
    HF tokenizers' (``BPE`` with ByteLevel pre-tokenization).

    ``BpeCodec(tokens, merges=None, ignore_merges=None, pattern=None, keep_gaps=False,
    unk_id=-1, fuse_unk=False)``:

    - ``tokens``: the bytes of each id, 0 .. n-1 (distinct, not empty);
    - ``merges``: None for tiktoken's ranks (merging two parts gives the token of their
      bytes, if any, with that token's id as rank), or (left id, right id) pairs in rank
      order, HF's (the result is the token of their bytes together: ValueError when there is
      none; a pair given twice has its last rank, as in HF);
    - ``ignore_merges``: a piece that is itself a token is that token (tiktoken: always, the
      default without ``merges``; HF: the model's ``ignore_merges``, the default with them);
    - ``pattern``: the pre-tokenizer, a ``PIECES`` id (bbpe/bpe/_pretokenize.pxd), a compiled
      ``regex`` pattern (PIECES_REGEX: its matches are the pieces, slower), or None (the whole
      text is one piece); ``keep_gaps``: with a pattern object, the text between matches is a
      piece too (HF's Split "isolated") instead of dropped (tiktoken);
    - ``unk_id``, ``fuse_unk``: HF, for a byte that is no token: it becomes ``unk_id``
      (consecutive ones one unk_id with ``fuse_unk``), or is dropped without (-1);
    - ``prefix_space``: HF ByteLevel's ``add_prefix_space``: a text that is not empty and
      does not start with a space is encoded with one put first;
    - ``char_units``: merging starts from chars, not bytes (HF's BPE without ByteLevel: its
      vocabulary holds chars): a token that is one char is there from the start, and a char
      that is no token is unknown (``unk_id``, or dropped) as a byte is otherwise;
    - ``normalizer``: None, or ``"NFC"`` (HF's NFC normalizer: each text is composed before
      it is split; under the GIL, before the encoding).

    >>> c = BpeCodec([bytes([b]) for b in range(256)] + [b"ab"])
    >>> c.encode("abc"), c.decode([256, 99])
    ([256, 99], b'abc')
    """

    def __cinit__(self, tokens, merges=None, ignore_merges=None, pattern=None, bint keep_gaps=False,
                  int unk_id=-1, bint fuse_unk=False, bint prefix_space=False, normalizer=None,
                  bint char_units=False):
        cdef Py_ssize_t n = len(tokens), i
        cdef uint64_t total = 0
        cdef object item
        cdef int64_t size
        if n == 0:
            raise ValueError("no tokens")
        if n >= (1 << 30):
            raise ValueError(f"{n} tokens: too many")
        self._tok_off = <uint32_t*>malloc((n + 1) * sizeof(uint32_t))
        self._slot_of = <int32_t*>malloc(n * sizeof(int32_t))
        if self._tok_off == NULL or self._slot_of == NULL:
            raise MemoryError()
        self._tok_off[0] = 0
        for i in range(n):
            item = tokens[i]
            if not PyBytes_CheckExact(item):
                raise TypeError(f"tokens[{i}] must be bytes, got {type(item).__name__}")
            size = PyBytes_GET_SIZE(item)
            if size == 0:
                raise ValueError(f"tokens[{i}] is empty")
            total += <uint64_t>size
            if total >= 0xFFFFFF00ULL:
                raise ValueError("the tokens hold more than 4 GB")
            self._tok_off[i + 1] = <uint32_t>total
        self._tok_data = b"".join(tokens)
        self.m.n_keys = n
        self.m.tok_off = self._tok_off
        self.m.tok_bytes = <const uint8_t*>PyBytes_AS_STRING(self._tok_data)
        self.m.slot_of = self._slot_of
        if unk_id < -1 or unk_id >= n:
            raise ValueError(f"unk_id {unk_id} is not an id (0..{n - 1}) nor -1")
        self.m.fuse_unk = fuse_unk
        self.m.keep_gaps = keep_gaps
        self.m.prefix_space = prefix_space
        self.m.char_units = char_units
        if normalizer not in (None, "NFC"):
            raise ValueError(f"normalizer must be None or 'NFC', got {normalizer!r}")
        self._normalizer = normalizer
        self._ignore_arg = (merges is None) if ignore_merges is None else bool(ignore_merges)
        self.m.ignore_merges = self._ignore_arg
        self._pattern = pattern
        if pattern is None:
            self.m.pattern = PIECES_WHOLE
        elif isinstance(pattern, int):
            if pattern not in (PIECES_GPT2, PIECES_CL100K, PIECES_O200K, PIECES_QWEN2, PIECES_LLAMA3,
                               PIECES_WHITESPACE):
                raise ValueError(f"pattern {pattern} is no compiled pre-tokenizer "
                                 f"(PIECES_REGEX takes the compiled pattern itself)")
            self.m.pattern = pattern
        else:
            if not hasattr(pattern, "finditer"):
                raise TypeError(f"pattern must be a PIECES id, a compiled pattern or None, "
                                f"got {type(pattern).__name__}")
            self.m.pattern = PIECES_REGEX
            self._regex = pattern
        self._build_trie()
        self.m.unk_slot = self._slot_of[unk_id] if unk_id >= 0 else -1
        self._build_pairs(merges)
        self._build_info()
        self._build_chars()
        self._ints = tuple(range(n))

    cdef _build_trie(self):
        cdef _dab b
        cdef int64_t n = self.m.n_keys, i, maxlen = 0, size
        cdef uint8_t byte
        cdef int32_t slot
        memset(&b, 0, sizeof(_dab))
        b.head = b.tail = -1
        b.data = self.m.tok_bytes
        b.off = self.m.tok_off
        b.slot_of = self._slot_of
        try:
            for i in range(n):
                if self._tok_off[i + 1] - self._tok_off[i] > maxlen:
                    maxlen = self._tok_off[i + 1] - self._tok_off[i]
            b.idx = <int32_t*>malloc(n * sizeof(int32_t))
            b.tmp = <int32_t*>malloc(n * sizeof(int32_t))
            b.counts = <int32_t*>calloc((maxlen + 1) * 256, sizeof(int32_t))
            if b.idx == NULL or b.tmp == NULL or b.counts == NULL:
                raise MemoryError()
            for i in range(n):
                b.idx[i] = <int32_t>i
            _dab_grow(&b, self._tok_off[n] + 1024)
            _dab_take(&b, 0)
            b.nodes[0].check = -2  # the root: no slot's parent is -2 >> 1
            _dab_node(&b, 0, n, 0, 0)
            size = b.top if b.top > b.max_base + 256 else b.max_base + 256
            if size > b.cap:
                _dab_grow(&b, size)
            self._da = <bpe_node*>realloc(b.nodes, size * sizeof(bpe_node))
            if self._da == NULL:
                self._da = b.nodes
            b.nodes = NULL
            self._da_size = size
            self.m.da = self._da
            self._aux = <bpe_aux*>calloc(size, sizeof(bpe_aux))
            if self._aux == NULL:
                raise MemoryError()
            self.m.aux = self._aux
            for i in range(size):
                self._aux[i].shorter = -1
            for i in range(n):
                self._aux[self._slot_of[i]].length = <int32_t>(self._tok_off[i + 1] - self._tok_off[i])
            self.m.all_bytes = True
            for i in range(256):
                byte = <uint8_t>i
                slot = _lookup(&self.m, &byte, 1)
                self.m.byte_slot[i] = slot if slot >= 0 and self._da[slot].id >= 0 else -1
                if self.m.byte_slot[i] < 0:
                    self.m.all_bytes = False
                else:
                    self._da[slot].rank = -1  # a byte: there from the start
            if self.m.char_units:
                self.m.all_bytes = False  # (whether a char is a token is asked char by char)
                for i in range(n):  # a char: there from the start
                    if _is_one_char(self.m.tok_bytes + self._tok_off[i], self._tok_off[i + 1] - self._tok_off[i]):
                        self._da[self._slot_of[i]].rank = -1
        finally:
            free(b.nodes)
            free(b.nf)
            free(b.pf)
            free(b.idx)
            free(b.tmp)
            free(b.counts)

    cdef _build_pairs(self, merges):
        """The pairs (as slots), in rank order; with HF merges also self._merges (int32, (m, 2))."""
        cdef int64_t n = self.m.n_keys, count = 0, cap = 0, k, nm, u, left, right, la, lb, depth
        cdef int32_t* quads = NULL  # (left, right, what they make, rank): slots but the rank
        cdef int32_t* grown
        cdef int32_t cur, slot
        cdef const uint8_t* tb = self.m.tok_bytes
        cdef const uint32_t* off = self._tok_off
        cdef bytearray joined = bytearray()
        cdef int32_t[:, ::1] mv
        try:
            if merges is None:
                cap = 2 * n + 16
                quads = <int32_t*>malloc(cap * 4 * sizeof(int32_t))
                if quads == NULL:
                    raise MemoryError()
                for u in range(n):  # every split of a token into two tokens
                    if off[u + 1] - off[u] < 2:
                        continue
                    cur = 0
                    for depth in range(1, off[u + 1] - off[u]):
                        cur = self._da[cur].base + tb[off[u] + depth - 1]  # a token's prefix is a trie node
                        if self._da[cur].id < 0:
                            continue
                        slot = _lookup(&self.m, tb + off[u] + depth, off[u + 1] - off[u] - depth)
                        if slot < 0 or self._da[slot].id < 0:
                            continue
                        if count == cap:
                            cap *= 2
                            grown = <int32_t*>realloc(quads, cap * 4 * sizeof(int32_t))
                            if grown == NULL:
                                raise MemoryError()
                            quads = grown
                        quads[4 * count] = cur
                        quads[4 * count + 1] = slot
                        quads[4 * count + 2] = self._slot_of[u]
                        quads[4 * count + 3] = <int32_t>u
                        count += 1
                self._merges = None
            else:
                if isinstance(merges, np.ndarray):
                    arr = np.ascontiguousarray(merges, dtype=np.int64).reshape(-1, 2)
                else:
                    arr = np.array([(a, b) for a, b in merges], dtype=np.int64).reshape(-1, 2)
                nm = arr.shape[0]
                if nm >= (1 << 31) - 1:
                    raise ValueError(f"{nm} merges: too many")
                if nm and (arr.min() < 0 or arr.max() >= n):
                    bad = int(np.flatnonzero((arr < 0).any(axis=1) | (arr >= n).any(axis=1))[0])
                    raise ValueError(f"merge {bad}: ({arr[bad, 0]}, {arr[bad, 1]}): an id that is not in 0..{n - 1}")
                self._merges = arr.astype(np.int32)
                mv = self._merges
                quads = <int32_t*>malloc((nm + 1) * 4 * sizeof(int32_t))
                if quads == NULL:
                    raise MemoryError()
                for k in range(nm):
                    left = mv[k, 0]
                    right = mv[k, 1]
                    la = off[left + 1] - off[left]
                    lb = off[right + 1] - off[right]
                    if <int64_t>len(joined) < la + lb:
                        joined.extend(bytes(la + lb - len(joined)))
                    memcpy(<char*>joined, tb + off[left], la)
                    memcpy((<char*>joined) + la, tb + off[right], lb)
                    slot = _lookup(&self.m, <const uint8_t*><char*>joined, la + lb)
                    if slot < 0 or self._da[slot].id < 0:
                        raise ValueError(f"merge {k}: {self.token_bytes(left)!r} + {self.token_bytes(right)!r} "
                                         f"(ids {left}, {right}) makes "
                                         f"{self.token_bytes(left) + self.token_bytes(right)!r}, which is no token")
                    quads[4 * count] = self._slot_of[left]
                    quads[4 * count + 1] = self._slot_of[right]
                    quads[4 * count + 2] = slot
                    quads[4 * count + 3] = <int32_t>k
                    count += 1
            self._build_groups(quads, count)
            self._build_canon(quads, count)
        finally:
            free(quads)

    cdef _build_groups(self, const int32_t* quads, int64_t count):
        """The pairs, grouped by left token: each group a table of at least twice its pairs
        (a power of two) after a shared empty slot 0; and each left token's filter."""
        cdef int64_t size = self._da_size, k, i, total = 1, bits
        cdef uint32_t slot, mask, start
        cdef int32_t left, right
        cdef uint32_t* counts = <uint32_t*>calloc(size, sizeof(uint32_t))
        if counts == NULL:
            raise MemoryError()
        try:
            for k in range(count):
                counts[quads[4 * k]] += 1
            for i in range(size):
                if counts[i] == 0:
                    continue  # aux.pairs 0: the empty slot
                bits = 1
                while (<uint64_t>1 << bits) < 2 * <uint64_t>counts[i]:
                    bits += 1
                if total >= (1 << 27) - (1 << bits):
                    raise ValueError("too many merges for the pair table")
                self._aux[i].pairs = <uint32_t>(total << 5) | <uint32_t>bits
                total += 1 << bits
            self._pairs = <bpe_pair*>malloc(total * sizeof(bpe_pair))
            self._pair_new = <int32_t*>malloc(total * sizeof(int32_t))
            if self._pairs == NULL or self._pair_new == NULL:
                raise MemoryError()
            memset(self._pairs, 0xFF, total * sizeof(bpe_pair))
            self.m.pairs = self._pairs
            self.m.pair_new = self._pair_new
            for k in range(count):
                left = quads[4 * k]
                right = quads[4 * k + 1]
                start = self._aux[left].pairs >> 5
                mask = ((<uint32_t>1) << (self._aux[left].pairs & 31)) - 1
                slot = _pair_hash(right) & mask
                while self._pairs[start + slot].right >= 0 and self._pairs[start + slot].right != right:
                    slot = (slot + 1) & mask
                slot += start
                self._da[left].filter |= _pair_bit(right)
                self._pairs[slot].right = right  # a pair given again: its last rank (HF's map)
                self._pairs[slot].rank = quads[4 * k + 3]
                self._pair_new[slot] = quads[4 * k + 2]
        finally:
            free(counts)

    cdef _build_canon(self, const int32_t* quads, int64_t count):
        """Each token's last merge when its bytes are merged alone, rank by rank: a pair
        (left, right) of tokens made before it makes it when they stay apart until then."""
        cdef int64_t k
        cdef int32_t left, right, u, rank
        cdef const bpe_pair* e
        cdef bpe_node* da = self._da
        for k in range(count):
            left = quads[4 * k]
            right = quads[4 * k + 1]
            u = quads[4 * k + 2]
            rank = quads[4 * k + 3]
            if da[u].rank != _NEVER:
                continue
            e = _pair_get(&self.m, left, right)
            if e.rank != rank:
                continue  # HF: a pair given again later has that later rank
            if da[left].rank == _NEVER or da[right].rank == _NEVER:
                continue
            if da[left].rank >= rank or da[right].rank >= rank:
                continue  # made after this merge: not in rank order
            if _valid(&self.m, left, right, rank):
                da[u].rank = rank
                da[u].left = left
                da[u].right = right

    cdef _build_info(self):
        """Whether the search is exact here (every token that merging makes was found by
        _build_canon), the trie's bits of the tokens merging makes, and each one's next
        shorter prefix."""
        cdef int64_t n = self.m.n_keys, u, i, length, count
        cdef int32_t cur, best, slot
        cdef bpe_work w
        cdef int32_t* out = NULL
        cdef bpe_node* da = self._da
        memset(&w, 0, sizeof(bpe_work))
        self.m.backtrack = True
        try:
            for u in range(n):
                slot = self._slot_of[u]
                length = self._tok_off[u + 1] - self._tok_off[u]
                if da[slot].rank != _NEVER or length < 2:
                    continue
                if not _all_units_known(&self.m, self.m.tok_bytes + self._tok_off[u], length):
                    continue  # pieces holding such units go to the heap anyway
                free(out)
                out = <int32_t*>malloc(length * sizeof(int32_t))
                if out == NULL:
                    raise MemoryError()
                count = _heap_piece(&self.m, self.m.tok_bytes + self._tok_off[u], length, out, &w)
                if count == BPE_ERR_MEMORY:
                    raise MemoryError()
                if count == 1 and out[0] == u:
                    self.m.backtrack = False  # merging makes it, out of rank order
                    break
            for u in range(n):  # the bits of the tokens that merging makes
                slot = self._slot_of[u]
                if da[slot].rank != _NEVER:
                    da[slot].check |= 1
            for u in range(n):
                slot = self._slot_of[u]
                length = self._tok_off[u + 1] - self._tok_off[u]
                cur = 0
                best = -1
                for i in range(length - 1):
                    cur = da[cur].base + self.m.tok_bytes[self._tok_off[u] + i]
                    if da[cur].check & 1:
                        best = cur
                self._aux[slot].shorter = best
            self._build_sigs()
        finally:
            free(out)
            _work_free(&w)

    cdef _build_sigs(self):
        """bpe_node.right_sig and left_bits (see the .pxd): the pairs' right parts by left
        part, then each token's edges."""
        cdef int64_t size = self._da_size, i, k, start, group
        cdef uint64_t* partners = <uint64_t*>calloc(2 * size, sizeof(uint64_t))
        cdef int32_t right, t
        cdef uint32_t h
        cdef bpe_node* da = self._da
        if partners == NULL:
            raise MemoryError()
        try:
            for i in range(size):
                if self._aux[i].pairs == 0:
                    continue
                start = self._aux[i].pairs >> 5
                group = (<int64_t>1) << (self._aux[i].pairs & 31)
                for k in range(start, start + group):
                    right = self._pairs[k].right
                    if right >= 0:
                        h = _sig_hash(right)
                        partners[2 * i + (h >> 6)] |= (<uint64_t>1) << (h & 63)
            for i in range(size):
                if da[i].id < 0 or da[i].rank == _NEVER:
                    continue
                t = <int32_t>i
                while True:  # the right edge
                    da[i].right_sig[0] |= partners[2 * t]
                    da[i].right_sig[1] |= partners[2 * t + 1]
                    if da[t].rank < 0:
                        break
                    t = da[t].right
                t = <int32_t>i
                while True:  # the left edge
                    h = _sig_hash(t)
                    da[i].left_bits[h >> 6] |= (<uint64_t>1) << (h & 63)
                    if da[t].rank < 0:
                        break
                    t = da[t].left
        finally:
            free(partners)

    cdef _build_chars(self):
        """m.chars: for each code point U+0080..U+FFFF (but the surrogates), the walk over its
        UTF-8 bytes from the root."""
        cdef uint8_t u[4]
        cdef int32_t cp, cur, nxt, k, length
        cdef bpe_char* ch
        cdef bpe_node* da = self._da
        self._chars = <bpe_char*>malloc(65536 * sizeof(bpe_char))
        if self._chars == NULL:
            raise MemoryError()
        self.m.chars = self._chars
        for cp in range(65536):
            ch = self._chars + cp
            ch.slot = -1
            ch.base = 0
            ch.best = -1
            ch.best_len = 0
            if cp < 0x80 or 0xD800 <= cp <= 0xDFFF:
                continue
            length = <int32_t>_put_utf8(u, 0, cp)
            cur = 0
            for k in range(length):
                nxt = da[cur].base + u[k]
                if (da[nxt].check >> 1) != cur:
                    cur = -1
                    break
                cur = nxt
                if da[cur].check & 1:
                    ch.best = cur
                    ch.best_len = k + 1
            if cur >= 0:
                ch.slot = cur
                ch.base = da[cur].base

    def __dealloc__(self):
        free(self._chars)
        free(self._tok_off)
        free(self._slot_of)
        free(self._da)
        free(self._aux)
        free(self._pairs)
        free(self._pair_new)

    # ------------------------------------------------------------------ the vocabulary

    @property
    def n_keys(self):
        return self.m.n_keys

    @property
    def backtracking(self):
        """Whether pieces go through the backtracking search (else the heap: a vocabulary
        whose merges the search's check does not understand)."""
        return bool(self.m.backtrack)

    def token_bytes(self, Py_ssize_t i):
        """The bytes of id ``i``; IndexError for an id that is not in the vocabulary."""
        if i < 0 or i >= self.m.n_keys:
            raise IndexError(f"id {i} is not in the vocabulary (ids 0..{self.m.n_keys - 1})")
        return PyBytes_FromStringAndSize(<const char*>self.m.tok_bytes + self._tok_off[i],
                                         self._tok_off[i + 1] - self._tok_off[i])

    def tokens(self):
        """The bytes of every id, in id order (what the constructor got)."""
        return [self.token_bytes(i) for i in range(self.m.n_keys)]

    def lookup(self, const uint8_t[::1] key):
        """The id of a token's bytes, or -1."""
        cdef int32_t slot
        if key.shape[0] == 0:
            return -1
        slot = _lookup(&self.m, &key[0], key.shape[0])
        return self._da[slot].id if slot >= 0 else -1

    def __reduce__(self):
        # the tokens and merges, not the tables: loading rebuilds them
        return (BpeCodec, (self.tokens(), self._merges, self._ignore_arg, self._pattern, bool(self.m.keep_gaps),
                           self._da[self.m.unk_slot].id if self.m.unk_slot >= 0 else -1, bool(self.m.fuse_unk),
                           bool(self.m.prefix_space), self._normalizer))

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
        # ints only: in no reference cycle, so the collector need not track it (codec.Model's _as_list)
        PyObject_GC_UnTrack(<PyObject*>out)
        return out

    cdef int64_t _spans(self, object data, bint from_utf8, const uint8_t* s, size_t n, bpe_work* w) except -1:
        """PIECES_REGEX: the byte offsets of the pieces into w.spans; returns their count.
        The matches are the pieces; with keep_gaps, so is the text between them."""
        cdef object text = PyUnicode_DecodeUTF8(<const char*>s, n, NULL) if from_utf8 else data
        cdef Py_ssize_t a, b, last = 0
        cdef _cursor c
        c.at_char = 0
        c.at_byte = 0
        c.count = 0
        c.ascii = <size_t>len(text) == n
        for match in self._regex.finditer(text):
            a, b = match.span()
            if self.m.keep_gaps and a > last:
                _add_span(&c, s, w, last, a)
            if b > a:
                _add_span(&c, s, w, a, b)
            last = b
        if self.m.keep_gaps and last < len(text):
            _add_span(&c, s, w, last, len(text))
        return c.count

    cdef int64_t _encode_one(self, object data, int32_t* dst, bpe_work* w) except -2:
        """One text (exactly a str or bytes) into dst (room: _text_cap); returns the count."""
        cdef _text t
        cdef const uint8_t* s
        cdef size_t n
        cdef bint surrogates = False, is_bytes = PyBytes_CheckExact(data)
        cdef int64_t r, nspans
        _as_text(data, &t)
        if self.m.pattern != PIECES_REGEX:
            if t.length < _NOGIL_UNITS:
                r = _encode_text(&self.m, &t, is_bytes, dst, w)
            else:
                with nogil:
                    r = _encode_text(&self.m, &t, is_bytes, dst, w)
        else:
            r = _text_utf8(&t, is_bytes, w, &s, &n, &surrogates, self.m.prefix_space)
            if r == 0:
                nspans = self._spans(data, is_bytes or surrogates, s, n, w)
                if n < _NOGIL_UNITS:
                    r = _merge_text(&self.m, s, n, w.spans, nspans, dst, w)
                else:
                    with nogil:
                        r = _merge_text(&self.m, s, n, w.spans, nspans, dst, w)
        if r < 0:
            _raise(r, w, "")
        return r

    def encode(self, data, int flags=0):
        """A str (UTF-8; lone surrogates become U+FFFD, as in tiktoken) or bytes-like (UTF-8:
        ValueError naming the offset where it is not) -> list of ids. ``flags``: none yet."""
        return self._encode_list(data, flags)

    cdef object _text_of(self, object data):
        """A text as the encoder takes it: exactly a str or bytes (``_plain_text``), NFC
        with the ``"NFC"`` normalizer."""
        if not (PyBytes_CheckExact(data) or PyUnicode_CheckExact(data)):
            data = _plain_text(data, "text")
        return data if self._normalizer is None else _nfc(data)

    cdef list _encode_list(self, object data, int flags):
        cdef _text t
        cdef int64_t count
        cdef int32_t small[2048]
        cdef int32_t* buf = &small[0]
        cdef size_t cap
        cdef bpe_work w
        memset(&w, 0, sizeof(bpe_work))
        data = self._text_of(data)
        _as_text(data, &t)
        cap = _text_cap(&t)
        if cap > 2048:
            buf = <int32_t*>malloc(cap * sizeof(int32_t))
            if buf == NULL:
                raise MemoryError()
        try:
            count = self._encode_one(data, buf, &w)
            return self._as_list(buf, count)
        finally:
            _work_free(&w)
            if buf != &small[0]:
                free(buf)

    # ------------------------------------------------------------------ BatchModel's hooks

    cdef int64_t _n_ids(self) noexcept nogil:
        return self.m.n_keys

    cdef list _batch_items(self, list texts, Py_ssize_t start, object stop):
        return _own_copy(texts, start, stop) if self._normalizer is None else _nfc_list(texts, start, stop)

    cdef void* _work_new(self) except NULL:
        cdef void* work = calloc(1, sizeof(bpe_work))
        if work == NULL:
            raise MemoryError()
        return work

    cdef void _work_release(self, void* work) noexcept:
        _work_free(<bpe_work*>work)
        free(work)

    cdef size_t _bound(self, const _text* t) noexcept nogil:
        return _text_cap(t)

    cdef int64_t _encode_nogil(self, const _text* t, bint is_bytes, int32_t* dst, void* work) noexcept nogil:
        return _encode_text(&self.m, t, is_bytes, dst, <bpe_work*>work)

    cdef bint _with_gil(self):
        return self.m.pattern == PIECES_REGEX  # the pattern object runs under the GIL

    cdef int64_t _encode_gil(self, object data, int32_t* dst, void* work) except -2:
        return self._encode_one(data, dst, <bpe_work*>work)

    cdef int _raise_code(self, int64_t code, void* work, str where) except -1:
        return _raise(code, <bpe_work*>work, where)

    def _encode_spans(self, bytes data, const int64_t[::1] spans):
        """Benchmarks and tests: the ids of UTF-8 ``data`` whose pieces are given, as byte
        offsets (start, end, start, end...), whatever the codec's pattern."""
        cdef size_t n = PyBytes_GET_SIZE(data)
        cdef int32_t small[2048]
        cdef int32_t* dst = &small[0]
        cdef bpe_work w
        cdef int64_t count, k
        memset(&w, 0, sizeof(bpe_work))
        for k in range(spans.shape[0] // 2):
            if not 0 <= spans[2 * k] <= spans[2 * k + 1] <= <int64_t>n:
                raise ValueError(f"span {k}: ({spans[2 * k]}, {spans[2 * k + 1]}) is not in 0..{n}")
        if n + 1 > 2048:
            dst = <int32_t*>malloc((n + 1) * sizeof(int32_t))
            if dst == NULL:
                raise MemoryError()
        try:
            count = _merge_text(&self.m, <const uint8_t*>PyBytes_AS_STRING(data), n,
                                &spans[0] if spans.shape[0] else <const int64_t*>&small[0], spans.shape[0] // 2,
                                dst, &w)
            if count < 0:
                _raise(count, &w, "")
            return self._as_list(dst, count)
        finally:
            if dst != &small[0]:
                free(dst)
            _work_free(&w)

    def _merge(self, const uint8_t[::1] piece, str how="search"):
        """Tests: one piece's ids by ``how``: "search" (what encode does with this piece),
        or "heap" (the merges replayed, whatever the vocabulary)."""
        cdef size_t n = piece.shape[0]
        cdef int32_t* dst = <int32_t*>malloc((n + 1) * sizeof(int32_t))
        cdef bpe_work w
        cdef int64_t count
        memset(&w, 0, sizeof(bpe_work))
        if dst == NULL:
            raise MemoryError()
        try:
            if n == 0:
                return []
            if how == "heap":
                count = _heap_piece(&self.m, &piece[0], n, dst, &w)
            elif how == "search":
                count = _piece(&self.m, &piece[0], n, dst, &w)
            else:
                raise ValueError(f"how must be 'search' or 'heap', got {how!r}")
            if count < 0:
                _raise(count, &w, "")
            return [dst[i] for i in range(count)]
        finally:
            free(dst)
            _work_free(&w)

    # ------------------------------------------------------------------ decoding

    cdef object _decode(self, object ids, const char* errors):
        """bytes (errors NULL) or str of the ids: a list, or a buffer of integers."""
        cdef const int64_t[::1] view
        cdef int64_t* owned = NULL
        cdef const int64_t* src
        cdef Py_ssize_t n, i
        cdef int64_t kid, size = 0
        cdef uint8_t* dst = NULL
        cdef size_t o = 0
        try:
            if PyList_CheckExact(ids):
                n = _list_ids(ids, self.m.n_keys, &owned)
                src = owned
            else:
                view = _id_array(ids, self.m.n_keys)
                n = view.shape[0]
                src = &view[0] if n else NULL
            for i in range(n):
                kid = src[i]
                if kid < 0 or kid >= self.m.n_keys:
                    raise UnknownIdError(kid, i, self.m.n_keys)
                size += self._tok_off[kid + 1] - self._tok_off[kid]
            dst = <uint8_t*>malloc(size + 1)
            if dst == NULL:
                raise MemoryError()
            with nogil:
                for i in range(n):
                    kid = src[i]
                    memcpy(dst + o, self.m.tok_bytes + self._tok_off[kid], self._tok_off[kid + 1] - self._tok_off[kid])
                    o += self._tok_off[kid + 1] - self._tok_off[kid]
            if errors == NULL:
                return PyBytes_FromStringAndSize(<char*>dst, size)
            return PyUnicode_DecodeUTF8(<char*>dst, size, errors)
        finally:
            free(owned)
            free(dst)

    def decode(self, ids):
        """Ids (a list of ints, or an array/buffer of integers) -> bytes. Raises UnknownIdError."""
        return self._decode(ids, NULL)

    def decode_str(self, ids, str errors="replace"):
        """Ids -> str, the bytes decoded as UTF-8 with ``errors``."""
        if errors == "replace":
            return self._decode(ids, b"replace")
        cdef bytes e = errors.encode()
        return self._decode(ids, e)


cdef struct _cursor:  # _spans: where the char offsets are in the UTF-8
    Py_ssize_t at_char
    size_t at_byte
    int64_t count
    bint ascii


cdef int _add_span(_cursor* c, const uint8_t* s, bpe_work* w, Py_ssize_t start, Py_ssize_t end) except -1:
    """A piece at chars [start, end), after the last one, as byte offsets into w.spans."""
    if _reserve(<void**>&w.spans, &w.spans_cap, 2 * c.count + 2, sizeof(int64_t), True) < 0:
        raise MemoryError()
    if c.ascii:
        w.spans[2 * c.count] = start
        w.spans[2 * c.count + 1] = end
    else:
        c.at_byte = _advance(s, c.at_byte, start - c.at_char)
        w.spans[2 * c.count] = c.at_byte
        c.at_byte = _advance(s, c.at_byte, end - start)
        w.spans[2 * c.count + 1] = c.at_byte
        c.at_char = end
    c.count += 1
    return 0


cdef int _raise(int64_t code, bpe_work* w, str where) except -1:
    if code == BPE_ERR_UTF8:
        raise ValueError(f"{where}invalid UTF-8 at byte offset {w.bad}")
    if code == BPE_ERR_MEMORY:
        raise MemoryError()
    raise RuntimeError(f"{where}BPE encoding failed (error {code}): a bug in bbpe.bpe._codec")
