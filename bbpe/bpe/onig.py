"""HF's regex dialect and bbpe's: a Split pattern in ``tokenizer.json`` is compiled by
Oniguruma with its Ruby syntax (tokenizers/src/utils/onig.rs, ``SysRegex``), bbpe runs
patterns with the ``regex`` package (tiktoken's dialect). The two read a few things
differently, which ``from_onig`` and ``to_onig`` translate:

==============  ===============================  ===============================
written         Oniguruma (Ruby syntax)          regex package
==============  ===============================  ===============================
``X{1,3}+``     ``(?:X{1,3})+``: ``+`` repeats   possessive ``X{1,3}``
``$``           end of a line: before any \\n     end, or before a final \\n
``^``           start of a line                  start of the text
``\\Z``          end, or before a final \\n        end of the text
``\\z``          end of the text                  (an error)
``(?m)``        ``.`` matches \\n                  ``^`` and ``$`` match at lines
``\\h``          a hex digit                      (an error)
==============  ===============================  ===============================

(``X++``, ``X*+``, ``X?+`` are possessive in both.) tiktoken's cl100k_base pattern holds
``\\p{N}{1,3}+``: as a Split pattern it would take any run of digits as one piece, so it is
written ``(?>\\p{N}{1,3})``. Anything the scanner does not know to mean the same in both
(back-references, ``\\R``, ``\\X``, nested classes, ...) is refused with PatternError.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from .patterns import PatternError

_INTERVAL = re.compile(r"\{(?:\d+(?:,\d*)?|,\d+)\}")
_GROUP = re.compile(r"\((?:\?(?:[:=!>]|<[=!]|[a-zA-Z-]*[:)]))?")
_SAME_ESCAPES = set("dDsSwWbBAntrfv") | set(r"\.^$|?*+()[]{}-/'\"#&~:<>=!,@%;`_ ") | {"\\"}


def _tokens(pattern: str) -> Iterator[tuple[str, str]]:
    """(kind, text) of each element: "escape", "class", "group" (an opening with its
    prefix, ``(?:``), "close", "quant" (with its ``?``/``+`` suffix), "anchor", "alt",
    "char"; PatternError for what it cannot read."""
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            end = _escape_end(pattern, i)
            yield "escape", pattern[i:end]
            i = end
        elif c == "[":
            end = _class_end(pattern, i)
            yield "class", pattern[i:end]
            i = end
        elif c == "(":
            m = _GROUP.match(pattern, i)
            if m is None or (m.end() == i + 1 and pattern.startswith("(?", i)):
                raise PatternError(f"the group at {i} of {pattern!r} is of a kind bbpe does not translate "
                                   "(named groups, comments, conditionals)")
            yield "group", m.group(0)
            i = m.end()
        elif c == ")":
            yield "close", c
            i += 1
        elif c in "*+?" or (c == "{" and _INTERVAL.match(pattern, i)):
            m = _INTERVAL.match(pattern, i)
            end = m.end() if m else i + 1
            if end < n and pattern[end] in "?+":
                end += 1
            yield "quant", pattern[i:end]
            i = end
        elif c in "^$":
            yield "anchor", c
            i += 1
        elif c == "|":
            yield "alt", c
            i += 1
        else:
            yield "char", c
            i += 1


def _escape_end(pattern: str, i: int) -> int:
    if i + 1 >= len(pattern):
        raise PatternError(f"{pattern!r} ends with a lone backslash")
    d = pattern[i + 1]
    if d in "pPx" and pattern.startswith("{", i + 2):
        close = pattern.find("}", i + 3)
        if close < 0:
            raise PatternError(f"the \\{d}{{ at {i} of {pattern!r} is not closed")
        return close + 1
    if d in "pP":
        return i + 3  # \pL
    if d == "x":
        return i + 4
    if d == "u":
        return i + 6
    return i + 2


def _class_end(pattern: str, i: int) -> int:
    """The end of the class that starts at ``pattern[i]`` (``[``); nested classes and
    ``&&`` (Oniguruma's set operations, which the regex package reads otherwise) are refused."""
    j = i + 1
    if pattern.startswith("^", j):
        j += 1
    if pattern.startswith("]", j):
        j += 1  # a ] first is a literal
    while j < len(pattern):
        c = pattern[j]
        if c == "\\":
            j = _escape_end(pattern, j)
            continue
        if pattern.startswith("[:", j):
            close = pattern.find(":]", j + 2)
            if close > 0:
                j = close + 2
                continue
        if c == "[" or pattern.startswith("&&", j):
            raise PatternError(f"the class at {i} of {pattern!r} holds a nested class or '&&', which HF's regex "
                               "engine and the regex package read differently")
        if c == "]":
            return j + 1
        j += 1
    raise PatternError(f"the class at {i} of {pattern!r} is not closed")


def _escape(text: str, pattern: str, in_class: bool) -> str:
    """An Oniguruma escape as the regex package spells it."""
    d = text[1]
    if d in "pPxu" or d in _SAME_ESCAPES and not (in_class and d in "AbB"):
        return text
    if d == "h":
        return "0-9a-fA-F" if in_class else "[0-9a-fA-F]"
    if not in_class and d == "z":
        return r"\Z"
    if not in_class and d == "Z":
        return r"(?=\n?\Z)"
    raise PatternError(f"{text!r} in {pattern!r} is an escape bbpe does not translate from HF's regex engine "
                       "(Oniguruma) to the regex package")


def _class(text: str, pattern: str, to: str) -> str:
    """A class with its escapes translated (``from``: Oniguruma's to regex's)."""
    out, j = [], 0
    while j < len(text):
        if text[j] == "\\":
            end = _escape_end(text, j)
            out.append(_escape(text[j:end], pattern, True) if to == "regex" else _check_escape(text[j:end], pattern))
            j = end
        else:
            out.append(text[j])
            j += 1
    return "".join(out)


def _check_escape(text: str, pattern: str) -> str:
    d = text[1]
    if d in "pPxu" or d in _SAME_ESCAPES:
        return text
    raise PatternError(f"{text!r} in {pattern!r} is an escape bbpe does not translate to HF's regex engine (Oniguruma)")


def _flags(group: str, pattern: str, table: dict[str, str]) -> str:
    """A group's inline flags (``(?i:``, ``(?m)``) in the other dialect."""
    if not group.startswith("(?") or group[2] in ":=!><":
        return group
    letters = group[2:-1]
    for letter in letters.replace("-", ""):
        if letter not in table:
            raise PatternError(f"the flag {letter!r} in {pattern!r} has no equivalent bbpe translates")
    return "(?" + "".join(table.get(c, c) for c in letters) + group[-1]


def from_onig(pattern: str) -> str:
    """An HF Split pattern (Oniguruma, Ruby syntax) as a regex-package pattern that finds the
    same pieces."""
    out: list[str] = []
    starts: list[int] = []  # where each open group starts in out
    atom = 0  # where the last atom starts in out
    for kind, text in _tokens(pattern):
        if kind == "quant":
            if text.startswith("{") and text.endswith("+"):  # Ruby: the + repeats X{n,m}
                out[atom:] = ["(?:", *out[atom:], text[:-1], ")"]
                out.append("+")
            else:
                out.append(text)
            continue
        atom = len(out)
        if kind == "escape":
            out.append(_escape(text, pattern, False))
        elif kind == "class":
            out.append(_class(text, pattern, "regex"))
        elif kind == "group":
            starts.append(len(out))
            out.append(_flags(text, pattern, {"i": "i", "x": "x", "m": "s"}))
        elif kind == "close":
            atom = starts.pop() if starts else atom
            out.append(text)
        elif kind == "anchor":
            out.append(r"(?=\n|\Z)" if text == "$" else r"(?:\A|(?<=\n)(?!\Z))")
        else:
            out.append(text)
    return "".join(out)


def to_onig(pattern: str) -> str:
    """A regex-package pattern as an HF Split pattern (Oniguruma, Ruby syntax) that finds the
    same pieces."""
    out: list[str] = []
    starts: list[int] = []
    atom = 0
    for kind, text in _tokens(pattern):
        if kind == "quant":
            if text.startswith("{") and text.endswith("+"):  # possessive: an atomic group in Ruby
                out[atom:] = ["(?>", *out[atom:], text[:-1], ")"]
            else:
                out.append(text)
            continue
        atom = len(out)
        if kind == "escape":
            out.append(r"\z" if text == r"\Z" else _check_escape(text, pattern))
        elif kind == "class":
            out.append(_class(text, pattern, "onig"))
        elif kind == "group":
            starts.append(len(out))
            out.append(_flags(text, pattern, {"i": "i", "x": "x", "s": "m"}))
        elif kind == "close":
            atom = starts.pop() if starts else atom
            out.append(text)
        elif kind == "anchor":
            out.append(r"\Z" if text == "$" else r"\A")
        else:
            out.append(text)
    return "".join(out)
