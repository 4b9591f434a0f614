# cython: language_level=3
"""The compiled pre-tokenizers of byte-level BPE: hand-written scanners over UTF-8 that give
exactly the pieces that ``regex.findall(pattern, text)`` gives for tiktoken's and HF's
patterns, without the GIL and without allocating.

Each scanner answers one question, ``piece_end``: where does the piece that starts here end?
The regex's alternatives are tried in their order, each as its backtracking would settle, so
a scanner reads like its pattern. A code point's class is one lookup in the two-stage table
of unicode_classes.h (tools/make_unicode_classes.py), at the Unicode version of tiktoken's and
HF's regex engines (16.0).

``$`` is the end of the text, ``n``: tiktoken runs its regex on each stretch of text between
special tokens, so a caller that cuts at special tokens passes the stretch's end. (Python's
``regex`` also lets ``$`` match before a final newline, Oniguruma before any: in ``\\s++$`` the
possessive run has taken that newline already, so no result changes.)
"""

from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int64_t, uint8_t, uint32_t

cdef extern from "unicode_classes.h":
    const uint8_t bbpe_cls_stage1[]
    const uint8_t bbpe_cls_stage2[]
    enum:
        BBPE_CLS_L   # \p{L}
        BBPE_CLS_N   # \p{N}
        BBPE_CLS_S   # \s
        BBPE_CLS_UP  # o200k's [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
        BBPE_CLS_LO  # o200k's [\p{Ll}\p{Lm}\p{Lo}\p{M}]
        BBPE_CLS_W   # \w as HF's Whitespace (Oniguruma) has it
        BBPE_CLS_LNS  # L | N | S: [^\s\p{L}\p{N}] has none of them


cdef inline uint32_t _cls(const uint8_t* s, Py_ssize_t i, Py_ssize_t* length) noexcept nogil:
    """The class of the code point at s[i] (s is valid UTF-8); its length in bytes into
    ``length``, set on each branch, so that a loop's next position depends on the branch (which
    the CPU predicts) rather than on loads and arithmetic."""
    cdef uint32_t c = s[i], cp
    if c < 0x80:
        length[0] = 1
        return bbpe_cls_stage2[c]  # block 0 holds U+0000..U+00FF
    if c < 0xE0:
        length[0] = 2
        cp = (c & 0x1F) << 6 | (s[i + 1] & 0x3F)
    elif c < 0xF0:
        length[0] = 3
        cp = (c & 0x0F) << 12 | (s[i + 1] & 0x3F) << 6 | (s[i + 2] & 0x3F)
    else:
        length[0] = 4
        cp = (c & 0x07) << 18 | (s[i + 1] & 0x3F) << 12 | (s[i + 2] & 0x3F) << 6 | (s[i + 3] & 0x3F)
    return bbpe_cls_stage2[bbpe_cls_stage1[cp >> 8] << 8 | (cp & 0xFF)]


cdef inline Py_ssize_t _run(const uint8_t* s, Py_ssize_t n, Py_ssize_t i, uint32_t bits) noexcept nogil:
    """The end of the run from s[i] of code points whose class has one of ``bits``."""
    cdef Py_ssize_t length
    while i < n and _cls(s, i, &length) & bits:
        i += length
    return i


cdef inline Py_ssize_t _other_run(const uint8_t* s, Py_ssize_t n, Py_ssize_t i) noexcept nogil:
    """The end of the run from s[i] of [^\\s\\p{L}\\p{N}]."""
    cdef Py_ssize_t length
    while i < n and not (_cls(s, i, &length) & BBPE_CLS_LNS):
        i += length
    return i


cdef inline Py_ssize_t _newlines(const uint8_t* s, Py_ssize_t n, Py_ssize_t i, bint slash) noexcept nogil:
    """The end of [\\r\\n]* (slash: [\\r\\n/]*) from s[i]."""
    while i < n and (s[i] == 10 or s[i] == 13 or (slash and s[i] == 47)):
        i += 1
    return i


