# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""WordPiece's compiled model: HF tokenizers' BERT pipeline (``BertNormalizer``,
``BertPreTokenizer``, ``WordPiece``) from a str or UTF-8 bytes to ids, without the GIL.

One pass per text:

1. **Normalize** (normalizers/bert.rs), char by char from the text's own code units, each
   output char remembering the span of the input char it came from (HF's alignments, which
   give the offsets): ``clean_text`` drops control, format, unassigned and private-use chars
   (of the old Unicode tables HF reads them from), NUL and U+FFFD, and makes whitespace ' ';
   ``handle_chinese_chars`` puts ' ' on each side of a char of the eight CJK ranges;
   ``strip_accents`` decomposes (NFD: canonical decomposition, Hangul by rule, marks sorted
   by combining class) and drops the nonspacing marks; ``lowercase`` is Rust's per-char
   ``to_lowercase``. The tables are bert_tables.h, read from tokenizers itself
   (tools/make_bert_tables.py).
2. **Pre-tokenize** (pre_tokenizers/bert.rs): words are split at whitespace (dropped) and at
   punctuation (each mark a word of its own).
3. **WordPiece** (models/wordpiece/mod.rs): a word of more than ``max_input_chars_per_word``
   chars is the unknown token; else the longest token that starts the word, then the
   longest continuing token (the prefix, ``##``, before it) at each next position; a word
   where no token matches is one unknown token (or, with ``unk_per_char``, the seed's
   encoder: one unknown token for the char, then on). The tokens are a trie over their
   UTF-8 whose transitions are a hash table; the continuing tokens are the subtree under the
   prefix's node.

The matcher is LinMaxMatch (Song et al., "Fast WordPiece Tokenization", EMNLP 2021). Walking
the trie from the root (or the prefix's node) as far as it goes, then again after the
longest token found, reads bytes again and again: quadratic in a word's length. Instead,
each node v has a failure link f(v) and failure pops F(v): the tokens longest-match-first
makes final when the match cannot go on from v, and the node that spells what is left
after them. One pass over the word's UTF-8, taking the transition when there is one and
else emitting F(v) and going to f(v), gives the same tokens in time linear in the word's
bytes; at the word's end, F is emitted link by link until the prefix's node. A missing link
on the way means the word has no tokenization (one unknown token). The tables are made once,
breadth-first from both the root and the prefix's node (never entered as a child; the
paper's Algorithm 3): a token's node pops its token and links to the prefix's node;
another node pops its parent's pops, then those of each node its parent's link leads on to
until one has the node's byte, and links where that byte leads. F is one pool of ids
(1.0 to 1.2 a node for BERT's vocabularies). Tokens being whole UTF-8 chars, a match ends
where a char does.

The walk is kept for the words that pass leaves: a word it finds no tokenization for
(the walk says what then, ``unk_per_char``'s included), a word that starts with the
prefix's bytes (there the nodes under the prefix's would spell a first token, which their
links do not mean), and every word of a model without tables (tokens that are not whole
UTF-8 chars, or failure pops past a limit: long tokens over short ones can make them
quadratic in a token's length). A one-char word (most of Chinese text) is one lookup.

Decoding is HF's ``WordPiece`` decoder (decoders/wordpiece.rs): a token after the first
loses the prefix if it has it, else gets a space before it; with ``cleanup``, each token
then has HF's replacements (" ." -> "." ...). Both forms of every token are made once.

Why this module is long: it is one job, WordPiece's compiled model, and Cython inlines only
within a module, so the normalizer's stages, the pre-tokenizer and the matcher that one
pass runs through live together. The batch calls (``encode_many``, ``encode_lists``) are
``common._fast.BatchModel``'s, over this model's one-text function.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_CheckExact, PyBytes_FromStringAndSize
from cpython.list cimport PyList_New
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc, realloc
from libc.string cimport memcmp, memcpy, memset

from bbpe.common._cpython cimport (
    PyList_CheckExact,
    PyListObject,
    PyObject_GC_UnTrack,
    PyTupleObject,
    PyUnicode_DecodeUTF8,
    _as_text,
    _put_utf8,
    _text,
)
from bbpe.common._fast cimport BatchModel, _id_array, _list_ids, _utf8_valid_prefix

import numpy as np

from ..errors import UnknownIdError


cdef extern from "Python.h":
    object PyUnicode_FromKindAndData(int kind, const void* buffer, Py_ssize_t size)


cdef extern from "bert_tables.h":
    enum:
        BERT_DROP
        BERT_SPACE
        BERT_SPLIT
        BERT_PUNCT
        BERT_CJK
        BERT_MN
        BERT_NFD
        BERT_LOWER
        BERT_N_NFD
        BERT_N_LOWER
        BERT_MAX_CHARS
    const uint8_t bert_flags1[]
    const uint8_t bert_flags2[]
    const uint8_t bert_ccc1[]
    const uint8_t bert_ccc2[]
    const uint32_t bert_nfd_keys[]
    const uint32_t bert_nfd_spans[]
    const uint32_t bert_nfd_pool[]
    const uint32_t bert_lower_keys[]
    const uint32_t bert_lower_spans[]
    const uint32_t bert_lower_pool[]


# the normalizer's and the encoder's options (``WordPieceCodec(options=...)``)
cdef enum:
    WP_CLEAN = 1
    WP_CHINESE = 2
    WP_STRIP = 4
    WP_LOWER = 8
    WP_UNK_PER_CHAR = 16

OPTIONS = {"clean_text": WP_CLEAN, "handle_chinese_chars": WP_CHINESE, "strip_accents": WP_STRIP,
           "lowercase": WP_LOWER, "unk_per_char": WP_UNK_PER_CHAR}

cdef enum:
    WP_ERR_MEMORY = -1
    WP_ERR_UTF8 = -2
    WP_ERR_NO_UNK = -3
    WP_WALK = -4             # (internal) the linear pass leaves this word to the walk

cdef size_t _NOGIL_UNITS = 2048  # below this, releasing the GIL costs more than the work


cdef inline uint8_t _flags(uint32_t c) noexcept nogil:
    return bert_flags2[<uint32_t>bert_flags1[c >> 8] << 8 | (c & 0xFF)]


cdef inline uint8_t _ccc(uint32_t c) noexcept nogil:
    return bert_ccc2[<uint32_t>bert_ccc1[c >> 8] << 8 | (c & 0xFF)]


cdef inline int _mapped(const uint32_t* keys, const uint32_t* spans, Py_ssize_t n, uint32_t c,
                        uint32_t* length) noexcept nogil:
    """The pool offset of ``c``'s mapping in a sorted table (binary search), its length in
    *length; -1 when c is not a key."""
    cdef Py_ssize_t lo = 0, hi = n, mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if keys[mid] < c:
            lo = mid + 1
        else:
            hi = mid
    if lo < n and keys[lo] == c:
        length[0] = spans[lo] & 7
        return <int>(spans[lo] >> 3)
    return -1


# ----------------------------------------------------------------------------- the model

cdef struct wp_link:  # a node's failure link and failure pops (the module docstring)
    int32_t fail             # f(v): the node to go on from when v has no transition for a byte (-1: none)
    int32_t start            # F(v): pops[start : start + count], the tokens it makes final then
    int32_t count


cdef struct wp_model:
    int64_t n_keys
    int32_t unk_id           # -1: the vocabulary has no unknown token
    int64_t max_chars        # max_input_chars_per_word
    uint32_t options         # WP_*
    # the trie: node 0 is the root; transitions (node << 8 | byte) + 1 -> child, hashed
    uint64_t* edge_keys
    int32_t* edge_vals
    uint64_t edge_mask
    int32_t* node_token      # the id of the token a node spells, or -1
    int32_t prefix_node      # the node the continuing prefix leads to (the root when it is empty)
    # LinMaxMatch's tables (NULL when the model has none: every word takes the walk)
    wp_link* links           # per node: its failure link f and where its failure pops F are
    int32_t* pops            # every node's F, one pool of token ids
    int64_t n_pops
    int32_t* token_len       # per id: the token's UTF-8 length (what a first token consumes)
    int32_t prefix_len       # what a continuing token consumes less


cdef struct wp_work:  # one text's scratch memory, reused from text to text
    uint32_t* s1             # stage 1 of the normalizer (clean_text, handle_chinese_chars)
    int64_t* s1_at           # each one's input span: start, end
    size_t s1_cap
    uint32_t* pend           # NFD's chars not yet final: code point | added << 31
    size_t pend_cap
    uint32_t* cp             # the normalized chars
    int64_t* at              # each one's input span: start, end
    size_t cap
    uint8_t* u8              # a word's UTF-8
    int32_t* u8_char         # for each byte of it, the char it starts (or -1 inside a char)
    size_t u8_cap
    int64_t* spans           # the tokens' input spans (start, end), when asked for
    size_t spans_cap
    int64_t bad              # WP_ERR_UTF8: the byte offset


cdef int _grow(void** p, size_t* cap, size_t need, size_t size) noexcept nogil:
    """Make *p hold at least ``need`` items of ``size`` bytes, its contents kept."""
    cdef size_t grown
    cdef void* q
    if need <= cap[0]:
        return 0
    grown = need if need > 2 * cap[0] else 2 * cap[0]
    q = realloc(p[0], grown * size)
    if q == NULL:
        return WP_ERR_MEMORY
    p[0] = q
    cap[0] = grown
    return 0


cdef void _work_free(wp_work* w) noexcept nogil:
    free(w.s1)
    free(w.s1_at)
    free(w.pend)
    free(w.cp)
    free(w.at)
    free(w.u8)
    free(w.u8_char)
    free(w.spans)
    memset(w, 0, sizeof(wp_work))


cdef inline int32_t _child(const wp_model* m, int32_t node, uint8_t byte) noexcept nogil:
    cdef uint64_t key = ((<uint64_t>node << 8) | byte) + 1
    cdef uint64_t h = (key * <uint64_t>0x9E3779B97F4A7C15) >> 20
    cdef uint64_t k
    while True:
        h &= m.edge_mask
        k = m.edge_keys[h]
        if k == key:
            return m.edge_vals[h]
        if k == 0:
            return -1
        h += 1


# ----------------------------------------------------------------------------- normalizing
#
# Two stages, as HF's alignments need. Stage 1 (clean_text, handle_chinese_chars) maps each
# input char to chars that keep its span, into w.s1. Stage 2 (strip_accents, lowercase)
# writes w.cp: NFD as the unicode-normalization-alignments crate does it (the first char
# of a decomposition "replaces" its source, the others are "added"; marks are sorted by
# combining class, each carrying that flag), then HF's transform gives the spans: a
# replacing char takes the next stage-1 char's span, an added one the span of the last
# char replaced (normalizer.rs ``transform_range``). Without reordering, that is each char's
# own source; a mark sorted before another takes the span of the char it lands on.

cdef int _room(uint32_t** cp, int64_t** at, size_t* cap, size_t need) noexcept nogil:
    """Room for ``need`` chars and their spans (start, end)."""
    cdef size_t grown = cap[0] * 2 if cap[0] * 2 > need else need + 256
    cdef void* p
    if need <= cap[0]:
        return 0
    p = realloc(cp[0], grown * sizeof(uint32_t))
    if p == NULL:
        return WP_ERR_MEMORY
    cp[0] = <uint32_t*>p
    p = realloc(at[0], 2 * grown * sizeof(int64_t))
    if p == NULL:
        return WP_ERR_MEMORY
    at[0] = <int64_t*>p
    cap[0] = grown
    return 0


cdef inline int _put(uint32_t** cp, int64_t** at, size_t* cap, size_t* n, uint32_t c, int64_t start,
                     int64_t end) noexcept nogil:
    if n[0] >= cap[0] and _room(cp, at, cap, n[0] + 1) < 0:
        return WP_ERR_MEMORY
    cp[0][n[0]] = c
    at[0][2 * n[0]] = start
    at[0][2 * n[0] + 1] = end
    n[0] += 1
    return 0


cdef inline int _lowered(const wp_model* m, wp_work* w, size_t* n, uint32_t c, int64_t start,
                         int64_t end) noexcept nogil:
    """The last stage, ``lowercase``: c, or what Rust's to_lowercase makes of it, into w.cp."""
    cdef uint32_t length = 0, k
    cdef int at
    if (m.options & WP_LOWER) and (_flags(c) & BERT_LOWER):
        at = _mapped(bert_lower_keys, bert_lower_spans, BERT_N_LOWER, c, &length)
        for k in range(length):
            if _put(&w.cp, &w.at, &w.cap, n, bert_lower_pool[at + k], start, end) < 0:
                return WP_ERR_MEMORY
        return 0
    return _put(&w.cp, &w.at, &w.cap, n, c, start, end)


cdef struct _nfd:  # stage 2's NFD: the chars not yet final (a starter and the marks after it)
    size_t n             # chars in w.pend
    size_t used          # stage-1 chars replaced so far (the next one's index)


cdef int _flush(const wp_model* m, wp_work* w, _nfd* d, size_t* n) noexcept nogil:
    """The pending chars, final: each its span (replaced: the next stage-1 char's; added:
    the last replaced one's), the nonspacing marks dropped, the rest lowercased."""
    cdef size_t i
    cdef uint32_t c
    cdef int64_t start, end
    for i in range(d.n):
        c = w.pend[i] & 0x1FFFFF
        if not (w.pend[i] >> 31):  # replacing
            d.used += 1
        start = w.s1_at[2 * d.used - 2]
        end = w.s1_at[2 * d.used - 1]
        if not (_flags(c) & BERT_MN) and _lowered(m, w, n, c, start, end) < 0:
            return WP_ERR_MEMORY
    d.n = 0
    return 0


cdef int _pend(const wp_model* m, wp_work* w, _nfd* d, size_t* n, uint32_t c, bint added) noexcept nogil:
    """One char of a decomposition: a starter makes the pending chars final first; a mark
    goes before the pending marks of a greater class (a stable sort, as the crate's)."""
    cdef uint8_t ccc = _ccc(c)
    cdef size_t i
    cdef uint32_t item = c | (<uint32_t>added << 31)
    if ccc == 0 and d.n and _flush(m, w, d, n) < 0:
        return WP_ERR_MEMORY
    if d.n >= w.pend_cap:
        if _grow(<void**>&w.pend, &w.pend_cap, d.n + 1, sizeof(uint32_t)) < 0:
            return WP_ERR_MEMORY
    i = d.n
    if ccc:
        while i > 0 and _ccc(w.pend[i - 1] & 0x1FFFFF) > ccc:
            w.pend[i] = w.pend[i - 1]
            i -= 1
    w.pend[i] = item
    d.n += 1
    return 0


cdef int _decomposed(const wp_model* m, wp_work* w, _nfd* d, size_t* n, uint32_t c) noexcept nogil:
    """NFD of one stage-1 char (canonical decomposition; Hangul syllables by rule)."""
    cdef uint32_t length = 0, k, s, t
    cdef int at
    if not (_flags(c) & BERT_NFD):
        return _pend(m, w, d, n, c, False)
    if 0xAC00 <= c <= 0xD7A3:  # Unicode 3.12: L V (T)
        s = c - 0xAC00
        t = s % 28
        if _pend(m, w, d, n, 0x1100 + s // 588, False) < 0 or _pend(m, w, d, n, 0x1161 + (s % 588) // 28, True) < 0:
            return WP_ERR_MEMORY
        return _pend(m, w, d, n, 0x11A7 + t, True) if t else 0
    at = _mapped(bert_nfd_keys, bert_nfd_spans, BERT_N_NFD, c, &length)
    for k in range(length):
        if _pend(m, w, d, n, bert_nfd_pool[at + k], k > 0) < 0:
            return WP_ERR_MEMORY
    return 0


cdef inline uint32_t _next_char(const _text* t, bint is_bytes, size_t* i) noexcept nogil:
    """The char at unit *i of a text (advanced past it); a surrogate pair of a str reads as
    the char it encodes, a lone surrogate (which no UTF-8 holds) as U+FFFD. UTF-8 was checked."""
    cdef const uint8_t* s
    cdef uint32_t c, d
    cdef uint8_t b
    if t.kind == 0:
        s = <const uint8_t*>t.data + i[0]
        b = s[0]
        if b < 0x80 or not is_bytes:
            i[0] += 1
            return b
        if b < 0xE0:
            i[0] += 2
            return (<uint32_t>(b & 0x1F) << 6) | (s[1] & 0x3F)
        if b < 0xF0:
            i[0] += 3
            return (<uint32_t>(b & 0x0F) << 12) | (<uint32_t>(s[1] & 0x3F) << 6) | (s[2] & 0x3F)
        i[0] += 4
        return ((<uint32_t>(b & 0x07) << 18) | (<uint32_t>(s[1] & 0x3F) << 12) | (<uint32_t>(s[2] & 0x3F) << 6)
                | (s[3] & 0x3F))
    if t.kind == 1:
        c = (<const uint8_t*>t.data)[i[0]]
    elif t.kind == 2:
        c = (<const uint16_t*>t.data)[i[0]]
    else:
        c = (<const uint32_t*>t.data)[i[0]]
    i[0] += 1
    if 0xD800 <= c <= 0xDBFF and i[0] < t.length:  # a surrogate pair: the char it encodes (as BPE reads it)
        d = (<const uint16_t*>t.data)[i[0]] if t.kind == 2 else (<const uint32_t*>t.data)[i[0]]
        if 0xDC00 <= d <= 0xDFFF:
            i[0] += 1
            return 0x10000 + ((c - 0xD800) << 10) + (d - 0xDC00)
    return 0xFFFD if 0xD800 <= c <= 0xDFFF else c


cdef int64_t _normalize(const wp_model* m, const _text* t, bint is_bytes, wp_work* w) noexcept nogil:
    """The text's normalized chars into w.cp, each with the span HF aligns it with in w.at
    (chars of a str, bytes of bytes); returns how many, or an error (WP_ERR_UTF8: w.bad)."""
    cdef size_t i = 0, start, n1 = 0, n = 0, k
    cdef uint32_t c
    cdef uint8_t f
    cdef Py_ssize_t valid
    cdef bint invalid
    cdef _nfd d
    if is_bytes:
        valid = _utf8_valid_prefix(<const uint8_t*>t.data, <Py_ssize_t>t.length, &invalid)
        if <size_t>valid != t.length:
            w.bad = valid
            return WP_ERR_UTF8
    while i < t.length:  # stage 1
        start = i
        c = _next_char(t, is_bytes, &i)
        f = _flags(c)
        if m.options & WP_CLEAN:
            if f & BERT_DROP:
                continue
            if f & BERT_SPACE:
                c = 0x20
                f = _flags(c)
        if (m.options & WP_CHINESE) and (f & BERT_CJK):
            if (_put(&w.s1, &w.s1_at, &w.s1_cap, &n1, 0x20, start, i) < 0
                    or _put(&w.s1, &w.s1_at, &w.s1_cap, &n1, c, start, i) < 0
                    or _put(&w.s1, &w.s1_at, &w.s1_cap, &n1, 0x20, start, i) < 0):
                return WP_ERR_MEMORY
        elif _put(&w.s1, &w.s1_at, &w.s1_cap, &n1, c, start, i) < 0:
            return WP_ERR_MEMORY
    if not (m.options & WP_STRIP):  # stage 2 without NFD: lowercase, char by char
        for k in range(n1):
            if _lowered(m, w, &n, w.s1[k], w.s1_at[2 * k], w.s1_at[2 * k + 1]) < 0:
                return WP_ERR_MEMORY
        return <int64_t>n
    d.n = 0
    d.used = 0
    for k in range(n1):
        if _decomposed(m, w, &d, &n, w.s1[k]) < 0:
            return WP_ERR_MEMORY
    if _flush(m, w, &d, &n) < 0:
        return WP_ERR_MEMORY
    return <int64_t>n


# ----------------------------------------------------------------------------- WordPiece

cdef inline int64_t _emit(const wp_model* m, wp_work* w, int32_t* dst, int64_t count, int32_t kid,
                          int64_t start, int64_t end, bint spans) noexcept nogil:
    """Token ``kid`` spanning input [start, end) at dst[count]; returns the new count."""
    dst[count] = kid
    if spans:
        if _grow(<void**>&w.spans, &w.spans_cap, 2 * <size_t>count + 2, sizeof(int64_t)) < 0:
            return WP_ERR_MEMORY
        w.spans[2 * count] = start
        w.spans[2 * count + 1] = end
    return count + 1


cdef int _word_room(wp_work* w, size_t need) noexcept nogil:
    """Room for a word of ``need`` UTF-8 bytes, and the char each starts."""
    cdef void* p = realloc(w.u8, need)
    if p == NULL:
        return WP_ERR_MEMORY
    w.u8 = <uint8_t*>p
    p = realloc(w.u8_char, need * sizeof(int32_t))
    if p == NULL:
        return WP_ERR_MEMORY
    w.u8_char = <int32_t*>p
    w.u8_cap = need
    return 0


cdef inline int64_t _word_utf8(wp_work* w, size_t a, size_t b, bint chars) noexcept nogil:
    """The UTF-8 of the normalized chars a..b-1 (one word) into w.u8; its length, or
    WP_ERR_MEMORY. With ``chars``, w.u8_char too: the char each byte starts (-1 inside a
    char), and b after the last."""
    cdef size_t n = 0, k, p
    if 4 * (b - a) + 1 > w.u8_cap and _word_room(w, 4 * (b - a) + 1) < 0:
        return WP_ERR_MEMORY
    if not chars:
        for k in range(a, b):
            n = _put_utf8(w.u8, n, w.cp[k])
        return <int64_t>n
    for k in range(a, b):
        p = _put_utf8(w.u8, n, w.cp[k])
        w.u8_char[n] = <int32_t>k
        n += 1
        while n < p:
            w.u8_char[n] = -1
            n += 1
    w.u8_char[n] = <int32_t>b
    return <int64_t>n


cdef int64_t _word_walk(const wp_model* m, wp_work* w, size_t a, size_t b, int32_t* dst, int64_t count,
                        bint spans) noexcept nogil:
    """The tokens of the normalized chars a..b-1 (one word) after dst[count]; the new count.
    The walk: at each position the trie from the root (the word's start) or the prefix's
    node, as far as it goes, then again after the longest token found (quadratic in the
    word's length): the words ``_word`` leaves to it."""
    cdef size_t nbytes, pos, p, best_end
    cdef int32_t node, best
    cdef int64_t before = count, r
    if <int64_t>(b - a) > m.max_chars:
        if m.unk_id < 0:
            return WP_ERR_NO_UNK
        return _emit(m, w, dst, count, m.unk_id, w.at[2 * a], w.at[2 * b - 1], spans)
    r = _word_utf8(w, a, b, True)
    if r < 0:
        return r
    nbytes = <size_t>r
    pos = 0
    while pos < nbytes:
        node = 0 if pos == 0 else m.prefix_node
        best = -1
        best_end = pos
        p = pos
        while node >= 0 and p < nbytes:
            node = _child(m, node, w.u8[p])
            p += 1
            if node >= 0 and m.node_token[node] >= 0 and w.u8_char[p] >= 0:
                best = m.node_token[node]
                best_end = p
        if best < 0:
            if m.unk_id < 0:
                return WP_ERR_NO_UNK
            if not (m.options & WP_UNK_PER_CHAR):  # HF and Google: the whole word is unknown
                return _emit(m, w, dst, before, m.unk_id, w.at[2 * a], w.at[2 * b - 1], spans)
            best = m.unk_id  # the seed's encoder: the char is unknown, and on
            best_end = pos + 1
            while w.u8_char[best_end] < 0:
                best_end += 1
        count = _emit(m, w, dst, count, best, w.at[2 * w.u8_char[pos]], w.at[2 * w.u8_char[best_end] - 1], spans)
        if count < 0:
            return count
        pos = best_end
    return count


cdef inline int64_t _emit_at(const wp_model* m, wp_work* w, int32_t* dst, int64_t count, int32_t kid,
                             size_t* at, int32_t* less, bint spans) noexcept nogil:
    """Token ``kid`` of the linear pass after dst[count]; the new count. *at: the byte of the
    word where it starts (advanced past it); *less: what of its length is the prefix (0 for
    the word's first token, then the prefix's length)."""
    cdef size_t end
    if not spans:
        dst[count] = kid
        return count + 1
    end = at[0] + <size_t>(m.token_len[kid] - less[0])
    count = _emit(m, w, dst, count, kid, w.at[2 * w.u8_char[at[0]]], w.at[2 * w.u8_char[end] - 1], True)
    at[0] = end
    less[0] = m.prefix_len
    return count


cdef inline int64_t _pop(const wp_model* m, wp_work* w, int32_t node, int32_t* dst, int64_t count, size_t* at,
                         int32_t* less, bint spans) noexcept nogil:
    """F(node) after dst[count], the tokens made final when the pass leaves ``node`` by its
    failure link; the new count, WP_WALK when it has none."""
    cdef const wp_link* link = &m.links[node]
    cdef int32_t k
    if link.fail < 0:
        return WP_WALK
    for k in range(link.start, link.start + link.count):
        count = _emit_at(m, w, dst, count, m.pops[k], at, less, spans)
        if count < 0:
            return count
    return count


cdef int64_t _word_linear(const wp_model* m, wp_work* w, size_t nbytes, int32_t* dst, int64_t count,
                          bint spans) noexcept nogil:
    """LinMaxMatch over a word's UTF-8, w.u8[0:nbytes] (w.u8_char with spans): one pass, a
    transition or a failure link (and its pops) at each step; the new count, or WP_WALK
    for a word it leaves to the walk (one it finds no tokenization for, or one that starts
    with the prefix). A token's node needs no tables: it pops its token and links to the
    prefix's node (which, when the prefix is a token, must not be taken for one)."""
    cdef int32_t node, nxt, kid, r = m.prefix_node, less = 0
    cdef size_t i = 1, at = 0
    node = _child(m, 0, w.u8[0])  # (the root: only here, as no link leads to it unless it is r)
    if node < 0 or node == r:
        return WP_WALK
    while i < nbytes:
        nxt = _child(m, node, w.u8[i])
        if nxt >= 0:
            if nxt == r:  # the word starts with the prefix: its nodes mean other strings there
                return WP_WALK
            node = nxt
            i += 1
            continue
        kid = m.node_token[node]
        if kid >= 0 and node != r:
            count = _emit_at(m, w, dst, count, kid, &at, &less, spans)
            node = r
        else:
            count = _pop(m, w, node, dst, count, &at, &less, spans)
            node = m.links[node].fail
        if count < 0:
            return count
    while node != r:  # the word's end: what is left is made final, link by link
        kid = m.node_token[node]
        if kid >= 0:
            return _emit_at(m, w, dst, count, kid, &at, &less, spans)
        count = _pop(m, w, node, dst, count, &at, &less, spans)
        if count < 0:
            return count
        node = m.links[node].fail
    return count


cdef int64_t _word(const wp_model* m, wp_work* w, size_t a, size_t b, int32_t* dst, int64_t count,
                   bint spans) noexcept nogil:
    """The tokens of the normalized chars a..b-1 (one word) after dst[count]; the new count:
    a one-char word by its one lookup, a longer one by LinMaxMatch, the walk for the words
    that leaves (module docstring)."""
    cdef size_t k, p
    cdef int32_t node = 0
    cdef uint8_t one[4]
    cdef int64_t r
    if <int64_t>(b - a) > m.max_chars:
        return _word_walk(m, w, a, b, dst, count, spans)
    if b == a + 1:  # one char (a CJK char, a punctuation mark): the token it is, or else the walk's answer
        p = _put_utf8(one, 0, w.cp[a])
        for k in range(p):
            node = _child(m, node, one[k])
            if node < 0:
                return _word_walk(m, w, a, b, dst, count, spans)
        if m.node_token[node] < 0:
            return _word_walk(m, w, a, b, dst, count, spans)
        return _emit(m, w, dst, count, m.node_token[node], w.at[2 * a], w.at[2 * a + 1], spans)
    if m.links == NULL:
        return _word_walk(m, w, a, b, dst, count, spans)
    r = _word_utf8(w, a, b, spans)
    if r < 0:
        return r
    r = _word_linear(m, w, <size_t>r, dst, count, spans)
    if r == WP_WALK:
        return _word_walk(m, w, a, b, dst, count, spans)
    return r


cdef inline size_t _next_word(const uint32_t* cp, size_t i, size_t n, size_t* end) noexcept nogil:
    """BertPreTokenizer: where the next word of cp[i:n] starts (n: none left), *end where it
    ends: whitespace is skipped, a punctuation char is a word of its own."""
    cdef uint8_t f
    while i < n and (_flags(cp[i]) & BERT_SPLIT):
        i += 1
    if i == n:
        return n
    f = _flags(cp[i])
    end[0] = i + 1
    if not (f & BERT_PUNCT):
        while end[0] < n and not (_flags(cp[end[0]]) & (BERT_SPLIT | BERT_PUNCT)):
            end[0] += 1
    return i


cdef int64_t _encode_text(const wp_model* m, const _text* t, bint is_bytes, int32_t* dst, wp_work* w,
                          bint spans) noexcept nogil:
    """A text's ids into dst (room: one per input unit, _text_cap); returns the count."""
    cdef int64_t n = _normalize(m, t, is_bytes, w), count = 0
    cdef size_t i = 0, j
    if n < 0:
        return n
    while True:
        i = _next_word(w.cp, i, <size_t>n, &j)
        if i == <size_t>n:
            break
        count = _word(m, w, i, j, dst, count, spans)
        if count < 0:
            return count
        i = j
    return count


cdef struct _word_entry:
    uint64_t hash            # 0: an empty slot
    int64_t start            # the word's chars: chars[start:start + length]
    int64_t count
    size_t length


cdef struct _word_table:  # count_words' words and their counts, by their code points
    _word_entry* entries     # open addressing, at most half full
    size_t mask
    int64_t* order           # the slots in the order their words were first met
    int64_t n_words
    uint32_t* chars
    size_t n_chars
    size_t chars_cap


cdef inline uint64_t _word_hash(const uint32_t* cp, size_t n) noexcept nogil:
    cdef uint64_t h = <uint64_t>0xCBF29CE484222325
    cdef size_t k
    for k in range(n):
        h = (h ^ cp[k]) * <uint64_t>0x100000001B3
    h ^= h >> 29
    return h | 1


cdef int _grow_word_table(_word_table* t) noexcept nogil:
    """Twice the slots (16 at first), every word put again; WP_ERR_MEMORY if none."""
    cdef size_t cap = 16 if t.entries == NULL else 2 * (t.mask + 1), s
    cdef _word_entry* entries = <_word_entry*>calloc(cap, sizeof(_word_entry))
    cdef int64_t* order = <int64_t*>malloc(cap * sizeof(int64_t))
    cdef int64_t k
    if entries == NULL or order == NULL:
        free(entries)
        free(order)
        return WP_ERR_MEMORY
    for k in range(t.n_words):
        s = t.entries[t.order[k]].hash & (cap - 1)
        while entries[s].hash != 0:
            s = (s + 1) & (cap - 1)
        entries[s] = t.entries[t.order[k]]
        order[k] = <int64_t>s
    free(t.entries)
    free(t.order)
    t.entries = entries
    t.order = order
    t.mask = cap - 1
    return 0


cdef int _count_word(_word_table* t, const uint32_t* cp, size_t n) noexcept nogil:
    """One more of the word cp[0:n]; WP_ERR_MEMORY if it could not be added."""
    cdef uint64_t h = _word_hash(cp, n)
    cdef size_t s
    cdef _word_entry* e
    if t.entries == NULL or 2 * (<size_t>t.n_words + 1) > t.mask + 1:
        if _grow_word_table(t) < 0:
            return WP_ERR_MEMORY
    s = h & t.mask
    while True:
        e = &t.entries[s]
        if e.hash == 0:
            break
        if e.hash == h and e.length == n and memcmp(t.chars + e.start, cp, n * sizeof(uint32_t)) == 0:
            e.count += 1
            return 0
        s = (s + 1) & t.mask
    if _grow(<void**>&t.chars, &t.chars_cap, t.n_chars + n, sizeof(uint32_t)) < 0:
        return WP_ERR_MEMORY
    memcpy(t.chars + t.n_chars, cp, n * sizeof(uint32_t))
    e.hash = h
    e.start = <int64_t>t.n_chars
    e.length = n
    e.count = 1
    t.n_chars += n
    t.order[t.n_words] = <int64_t>s
    t.n_words += 1
    return 0


cdef inline size_t _text_cap(const _text* t) noexcept nogil:
    """Ids of a text, at most: a token holds at least one normalized char other than a
    space, and an input char (a code unit of a str, a byte of UTF-8) gives at most
    BERT_MAX_CHARS of those (its NFD; what lowercase lengthens, NFD has decomposed)."""
    return BERT_MAX_CHARS * t.length + 1


cdef class WordPieceCodec(BatchModel):
    """The compiled WordPiece model: ``WordPieceCodec(tokens, unk_id, prefix, max_chars,
    options, first_forms, later_forms)``: the tokens' UTF-8 in id order; the unknown token's
    id (-1: none); the continuing prefix's UTF-8 (``##``); max_input_chars_per_word; the
    ``OPTIONS`` bits; each token's decoded bytes first in a text and after another token."""

    cdef wp_model m
    cdef bytes _first_forms  # decoding: each token's bytes, first in a text
    cdef bytes _later_forms  # and after another token
    cdef int64_t* _first_off
    cdef int64_t* _later_off
    cdef dict _lookup
    cdef tuple _args         # what __reduce__ builds it from
    cdef readonly tuple tokens

    def __cinit__(self, tokens, int unk_id, bytes prefix, Py_ssize_t max_chars, int options, first_forms,
                  later_forms):
        cdef Py_ssize_t n = len(tokens), i
        self.tokens = tuple(tokens)
        self._args = (self.tokens, unk_id, prefix, max_chars, options, tuple(first_forms), tuple(later_forms))
        if len(first_forms) != n or len(later_forms) != n:
            raise ValueError("a decoded form for each token")
        if not -1 <= unk_id < n:
            raise ValueError(f"unk_id {unk_id} is not an id of the {n} tokens")
        self.m.n_keys = n
        self.m.unk_id = unk_id
        self.m.max_chars = max_chars
        self.m.options = options
        self._ints = tuple(range(n))
        self._lookup = {}
        for i in range(n):
            self._lookup[self.tokens[i]] = i
        self._build_trie(prefix)
        self._first_forms = _joined(first_forms, &self._first_off)
        self._later_forms = _joined(later_forms, &self._later_off)

    cdef _build_trie(self, bytes prefix):
        cdef Py_ssize_t n = self.m.n_keys, i, k
        cdef int64_t edges = sum(len(t) for t in self.tokens) + len(prefix) + 1, size = 1024
        cdef int32_t node, nxt, n_nodes = 1
        cdef const uint8_t* s
        cdef bytes token
        cdef bint whole = _whole_chars(prefix)
        cdef int32_t* parent = NULL  # the edges, as they are made: each node's parent and the byte from it
        cdef uint8_t* byte = NULL
        while size < 2 * edges:
            size <<= 1
        self.m.edge_keys = <uint64_t*>calloc(size, sizeof(uint64_t))
        self.m.edge_vals = <int32_t*>malloc(size * sizeof(int32_t))
        self.m.node_token = <int32_t*>malloc((edges + 1) * sizeof(int32_t))
        self.m.token_len = <int32_t*>malloc((n + 1) * sizeof(int32_t))
        parent = <int32_t*>malloc((edges + 1) * sizeof(int32_t))
        byte = <uint8_t*>malloc(edges + 1)
        try:
            if (self.m.edge_keys == NULL or self.m.edge_vals == NULL or self.m.node_token == NULL
                    or self.m.token_len == NULL or parent == NULL or byte == NULL):
                raise MemoryError()
            self.m.edge_mask = size - 1
            self.m.node_token[0] = -1
            for i in range(-1, n):
                token = prefix if i < 0 else self.tokens[i]
                s = <const uint8_t*>PyBytes_AS_STRING(token)
                node = 0
                for k in range(len(token)):
                    nxt = _child(&self.m, node, s[k])
                    if nxt < 0:
                        nxt = n_nodes
                        n_nodes += 1
                        self.m.node_token[nxt] = -1
                        parent[nxt] = node
                        byte[nxt] = s[k]
                        _add_edge(&self.m, node, s[k], nxt)
                    node = nxt
                if i < 0:
                    self.m.prefix_node = node
                    self.m.prefix_len = <int32_t>len(token)
                else:  # a token listed twice has its last id, as in HF (a map filled line by line)
                    self.m.node_token[node] = <int32_t>i
                    self.m.token_len[i] = <int32_t>len(token)
                    whole = whole and _whole_chars(token)
            if whole:  # else a match could end inside a char, where the walk refuses it: no tables
                self._build_links(n_nodes, parent, byte)
        finally:
            free(parent)
            free(byte)

    cdef _build_links(self, int32_t n_nodes, const int32_t* parent, const uint8_t* byte):
        """LinMaxMatch's tables (Song et al. 2021, Algorithm 3): a breadth-first pass from
        both roots, the root and the prefix's node (never entered as a child), so that a
        node's link and pops are made after those of every shallower node. A token's node
        pops its token and links to the prefix's node; another node v, child of u by byte
        c, pops F(u), then the pops of each node z it goes to by failure links from f(u)
        until one has a transition by c, and links to where that leads (no such z: no
        link, and no pops kept, as the pass never makes them)."""
        cdef int32_t* first = <int32_t*>calloc(n_nodes + 1, sizeof(int32_t))  # u's children: kids[first[u]:first[u+1]]
        cdef int32_t* kids = <int32_t*>malloc(n_nodes * sizeof(int32_t))
        cdef int32_t* queue = <int32_t*>malloc(n_nodes * sizeof(int32_t))
        cdef wp_link* links = <wp_link*>malloc(n_nodes * sizeof(wp_link))
        cdef int64_t cap = n_nodes + 64, n_pops = 0, start
        # |F(v)| is at most v's depth, but nodes of long tokens over short ones can add up to
        # the square of a token's length: past this (BERT's vocabularies: 1.0 to 1.2 a node), the walk
        cdef int64_t limit = min(<int64_t>0x7FFFFFFF, 8 * <int64_t>n_nodes + (1 << 20))
        cdef int32_t* pops = <int32_t*>malloc(cap * sizeof(int32_t))
        cdef int32_t u, v, z, t, j, head = 0, tail = 0, r = self.m.prefix_node
        try:
            if first == NULL or kids == NULL or queue == NULL or links == NULL or pops == NULL:
                raise MemoryError()
            for v in range(1, n_nodes):  # the children grouped by parent (a counting sort)
                first[parent[v] + 1] += 1
            for u in range(n_nodes):
                first[u + 1] += first[u]
            memcpy(queue, first, n_nodes * sizeof(int32_t))
            for v in range(1, n_nodes):
                kids[queue[parent[v]]] = v
                queue[parent[v]] += 1
            for v in range(n_nodes):
                links[v].fail = -1
                links[v].start = 0
                links[v].count = 0
            queue[tail] = 0
            tail += 1
            if r != 0:  # (an empty prefix: the root is both)
                queue[tail] = r
                tail += 1
            while head < tail:
                u = queue[head]
                head += 1
                for j in range(first[u], first[u + 1]):
                    v = kids[j]
                    if v == r:
                        continue
                    queue[tail] = v
                    tail += 1
                    start = n_pops
                    if self.m.node_token[v] >= 0:
                        pops = _room_pops(pops, &cap, n_pops + 1, limit)
                        pops[n_pops] = self.m.node_token[v]
                        n_pops += 1
                        links[v].fail = r
                    else:
                        pops = _room_pops(pops, &cap, n_pops + links[u].count, limit)
                        memcpy(pops + n_pops, pops + links[u].start, links[u].count * sizeof(int32_t))
                        n_pops += links[u].count
                        z = links[u].fail
                        t = -1
                        while z >= 0:
                            t = _child(&self.m, z, byte[v])
                            if t >= 0:
                                break
                            pops = _room_pops(pops, &cap, n_pops + links[z].count, limit)
                            memcpy(pops + n_pops, pops + links[z].start, links[z].count * sizeof(int32_t))
                            n_pops += links[z].count
                            z = links[z].fail
                        if t < 0:
                            n_pops = start
                        links[v].fail = t
                    links[v].start = <int32_t>start
                    links[v].count = <int32_t>(n_pops - start)
            self.m.links = links
            self.m.pops = pops
            self.m.n_pops = n_pops
            links = NULL
            pops = NULL
        except OverflowError:  # a pool past its limit (no real vocabulary): no tables, the walk
            pass
        finally:
            free(first)
            free(kids)
            free(queue)
            free(links)
            free(pops)

    def __dealloc__(self):
        free(self.m.edge_keys)
        free(self.m.edge_vals)
        free(self.m.node_token)
        free(self.m.token_len)
        free(self.m.links)
        free(self.m.pops)
        free(self._first_off)
        free(self._later_off)

    @property
    def n_keys(self):
        return self.m.n_keys

    def lookup(self, key):
        """The id of a token's UTF-8, or -1."""
        return self._lookup.get(bytes(key), -1)

    def __reduce__(self):
        """Pickled as what it was built from (a stream decoder holds it)."""
        return (WordPieceCodec, self._args)

    # ------------------------------------------------------------------ encoding

    cdef list _as_list(self, const int32_t* ids, int64_t count):
        cdef list out = PyList_New(count)
        cdef PyObject** items = (<PyListObject*>out).ob_item
        cdef PyObject** ints = (<PyTupleObject*>self._ints).ob_item
        cdef int64_t i
        for i in range(count):
            Py_INCREF(<object>ints[ids[i]])
            items[i] = ints[ids[i]]
        PyObject_GC_UnTrack(<PyObject*>out)
        return out

    cdef int64_t _encode_one(self, object data, int32_t* dst, wp_work* w, bint spans) except -2:
        cdef _text t
        cdef int64_t r
        cdef bint is_bytes = PyBytes_CheckExact(data)
        _as_text(data, &t)
        if t.length < _NOGIL_UNITS:
            r = _encode_text(&self.m, &t, is_bytes, dst, w, spans)
        else:
            with nogil:
                r = _encode_text(&self.m, &t, is_bytes, dst, w, spans)
        if r < 0:
            self._raise(r, w, "")
        return r

    cdef _raise(self, int64_t code, wp_work* w, str where):
        if code == WP_ERR_UTF8:
            raise ValueError(f"{where}invalid UTF-8 at byte offset {w.bad}")
        if code == WP_ERR_NO_UNK:
            raise ValueError(f"{where}a word matches no token, and the vocabulary has no unknown token")
        if code == WP_ERR_MEMORY:
            raise MemoryError()
        raise RuntimeError(f"{where}WordPiece encoding failed (error {code}): a bug in bbpe.wordpiece._codec")

    cdef list _encode_list(self, object data, int flags):
        cdef _text t
        cdef int64_t count
        cdef int32_t small[1024]
        cdef int32_t* buf = &small[0]
        cdef wp_work w
        memset(&w, 0, sizeof(wp_work))
        data = self._text_of(data)
        _as_text(data, &t)
        if _text_cap(&t) > 1024:
            buf = <int32_t*>malloc(_text_cap(&t) * sizeof(int32_t))
            if buf == NULL:
                raise MemoryError()
        try:
            count = self._encode_one(data, buf, &w, False)
            return self._as_list(buf, count)
        finally:
            _work_free(&w)
            if buf != &small[0]:
                free(buf)

    def encode(self, data, int flags=0):
        """A str (a lone surrogate reads as U+FFFD) or UTF-8 bytes (ValueError naming the
        offset where they are not UTF-8) -> list of ids."""
        return self._encode_list(data, flags)

    def encode_offsets(self, data):
        """(ids, spans): the ids of a text and each token's (start, end) in it, in chars of a
        str and bytes of bytes: the input chars its normalized chars came from."""
        cdef _text t
        cdef int64_t count, i
        cdef int32_t* buf
        cdef wp_work w
        memset(&w, 0, sizeof(wp_work))
        data = self._text_of(data)
        _as_text(data, &t)
        buf = <int32_t*>malloc(_text_cap(&t) * sizeof(int32_t))
        if buf == NULL:
            raise MemoryError()
        try:
            count = self._encode_one(data, buf, &w, True)
            spans = np.empty((count, 2), dtype=np.int64)
            for i in range(count):
                spans[i, 0] = w.spans[2 * i]
                spans[i, 1] = w.spans[2 * i + 1]
            return self._as_list(buf, count), spans
        finally:
            _work_free(&w)
            free(buf)

    def normalize(self, data):
        """The text as the normalizer leaves it (HF's ``normalize_str``), and each char's
        (start, end) in the input."""
        cdef _text t
        cdef int64_t n, i
        cdef wp_work w
        memset(&w, 0, sizeof(wp_work))
        data = self._text_of(data)
        _as_text(data, &t)
        try:
            n = _normalize(&self.m, &t, PyBytes_CheckExact(data), &w)
            if n < 0:
                self._raise(n, &w, "")
            text = "".join([chr(w.cp[i]) for i in range(n)])
            spans = [(w.at[2 * i], w.at[2 * i + 1]) for i in range(n)]
            return text, spans
        finally:
            _work_free(&w)

    def pre_tokenize(self, data):
        """The words of a text as the normalizer and the pre-tokenizer give them, each with
        its (start, end) in the input (HF's ``pre_tokenize_str`` of ``normalize_str``)."""
        cdef _text t
        cdef int64_t n
        cdef size_t i = 0, j
        cdef wp_work w
        cdef list out = []
        memset(&w, 0, sizeof(wp_work))
        data = self._text_of(data)
        _as_text(data, &t)
        try:
            n = _normalize(&self.m, &t, PyBytes_CheckExact(data), &w)
            if n < 0:
                self._raise(n, &w, "")
            while True:
                i = _next_word(w.cp, i, <size_t>n, &j)
                if i == <size_t>n:
                    return out
                out.append((PyUnicode_FromKindAndData(4, w.cp + i, j - i), (w.at[2 * i], w.at[2 * j - 1])))
                i = j
        finally:
            _work_free(&w)

    def count_words(self, texts, dict counts):
        """Add the words of each text (str or UTF-8 bytes), as the normalizer and the
        pre-tokenizer give them, to ``counts`` ({word: count}): what training counts. The
        words are counted in a table of code points first (``_word_table``), and each
        distinct word becomes a str once, when the call ends, in the order first met: a
        str and a dict update per word met cost most of a count on Chinese, where each
        char is a word."""
        cdef _text t
        cdef int64_t n
        cdef size_t i, j
        cdef bint is_bytes
        cdef wp_work w
        cdef _word_table table
        cdef int64_t k
        cdef const _word_entry* e
        memset(&w, 0, sizeof(wp_work))
        memset(&table, 0, sizeof(_word_table))
        try:
            for data in texts:
                data = self._text_of(data)
                _as_text(data, &t)
                is_bytes = PyBytes_CheckExact(data)
                with nogil:
                    n = _normalize(&self.m, &t, is_bytes, &w)
                    if n >= 0:
                        i = 0
                        while True:
                            i = _next_word(w.cp, i, <size_t>n, &j)
                            if i == <size_t>n:
                                break
                            if _count_word(&table, w.cp + i, j - i) < 0:
                                n = WP_ERR_MEMORY
                                break
                            i = j
                if n < 0:
                    self._raise(n, &w, "")
            for k in range(table.n_words):
                e = &table.entries[table.order[k]]
                word = PyUnicode_FromKindAndData(4, table.chars + e.start, e.length)
                counts[word] = counts.get(word, 0) + e.count
        finally:
            _work_free(&w)
            free(table.entries)
            free(table.order)
            free(table.chars)

    # ------------------------------------------------------------------ BatchModel's hooks

    cdef int64_t _n_ids(self) noexcept nogil:
        return self.m.n_keys

    cdef void* _work_new(self) except NULL:
        cdef void* work = calloc(1, sizeof(wp_work))
        if work == NULL:
            raise MemoryError()
        return work

    cdef void _work_release(self, void* work) noexcept:
        _work_free(<wp_work*>work)
        free(work)

    cdef size_t _bound(self, const _text* t) noexcept nogil:
        return _text_cap(t)

    cdef int64_t _encode_nogil(self, const _text* t, bint is_bytes, int32_t* dst, void* work) noexcept nogil:
        return _encode_text(&self.m, t, is_bytes, dst, <wp_work*>work, False)

    cdef int64_t _encode_gil(self, object data, int32_t* dst, void* work) except -2:
        return self._encode_one(data, dst, <wp_work*>work, False)

    cdef int _raise_code(self, int64_t code, void* work, str where) except -1:
        self._raise(code, <wp_work*>work, where)
        return -1

    # ------------------------------------------------------------------ decoding

    cdef object _decode(self, object ids, const char* errors, bint first):
        """HF's WordPiece decoder over the ids: bytes (errors NULL) or str. ``first``: the
        first id is the first token of the text (a stream's later calls pass False)."""
        cdef const int64_t[::1] view
        cdef int64_t* owned = NULL
        cdef const int64_t* src
        cdef Py_ssize_t n, i
        cdef int64_t kid, size = 0
        cdef uint8_t* dst = NULL
        cdef size_t o = 0
        cdef const int64_t* off
        cdef const char* forms
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
                off = self._first_off if (first and i == 0) else self._later_off
                size += off[kid + 1] - off[kid]
            dst = <uint8_t*>malloc(size + 1)
            if dst == NULL:
                raise MemoryError()
            for i in range(n):
                kid = src[i]
                if first and i == 0:
                    off, forms = self._first_off, PyBytes_AS_STRING(self._first_forms)
                else:
                    off, forms = self._later_off, PyBytes_AS_STRING(self._later_forms)
                memcpy(dst + o, forms + off[kid], off[kid + 1] - off[kid])
                o += off[kid + 1] - off[kid]
            if errors == NULL:
                return PyBytes_FromStringAndSize(<char*>dst, size)
            return PyUnicode_DecodeUTF8(<char*>dst, size, errors)
        finally:
            free(owned)
            free(dst)

    def decode(self, ids, bint first=True):
        """Ids -> bytes, as HF's WordPiece decoder joins their tokens (``first=False``: the
        ids continue a text, so the first of them is not its first token)."""
        return self._decode(ids, NULL, first)

    def decode_str(self, ids, str errors="replace"):
        """Ids -> str (``decode``, decoded as UTF-8 with ``errors``)."""
        cdef bytes e = errors.encode()
        return self._decode(ids, e, True)


cdef int _add_edge(wp_model* m, int32_t node, uint8_t byte, int32_t child) except -1:
    cdef uint64_t key = ((<uint64_t>node << 8) | byte) + 1
    cdef uint64_t h = (key * <uint64_t>0x9E3779B97F4A7C15) >> 20
    while True:
        h &= m.edge_mask
        if m.edge_keys[h] == 0:
            m.edge_keys[h] = key
            m.edge_vals[h] = child
            return 0
        h += 1


cdef bint _whole_chars(bytes s):
    """Whether s is whole UTF-8 sequences by their shape (each lead byte followed by as many
    continuation bytes as it says): a token that is can only end where a word's char ends."""
    cdef const uint8_t* p = <const uint8_t*>PyBytes_AS_STRING(s)
    cdef Py_ssize_t n = len(s), i = 0, need, k
    cdef uint8_t c
    while i < n:
        c = p[i]
        if c < 0x80:
            need = 0
        elif 0xC0 <= c < 0xE0:
            need = 1
        elif 0xE0 <= c < 0xF0:
            need = 2
        elif 0xF0 <= c < 0xF8:
            need = 3
        else:
            return False
        if i + 1 + need > n:
            return False
        for k in range(i + 1, i + 1 + need):
            if (p[k] & 0xC0) != 0x80:
                return False
        i += 1 + need
    return True


cdef int32_t* _room_pops(int32_t* pops, int64_t* cap, int64_t need, int64_t limit) except NULL:
    """The pool with room for ``need`` ids (grown by doubling); OverflowError past ``limit``."""
    cdef int64_t grown = cap[0]
    cdef void* p
    if need <= cap[0]:
        return pops
    if need > limit:
        raise OverflowError("failure pops past their limit")
    while grown < need:
        grown *= 2
    if grown > limit:
        grown = limit
    p = realloc(pops, grown * sizeof(int32_t))
    if p == NULL:
        raise MemoryError()
    cap[0] = grown
    return <int32_t*>p


cdef bytes _joined(forms, int64_t** starts):
    """The forms' bytes joined; *starts: a malloc'd array of where each starts, and the end."""
    cdef Py_ssize_t n = len(forms), i
    cdef int64_t* off = <int64_t*>malloc((n + 1) * sizeof(int64_t))
    if off == NULL:
        raise MemoryError()
    off[0] = 0
    for i in range(n):
        off[i + 1] = off[i] + len(forms[i])
    starts[0] = off
    return b"".join(forms)
