"""Generate bbpe/wordpiece/bert_tables.h: what HF tokenizers' BertNormalizer and
BertPreTokenizer do to each code point, for the compiled normalizer of
bbpe/wordpiece/_codec.pyx.

    python tools/make_bert_tables.py            # (re)writes the header (needs tokenizers)
    python tools/make_bert_tables.py --check    # compares the header with tokenizers

HF's BERT pipeline (normalizers/bert.rs, pre_tokenizers/bert.rs) reads its character
classes from three Rust sources of different Unicode versions: ``unicode_categories`` (an
old crate: a code point assigned since is "unassigned", Cn, and clean_text removes it, so
HF drops emoji newer than the crate), the ``unicode-normalization-alignments`` crate's NFD,
and Rust's own ``char::is_whitespace`` / ``char::to_lowercase``. Python's ``unicodedata``
has other versions, so every table is read from tokenizers itself, one code point at a
time, never from ``unicodedata``:

    BERT_DROP   clean_text removes it (NUL, U+FFFD, the crate's Cc Cf Cn Co Cs but \\t\\n\\r)
    BERT_SPACE  clean_text makes it ' ' (White_Space, \\t \\n \\r)
    BERT_SPLIT  BertPreTokenizer splits on it and drops it (char::is_whitespace)
    BERT_PUNCT  BertPreTokenizer makes it a word of its own (ASCII or Unicode punctuation)
    BERT_CJK    handle_chinese_chars puts a space on each side (bert.rs's eight ranges)
    BERT_MN     strip_accents removes it after NFD (the crate's Mn)
    BERT_NFD    NFD decomposes it (bert_nfd; Hangul syllables are decomposed by rule)
    BERT_LOWER  lowercase maps it to something else (bert_lower: Rust's to_lowercase)

plus the canonical combining class that NFD sorts marks by (``bert_ccc``), which only the
order of the marks NFD puts side by side shows: it is Python's value where tokenizers moves
the mark as a nonzero class, 0 where tokenizers does not, and checked on every pair of marks.
"""

from __future__ import annotations

import argparse
import sys
import unicodedata
from pathlib import Path

HEADER = Path(__file__).resolve().parent.parent / "bbpe" / "wordpiece" / "bert_tables.h"

DROP, SPACE, SPLIT, PUNCT, CJK, MN, NFD, LOWER = 1, 2, 4, 8, 16, 32, 64, 128
FLAG_NAMES = {DROP: "DROP", SPACE: "SPACE", SPLIT: "SPLIT", PUNCT: "PUNCT", CJK: "CJK", MN: "MN", NFD: "NFD",
              LOWER: "LOWER"}
HANGUL_FIRST, HANGUL_LAST = 0xAC00, 0xD7A3
SEP = "0"  # no normalizer here changes it, and no code point maps to something holding it


def _code_points() -> list[str]:
    """Every code point but the surrogates (a str holding one cannot reach tokenizers) and SEP."""
    return [chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000 and chr(c) != SEP]


def _each(normalizer, chars: list[str]) -> list[str]:
    """What ``normalizer`` makes of each char alone (one call over all of them)."""
    out = normalizer.normalize_str(SEP + SEP.join(chars) + SEP).split(SEP)[1:-1]
    if len(out) != len(chars):
        raise SystemExit(f"{normalizer!r}: the separator {SEP!r} did not survive")
    return out