cdef inline Py_ssize_t _digits(const uint8_t* s, Py_ssize_t n, Py_ssize_t i, int most) noexcept nogil:
    """The end of \\p{N}{1,most} from s[i] (which is \\p{N})."""
    cdef Py_ssize_t length
    while most > 0 and i < n and _cls(s, i, &length) & BBPE_CLS_N:
        i += length
        most -= 1
    return i


cdef inline Py_ssize_t _contraction(const uint8_t* s, Py_ssize_t n, Py_ssize_t i, bint fold) noexcept nogil:
    """The end of 's 't 're 've 'm 'll 'd at s[i], or 0. fold: case-insensitive, under simple case
    folding, where s also matches U+017F LATIN SMALL LETTER LONG S (no other non-ASCII code point
    folds to one of these letters)."""
    cdef uint8_t c, d
    if s[i] != 39 or i + 1 >= n:
        return 0
    c = s[i + 1]
    if fold:
        if c == 0xC5 and i + 2 < n and s[i + 2] == 0xBF:  # U+017F
            return i + 3
        c |= 0x20  # ASCII upper -> lower; no other byte becomes one of the letters
    if c == 115 or c == 116 or c == 109 or c == 100:  # s t m d
        return i + 2
    if i + 2 >= n:
        return 0
    d = s[i + 2] | 0x20 if fold else s[i + 2]
    if (c == 108 and d == 108) or ((c == 114 or c == 118) and d == 101):  # ll re ve
        return i + 3
    return 0


cdef inline Py_ssize_t _spaces(const uint8_t* s, Py_ssize_t n, Py_ssize_t i, bint newlines, bint to_end) noexcept nogil:
    """A piece of whitespace from s[i] (which is \\s), by the patterns' last alternatives:
    ``\\s++$`` if ``to_end`` (tiktoken 0.14's cl100k), ``\\s*[\\r\\n]+`` if ``newlines``, then
    ``\\s+(?!\\S)|\\s+`` (equivalently ``\\s+(?!\\S)|\\s``)."""
    cdef Py_ssize_t end = i, last = i, after_newline = 0, length
    while end < n and _cls(s, end, &length) & BBPE_CLS_S:
        if s[end] == 10 or s[end] == 13:
            after_newline = end + 1
        last = end
        end += length
    if to_end and end == n:
        return n
    if newlines and after_newline:
        return after_newline  # \s* backtracks to the run's last newline, [\r\n]+ takes it
    if end == n or last == i:
        return end
    return last  # (?!\S): the run but its last code point, which goes with what follows


cdef Py_ssize_t _gpt2(const uint8_t* s, Py_ssize_t n, Py_ssize_t i) noexcept nogil:
    """'(?:[sdmt]|ll|ve|re)| ?\\p{L}++| ?\\p{N}++| ?[^\\s\\p{L}\\p{N}]++|\\s++$|\\s+(?!\\S)|\\s"""
    cdef Py_ssize_t j = i, e = _contraction(s, n, i, False), length
    cdef uint32_t a
    if e:
        return e
    if s[i] == 32 and i + 1 < n:
        j = i + 1  # " ?": the space goes with what follows, unless that is whitespace too
    a = _cls(s, j, &length)
    if a & BBPE_CLS_L:
        return _run(s, n, j + length, BBPE_CLS_L)
    if a & BBPE_CLS_N:
        return _run(s, n, j + length, BBPE_CLS_N)
    if not (a & BBPE_CLS_S):
        return _other_run(s, n, j + length)
    return _spaces(s, n, i, False, False)  # \s++$ takes what \s+(?!\S) would


