"""Coverage-guided fuzzing of the compiled pre-tokenizers with atheris (see README.md here).

Property: for every spelling of every pattern that bbpe/bpe/_pretokenize.pyx scans
(``_SPELLINGS``: GPT-2/r50k/p50k, HF ByteLevel's, cl100k, Llama 3, o200k, Qwen2), the pieces
of any str are ``regex.findall(spelling, text)``, as tests/test_bpe_pretokenize.py compares
them (the scanners leave no gaps: findall's matches are all the pieces):

- ``split(text, id)`` on the str as the fuzz bytes give it, lone surrogates and surrogate
  pairs included, equals findall on the text with each pair joined and each lone surrogate
  U+FFFD (the scanners read a str so, as tiktoken does);
- ``split`` of its UTF-8 bytes gives the same pieces as bytes;
- the fuzz bytes themselves, passed as bytes: their pieces when they are UTF-8, else a
  ValueError naming the offset of the first byte that is not (Python's ``start``);
- a BpeCodec with the scanner's id encodes the str as one with the compiled ``regex``
  pattern (PIECES_REGEX) does.

The code points at which ``regex``'s Unicode (17.0 or later) gives other classes than the
scanners' table (16.0, tiktoken's and HF's) are taken out of the text first, as the tests do.

The first byte picks the spelling and how the rest becomes a str: UTF-8 (bytes that are not
become lone surrogates: an encoded surrogate its own, any other byte U+DC80+byte), UTF-16-LE
(any code unit, lone surrogates included) or UTF-32-LE (any code point). The scanners are C,
which atheris does not see: the custom mutator builds text from the test's fragments (every
class, contractions, \\r\\n runs, marks, emoji, CJK, surrogates), and the feedback is the
Python branch that each piece reaches by (spelling, alternative of the pattern that matched
it, alternative before it, length, at the end of the text): an input that makes a new
sequence of alternatives is kept.
"""

from __future__ import annotations

import codecs
import importlib.util
import os
import random
import sys

import atheris
import regex

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))

with atheris.instrument_imports(include=["bbpe"]):
    from bbpe.bpe import _pretokenize as pt
    from bbpe.bpe._codec import BpeCodec


