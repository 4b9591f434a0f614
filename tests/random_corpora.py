"""Random corpora that exercise XBBPE's quirks but stay where the reference is defined.

A corpus is made of repeated "words" over a small alphabet (so pairs repeat, merges grow
keys to 21-23 bytes and the 24-byte limit is hit, Q9/Q14), single chars, training
delimiters (Q3), chars that are not delimiters, tags (Q12/Q13), CR (Q19), paragraphs
(Q18) and, in some corpora, invalid UTF-8 (Q2). Invalid sequences always carry the full
number of tail bytes their lead byte announces, and tails are continuation bytes (80-BF),
which are never a delimiter, ``<``, ``>`` or LF: so no char is ever cut at the end of a
segment (the reference's undefined behaviour, Q20.1).
"""

from __future__ import annotations

import random

CJK = "天地人一二三四五六七八九十山水风月花鸟云雨春秋江河日夜东西南北上下来去"
ASCII = "abcdexyz0123"
DELIMITERS = [" ", ",", ".", "!", "?", '"', "·", "，", "？", "！", "。", "\u3000", "\u200b"]
OTHERS = ["：", "《", "》", "、", "\t", "\r", "é", "ß", "𡵓", "😀", "<P>", "<S>", "</S>", "<", ">", "<x>", "・"]
VOCAB_SIZES = [0, 1, 6, 7, 100, 263, 270, 271, 272, 275, 280, 290, 300, 320, 350, 400, 500, 800, 1000, 5000,
               4294967295]


def _invalid(rng: random.Random) -> bytes:
    """An invalid UTF-8 'char' that the lead-byte rule (Q2) cuts back as one unit."""
    tail = lambda k: bytes(rng.randrange(0x80, 0xC0) for _ in range(k))
    kind = rng.randrange(6)
    if kind == 0:
        return bytes([rng.randrange(0x80, 0xC0)])  # stray continuation byte
    if kind == 1:
        return bytes([rng.randrange(0xF8, 0x100)])  # never a lead byte
    if kind == 2:
        return bytes([rng.choice([0xC0, 0xC1])]) + tail(1)  # overlong
    if kind == 3:
        return bytes([rng.choice([0xE0, 0xED, 0xEA])]) + tail(2)  # overlong / surrogate / any
    if kind == 4:
        return bytes([rng.randrange(0xF0, 0xF8)]) + tail(3)  # > U+10FFFF for F4-F7
    return b"\0"


def random_corpus(rng: random.Random, invalid: bool = False) -> bytes:
    """One corpus as the bytes of a file."""
    alphabet = rng.sample(CJK, rng.randint(3, 16))
    words = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, rng.choice([3, 8, 12]))))
             for _ in range(rng.randint(2, 12))]
    weights = [1.0 / (k + 1) for k in range(len(words))]
    p_word, p_delim, p_other = rng.random() * 0.6 + 0.2, rng.random() * 0.3, rng.random() * 0.15
    lines: list[bytes] = [b""] * rng.randint(0, 2)
    for _ in range(rng.randint(1, 60)):
        if rng.random() < 0.15:
            lines.append(b"")  # a paragraph break (Q18)
            continue
        parts: list[bytes] = []
        for _ in range(rng.randint(1, 14)):
            r = rng.random()
            if r < p_word:
                parts.append(rng.choices(words, weights)[0].encode())
            elif r < p_word + p_delim:
                parts.append(rng.choice(DELIMITERS).encode())
            elif r < p_word + p_delim + p_other:
                parts.append(rng.choice(OTHERS).encode())
            elif invalid and rng.random() < 0.3:
                parts.append(_invalid(rng))
            elif rng.random() < 0.5:
                parts.append(rng.choice(ASCII).encode() * rng.randint(1, 3))
            else:
                parts.append(rng.choice(alphabet).encode())
        lines.append(b"".join(parts))
    data = b"\n".join(lines)
    return data + b"\n" if rng.random() < 0.7 else data


def char_starts(data: bytes) -> list[int]:
    """Offsets where the lead-byte rule (Q2) starts a char: ``'a天'.encode() -> [0, 1]``."""
    starts, i = [], 0
    while i < len(data):
        starts.append(i)
        lead = data[i]
        i += 4 if 0xF0 <= lead < 0xF8 else 3 if 0xE0 <= lead < 0xF0 else 2 if 0xC0 <= lead < 0xE0 else 1
    return starts


def random_probes(rng: random.Random, corpus: bytes, count: int = 30) -> list[bytes]:
    """Lines to encode: the corpus's own lines, recombinations, and runs of one line's chars
    repeated (long matches that reach the 24-byte limit, Q14)."""
    lines = [line for line in corpus.split(b"\n") if line]
    probes = list(lines[:count])
    while len(probes) < count and lines:
        a, b = rng.choice(lines), rng.choice(lines)
        cut = rng.choice(char_starts(b) + [len(b)])  # never inside a char (Q20.1)
        probes.append(a + b[:cut] if rng.random() < 0.5 else a * rng.randint(2, 4))
    probes.append(b"")
    probes.append("".join(rng.choice(CJK) for _ in range(30)).encode())
    return probes


def to_gbk(rng: random.Random, corpus: bytes) -> bytes:
    """A GBK version of a (valid UTF-8) corpus, with some bytes that are not GBK (Q19)."""
    text = corpus.decode("utf-8")
    out = bytearray()
    for ch in text:
        out += ch.encode("gbk", "replace")
        if rng.random() < 0.01:
            out += rng.choice([b"\x80", b"\xff", b"\x81", b"\xa1", b"\0"])  # not GBK, cut short, or NUL
    return bytes(out)


def runs_corpus(rng: random.Random) -> bytes:
    """Lines of runs of one letter (and a few short repeated words) over ``a`` and ``b``.
    Their byte strings come to be split in many ways (``aaaa`` as aa+aa, a+aaa, aaa+a), so
    that a merge can take every occurrence a key has in one class of slots while it gives
    that key new ones in the other (``_kernels._settle_class0``)."""
    lines = []
    for _ in range(rng.randrange(5, 80)):
        parts = []
        for _ in range(rng.randrange(1, 6)):
            if rng.random() < 0.8:
                parts.append(rng.choice("ab") * rng.randrange(2, 40))
            else:
                parts.append(rng.choice(["ab", "ba", "aab", "bba"]) * rng.randrange(1, 8))
        lines.append(rng.choice(["", " ", "b", "c"]).join(parts))
    return "\n".join(lines).encode()