cdef Py_ssize_t _cl100k(const uint8_t* s, Py_ssize_t n, Py_ssize_t i, int digits, bint to_end) noexcept nogil:
    """tiktoken 0.14's cl100k_base (digits 3, to_end):
        '(?i:[sdmt]|ll|ve|re)|[^\\r\\n\\p{L}\\p{N}]?+\\p{L}++|\\p{N}{1,3}+| ?[^\\s\\p{L}\\p{N}]++[\\r\\n]*+|
        \\s++$|\\s*[\\r\\n]|\\s+(?!\\S)|\\s
    and the spellings without \\s++$ (not to_end): Llama 3's, and Qwen2's with \\p{N} (digits 1)."""
    cdef Py_ssize_t j, length, e = _contraction(s, n, i, True)
    cdef uint32_t a = _cls(s, i, &length)
    j = i + length
    if e:
        return e
    if a & BBPE_CLS_L:
        return _run(s, n, j, BBPE_CLS_L)
    if not (a & BBPE_CLS_N) and s[i] != 10 and s[i] != 13 and j < n and _cls(s, j, &length) & BBPE_CLS_L:
        return _run(s, n, j, BBPE_CLS_L)  # [^\r\n\p{L}\p{N}] before letters joins them
    if a & BBPE_CLS_N:
        return _digits(s, n, i, digits)
    if not (a & BBPE_CLS_LNS):
        return _newlines(s, n, _other_run(s, n, j), False)
    if s[i] == 32 and j < n and not (_cls(s, j, &length) & BBPE_CLS_LNS):
        return _newlines(s, n, _other_run(s, n, j), False)
    return _spaces(s, n, i, True, to_end)


cdef inline Py_ssize_t _o200k_word(const uint8_t* s, Py_ssize_t n, Py_ssize_t i, Py_ssize_t j,
                                   uint32_t first) noexcept nogil:
    """The end of o200k's first two alternatives at s[i], or -1, where j > i if s[i] is
    [^\\r\\n\\p{L}\\p{N}] (the optional prefix) and ``first`` is s[i]'s class:
        A  [^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+
        B  [^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*
    (UP and LO below), as backtracking settles them: A with the prefix, A without, B with, B
    without. Lm, Lo and M are in both UP and LO."""
    cdef Py_ssize_t k = j, lo_end = -1, length
    cdef uint32_t a = 0
    while k < n:  # UP*, remembering where its last LO code point ends
        a = _cls(s, k, &length)
        if not (a & BBPE_CLS_UP):
            break
        k += length
        if a & BBPE_CLS_LO:
            lo_end = k
    if k < n and a & BBPE_CLS_LO:
        return _run(s, n, k, BBPE_CLS_LO)  # A: LO+ after all of UP*
    if lo_end >= 0:
        return lo_end  # A: UP* gives back down to its last LO code point, which is LO+
    if j > i and first & BBPE_CLS_LO:
        return j  # A without the prefix: the prefix was a mark (M is LO, not L), alone
    if k > j:
        return k  # B, LO* empty (A took any LO); B without the prefix cannot match more
    return -1


cdef Py_ssize_t _o200k(const uint8_t* s, Py_ssize_t n, Py_ssize_t i) noexcept nogil:
    """A|B (see _o200k_word) then (?i:'s|'t|'re|'ve|'m|'ll|'d)?, |\\p{N}{1,3}|
    ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"""
    cdef Py_ssize_t j, e, c, length
    cdef uint32_t a = _cls(s, i, &length)
    j = i + length
    if a & (BBPE_CLS_L | BBPE_CLS_N) or s[i] == 10 or s[i] == 13:
        e = _o200k_word(s, n, i, i, a)
    else:
        e = _o200k_word(s, n, i, j, a)
    if e >= 0:
        c = _contraction(s, n, e, True) if e < n else 0  # (?i:'s|'t|'re|'ve|'m|'ll|'d)?
        return c if c else e
    if a & BBPE_CLS_N:
        return _digits(s, n, i, 3)
    if not (a & BBPE_CLS_LNS):
        return _newlines(s, n, _other_run(s, n, j), True)
    if s[i] == 32 and j < n and not (_cls(s, j, &length) & BBPE_CLS_LNS):
        return _newlines(s, n, _other_run(s, n, j), True)
    return _spaces(s, n, i, True, False)


