"""Generate bbpe/bpe/unicode_classes.h: the class of every code point, for the compiled
pre-tokenizers of bbpe/bpe/_pretokenize.pyx.

    python tools/make_unicode_classes.py            # (re)writes the header
    python tools/make_unicode_classes.py --check    # compares the header with tiktoken's and
                                                    # HF tokenizers' own regex engines

A class is a set of bits, one per character class that the patterns use:

    BBPE_CLS_L    \\p{L}
    BBPE_CLS_N    \\p{N}
    BBPE_CLS_S    \\s (Unicode White_Space: no U+001C..U+001F, unlike str.isspace)
    BBPE_CLS_UP   [\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]   o200k's "upper" letters
    BBPE_CLS_LO   [\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]          o200k's "lower" letters
    BBPE_CLS_W    \\w, for HF's Whitespace pre-tokenizer (which compiles its \\w+|[^\\w\\s]+
                  with the Rust regex crate, as tiktoken does: Oniguruma's \\w, which HF's
                  Split patterns get, holds U+00B2 U+00B3 U+00B9 U+00BC..U+00BE, not U+200C U+200D)

Anything else, [^\\s\\p{L}\\p{N}], has none of L, N, S; \\r and \\n the scanners test by byte.
The table has two stages: block = stage1[cp >> 8], class = stage2[block << 8 | (cp & 0xFF)];
block 0 is the first 256 code points, so ASCII is stage2[byte].

The classes are those of the engines whose ids bbpe must reproduce: tiktoken's (the Rust
``regex`` crate under fancy-regex), read by probing it one class at a time over every code
point, and checked against HF tokenizers' where it is installed (its Split patterns, which it
runs in Oniguruma; \\w against its Whitespace pre-tokenizer itself). tiktoken 0.14 and
HF tokenizers 0.23 are both at Unicode 16.0 and agree exactly. The ``regex`` package, which
tests and bbpe's fallback for other patterns use, follows newer Unicode versions (17.0 in
regex 2026.5, later ones after): the tests compare with it only at the code points where its
classes are the table's. If ``--check`` reports a difference, tiktoken moved to another
Unicode version: regenerate, and bbpe follows it.

Case folding (the patterns' (?i:'s|'t|...)) needs no table: under simple case folding, which
``regex``, Rust's regex and Oniguruma use, the only non-ASCII code point that matches one of
s t r e v m l d is U+017F LATIN SMALL LETTER LONG S (as s); the scanners test it by bytes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HEADER = Path(__file__).resolve().parent.parent / "bbpe" / "bpe" / "unicode_classes.h"
ENGINE_UNICODE = "16.0"    # tiktoken 0.14's and HF tokenizers 0.23's

CLS_L, CLS_N, CLS_S, CLS_UP, CLS_LO, CLS_W = 1, 2, 4, 8, 16, 32
CLASSES = {  # bit -> the regex class it stands for
    CLS_L: r"\p{L}",
    CLS_N: r"\p{N}",
    CLS_S: r"\s",
    CLS_UP: r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]",
    CLS_LO: r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]",
    CLS_W: r"\w",
}

def _all_code_points() -> str:
    """Every code point but the surrogates (which cannot be in a str that is encoded)."""
    return "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000)


def regex_classes() -> bytearray:
    """The class of every code point as the ``regex`` package has it."""
    import regex

    text = _all_code_points()
    cls = bytearray(0x110000)
    for bit, pattern in CLASSES.items():
        for ch in regex.findall(pattern, text):
            cls[ord(ch)] |= bit
    return cls


def classes() -> bytearray:
    """The class of every code point at tiktoken's Unicode version, checked against HF's."""
    cls = bytearray(0x110000)
    for bit, pattern in CLASSES.items():
        found = engine_matches(pattern)
        if "tiktoken" not in found:
            raise SystemExit("tiktoken is needed to generate the table (pip install tiktoken)")
        for engine, hits in found.items():
            diff = sorted(hits ^ found["tiktoken"])
            if diff:
                raise SystemExit(f"{pattern}: tiktoken and {engine} differ at {len(diff)} code points: "
                                 f"{' '.join(f'U+{c:04X}' for c in diff[:20])}")
        for c in found["tiktoken"]:
            cls[c] |= bit
    return cls


def header_classes(text: str | None = None) -> bytearray:
    """The class of every code point as the header (or ``text``, a header's text) has it."""
    text = HEADER.read_text(encoding="utf-8") if text is None else text

    def array(name: str) -> list[int]:
        body = text.split(f"static const uint8_t {name}[", 1)[1].split("{", 1)[1].split("}", 1)[0]
        return [int(v) for v in body.split(",") if v.strip()]

    stage1, stage2 = array("bbpe_cls_stage1"), array("bbpe_cls_stage2")
    return bytearray(stage2[stage1[cp >> 8] << 8 | (cp & 0xFF)] for cp in range(0x110000))


def tables(cls: bytearray) -> tuple[list[int], list[bytes]]:
    """The two stages: the block of each 256 code points, and the distinct blocks."""
    blocks: dict[bytes, int] = {}
    stage1 = [blocks.setdefault(bytes(cls[b:b + 256]), len(blocks)) for b in range(0, 0x110000, 256)]
    assert len(blocks) <= 256, "stage 1 is uint8_t"
    return stage1, list(blocks)


def render(cls: bytearray) -> str:
    """The header's text for the classes ``cls``."""
    # the o200k scanner relies on it: a letter is in one of its two letter classes
    assert all(c & (CLS_UP | CLS_LO) for c in cls if c & CLS_L)
    stage1, stage2 = tables(cls)

    def rows(values: list[int], per_line: int) -> str:
        return "\n".join("    " + ",".join(map(str, values[i:i + per_line])) + ","
                         for i in range(0, len(values), per_line))

    flat = [v for block in stage2 for v in block]
    return f"""\
/* Generated by tools/make_unicode_classes.py: do not edit. The class of each code point for
   the compiled pre-tokenizers (bbpe/bpe/_pretokenize.pyx), as tiktoken's and HF tokenizers'
   regex engines have them (Unicode {ENGINE_UNICODE}).
   class = bbpe_cls_stage2[bbpe_cls_stage1[cp >> 8] << 8 | (cp & 0xFF)]. */
#ifndef BBPE_UNICODE_CLASSES_H
#define BBPE_UNICODE_CLASSES_H

#include <stdint.h>

#define BBPE_CLS_L  {CLS_L:<3}/* \\p{{L}} */
#define BBPE_CLS_N  {CLS_N:<3}/* \\p{{N}} */
#define BBPE_CLS_S  {CLS_S:<3}/* \\s: White_Space */
#define BBPE_CLS_UP {CLS_UP:<3}/* [\\p{{Lu}}\\p{{Lt}}\\p{{Lm}}\\p{{Lo}}\\p{{M}}] */
#define BBPE_CLS_LO {CLS_LO:<3}/* [\\p{{Ll}}\\p{{Lm}}\\p{{Lo}}\\p{{M}}] */
#define BBPE_CLS_W  {CLS_W:<3}/* \\w (the Rust regex crate's, HF Whitespace's) */
#define BBPE_CLS_LNS (BBPE_CLS_L | BBPE_CLS_N | BBPE_CLS_S)  /* [^\\s\\p{{L}}\\p{{N}}] has none of these */

static const uint8_t bbpe_cls_stage1[{len(stage1)}] = {{
{rows(stage1, 32)}
}};

static const uint8_t bbpe_cls_stage2[{len(flat)}] = {{
{rows(flat, 32)}
}};

#endif
"""


def engine_matches(pattern: str) -> dict[str, set[int]]:
    """The code points that ``pattern`` (one character class) matches in tiktoken's and in HF
    tokenizers' regex engines, where they are installed."""
    text = _all_code_points()
    found: dict[str, set[int]] = {}
    try:
        import tiktoken
    except ImportError:
        print("tiktoken is not installed: not checked against it", file=sys.stderr)
    else:
        # tiktoken encodes only what the pattern matches: with every code point a token
        # (and the byte prefixes that merge into it), the tokens are the matched code points
        hits: set[int] = set()
        for base in range(0, len(text), 1 << 16):
            chunk = text[base:base + (1 << 16)]
            ranks = {bytes([b]): b for b in range(256)}
            for ch in chunk:
                encoded = ch.encode()
                for k in range(2, len(encoded) + 1):
                    ranks.setdefault(encoded[:k], len(ranks))
            enc = tiktoken.Encoding("classes", pat_str=pattern, mergeable_ranks=ranks, special_tokens={})
            hits.update(ord(enc.decode_single_token_bytes(t).decode()) for t in enc.encode_ordinary(chunk))
        found["tiktoken"] = hits
    try:
        from tokenizers import Regex, pre_tokenizers
    except ImportError:
        print("tokenizers is not installed: not checked against it", file=sys.stderr)
        return found
    if pattern == CLASSES[CLS_W]:
        # HF's Whitespace over "a" + each code point + " ": a code point is \\w where it
        # joins the "a" in one piece
        probe = "".join(f"a{ch} " for ch in text)
        found["tokenizers"] = {ord(piece[1]) for piece, _ in pre_tokenizers.Whitespace().pre_tokenize_str(probe)
                               if len(piece) == 2 and piece[0] == "a"}
    else:
        # HF's Split, its matches removed: what is left is everything else
        split = pre_tokenizers.Split(Regex(pattern), behavior="removed")
        kept = {ord(ch) for piece, _ in split.pre_tokenize_str(text) for ch in piece}
        found["tokenizers"] = {ord(ch) for ch in text} - kept
    return found


def check() -> int:
    """Compares the header with the engines; returns the number of code points that differ."""
    cls = header_classes()
    bad = 0
    for bit, pattern in CLASSES.items():
        ours = {c for c in range(0x110000) if cls[c] & bit}
        for engine, theirs in engine_matches(pattern).items():
            diff = sorted(ours ^ theirs)
            bad += len(diff)
            print(f"{pattern}: {engine} differs at {len(diff)} code points "
                  f"{' '.join(f'U+{c:04X}' for c in diff[:40])}{' ...' if len(diff) > 40 else ''}")
    return bad


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with tiktoken's and HF's engines")
    args = parser.parse_args()
    if args.check:
        sys.exit(1 if check() else 0)
    HEADER.write_text(render(classes()), encoding="utf-8")
    print(f"wrote {HEADER}")


if __name__ == "__main__":
    main()