def _newer_unicode() -> str:
    """The code points where ``regex``'s classes are not the header's, as
    tests/test_bpe_pretokenize.py finds them."""
    spec = importlib.util.spec_from_file_location("make_unicode_classes",
                                                  os.path.join(REPO, "tools", "make_unicode_classes.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    table = module.header_classes()
    return "".join(chr(c) for c, cls in enumerate(module.regex_classes()) if cls != table[c])


NEWER_UNICODE = dict.fromkeys(map(ord, _newer_unicode()))  # str.translate: delete them


def alternatives(pattern: str) -> list[str]:
    """The top-level alternatives of a pattern (``|`` outside groups and sets)."""
    out, depth, in_set, start, i = [], 0, False, 0, 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_set:
            in_set = c != "]"
        elif c == "[":
            in_set = True
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            out.append(pattern[start:i])
            start = i + 1
        i += 1
    out.append(pattern[start:])
    return out


# (spelling, PIECES id, the spelling with each top-level alternative a group: m.lastindex says which matched)
SPELLINGS = [(s, pid, regex.compile("|".join(f"({a})" for a in alternatives(s)))) for s, pid in pt._SPELLINGS.items()]

# ranks over the bytes, with tokens across the pieces' edges, so that other edges give other ids
_TOKENS = [bytes([b]) for b in range(256)] + [t.encode() for t in (
    " t", "th", "he", " the", "ab", "'s", "'S", "'ll", "\r\n", "  ", "   ", "\n\n", " \n", "12", "123", "1234",
    "!!", " !", "?\n", "/\n", "床前", "明月", "a\u0301", "\U0001f600", " \U0001f600", "\ufffd", "e'", "A'")]
CODECS = {pid: BpeCodec(_TOKENS, None, None, pid) for _, pid, _ in SPELLINGS}
REGEX_CODECS = [BpeCodec(_TOKENS, None, None, regex.compile(s)) for s, _, _ in SPELLINGS]


def _pass_or_escape(err: UnicodeError) -> tuple[str, int]:
    """UTF-8 decoding's error handler: an encoded surrogate is that surrogate (surrogatepass),
    any other byte that is not UTF-8 is U+DC80+byte (surrogateescape)."""
    assert isinstance(err, UnicodeDecodeError)
    chunk = err.object[err.start:err.start + 3]
    if len(chunk) == 3 and chunk[0] == 0xED and 0xA0 <= chunk[1] <= 0xBF and 0x80 <= chunk[2] <= 0xBF:
        return chr(0xD000 | (chunk[1] & 0x3F) << 6 | chunk[2] & 0x3F), err.start + 3
    return chr(0xDC00 | err.object[err.start]), err.start + 1


codecs.register_error("bbpe_fuzz", _pass_or_escape)
FORMS = ("utf-8", "utf-16", "utf-32")


def decode(payload: bytes, form: str) -> str:
    if form == "utf-8":
        return payload.decode("utf-8", "bbpe_fuzz")
    if form == "utf-16":
        return payload[: len(payload) & ~1].decode("utf-16-le", "surrogatepass")
    return "".join(chr(int.from_bytes(payload[i:i + 4], "little") % 0x110000) for i in range(0, len(payload) - 3, 4))


def encode(text: str, form: str) -> bytes:
    if form == "utf-8":
        return text.encode("utf-8", "surrogatepass")
    if form == "utf-16":
        return text.encode("utf-16-le", "surrogatepass")
    return b"".join(ord(c).to_bytes(4, "little") for c in text)


def pick(first: int) -> tuple[int, str]:
    """The spelling's index and the form of the text, from the first byte."""
    return first % len(SPELLINGS), FORMS[(first >> 4) % 3]


def joined(text: str) -> str:
    """The str as the scanners read it: surrogate pairs joined, lone surrogates U+FFFD."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _edge_function(n: int, name: str):
    """A function of one int in 0..n-1 whose every value takes its own branch (a balanced tree
    of ifs), instrumented: atheris counts each as an edge, libFuzzer keeps the inputs that
    reach new ones. (Many small functions: atheris's instrumentation is quadratic in a
    function's size.)"""
    lines = ["def edge(i):"]

    def tree(lo: int, hi: int, indent: str) -> None:
        if hi - lo == 1:
            lines.append(f"{indent}return {lo}")
            return
        mid = (lo + hi) // 2
        lines.append(f"{indent}if i < {mid}:")
        tree(lo, mid, indent + " ")
        lines.append(f"{indent}else:")
        tree(mid, hi, indent + " ")

    tree(0, n, " ")
    namespace: dict = {}
    exec(compile("\n".join(lines), f"<pretokenize-edges {name}>", "exec"), namespace)  # noqa: S102 (its own code)
    return atheris.instrument_func(namespace["edge"])


# EDGES[which][prev alternative (0: none)][at the end](4 * (alternative - 1) + min(length, 4) - 1)
EDGES = [[[_edge_function(4 * grouped.groups, f"{which}.{prev}.{end}") for end in (0, 1)]
          for prev in range(grouped.groups + 1)] for which, (_, _, grouped) in enumerate(SPELLINGS)]


def feedback(which: int, grouped: regex.Pattern, text: str, expected: list[str]) -> None:
    """Each piece's (spelling, alternative of the pattern that matched it, the one before it,
    length, at the end) as an edge; the grouped pattern's matches are findall's (a check of
    ``alternatives``)."""
    prev = 0
    pieces = []
    for m in grouped.finditer(text):
        pieces.append(m.group(0))
        alt = m.lastindex or 1
        EDGES[which][prev][m.end() == len(text)](4 * (alt - 1) + min(len(m.group(0)), 4) - 1)
        prev = alt
    assert pieces == expected, (pieces, expected)


def test_one(data: bytes) -> None:
    if not data:
        return
    which, form = pick(data[0])
    spelling, pid, grouped = SPELLINGS[which]
    payload = data[1:]
    text = decode(payload, form).translate(NEWER_UNICODE)
    plain = joined(text)
    expected = regex.findall(spelling, plain)
    feedback(which, grouped, plain, expected)
    got = pt.split(text, pid)
    assert got == expected, f"split({text!r}, {pid}):\n got      {got!r}\n expected {expected!r}"
    assert pt.split(plain.encode(), pid) == [p.encode() for p in expected], plain
    # the fuzz bytes as they are: UTF-8, or a ValueError naming the first byte that is not
    try:
        raw = payload.decode("utf-8")
    except UnicodeDecodeError as err:
        try:
            pt.split(payload, pid)
        except ValueError as refused:
            assert f"byte {err.start} " in str(refused), (payload, str(refused), err)
        else:
            raise AssertionError(f"split({payload!r}) accepted bytes that are not UTF-8 ({err})")
    else:
        if not set(map(ord, raw)) & NEWER_UNICODE.keys():
            assert pt.split(payload, pid) == [p.encode() for p in regex.findall(spelling, raw)], payload
    # the codec: the compiled scanner's pieces and regex's give the same ids
    assert CODECS[pid].encode(text) == REGEX_CODECS[which].encode(text), text


# --- structure-aware mutation ------------------------------------------------------------------

def _fragments() -> tuple[list[str], list[str]]:
    """tests/test_bpe_pretokenize.py's FRAGMENTS and TAILS (read from its source: importing it
    needs pytest's conftest), and the surrogates: lone ones, a pair, a pair cut in two."""
    import ast

    with open(os.path.join(os.path.dirname(HERE), "test_bpe_pretokenize.py"), encoding="utf-8") as f:
        tree = ast.parse(f.read())
    found = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name) and node.targets[0].id in (
                "FRAGMENTS", "TAILS"):
            found[node.targets[0].id] = ast.literal_eval(node.value)
    surrogates = ["\ud800", "\udfff", "\udc00", "\ud83d\ude00", "\ud83d", "\ude00", "\ud800\ud800", "a\udc80"]
    return found["FRAGMENTS"] + surrogates, found["TAILS"]


FRAGMENTS, TAILS = _fragments()


def _random_char(choices: random.Random) -> str:
    plane = choices.choice([0x80, 0x800, 0x3400, 0x10000, 0x20000, 0x110000])
    return chr(choices.randrange(plane))


def mutate_text(text: str, choices: random.Random) -> str:
    """One to four changes of the text: fragments put in, chars swapped for any code point,
    a span cut out, repeated or case-changed, a tail of white space."""
    for _ in range(1 + choices.randrange(4)):
        at = choices.randrange(len(text) + 1)
        end = min(len(text), at + 1 + choices.randrange(8))
        how = choices.randrange(7)
        if how <= 1:
            text = text[:at] + choices.choice(FRAGMENTS) + text[at:]
        elif how == 2:
            text = text[:at] + _random_char(choices) + text[at + 1:]
        elif how == 3:
            text = text[:at] + text[end:]
        elif how == 4:
            text = text[:at] + text[at:end] * (2 + choices.randrange(3)) + text[end:]
        elif how == 5:
            text = text[:at] + text[at:end].swapcase() + text[end:]
        else:
            text = text.rstrip() + choices.choice(TAILS)
    return text


def custom_mutator(data: bytes, max_size: int, seed: int) -> bytes:
    choices = random.Random(seed)
    if not data or choices.randrange(8) == 0:
        return atheris.Mutate(data, max_size)
    first = data[0]
    text = decode(data[1:], pick(first)[1])
    if choices.randrange(6) == 0:  # another spelling or form for the same text
        first = choices.randrange(256)
    else:
        text = mutate_text(text, choices)
    return (bytes([first]) + encode(text, pick(first)[1]))[:max_size]


def write_seeds(directory: str) -> None:
    """One seed per spelling and form: the fragments, in runs, then each tail."""
    os.makedirs(directory, exist_ok=True)
    text = "".join(FRAGMENTS[:40]) + " " + "".join(FRAGMENTS[40:]) + "".join(TAILS)
    for first in range(48):
        which, form = pick(first)
        with open(os.path.join(directory, f"s{which}_{form}_{first}"), "wb") as f:
            f.write(bytes([first]) + encode(text, form))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--write-seeds"]:
        write_seeds(sys.argv[2])
        sys.exit(0)
    atheris.Setup(sys.argv, test_one, custom_mutator=custom_mutator)
    atheris.Fuzz()