cdef Py_ssize_t _whitespace(const uint8_t* s, Py_ssize_t n, Py_ssize_t i) noexcept nogil:
    """HF's Whitespace, ``\\w+|[^\\w\\s]+``: a run of \\w, a run of neither, or a run of \\s
    (a gap: piece_is_gap)."""
    cdef Py_ssize_t length
    cdef uint32_t a = _cls(s, i, &length) & (BBPE_CLS_W | BBPE_CLS_S)
    i += length
    while i < n and (_cls(s, i, &length) & (BBPE_CLS_W | BBPE_CLS_S)) == a:
        i += length
    return i


cdef bint piece_is_gap(int pattern, const uint8_t* s, Py_ssize_t start) noexcept nogil:
    cdef Py_ssize_t length
    return pattern == PIECES_WHITESPACE and (_cls(s, start, &length) & BBPE_CLS_S) != 0


cdef Py_ssize_t piece_end(int pattern, const uint8_t* s, Py_ssize_t n, Py_ssize_t start) noexcept nogil:
    if pattern == PIECES_O200K:
        return _o200k(s, n, start)
    if pattern == PIECES_CL100K:
        return _cl100k(s, n, start, 3, True)
    if pattern == PIECES_LLAMA3:
        return _cl100k(s, n, start, 3, False)
    if pattern == PIECES_QWEN2:
        return _cl100k(s, n, start, 1, False)
    if pattern == PIECES_GPT2:
        return _gpt2(s, n, start)
    if pattern == PIECES_WHITESPACE:
        return _whitespace(s, n, start)
    return n  # not a compiled pattern: the rest is one piece


# tiktoken 0.14's own pattern strings (tiktoken_ext/openai_public.py)
_GPT2_TIKTOKEN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
_CL100K_TIKTOKEN = (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|"""
                    r"""\s++$|\s*[\r\n]|\s+(?!\S)|\s""")
_O200K_TIKTOKEN = "|".join([
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""\p{N}{1,3}""",
    r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
    r"""\s*[\r\n]+""",
    r"""\s+(?!\S)""",
    r"""\s+""",
])

TIKTOKEN_PATTERNS = {
    "gpt2": _GPT2_TIKTOKEN,
    "r50k_base": _GPT2_TIKTOKEN,
    "p50k_base": _GPT2_TIKTOKEN,
    "p50k_edit": _GPT2_TIKTOKEN,
    "cl100k_base": _CL100K_TIKTOKEN,
    "o200k_base": _O200K_TIKTOKEN,
    "o200k_harmony": _O200K_TIKTOKEN,
}

# HF's Whitespace pre-tokenizer (pre_tokenizers/whitespace.rs)
WHITESPACE_PATTERN = r"\w+|[^\w\s]+"

PATTERN_NAMES = {
    "regex": PIECES_REGEX,
    "gpt2": PIECES_GPT2,
    "cl100k": PIECES_CL100K,
    "o200k": PIECES_O200K,
    "qwen2": PIECES_QWEN2,
    "llama3": PIECES_LLAMA3,
    "whitespace": PIECES_WHITESPACE,
}
_COMPILED = tuple(PATTERN_NAMES.values())[1:]

