"""bbpe's JSON model file, mutated: every input loads into a working tokenizer or raises
``FormatError`` naming the file and the field, never an error from inside (issue 31: a
``record_order`` entry of 2**63 gave numpy's OverflowError).

The mutations and the property are ``tests/fuzz/fuzz_json.py``'s, whose atheris harness
runs them for as long as it is given; here hypothesis runs them for a few seconds, from
the same saved models (special tokens, one of them past 24 bytes, a template, padding
options; long keys; HF's form of the template).
"""

from __future__ import annotations

import copy
import functools
import importlib.util
import json
import re
from typing import Any

import pytest
from conftest import TESTS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bbpe

_spec = importlib.util.spec_from_file_location("fuzz_json", TESTS / "fuzz" / "fuzz_json.py")
assert _spec is not None and _spec.loader is not None
fuzz_json = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fuzz_json)

NAME = "mutated.json"


@functools.cache
def documents() -> dict[str, dict[str, Any]]:
    """The seed models' files, parsed (built once: hypothesis calls the tests many times)."""
    return {name: json.loads(data) for name, data in fuzz_json.seed_files().items()}


class Drawn:
    """``fuzz_json.Choices`` from hypothesis's data, so that a failure shrinks."""

    def __init__(self, data: st.DataObject) -> None:
        self.data = data

    def randrange(self, stop: int) -> int:
        return self.data.draw(st.integers(0, stop - 1))

    def choice(self, seq):
        return seq[self.randrange(len(seq))]


def load(document: Any) -> bbpe.Tokenizer:
    return bbpe.Tokenizer.from_bytes(json.dumps(document).encode("ascii"), name=NAME)


def seed() -> dict[str, Any]:
    return copy.deepcopy(documents()["cjk6"])


def test_the_seeds_load():
    """The models saved now, and the seed files saved when the harness was written."""
    for name, data in fuzz_json.seed_files().items():
        assert fuzz_json.check(data, name) is not None
    for path in sorted((TESTS / "fuzz" / "seeds" / "json").glob("*.json")):
        assert fuzz_json.check(path.read_bytes(), path.name) is not None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_files_load_or_name_the_field(data):
    """1-3 changes of structure, then maybe of bytes: fuzz_json.check's property."""
    choices = Drawn(data)
    document = documents()[choices.choice(sorted(documents()))]
    fuzz_json.check(fuzz_json.mutate(document, choices, 1 + choices.randrange(3)), NAME)


# --------------------------------------------------------------------------- one field at a time

# the fields bbpe reads, as the errors name them (a vocabulary token is model.vocab['天地'])
READ = re.compile(r"version|model(\.type|\.vocab(\[.*\])?|\.record_order(\[\d+\])?|\.bug_compat)?"
                  r"|added_tokens(\[\d+\](\.id|\.content)?)?|post_processor(\.type|\.single(\[\d+\])?)?"
                  r"|bbpe(\.padding_side|\.truncation_side|\.pad_token_id)?")


def fields(document: dict[str, Any]) -> list[tuple[Any, Any, str, str]]:
    """(container, key, field, the container's field) of every field bbpe reads."""
    out = []

    def walk(value: Any, holder: str) -> None:
        items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
        for key, item in items:
            if isinstance(key, int) or holder == "model.vocab":
                field = f"{holder}[{key!r}]"
            else:
                field = f"{holder}.{key}" if holder else key
            if READ.fullmatch(field):
                out.append((value, key, field, holder))
                walk(item, field)

    walk(document, "")
    return out


def _json_type(value: Any) -> str:
    return "number" if type(value) in (int, float) else type(value).__name__


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_one_field_swapped_or_deleted_is_named(data):
    """A field deleted, or given a value of another JSON type, or an int out of every
    range: the file loads, or the error names that field or the object holding it."""
    document = copy.deepcopy(documents()[data.draw(st.sampled_from(sorted(documents())))])
    container, key, field, holder = data.draw(st.sampled_from(fields(document)))
    old = container[key]
    others = [v for v in fuzz_json.values(len(document["model"]["vocab"]))
              if not isinstance(v, fuzz_json.Raw) and _json_type(v) != _json_type(old)]
    if isinstance(old, int) and not isinstance(old, bool):
        others += [-1, 2**63, 2**64, 10**30, len(document["model"]["vocab"]) + 7]
    new = data.draw(st.sampled_from(["delete", *others]))
    if new == "delete":
        del container[key]
    else:
        container[key] = new
    try:
        load(document)
    except bbpe.FormatError as err:
        message = str(err)
        assert message.startswith(f"{NAME}: offset 0: ")
        rest = message[len(f"{NAME}: offset 0: ") :]
        named = rest.split(": ")[0]
        if holder in ("", "model"):  # a field of the document or of the model: that field itself
            assert named.startswith(field), message
        else:  # or the object holding it, or another of its items (the later of two equal ids)
            assert named.startswith((field, holder)) or holder in rest, message


# --------------------------------------------------------------------------- the cases, one by one


