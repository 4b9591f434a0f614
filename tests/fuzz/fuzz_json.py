"""Coverage-guided, structure-aware fuzzing of the JSON model loader with atheris (see README.md here).

Property (``check``): any bytes either load into a tokenizer that encodes, decodes, pads
and saves back to an equal tokenizer, or raise bbpe.FormatError naming "fuzz.json" and
the field (``model.record_order[3]: ...``), or the byte offset of a JSON syntax error;
never an OverflowError, KeyError, TypeError, RecursionError or MemoryError from inside.

Structure-aware: libFuzzer's custom mutator (``custom_mutator``) reads an input as a
document and changes its structure (``mutate``: keys deleted or renamed, values swapped
for other types, huge, negative, float and bool numbers, 2**63, NaN, deep nesting, lists
of the wrong length, repeated ids and keys, strings that are no token text, then bytes
that are not UTF-8 and truncation); an input that is no longer JSON gets libFuzzer's byte
mutations. Coverage of bbpe's Python code guides which inputs are kept. The seeds are
saved models (seeds/json). tests/test_json_fuzz.py runs ``mutate`` and ``check`` under
hypothesis in the test suite.
"""

from __future__ import annotations

import copy
import json
import os
import random
import re
import sys
import warnings
from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

if __name__ == "__main__":  # under atheris; tests/test_json_fuzz.py imports this module without it
    import atheris

    with atheris.instrument_imports(include=["bbpe"]):
        import bbpe
        import bbpe.tokenizer  # bbpe loads it on first use: here, so that it and what it imports are instrumented
        from bbpe.common.tokenizer_json import looks_like_json
else:
    import bbpe
    from bbpe.common.tokenizer_json import looks_like_json

T = TypeVar("T")
SAMPLE = "床前明月光，疑是地上霜。 Hello <S> \U0001f600 <0xE5>"
# a FormatError's message after "NAME: offset N: ": the field (model.record_order[3], bbpe,
# the document), or a JSON syntax error
FIELD = re.compile(r"(the document|\w+)([.\[]|: )|not a valid bbpe JSON file")


def check(data: bytes, name: str) -> bbpe.Tokenizer | None:
    """The property: ``data`` loads into a working tokenizer (returned) or raises a
    FormatError naming ``name`` and the field (None); anything else propagates."""
    try:
        tok = bbpe.Tokenizer.from_bytes(data, name=name)
    except bbpe.FormatError as err:
        message = str(err)
        assert message.startswith(f"{name}: offset "), message
        if looks_like_json(data):
            rest = message.split(": ", 2)[2]
            assert FIELD.match(rest), message
        return None
    assert tok.decode(tok.encode(SAMPLE, bug_compat=False)) == SAMPLE
    rows = tok([SAMPLE, "地上"], padding=True)["input_ids"]  # the template and the pad id
    assert len(rows[0]) == len(rows[1])
    assert tok([SAMPLE, "地上"], padding=True, return_tensors="np")["input_ids"].tolist() == rows
    assert bbpe.Tokenizer.from_bytes(tok.to_bytes(format="json"), name=name) == tok
    return tok


def seed_models() -> dict[str, bbpe.Tokenizer]:
    """The models whose files are the seeds (seeds/json, ``write_seeds``) and the test's
    starting points: special tokens added (one past 24 bytes), a template, padding options;
    long keys; the smallest vocabulary with HF's form of the template (``seed_files``)."""
    cases = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "cases")
    cjk6 = bbpe.Tokenizer.train(os.path.join(cases, "cjk6.txt"), 0)
    cjk6.add_special_tokens(["<|endoftext|>", "<S>", "<|im_start|>", "<|a special token longer than a key|>"])
    cjk6.set_template("<S> $A </S>")
    cjk6.padding_side, cjk6.truncation_side = "left", "left"
    cjk6.pad_token_id = cjk6.token_to_id("<|endoftext|>")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bbpe.CorpusWarning)  # the empty corpus: nothing learned, as meant
        smallest = bbpe.Tokenizer.train(os.path.join(cases, "empty.txt"), 0)
    smallest.set_template("<S> $A </S>")
    return {"cjk6": cjk6, "k24": bbpe.Tokenizer.train(os.path.join(cases, "k24.txt"), 0), "hf_template": smallest}