def probe() -> tuple[bytearray, dict[int, str], dict[int, str], bytearray]:
    """(flags, NFD map, lowercase map, combining classes) as tokenizers has them."""
    from tokenizers import normalizers, pre_tokenizers

    chars = _code_points()
    flags = bytearray(0x110000)
    nfd_map: dict[int, str] = {}
    lower_map: dict[int, str] = {}

    def bert(clean: bool = False, chinese: bool = False, strip: bool = False, lower: bool = False):
        return normalizers.BertNormalizer(clean_text=clean, handle_chinese_chars=chinese, strip_accents=strip,
                                          lowercase=lower)

    for ch, out in zip(chars, _each(bert(clean=True), chars)):
        if out == "":
            flags[ord(ch)] |= DROP
        elif out == " ":
            flags[ord(ch)] |= SPACE
        elif out != ch:
            raise SystemExit(f"clean_text makes U+{ord(ch):04X} {out!r}")
    for ch, out in zip(chars, _each(bert(chinese=True), chars)):
        if out == f" {ch} ":
            flags[ord(ch)] |= CJK
        elif out != ch:
            raise SystemExit(f"handle_chinese_chars makes U+{ord(ch):04X} {out!r}")
    for ch, out in zip(chars, _each(normalizers.NFD(), chars)):
        if out != ch:
            nfd_map[ord(ch)] = out
            flags[ord(ch)] |= NFD
    for ch, out in zip(chars, _each(bert(strip=True), chars)):
        if ord(ch) not in nfd_map and out == "":
            flags[ord(ch)] |= MN
    for ch, out in zip(chars, _each(bert(strip=True), chars)):  # the strip is NFD, then Mn removed
        expected = "".join(c for c in nfd_map.get(ord(ch), ch) if not flags[ord(c)] & MN)
        if out != expected:
            raise SystemExit(f"strip_accents makes U+{ord(ch):04X} {out!r}, not {expected!r}")
    for ch, out in zip(chars, _each(bert(lower=True), chars)):
        if out != ch:
            lower_map[ord(ch)] = out
            flags[ord(ch)] |= LOWER
    # BertPreTokenizer over "a" + ch + "a", units a space apart: ch is punctuation where it is
    # a piece of its own, whitespace where no piece holds it
    text = " ".join(f"a{ch}a" for ch in chars)
    pieces = {start: end for _, (start, end) in pre_tokenizers.BertPreTokenizer().pre_tokenize_str(text)}
    for k, ch in enumerate(chars):
        at = 4 * k
        if pieces.get(at + 1) == at + 2:
            flags[ord(ch)] |= PUNCT
        elif pieces.get(at) == at + 1 and pieces.get(at + 2) == at + 3:
            flags[ord(ch)] |= SPLIT
        elif pieces.get(at) != at + 3:
            raise SystemExit(f"BertPreTokenizer splits 'a' U+{ord(ch):04X} 'a' unexpectedly")
    return flags, nfd_map, lower_map, _combining_classes(chars, nfd_map)


def _combining_classes(chars: list[str], nfd_map: dict[int, str]) -> bytearray:
    """NFD's combining class of each code point: Python's where tokenizers' NFD moves the
    char back past U+0345 (class 240, the highest), else 0; then checked on all pairs. (A
    char with a decomposition is sorted as its parts: it keeps class 0 here.)"""
    from tokenizers import normalizers

    nfd = normalizers.NFD()
    ccc = bytearray(0x110000)
    marks = [ch for ch in chars if unicodedata.combining(ch) and ch != "\u0345" and ord(ch) not in nfd_map]
    for ch, out in zip(marks, _each(nfd, [f"a\u0345{ch}" for ch in marks])):
        if out.startswith(f"a{ch}"):  # moved before U+0345
            ccc[ord(ch)] = unicodedata.combining(ch)
    ccc[0x345] = 240
    # every ordered pair of marks: NFD must keep or swap them as the classes say
    marks = [ch for ch in chars if ccc[ord(ch)]]
    pairs = [f"a{x}{y}" for x in marks for y in marks]
    for pair, out in zip(pairs, _each(nfd, pairs)):
        x, y = pair[1], pair[2]
        want = f"a{y}{x}" if ccc[ord(x)] > ccc[ord(y)] else pair
        if out != want:
            raise SystemExit(f"NFD orders {pair!r} as {out!r}: the classes are not tokenizers'")
    return ccc



def _two_stage(values: bytearray | list[int]) -> tuple[list[int], list[int]]:
    blocks: dict[tuple, int] = {}
    stage1 = [blocks.setdefault(tuple(values[b:b + 256]), len(blocks)) for b in range(0, 0x110000, 256)]
    return stage1, [v for block in blocks for v in block]