@pytest.mark.parametrize("value", [2**63, 2**64, 10**30, -1, 281, 1.0, float("nan"), True, None, "3", [3]])
def test_a_bad_record_order_entry_is_named(value):
    """Issue 31: 2**63 gave numpy's OverflowError; the others a message from numpy."""
    document = seed()
    document["model"]["record_order"][3] = value
    with pytest.raises(bbpe.FormatError, match=r"^mutated\.json: offset 0: model\.record_order\[3\]: .* is not an id "
                                               r"in 0\.\.277$"):
        load(document)


@pytest.mark.parametrize(("change", "message"), [
    (lambda d: d["model"]["record_order"].__setitem__(5, d["model"]["record_order"][4]),
     r"model\.record_order\[5\]: id \d+ is already at model\.record_order\[4\]"),
    (lambda d: d["model"]["record_order"].pop(), r"model\.record_order: has 277 entries for the 278 tokens of model\.vocab"),
    (lambda d: d["model"].__setitem__("record_order", {}), r"model\.record_order: must be a list of the ids 0\.\.277"),
    (lambda d: d["model"].__setitem__("bug_compat", "false"), r"model\.bug_compat: must be true or false, got 'false'"),
    (lambda d: d["model"].__setitem__("vocab", []), r"model\.vocab: must be an object \{token: id\}, got a list \[\]"),
    (lambda d: d["model"].__setitem__("vocab", {}), r"model\.vocab: holds no token"),
    (lambda d: d["model"]["vocab"].__setitem__("<0x41>", 9), (r"model\.vocab\['<0x41>'\]: token '<0x41>' has id 9, "
                                                              r"already the id of '\\t'")),
    (lambda d: d["model"]["vocab"].__setitem__("天", d["model"]["vocab"].pop("A")),  # the model's own check
     r"model: the vocabulary has no key for byte 0x41"),
    (lambda d: d["model"]["vocab"].__setitem__("<0x41>", d["model"]["vocab"].pop("天地人")),
     r"model\.vocab\['<0x41>'\]: token '<0x41>' \(id \d+\) has the bytes of token 'A' \(id 65\)"),
    (lambda d: d["model"]["vocab"].__setitem__("", d["model"]["vocab"].pop("天地人")),
     r"model\.vocab\[''\]: an empty token"),
    (lambda d: d["model"]["vocab"].__setitem__("x" * 25, d["model"]["vocab"].pop("天地人")),
     r"model\.vocab\['x{25}'\]: a key of 25 bytes: an XBBPE key holds at most 24"),
    (lambda d: d["model"]["vocab"].__setitem__("天地人", 2**63), (r"model\.vocab\['天地人'\]: token '天地人' has id "
                                                              r"9223372036854775808, not an id in 0\.\.277")),
    (lambda d: d.__setitem__("added_tokens", {}), r"added_tokens: got an object \{\}: added_tokens must be a list"),
    (lambda d: d["added_tokens"][1].__setitem__("id", True), r"added_tokens\[1\]\.id: got true: added_tokens must "),
    (lambda d: d["added_tokens"][2].__setitem__("id", 2**64), (r"added_tokens\[2\]\.id: token '<\|im_start\|>' has "
                                                              r"id 18446744073709551616, expected 279")),
    (lambda d: d["added_tokens"][2].__setitem__("content", "<0xFF>"), (r"added_tokens\[2\]\.id: token '<0xFF>' has "
                                                                      r"id 279, expected 255")),
    (lambda d: d["added_tokens"][0].__setitem__("content", ""), r"added_tokens\[0\]\.content: is empty"),
    (lambda d: d["added_tokens"][0].pop("content"), r"added_tokens\[0\]\.content: got nothing"),
    (lambda d: d.__setitem__("bbpe", []), r"bbpe: the 'bbpe' options must be an object, got a list \[\]"),
    (lambda d: d["bbpe"].__setitem__("pad_token_id", 2**63), (r"bbpe\.pad_token_id: pad_token_id must be in "
                                                             r"0\.\.9223372036854775807, got 9223372036854775808")),
    (lambda d: d["bbpe"].__setitem__("pad_token_id", 1.0),
     r"bbpe\.pad_token_id: pad_token_id must be an int or None, got float"),
    (lambda d: d["bbpe"].__setitem__("padding_side", None), (r"bbpe\.padding_side: padding_side must be 'left' or "
                                                            r"'right', got null")),
    (lambda d: d["post_processor"].__setitem__("single", [{"Sequence": {"id": "A"}}, 5]),
     r"post_processor\.single\[1\]: 5 is not a piece of a template"),
    (lambda d: d["post_processor"].__setitem__("type", None), r"post_processor\.type: post_processor null is not "),
    (lambda d: d.__setitem__("version", 1.0), r"version: unknown version 1\.0 \(a float\) \(bbpe reads '1\.0'\)"),
])
def test_each_bad_field_is_named(change, message):
    document = seed()
    change(document)
    with pytest.raises(bbpe.FormatError, match=f"^mutated\\.json: offset 0: {message}"):
        load(document)


