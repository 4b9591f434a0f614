"""Cutting UTF-8 text into the C++'s chars and segments (Q1-Q4): a char's length from its
lead byte, the training delimiters, and a segment's chars as key rows.
"""

import numpy as np

from bbpe.kernels.support import _inline

from .keys import _LEN_SHIFT, _U64_0, intern


@_inline
def char_len(lead):
    """GetWordSize (Q2): the length comes from the lead byte alone; 80-BF and F8-FF -> 1."""
    if lead < 0x80:
        return 1
    if (lead & 0xE0) == 0xC0:
        return 2
    if (lead & 0xF0) == 0xE0:
        return 3
    if (lead & 0xF8) == 0xF0:
        return 4
    return 1


@_inline
def delimiter_len(buf, i, end):
    """Length of the training delimiter that starts at buf[i], 0 if none (Q3).

    The C++ splits with the byte-level regex LF ? space ! " , . and the UTF-8 of
    · ， ？ ！ 。 U+3000 U+200B. No alternative is a prefix of another, so the leftmost match
    is simply the first position where one of them starts.
    """
    c = buf[i]
    if c == 0x0A or c == 0x3F or c == 0x20 or c == 0x21 or c == 0x22 or c == 0x2C or c == 0x2E:
        return 1
    if c == 0xC2:
        return 2 if i + 1 < end and buf[i + 1] == 0xB7 else 0
    if i + 2 >= end:
        return 0
    c1 = buf[i + 1]
    c2 = buf[i + 2]
    if c == 0xEF:
        return 3 if c1 == 0xBC and (c2 == 0x8C or c2 == 0x9F or c2 == 0x81) else 0
    if c == 0xE3:
        return 3 if c1 == 0x80 and (c2 == 0x82 or c2 == 0x80) else 0
    if c == 0xE2:
        return 3 if c1 == 0x80 and c2 == 0x8B else 0
    return 0


# Bytes that can start a training delimiter (Q3, ``delimiter_len``): the scan skips all others
# with one table load each (a Chinese text is mostly bytes that cannot).
_DELIMITER_LEAD = np.zeros(256, dtype=np.uint8)
_DELIMITER_LEAD[[0x0A, 0x3F, 0x20, 0x21, 0x22, 0x2C, 0x2E, 0xC2, 0xEF, 0xE3, 0xE2]] = 1


@_inline
def _char_key(buf, start, end):
    """(w0, w2, length) of the char that starts at buf[start], in a segment ending at ``end``.

    Q20.1: the C++ reads past the end of a segment whose last char is cut short. The byte
    right after a std::string is its NUL terminator; what lies further is undefined, and
    NUL is used for it too, so a cut char is padded with NUL to its full length.
    """
    length = char_len(buf[start])
    w0 = _U64_0
    for t in range(length):
        if start + t < end:
            w0 |= np.uint64(buf[start + t]) << np.uint64(8 * t)
    return w0, np.uint64(length) << _LEN_SHIFT, length


# A direct-mapped memo of char rows for the scan: ASCII at its byte, a two-byte char at
# 128 + its 11 payload bits, a three-byte char at 128 + 2048 + its 16 payload bits, when
# its tail bytes are continuation bytes (80-BF) and the segment does not cut it; others
# (four bytes, invalid or cut) take the hash table. A Chinese corpus is nearly all
# three-byte chars: the memo (265 KB) stays in cache where the table would not.


@_inline
def _char_memo_index(buf, start, end):
    lead = np.int64(buf[start])
    if lead < 0x80:
        return lead
    if (lead & 0xE0) == 0xC0:
        if start + 1 < end and (buf[start + 1] & 0xC0) == 0x80:
            return 128 + (((lead & 0x1F) << 6) | (buf[start + 1] & 0x3F))
        return -1
    if ((lead & 0xF0) == 0xE0 and start + 2 < end and (buf[start + 1] & 0xC0) == 0x80
            and (buf[start + 2] & 0xC0) == 0x80):
        return 128 + 2048 + (((lead & 0x0F) << 12) | ((np.int64(buf[start + 1]) & 0x3F) << 6) | (buf[start + 2] & 0x3F))
    return -1


@_inline
def _cut_segment_memo(buf, start, end, words, slots, meta, out, pos, memo):
    """``_cut_segment`` through the memo of char rows (row + 1, 0 = not yet known)."""
    j = start
    while j < end:
        m = _char_memo_index(buf, j, end)
        if m >= 0 and memo[m] > 0:
            out[pos] = memo[m] - 1
            pos += 1
            j += char_len(buf[j])
            continue
        w0, w2, length = _char_key(buf, j, end)
        row = intern(words, slots, meta, w0, _U64_0, w2)
        if m >= 0:
            memo[m] = row + 1
        out[pos] = row
        pos += 1
        j += length
    return pos