def seed_files() -> dict[str, bytes]:
    """The seed models saved as bbpe saves them; ``hf_template``'s post-processor
    rewritten in HF's form (a list of pieces)."""
    files = {name: tok.to_bytes(format="json") for name, tok in seed_models().items()}
    document = json.loads(files["hf_template"])
    document["post_processor"]["single"] = [{"SpecialToken": {"id": "<S>", "type_id": 0}},
                                            {"Sequence": {"id": "A", "type_id": 0}},
                                            {"SpecialToken": {"id": "</S>", "type_id": 0}}]
    files["hf_template"] = json.dumps(document, ensure_ascii=False, indent=1).encode("utf-8") + b"\n"
    return files


def write_seeds(directory: str) -> None:
    os.makedirs(directory, exist_ok=True)
    for name, data in seed_files().items():
        with open(os.path.join(directory, f"{name}.json"), "wb") as f:
            f.write(data)


class Choices(Protocol):
    """What ``mutate`` draws from: ``random.Random``, or hypothesis's data (the test)."""

    def randrange(self, stop: int) -> int: ...

    def choice(self, seq: Sequence[T]) -> T: ...


class Raw:
    """JSON text put in as it is, for what ``json.dumps`` cannot write: nesting deeper than
    the parser's recursion, an int of 5000 digits, ``1e999``."""

    def __init__(self, text: str) -> None:
        self.text = text


def values(n: int) -> list[Any]:
    """What a value is swapped for, ``n`` being the vocabulary size."""
    numbers = [0, 1, -1, 3, n - 1, n, n + 1, 2**31, 2**32, 2**63 - 1, 2**63, 2**64, -(2**63) - 1, 10**30]
    floats = [0.0, 1.5, 3.0, -0.0, 1e308, float("nan"), float("inf"), float("-inf")]
    strings = ["", " ", "x", "A", "XBBPE", "1.0", "left", "right", "TemplateProcessing", "$A", "$B", "<S> $A </S>",
               "$A:1 </S>:1", "<0xFF>", "<0x41>", "<0xZZ>", "<0x3C>0xE5>", "<0xe5>", "\ud800", "\x00", "a" * 30,
               "天地", "<|new|>", "<S>"]
    nested = [[], {}, [0], [[]], {"id": "A"}, {"Sequence": {"id": "A"}}, {"SpecialToken": {"id": "<S>"}},
              list(range(n)), {"a": 0}]
    raw = [Raw("[" * d + "]" * d) for d in (50, 900, 5000)] + [Raw('{"a":' * 900 + "0" + "}" * 900),
                                                                Raw("9" * 5000), Raw("1e999"), Raw("-0")]
    return [*numbers, *floats, True, False, None, *strings, *nested, *raw]


def places(document: Any) -> list[tuple[Any, Any, str]]:
    """Every (container, key, kind) of the document; ``kind`` is the place's path with
    list indices and vocabulary tokens as ``*``, so that the 300 tokens of a vocabulary
    are one kind of place and the one bug_compat another."""
    out: list[tuple[Any, Any, str]] = []

    def walk(value: Any, kind: str) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                sub = f"{kind}[*]" if kind == "model.vocab" else f"{kind}.{key}" if kind else key
                out.append((value, key, sub))
                walk(item, sub)
        elif isinstance(value, list):
            for i, item in enumerate(value):
                out.append((value, i, f"{kind}[*]"))
                walk(item, f"{kind}[*]")

    walk(document, "")
    return out