# Every spelling that a scanner implements exactly; the tests check each against `regex`.
_SPELLINGS = {
    _GPT2_TIKTOKEN: PIECES_GPT2,
    # tiktoken 0.6-0.7
    r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""": PIECES_GPT2,
    # tiktoken <= 0.5, and HF tokenizers' ByteLevel pre-tokenizer
    r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""": PIECES_GPT2,
    # GPT-2's encoder.py
    r"""'s|'t|'re|'ve|'m|'ll|'d| ?[\p{L}]+| ?[\p{N}]+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""": PIECES_GPT2,
    _CL100K_TIKTOKEN: PIECES_CL100K,
    # tiktoken <= 0.5, and Llama 3's tokenizer.json
    (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"""
     r"""\s*[\r\n]+|\s+(?!\S)|\s+"""): PIECES_LLAMA3,
    # tiktoken 0.6-0.7
    (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|"""
     r"""\s*[\r\n]|\s+(?!\S)|\s+"""): PIECES_LLAMA3,
    _O200K_TIKTOKEN: PIECES_O200K,
    # Qwen2's tokenizer.json
    (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"""
     r"""\s*[\r\n]+|\s+(?!\S)|\s+"""): PIECES_QWEN2,
    # Oniguruma's \w, which HF's Whitespace compiles it with (for `regex` it is another \w)
    WHITESPACE_PATTERN: PIECES_WHITESPACE,
}


def compiled_pattern(str regex_string):
    """The PIECES_* id of the scanner that implements ``regex_string`` exactly, if it is one of
    the known spellings (tiktoken's current and older strings, HF ByteLevel's, Llama 3's,
    Qwen2's, HF Whitespace's), else PIECES_REGEX (0). The string must match one of them character for character."""
    return _SPELLINGS.get(regex_string, PIECES_REGEX)


def split(text, int pattern, bint gaps=False):
    """The pieces of ``text`` under the compiled pre-tokenizer ``pattern`` (a PIECES_* id: see
    PATTERN_NAMES): str pieces for a str, bytes pieces for bytes, which must be UTF-8. Lone
    surrogates in a str become U+FFFD first, as tiktoken and the codec do; gaps are left
    out, unless ``gaps`` (then the pieces spell the text). For tests, offsets and
    debugging; the codec calls piece_end itself."""
    cdef bytes data
    cdef bint as_str = isinstance(text, str)
    cdef const uint8_t* s
    cdef Py_ssize_t n, start = 0, end
    _check_compiled(pattern)
    if as_str:
        try:
            data = (<str>text).encode("utf-8")
        except UnicodeEncodeError:
            data = (<str>text).encode("utf-16", "surrogatepass").decode("utf-16", "replace").encode("utf-8")
    elif isinstance(text, bytes):
        data = <bytes>text
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(f"the text is not UTF-8: byte {e.start} ({data[e.start]:#04x}): {e.reason}") from None
    else:
        raise TypeError(f"split takes str or bytes, not {type(text).__name__}")
    s = data
    n = len(data)
    pieces = []
    while start < n:
        end = piece_end(pattern, s, n, start)
        if gaps or not piece_is_gap(pattern, s, start):
            pieces.append(PyUnicode_DecodeUTF8(<const char*>s + start, end - start, NULL) if as_str
                          else data[start:end])
        start = end
    return pieces


def _check_compiled(int pattern):
    if pattern not in _COMPILED:
        raise ValueError(f"{pattern!r} is not a compiled pre-tokenizer: one of {PATTERN_NAMES}, but not regex")


def line_piece_ends(const uint8_t[::1] data, Py_ssize_t start, Py_ssize_t stop, int pattern, int64_t[::1] out):
    """The ends of the pieces of ``data[start:stop]`` under ``pattern``, each line (to and
    with its ``\\n``) split as a text of its own, as HF's ``train`` reads files: written into
    ``out``; returns how many. A gap's end is written negated (-end: the text up to there is
    no word). ``stop`` must end a line (or the data), ``start`` be where a piece starts, and
    the data UTF-8. Stops early when ``out`` is full: the last end written (negated or not)
    is where to go on from. Runs without the GIL, so that threads can split parts of a
    corpus side by side."""
    cdef Py_ssize_t n = 0, line_start, line_end, end
    cdef const uint8_t* s = &data[0] if data.shape[0] else NULL
    _check_compiled(pattern)
    if not 0 <= start <= stop <= data.shape[0]:
        raise ValueError(f"start {start} and stop {stop} are not within the data ({data.shape[0]} bytes)")
    with nogil:
        line_start = start  # the scanners take the whole line: find where it begins
        while line_start > 0 and s[line_start - 1] != 10:
            line_start -= 1
        while start < stop and n < out.shape[0]:
            line_end = start
            while line_end < stop and s[line_end] != 10:
                line_end += 1
            if line_end < stop:
                line_end += 1  # the newline belongs to its line
            while start < line_end and n < out.shape[0]:
                end = line_start + piece_end(pattern, s + line_start, line_end - line_start, start - line_start)
                out[n] = -end if piece_is_gap(pattern, s, start) else end
                n += 1
                start = end
            if start == line_end:
                line_start = line_end
    return n
