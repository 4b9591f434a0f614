"""NFC with an alignment: which char of the original text each char of the composed text
comes from, as HF ``tokenizers`` aligns them (so its offsets point into the original text).

HF composes with the ``unicode-normalization-alignments`` crate, whose NFC gives each output
char a change: 0 for a char that takes the next original char's place, +1 for a char a
decomposition added, -n for a char into which n more were composed (it takes the next
original char's place and n more are skipped);
``NormalizedString::transform`` turns those into alignments. The same changes come from
running the Unicode algorithm with a change on each char: canonical decomposition (a
char's first part 0, its other parts +1), canonical ordering (the changes move with the
marks), canonical composition (a starter that absorbs a char adds that char's change, less
one). As ``transform`` reads them, a char with a change of +1 takes the place of the
original char just before the next one to be read, which may be one a composition skipped. The result is checked against ``unicodedata``'s NFC; a text where they differ raises
ValueError, never a wrong alignment.
"""

from __future__ import annotations

import unicodedata


def nfc_alignment(text: str) -> tuple[str, list[int]]:
    """(NFC of ``text``, for each of its chars the index of the char of ``text`` it aligns with)."""
    chars: list[list] = []  # [char, change]
    for c in text:
        parts = unicodedata.normalize("NFD", c)
        chars += [[p, 0 if k == 0 else 1] for k, p in enumerate(parts)]
    _order(chars)
    composed = _compose(chars)
    result = "".join(c for c, _ in composed)
    if result != unicodedata.normalize("NFC", text):
        raise ValueError("offsets: bbpe cannot align this text's NFC with it")
    align, at = [], 0
    for _, change in composed:
        if change > 0:
            align.append(max(at - 1, 0))
        else:
            align.append(min(at, max(len(text) - 1, 0)))
            at += 1 - change
    return result, align


def _order(chars: list[list]) -> None:
    """Canonical ordering: each run of non-starters sorted by combining class, stably."""
    i = 0
    while i < len(chars):
        if unicodedata.combining(chars[i][0]) == 0:
            i += 1
            continue
        j = i
        while j < len(chars) and unicodedata.combining(chars[j][0]) != 0:
            j += 1
        chars[i:j] = sorted(chars[i:j], key=lambda item: unicodedata.combining(item[0]))
        i = j


def _compose(chars: list[list]) -> list[list]:
    """Canonical composition: a char joins the last starter unless a char between them is a
    starter or has a combining class at least its own (a starter joins only the one just
    before it)."""
    out: list[list] = []
    starter = -1  # index in out of the last starter
    for c, change in chars:
        ccc = unicodedata.combining(c)
        if starter >= 0:
            between = out[starter + 1 :]
            last = unicodedata.combining(between[-1][0]) if between else None
            blocked = (last is not None and (last == 0 or last >= ccc)) if ccc else bool(between)
            if not blocked:
                joined = unicodedata.normalize("NFC", out[starter][0] + c)
                if len(joined) == 1 and unicodedata.normalize("NFD", joined) == \
                        unicodedata.normalize("NFD", out[starter][0] + c):
                    out[starter] = [joined, out[starter][1] + change - 1]
                    continue
        out.append([c, change])
        if ccc == 0:
            starter = len(out) - 1
    return out