def _map_arrays(mapping: dict[int, str]) -> tuple[list[int], list[int], list[int]]:
    """Sorted keys, each one's (offset << 3 | length) into the pool, and the pool."""
    keys, spans, pool = [], [], []
    for cp in sorted(mapping):
        out = [ord(c) for c in mapping[cp]]
        assert 0 < len(out) < 8
        keys.append(cp)
        spans.append(len(pool) << 3 | len(out))
        pool.extend(out)
    return keys, spans, pool


def render(flags: bytearray, nfd_map: dict[int, str], lower_map: dict[int, str], ccc: bytearray) -> str:
    """The header's text."""
    for cp in range(HANGUL_FIRST, HANGUL_LAST + 1):  # decomposed by rule in the codec
        assert nfd_map.pop(cp) == unicodedata.normalize("NFD", chr(cp))
    f1, f2 = _two_stage(flags)
    c1, c2 = _two_stage(ccc)
    assert max(f1) < 256 and max(c1) < 256
    lowered = {cp: sum(len(lower_map.get(ord(d), d)) for d in chars) for cp, chars in nfd_map.items()}
    most = max(max(lowered.values()), max(map(len, lower_map.values())), 3)  # (3: Hangul)
    nk, ns, npool = _map_arrays(nfd_map)
    lk, ls, lpool = _map_arrays(lower_map)

    def rows(values: list[int], per_line: int = 24) -> str:
        return "\n".join("    " + ",".join(map(str, values[i:i + per_line])) + ","
                         for i in range(0, len(values), per_line))

    def array(ctype: str, name: str, values: list[int]) -> str:
        return f"static const {ctype} {name}[{len(values)}] = {{\n{rows(values)}\n}};\n"

    defines = "\n".join(f"#define BERT_{name:<6}{bit}" for bit, name in FLAG_NAMES.items())
    return f"""\
/* Generated by tools/make_bert_tables.py: do not edit. What HF tokenizers' BertNormalizer
   and BertPreTokenizer do to each code point (read from tokenizers itself, whose Unicode
   tables are of several versions), for bbpe/wordpiece/_codec.pyx.
   flags = bert_flags2[bert_flags1[cp >> 8] << 8 | (cp & 0xFF)]; the same for bert_ccc.
   bert_nfd_keys / bert_lower_keys are sorted; the span of key i is (offset << 3 | length)
   into the pool. Hangul syllables U+AC00..U+D7A3 carry BERT_NFD and decompose by rule. */
#ifndef BBPE_BERT_TABLES_H
#define BBPE_BERT_TABLES_H

#include <stdint.h>

{defines}
#define BERT_MAX_CHARS {most}  /* the most chars one input char normalizes to, spaces aside */

{array("uint8_t", "bert_flags1", f1)}
{array("uint8_t", "bert_flags2", f2)}
{array("uint8_t", "bert_ccc1", c1)}
{array("uint8_t", "bert_ccc2", c2)}
#define BERT_N_NFD {len(nk)}
{array("uint32_t", "bert_nfd_keys", nk)}
{array("uint32_t", "bert_nfd_spans", ns)}
{array("uint32_t", "bert_nfd_pool", npool)}
#define BERT_N_LOWER {len(lk)}
{array("uint32_t", "bert_lower_keys", lk)}
{array("uint32_t", "bert_lower_spans", ls)}
{array("uint32_t", "bert_lower_pool", lpool)}
#endif
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare the header with tokenizers")
    args = parser.parse_args()
    text = render(*probe())
    if args.check:
        same = HEADER.read_text(encoding="utf-8") == text
        print("the header is tokenizers'" if same else "the header differs from what tokenizers gives: regenerate")
        sys.exit(0 if same else 1)
    HEADER.parent.mkdir(exist_ok=True)
    HEADER.write_text(text, encoding="utf-8")
    print(f"wrote {HEADER}")


if __name__ == "__main__":
    main()