@pytest.mark.parametrize(("text", "offset", "message"), [
    ('{"version": "1.0", "model": {"vocab": {"天地": 1 x}}}', 51, "Expecting ',' delimiter"),
    ('{"model": {"vocab": {"天地": 1', 32, "Expecting"),
    ('{"version": "1.0", "model": ' + "[" * 100_000 + "]" * 100_000 + "}", 0, "nested too deeply"),
    ('{"version": ' + "9" * 5000 + "}", 0, "Exceeds the limit"),
])
def test_json_errors_give_the_byte_offset(text, offset, message):
    """Offsets count bytes (the JSON reader counts chars); nesting past the reader's
    recursion and ints past Python's digit limit are FormatErrors, not RecursionError or
    a bare ValueError."""
    data = text.encode("utf-8")
    with pytest.raises(bbpe.FormatError, match=f"^mutated\\.json: offset {offset}: not a valid bbpe JSON file .*"
                                               f"{message}"):
        bbpe.Tokenizer.from_bytes(data, name=NAME)


def test_a_repeated_key_is_named():
    """JSON keeps the last of a repeated key silently: a token listed twice, or an option,
    would be read as another file than the one written."""
    data = json.dumps(seed(), ensure_ascii=False, indent=1).encode("utf-8")
    twice = data.replace(b'"A": 65,', b'"A": 65, "A": 66,', 1)
    with pytest.raises(bbpe.FormatError, match=r"model\.vocab\['A'\]: given twice"):
        bbpe.Tokenizer.from_bytes(twice, name=NAME)
    twice = data.replace(b'"padding_side": "left",', b'"padding_side": "left", "padding_side": "right",', 1)
    with pytest.raises(bbpe.FormatError, match=r"bbpe\.padding_side: given twice"):
        bbpe.Tokenizer.from_bytes(twice, name=NAME)
    twice = data.replace(b'"decoder": null,', b'"<0xZZ>": 1, "<0xZZ>": 2, "decoder": null,', 1)  # found by fuzz_json
    with pytest.raises(bbpe.FormatError, match=r"offset 0: the document: the key '<0xZZ>' is given twice"):
        bbpe.Tokenizer.from_bytes(twice, name=NAME)


def test_bytes_that_are_not_utf8_give_their_offset():
    data = json.dumps(seed(), ensure_ascii=False).encode("utf-8")
    at = data.index("天地人".encode())
    with pytest.raises(bbpe.FormatError, match=f"^mutated\\.json: offset {at}: not a valid bbpe JSON file"):
        bbpe.Tokenizer.from_bytes(data[:at] + b"\xff" + data[at + 1 :], name=NAME)


def test_what_bbpe_does_not_read_is_left_alone():
    """Fields bbpe writes as null and does not read, HF's flags of an added token, and
    keys of its own it does not know: the file loads as it would without them."""
    document = seed()
    document["truncation"] = {"max_length": 5}
    document["added_tokens"][0]["lstrip"] = "yes"
    document["bbpe"]["unknown_option"] = [1]
    document["model"]["dropout"] = None
    assert load(document) == load(seed())


@pytest.mark.parametrize(("field", "template"), [
    *(("single", t) for t in ["$A $A", "<nope> $A", "</S>"]),
    *(("pair", t) for t in ["$A $A", "<nope> $A $B", "$B $A", "$A:4294967296 $B"]),
])
def test_a_template_error_names_its_field(field, template):
    document = seed()
    document["post_processor"][field] = template
    with pytest.raises(bbpe.FormatError, match=rf"^mutated\.json: offset 0: post_processor\.{field}: "):
        load(document)


def test_a_template_type_id_past_int64_is_refused():
    document = seed()
    document["post_processor"]["single"] = "<S> $A:18446744073709551616 </S>"
    with pytest.raises(bbpe.FormatError, match="18446744073709551616"):
        load(document)


def test_the_pair_template_and_hf_pieces_with_type_ids_load():
    tok = load(seed())
    tok.set_template("<S> $A:0 </S>:0", "<S> $A:0 </S>:0 $B:1 </S>:1")
    again = bbpe.Tokenizer.from_bytes(tok.to_bytes(format="json"))
    assert again == tok and again("天", "地")["token_type_ids"] == tok("天", "地")["token_type_ids"]
    document = seed()  # the same templates as HF tokenizers writes them
    piece = [{"SpecialToken": {"id": "<S>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
             {"SpecialToken": {"id": "</S>", "type_id": 0}}]
    document["post_processor"] = {"type": "TemplateProcessing", "single": piece,
                                  "pair": [*piece, {"Sequence": {"id": "B", "type_id": 1}},
                                           {"SpecialToken": {"id": "</S>", "type_id": 1}}]}
    hf_form = load(document)
    assert hf_form("天", "地") == tok("天", "地")
    document["post_processor"]["pair"][3]["Sequence"]["type_id"] = -1
    with pytest.raises(bbpe.FormatError, match=r"post_processor\.pair\[3\]\.type_id: must be an int"):
        load(document)
