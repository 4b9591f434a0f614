# cython: language_level=3
# The compiled pre-tokenizers of byte-level BPE: each gives exactly the pieces that its
# regex's findall gives (tiktoken's and HF's patterns), scanning UTF-8 without the GIL.

from libc.stdint cimport uint8_t

cdef enum:
    PIECES_REGEX = 0      # no compiled scanner: the pattern runs through the `regex` package
    PIECES_GPT2 = 1       # gpt2, r50k_base, p50k_base, p50k_edit; HF ByteLevel's own regex
    PIECES_CL100K = 2     # cl100k_base; Llama 3's Split pattern
    PIECES_O200K = 3      # o200k_base
    PIECES_QWEN2 = 4      # cl100k's with single digits (Qwen2 and its descendants)
    # cl100k's as tiktoken < 0.8 and Llama 3's tokenizer.json spell it: unlike tiktoken 0.14's
    # (its \s++$), a whitespace run that ends the text is cut after its last \r or \n
    PIECES_LLAMA3 = 5
    # HF's Whitespace pre-tokenizer, \w+|[^\w\s]+ (its \w Oniguruma's): the whitespace runs
    # between its matches are gaps, dropped
    PIECES_WHITESPACE = 6

# The end (exclusive) of the piece that starts at s[start], for 0 <= start < n; s[0:n] is
# valid UTF-8. Pieces are contiguous: the next one starts where this one ends.
cdef Py_ssize_t piece_end(int pattern, const uint8_t* s, Py_ssize_t n, Py_ssize_t start) noexcept nogil

# Whether the piece that starts at s[start] is a gap: text that the pattern does not match,
# which the pre-tokenizer drops (only PIECES_WHITESPACE has gaps).
cdef bint piece_is_gap(int pattern, const uint8_t* s, Py_ssize_t start) noexcept nogil