def mutate_once(document: Any, choices: Choices) -> None:
    """One change of structure, in place, at a place of a kind drawn evenly."""
    found = places(document)
    if not found:
        return
    kinds = sorted({kind for _, _, kind in found})
    kind = choices.choice(kinds)
    container, key, _ = choices.choice([place for place in found if place[2] == kind])
    vocab = document.get("model", {}).get("vocab") if isinstance(document.get("model"), dict) else None
    n = len(vocab) if isinstance(vocab, dict) else 300
    how = choices.choice(["delete", "swap", "swap", "nudge", "repeat", "rename", "exchange", "add key"])
    if how == "delete":
        del container[key]
    elif how == "swap":
        container[key] = choices.choice(values(n))
    elif how == "nudge" and isinstance(container[key], int):
        container[key] += choices.choice([-1, 1, n, -n, 2**63])
    elif how == "repeat" and isinstance(container, list):
        container.insert(key, copy.deepcopy(container[key]))
    elif how == "rename" and isinstance(container, dict):
        new = choices.choice([*(k for k in values(n) if isinstance(k, str)), *list(container)[:3]])
        container[new] = container.pop(key)
    elif how == "exchange" and isinstance(container, list) and len(container) > 1:
        other = choices.randrange(len(container))
        container[key], container[other] = container[other], container[key]
    elif how == "add key" and isinstance(container[key], dict):
        container[key][choices.choice(["extra", "id", "type", "vocab", "single"])] = choices.choice(values(n))


def serialize(document: Any, choices: Choices) -> bytes:
    """The document as a file: as bbpe writes it (indent 1, UTF-8) or with escapes, with
    ``Raw`` values put in as their text, then maybe changed as bytes: a line repeated (a
    key or an item twice), bytes that are not UTF-8 put in, or the end cut off."""
    raws: list[str] = []

    def marked(value: Any) -> Any:
        if isinstance(value, Raw):
            raws.append(value.text)
            return f"\x01{len(raws) - 1}\x01"
        if isinstance(value, dict):
            return {key: marked(item) for key, item in value.items()}
        if isinstance(value, list):
            return [marked(item) for item in value]
        return value

    text = json.dumps(marked(document), ensure_ascii=choices.choice([False, True]), indent=1)
    for i, raw in enumerate(raws):
        text = text.replace(json.dumps(f"\x01{i}\x01"), raw)
    data = text.encode("utf-8", "surrogatepass")  # a lone surrogate unescaped: bytes that are not UTF-8
    how = choices.choice(["none"] * 5 + ["repeat line", "bad bytes", "truncate"])
    if how == "repeat line":
        lines = data.split(b"\n")
        at = choices.randrange(len(lines))
        lines.insert(at, lines[at])
        data = b"\n".join(lines)
    elif how == "bad bytes":
        at = 1 + choices.randrange(max(1, len(data) - 1))
        data = data[:at] + choices.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00", b"\xef\xbb\xbf"]) + data[at:]
    elif how == "truncate":
        data = data[: 1 + choices.randrange(max(1, len(data) - 1))]
    return data


def mutate(document: Any, choices: Choices, times: int) -> bytes:
    """A copy of the document changed ``times`` times, as a file."""
    document = copy.deepcopy(document)
    for _ in range(times):
        mutate_once(document, choices)
    return serialize(document, choices)


def test_one(data: bytes) -> None:
    check(data, "fuzz.json")


def custom_mutator(data: bytes, max_size: int, seed: int) -> bytes:
    """libFuzzer's structure-aware step: a JSON object gets 1-3 changes of structure; what
    no longer parses (or one time in ten) gets libFuzzer's own byte mutations."""
    choices = random.Random(seed)
    try:
        document = json.loads(data)
        if not isinstance(document, dict) or choices.randrange(10) == 0:
            return atheris.Mutate(data, max_size)
        out = mutate(document, choices, 1 + choices.randrange(3))
    except (ValueError, RecursionError):  # not JSON, or nested too deeply to copy and walk
        return atheris.Mutate(data, max_size)
    return out if len(out) <= max_size else atheris.Mutate(data, max_size)


if __name__ == "__main__":
    atheris.Setup(sys.argv, test_one, custom_mutator=custom_mutator)
    atheris.Fuzz()
