"""A slow, literal Python transcription of the C++ ``Encode`` (tests only).

It follows ``XBBPE::Encode`` / ``ToTextVectorWord`` / ``GetWordEncode`` statement by
statement, so the Cython codec can be checked against it on arbitrary input. ``compat``
selects the reference's behaviour where it loses data (Q14 swallowing, Q20.1 NUL padding)
instead of bbpe's lossless default.
"""

from __future__ import annotations

import re

TAG = re.compile(rb"<[^>]*>", re.DOTALL)


def char_len(lead: int) -> int:
    if lead < 0x80:
        return 1
    if lead & 0xE0 == 0xC0:
        return 2
    if lead & 0xF0 == 0xE0:
        return 3
    if lead & 0xF8 == 0xF0:
        return 4
    return 1


def words(piece: bytes, compat: bool) -> list[bytes]:
    out, i = [], 0
    while i < len(piece):
        n = char_len(piece[i])
        word = piece[i : i + n]
        if compat:
            word = word.ljust(n, b"\0")  # s[size()] is NUL; further bytes: undefined, NUL here
        out.append(word)
        i += n
    return out


def encode(vocab: dict[bytes, int], text: bytes, compat: bool) -> list[int]:
    pieces, pos = [], 0
    for m in TAG.finditer(text):
        pieces += [text[pos : m.start()], m.group()]
        pos = m.end()
    pieces.append(text[pos:])
    ids: list[int] = []
    for piece in filter(None, pieces):
        w = words(piece, compat)
        i = 0
        while i < len(w):
            m = w[i]
            while True:
                m2 = m
                if i + 1 < len(w):
                    if len(m) + len(w[i + 1]) < 24:  # WordIdKey::Append
                        m2 = m + w[i + 1]
                    elif not compat:
                        break  # bbpe: never drop the next char (Q14)
                if m2 not in vocab:
                    break
                m = m2
                i += 1
                if not i + 1 < len(w):
                    break
            ids += [vocab[m]] if m in vocab else [vocab[bytes([b])] for b in m]
            i += 1
    return ids
