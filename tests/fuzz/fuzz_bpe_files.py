"""Coverage-guided, structure-aware fuzzing of bbpe.BPE's loaders with atheris (see README.md here).

The first byte of an input picks the loader and its arguments, the rest is the file:

- 0, 1: a tiktoken ranks file, as it is (0) or gzipped by the harness (1), read by
  ``bbpe.BPE.from_tiktoken`` from a file object named ``fuzz.tiktoken`` or from that path,
  with one of eight patterns (tiktoken's names, HF ByteLevel's, Llama 3's and Qwen2's
  regexes, two that no scanner implements, one of which leaves gaps) and one of four sets
  of special tokens;
- 2: an HF ``tokenizer.json`` (or any file): ``bbpe.Tokenizer.from_bytes``,
  ``bbpe.BPE.from_bytes``, ``bbpe.load`` of a path or of a file object, named ``fuzz.json``;
- 3: GPT-2's ``vocab.json`` and ``merges.txt`` (parted by ``SEPARATOR``), written to two
  files read by ``bbpe.BPE.from_vocab_merges`` with one of four patterns and special tokens.

Property (``check``): the input either loads, or raises a FormatError whose message starts
with the file's name and an offset and then names the field (``model.merges[3]: ...``), the
line (``line 7: ...``) or the JSON syntax error, or, for the arguments, a ValueError naming
``special_tokens`` or the stage bbpe.BPE does not apply yet. Any other exception, warning
(but HF's own one about an added token's id), crash or hang is a finding. A model that loads
encodes and decodes the samples and a piece of the input: exactly back when every byte of
the text is a token, else (no unk token) to a subsequence of it; the text that a pattern
with gaps (tiktoken, Split ``Removed``) does not match is dropped. It saves as JSON and loads
back to the same ids (to an equal tokenizer when it came from JSON), and a tiktoken model's
ranks file loads back to the same ids.

Structure-aware (``custom_mutator``): a ranks file gets line changes (ranks swapped,
repeated, out of range, bad base64, tokens made of two others, CRLF, lines deleted or
shuffled); a JSON document gets field changes (fuzz_json's: keys deleted or renamed, values
swapped for other types, huge numbers, nesting, then bytes that are not UTF-8 or truncation)
with HF's values (stage types, patterns, merges in both forms) and changes that keep it
loadable (ids or merges exchanged, a merge or token added, the pipeline's stages swapped for
others bbpe reads); merges.txt gets line changes. One time in eight, or when the file does
not parse, libFuzzer's byte mutations. The seeds (``--write-seeds DIR``) are
tests/data/bpe/*.json, cut to 320 tokens, with and without the stages bbpe.BPE refuses,
ranks files made from them (plain and gzipped), and gpt2_vocab.json + gpt2_merges.txt.

Findings already reported (``KNOWN``, ``report``; the README's table) are printed once per
shape of message and then passed over, so that a run goes on to find others.
``BBPE_FUZZ_STRICT=1`` makes them fail again (rerun a reproducer with it).
"""

from __future__ import annotations

import atexit
import base64
import copy
import glob
import gzip
import io
import json
import os
import random
import re
import shutil
import sys
import tempfile
import traceback
import unicodedata
import warnings
from typing import Any

import atheris
import regex

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(os.path.dirname(HERE), "data", "bpe")
sys.path.insert(0, HERE)

with atheris.instrument_imports(include=["bbpe"]):
    import bbpe
    import bbpe.bpe.formats
    import bbpe.bpe.tokenizer
    import bbpe.common.tokenizer_json
    import bbpe.tokenizer
    import bbpe.xbbpe.tokenizer  # from_bytes reads what is not JSON as a .bin
    from bbpe.bpe.formats import tiktoken_bytes
    from bbpe.bpe.patterns import HF_BYTE_LEVEL_PATTERN, LLAMA3_PATTERN, QWEN2_PATTERN

import fuzz_json  # its mutations and serializer (bbpe is imported already: instrumented)

FormatError = bbpe.FormatError
SCRATCH = tempfile.mkdtemp(prefix="bbpe-fuzz-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
atexit.register(shutil.rmtree, SCRATCH, True)  # (libFuzzer's own exit skips it: the files are small)
RANKS_NAME, JSON_NAME = "fuzz.tiktoken", "fuzz.json"
RANKS_PATH, JSON_PATH = os.path.join(SCRATCH, RANKS_NAME), os.path.join(SCRATCH, JSON_NAME)
VOCAB_PATH, MERGES_PATH = os.path.join(SCRATCH, "vocab.json"), os.path.join(SCRATCH, "merges.txt")
SEPARATOR = b"\n\x00merges.txt\x00\n"

RANK_PATTERNS = ["gpt2", "cl100k_base", "o200k_base", HF_BYTE_LEVEL_PATTERN, LLAMA3_PATTERN, QWEN2_PATTERN,
                 r"\S+|\s+", r"\p{L}+|\p{N}"]  # the last one leaves gaps: tiktoken drops them
RANK_SPECIALS: list[dict[str, int] | None] = [None, {"<|endoftext|>": 300}, {"<|endoftext|>": 256, "<|x|>": 1000},
                                              {"<|endoftext|>": 5}]
VM_PATTERNS = [HF_BYTE_LEVEL_PATTERN, "cl100k_base", LLAMA3_PATTERN, r"\S+|\s+"]
VM_SPECIALS: list[Any] = [(), ["<|endoftext|>"], ["<|endoftext|>", "<|new|>"], "<|endoftext|>"]
ENTRIES = ("Tokenizer.from_bytes", "BPE.from_bytes", "load(path)", "load(file)")

SAMPLES = ["Hello, world! It's 12345 o'clock.\r\n\n  ", "床前明月光，疑是地上霜。", " \U0001f600 x\u0301 \xff\t", "ab abc abcd  \n"]

# what a FormatError names after "NAME: offset N: "
CLEAR = re.compile(
    r"(the document|version|truncation|padding|added_tokens|normalizer|pre_tokenizer|post_processor|decoder|model"
    r"|vocab|bbpe)([.\[]|: )|.+: given twice \(JSON would keep the last one"  # a field, a key given twice
    r"|not a valid (bbpe )?JSON file"  # a JSON syntax error, bytes that are not UTF-8
    r"|bbpe\.BPE does not apply |holds a \w+ model, not a \w+ one|a tiktoken ranks file holds no pre-tokenizer"
    r"|line \d+: |rank \d+ is missing|empty file|truncated gzip|not valid gzip|this is a JSON file"  # ranks files
    r"|not UTF-8 text")  # merges.txt


def header(first: int) -> dict[str, Any]:
    """The loader and its arguments that the first byte picks."""
    mode = first & 3
    if mode <= 1:
        return {"mode": "ranks", "gzip": mode == 1, "pattern": RANK_PATTERNS[(first >> 2) & 7],
                "specials": RANK_SPECIALS[(first >> 5) & 3], "path": bool(first & 128)}
    if mode == 2:
        return {"mode": "json", "entry": ENTRIES[(first >> 2) & 3]}
    return {"mode": "vocab_merges", "pattern": VM_PATTERNS[(first >> 2) & 3], "specials": VM_SPECIALS[(first >> 4) & 3]}


def _write(path: str, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)


class Named(io.BytesIO):
    name = ""


def _file(data: bytes, name: str) -> io.BytesIO:
    f = Named(data)
    f.name = name
    return f


NAMES = {"ranks": [RANKS_NAME, RANKS_PATH], "json": [JSON_NAME, JSON_PATH], "vocab_merges": [VOCAB_PATH, MERGES_PATH]}


def load(first: int, payload: bytes) -> bbpe.Tokenizer:
    """The tokenizer that the input describes."""
    how = header(first)
    if how["mode"] == "ranks":
        data = gzip.compress(payload, mtime=0) if how["gzip"] else payload
        if how["path"]:
            _write(RANKS_PATH, data)
            source: Any = RANKS_PATH
        else:
            source = _file(data, RANKS_NAME)
        return bbpe.BPE.from_tiktoken(source, how["pattern"], how["specials"])
    if how["mode"] == "json":
        entry = how["entry"]
        if entry == "Tokenizer.from_bytes":
            return bbpe.Tokenizer.from_bytes(payload, name=JSON_NAME)
        if entry == "BPE.from_bytes":
            return bbpe.BPE.from_bytes(payload, name=JSON_NAME)
        if entry == "load(path)":
            _write(JSON_PATH, payload)
            return bbpe.load(JSON_PATH)
        return bbpe.load(_file(payload, JSON_NAME))
    vocab, _, merges = payload.partition(SEPARATOR)
    _write(VOCAB_PATH, vocab)
    _write(MERGES_PATH, merges)
    return bbpe.BPE.from_vocab_merges(VOCAB_PATH, MERGES_PATH, pattern=how["pattern"], special_tokens=how["specials"])


def expected_error(err: Exception, names: list[str], mode: str, payload: bytes) -> bool:
    """Whether ``err`` is a clear refusal of the input (else a finding)."""
    message = str(err)
    if isinstance(err, FormatError):
        name = next((n for n in names if message.startswith(f"{n}: offset ")), None)
        assert name is not None, f"a FormatError that does not start with the file's name and offset: {message}"
        rest = message.split(": ", 2)[2]
        if mode == "json" and not bbpe.common.tokenizer_json.looks_like_json(payload):
            return True  # read as a .bin, whose messages are fuzz_binfile.py's
        assert CLEAR.match(rest), f"a FormatError that names no field, line or JSON error: {message}"
        return True
    if type(err) is ValueError and mode != "json":  # the arguments: the fixed special tokens, stages not applied
        assert message.startswith(("special_tokens", "bbpe.BPE does not apply ")), message
        return True
    return False


# findings already reported (the README's table): printed once, then passed over so that the
# run goes on to others; BBPE_FUZZ_STRICT=1 makes them fail again
STRICT = os.environ.get("BBPE_FUZZ_STRICT") == "1"
_NAMED = re.compile(r": offset \d+: [\w.\[\]'\"<>|-]+: ")  # "NAME: offset 0: added_tokens[3].id: ..."


def _from_json_catch_all(err: Exception) -> bool:
    """A FormatError made by BPE._from_json of any ValueError that building the tokenizer
    raised (the facade's checks, after the reader's): ``NAME: offset 0: `` and no field."""
    frames = traceback.extract_tb(err.__traceback__)
    return isinstance(err, FormatError) and bool(frames) and frames[-1].name == "_from_json" and \
        frames[-1].filename.endswith(os.path.join("bpe", "tokenizer.py"))


KNOWN: list[tuple[str, Any]] = [
    (("tokenizer.json: what the facade refuses once the reader has accepted the file becomes, in BPE._from_json, a "
      "FormatError that names no field"),
     lambda err, mode: mode == "json" and _from_json_catch_all(err) and not _NAMED.search(str(err))),
]
_reported: dict[str, set[str]] = {}


def report(what: str, detail: str) -> None:
    """A known finding: printed the first time (and each new shape of its message, up to 8),
    an AssertionError under BBPE_FUZZ_STRICT=1."""
    assert not STRICT, f"{what}: {detail}"
    shapes = _reported.setdefault(what, set())
    shape = re.sub(r"'[^']*'|\d+", "_", detail)
    if shape not in shapes and len(shapes) < 8:
        shapes.add(shape)
        print(f"\nKNOWN FINDING: {what}\n  {detail}" if len(shapes) == 1 else f"  {detail}", file=sys.stderr)


def known(err: Exception, mode: str) -> bool:
    for what, matches in KNOWN:
        if matches(err, mode):
            report(what, f"{type(err).__name__}: {err}")
            return True
    return False


ADDED_ORDER = ("tokenizer.json: added_tokens out of id order load, save (in id order) and load back to a tokenizer "
               "that encodes alike but is not == (Tokenizer.__eq__ compares the special tokens' order)")


SURROGATE_SAVE = ("tokenizer.json: an added token with a lone surrogate (the escape \\ud800, which HF refuses) loads, "
                  "and then to_bytes/save raise UnicodeEncodeError")


def same_but_order(a: bbpe.Tokenizer, b: bbpe.Tokenizer) -> bool:
    """Equal but for the order of the special tokens."""
    sa, sb = a._user_state(), b._user_state()
    return (sorted(sa.pop("special_tokens"), key=lambda t: t[1]) == sorted(sb.pop("special_tokens"), key=lambda t: t[1])
            and sa == sb and sorted(a.spec.added_tokens, key=lambda t: t.id) == sorted(b.spec.added_tokens,
                                                                                       key=lambda t: t.id))


def is_subsequence(short: bytes, long: bytes) -> bool:
    it = iter(long)
    return all(b in it for b in short)


def texts_of(payload: bytes) -> list[str]:
    return [*SAMPLES, payload[-48:].decode("utf-8", "ignore")]


def model_text(spec: Any, text: str) -> str:
    """The text whose bytes the model's tokens spell: NFC, a space put first, and without
    what a pattern with gaps does not match (the text holds no added token)."""
    if spec.normalizer == "NFC":
        text = unicodedata.normalize("NFC", text)
    if spec.add_prefix_space and text and not text.startswith(" "):
        text = " " + text
    if spec.pattern is not None and not spec.gaps:
        text = "".join(regex.findall(spec.pattern, text))
    return text


def check_model(tok: bbpe.Tokenizer, first: int, payload: bytes) -> None:
    """A model that loaded encodes, decodes, saves and loads back."""
    assert isinstance(tok, bbpe.BPE), tok
    spec = tok.spec
    singles = {token[0] for kid, token in enumerate(spec.tokens) if len(token) == 1 and kid not in spec.unreachable}
    added = [t.content for t in spec.added_tokens if t.content]
    texts = texts_of(payload)
    ids_of = {}
    for text in texts:
        ids = tok.encode(text)
        ids_of[text] = ids
        out = tok.decode_bytes(ids)
        tok.decode(ids)
        if any(a in text for a in added):
            continue  # an added token decodes to its own bytes, not necessarily the text's
        wanted = model_text(spec, text).encode()
        if set(wanted) <= singles:
            assert out == wanted, f"decode(encode({text!r})) = {out!r}, not {wanted!r}"
        elif spec.unk_id is None:
            assert is_subsequence(out, wanted), f"decode(encode({text!r})) = {out!r}: not bytes of {wanted!r}"
    how = header(first)
    try:
        saved = tok.to_bytes(format="json")
    except UnicodeEncodeError as err:
        if "surrogates not allowed" not in str(err):
            raise
        report(SURROGATE_SAVE, f"{err}; added tokens {[t.content for t in spec.added_tokens][:4]!r}")
        return
    back = bbpe.Tokenizer.from_bytes(saved, name="saved.json")
    if how["mode"] == "json" and back != tok:
        assert same_but_order(back, tok), "saved as JSON and loaded back: not equal"
        report(ADDED_ORDER, f"special tokens {tok._user_state()['special_tokens']}")
    for text in texts:
        assert back.encode(text) == ids_of[text], f"saved as JSON and loaded back: {text!r} encodes otherwise"
    if how["mode"] == "ranks":
        again = bbpe.BPE.from_tiktoken(io.BytesIO(tiktoken_bytes(spec)), how["pattern"], how["specials"])
        assert again == tok, "its ranks file loads back to another tokenizer"


def check(data: bytes) -> None:
    if not data:
        return
    first, payload = data[0], data[1:]
    mode = header(first)["mode"]
    try:
        tok = load(first, payload)
    except Exception as err:
        if known(err, mode) or expected_error(err, NAMES[mode], mode, payload):
            return
        raise
    check_model(tok, first, payload)


def test_one(data: bytes) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", message=r".*HF tokenizers gives it \d+ when loading the file")
        check(data)


# --- structure-aware mutation ------------------------------------------------------------------

ONIG_CL100K = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+"
BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
PRE_TOKENIZERS = [
    BYTE_LEVEL, {**BYTE_LEVEL, "use_regex": False}, {"type": "Sequence", "pretokenizers": [BYTE_LEVEL]},
    *({"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": pattern, "behavior": behavior, "invert": invert},
        {**BYTE_LEVEL, "use_regex": False}]}
      for pattern in ({"Regex": LLAMA3_PATTERN}, {"Regex": QWEN2_PATTERN}, {"Regex": ONIG_CL100K},
                      {"Regex": r"\s+"}, {"Regex": r"\p{L}+"}, {"String": " "}, {"String": "a.b"})
      for behavior, invert in (("Isolated", False), ("Removed", True)))]
STAGES = {
    "pre_tokenizer": PRE_TOKENIZERS,
    "normalizer": [None, {"type": "NFC"}, {"type": "Sequence", "normalizers": []}, {"type": "NFKC"}],
    "post_processor": [None, {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
                       {"type": "Sequence", "processors": []}],
    "decoder": [None, {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}],
}
FIELD_NAMES = ["type", "vocab", "merges", "unk_token", "ignore_merges", "fuse_unk", "dropout", "byte_fallback",
               "continuing_subword_prefix", "end_of_word_suffix", "pattern", "behavior", "invert", "use_regex",
               "add_prefix_space", "trim_offsets", "normalizers", "pretokenizers", "processors", "single", "pair",
               "special_tokens", "content", "id", "special", "normalized", "lstrip", "rstrip", "single_word",
               "Regex", "String", "cls", "sep", "version", "model"]


def hf_values(n: int, tokens: list[str]) -> list[Any]:
    """fuzz_json's values and HF's: stage types, patterns, merges, tokens of the vocabulary."""
    some = [tokens[i % len(tokens)] for i in (0, 1, n // 2, n - 1)] if tokens else ["a", "b", "c", "d"]
    strings = ["ByteLevel", "Split", "Sequence", "BPE", "WordPiece", "NFC", "NFKC", "TemplateProcessing",
               "RobertaProcessing", "Isolated", "Removed", "MergedWithPrevious", "A", "B", "Ġ", "Ġthe", "ĠĠ", "Ċ",
               "a b", "a  b", "Ġ t", "<|endoftext|>", "<unk>", "<s>", "</s>", "\u0100", "ÿ", "é", LLAMA3_PATTERN,
               QWEN2_PATTERN, HF_BYTE_LEVEL_PATTERN, ONIG_CL100K, r"\s+", "(?<x", "[", "(a+)+", r"\p{Zzz}", "1.0",
               f"{some[0]} {some[1]}", f"{some[2]}{some[3]}", *some]
    nested = [{"Regex": LLAMA3_PATTERN}, {"String": " "}, [some[0], some[1]], ["a", "b", "c"], *PRE_TOKENIZERS[:4],
              {"type": "NFC"}, {"SpecialToken": {"id": "<s>", "type_id": 0}}, ["<s>", 0], {"id": "A", "type_id": 1},
              {"id": n, "content": "<|new|>", "single_word": False, "lstrip": False, "rstrip": False,
               "normalized": False, "special": True}]
    return [*fuzz_json.values(n), *strings, *nested]


def _vocab_of(document: Any) -> dict[str, Any] | None:
    """The vocabulary of a tokenizer.json document, or the document itself (a vocab.json)."""
    if isinstance(document, dict) and isinstance(document.get("model"), dict):
        vocab = document["model"].get("vocab")
        return vocab if isinstance(vocab, dict) else None
    return document if isinstance(document, dict) and "model" not in document else None


def _valid_merge(vocab: dict[str, Any], choices: random.Random) -> str | None:
    """``"a b"`` for a token of the vocabulary cut in two parts that are tokens too."""
    tokens = [t for t in vocab if isinstance(t, str) and len(t) > 1]
    for _ in range(8):
        if not tokens:
            return None
        token = choices.choice(tokens)
        at = 1 + choices.randrange(len(token) - 1)
        if token[:at] in vocab and token[at:] in vocab and " " not in token:
            return f"{token[:at]} {token[at:]}"
    return None


def keep_loadable(document: dict[str, Any], choices: random.Random) -> None:
    """A change after which a loadable tokenizer.json stays loadable, mostly."""
    model = document.get("model")
    vocab = _vocab_of(document)
    merges = model.get("merges") if isinstance(model, dict) else None
    how = choices.randrange(8)
    if how == 0 and isinstance(vocab, dict) and len(vocab) > 1:  # two tokens exchange their ids
        a, b = choices.sample(list(vocab), 2)
        vocab[a], vocab[b] = vocab[b], vocab[a]
    elif how == 1 and isinstance(merges, list) and len(merges) > 1:  # two merges exchange their ranks
        i, j = choices.randrange(len(merges)), choices.randrange(len(merges))
        merges[i], merges[j] = merges[j], merges[i]
    elif how == 2 and isinstance(merges, list) and merges:
        del merges[choices.randrange(len(merges))]
    elif how == 3 and isinstance(vocab, dict) and isinstance(merges, list):  # a merge made again, or a new token
        merge = _valid_merge(vocab, choices)
        if merge is not None:
            merges.insert(choices.randrange(len(merges) + 1), merge if choices.randrange(2) else merge.split(" "))
        tokens = [t for t in vocab if isinstance(t, str)]
        if tokens and choices.randrange(2):
            left, right = choices.choice(tokens), choices.choice(tokens)
            if left + right not in vocab and " " not in left + right:
                vocab[left + right] = len(vocab)
                merges.append(f"{left} {right}")
    elif how == 4 and isinstance(merges, list):  # the other form of the merges
        document["model"]["merges"] = [m.split(" ") if isinstance(m, str) else " ".join(map(str, m))
                                       if isinstance(m, list) else m for m in merges]
    elif how == 5 and isinstance(model, dict):
        model[choices.choice(["ignore_merges", "fuse_unk"])] = bool(choices.randrange(2))
        if choices.randrange(2) and isinstance(vocab, dict) and vocab:
            model["unk_token"] = choices.choice([None, "<unk>", choices.choice(list(vocab))])
    elif how == 6 and "model" in document:
        section = choices.choice(list(STAGES))
        document[section] = copy.deepcopy(choices.choice(STAGES[section]))
    elif how == 7 and "model" in document:  # an added token: new, or one of the vocabulary's
        added = document.setdefault("added_tokens", [])
        if isinstance(added, list) and isinstance(vocab, dict):
            content = choices.choice(["<|new|>", "<s>", "Ġthe", "x", *list(vocab)[:3], *list(vocab)[-3:]])
            added.append({"id": vocab.get(content, len(vocab) + len(added)), "content": content,
                          "single_word": False, "lstrip": False, "rstrip": False, "normalized": choices.randrange(2) == 1,
                          "special": choices.randrange(2) == 1})


def mutate_once(document: Any, choices: random.Random) -> None:
    """fuzz_json's change of structure at a place of a kind drawn evenly, with HF's values."""
    found = fuzz_json.places(document)
    if not found:
        return
    kind = choices.choice(sorted({kind for _, _, kind in found}))
    container, key, _ = choices.choice([place for place in found if place[2] == kind])
    vocab = _vocab_of(document)
    tokens = [t for t in vocab if isinstance(t, str)] if isinstance(vocab, dict) else []
    n = len(tokens) or 300
    values = hf_values(n, tokens)
    how = choices.choice(["delete", "swap", "swap", "nudge", "repeat", "rename", "exchange", "add key"])
    if how == "delete":
        del container[key]
    elif how == "swap":
        container[key] = copy.deepcopy(choices.choice(values))
    elif how == "nudge" and isinstance(container[key], int):
        container[key] += choices.choice([-1, 1, n, -n, 2**32, 2**63])
    elif how == "repeat" and isinstance(container, list):
        container.insert(key, copy.deepcopy(container[key]))
    elif how == "rename" and isinstance(container, dict):
        new = choices.choice([*(v for v in values if isinstance(v, str)), *FIELD_NAMES, *list(container)[:3]])
        container[new] = container.pop(key)
    elif how == "exchange" and isinstance(container, list) and len(container) > 1:
        other = choices.randrange(len(container))
        container[key], container[other] = container[other], container[key]
    elif how == "add key" and isinstance(container[key], dict):
        container[key][choices.choice(FIELD_NAMES)] = copy.deepcopy(choices.choice(values))


def mutate_json(payload: bytes, choices: random.Random) -> bytes | None:
    """The document changed 1-3 times, as a file; None if it is no JSON object."""
    try:
        document = json.loads(payload)
    except (ValueError, RecursionError):
        return None
    if not isinstance(document, dict):
        return None
    try:
        for _ in range(1 + choices.randrange(3)):
            if choices.randrange(2):
                keep_loadable(document, choices)
            else:
                mutate_once(document, choices)
        if choices.randrange(2):  # as HF writes it: compact, not ASCII; else fuzz_json's ways
            try:
                return json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
            except TypeError:  # a fuzz_json.Raw value: its serializer puts those in
                pass
        return fuzz_json.serialize(document, choices)
    except RecursionError:
        return None


def _rank_line(token: bytes, rank: int | bytes) -> bytes:
    return base64.b64encode(token) + b" " + (rank if isinstance(rank, bytes) else b"%d" % rank)


def mutate_ranks(payload: bytes, choices: random.Random) -> bytes:
    """1-3 changes of a ranks file's lines."""
    lines = payload.split(b"\n")
    for _ in range(1 + choices.randrange(3)):
        lines = lines or [b""]
        at = choices.randrange(len(lines))
        parsed = []
        for line in lines:
            encoded, _, digits = line.partition(b" ")
            try:
                parsed.append((base64.b64decode(encoded, validate=True), int(digits)))
            except ValueError:
                pass
        top = max((rank for _, rank in parsed), default=-1)
        how = choices.randrange(12)
        if how == 0 and len(parsed) > 1:  # two tokens exchange their ranks
            (a, ra), (b, rb) = choices.sample(parsed, 2)
            lines = [_rank_line(b, ra) if line == _rank_line(a, ra) else _rank_line(a, rb)
                     if line == _rank_line(b, rb) else line for line in lines]
        elif how == 1 and len(parsed) > 1:  # a new token, two others together
            a, b = choices.choice(parsed)[0], choices.choice(parsed)[0]
            lines.insert(len(lines) - (lines[-1] == b""), _rank_line(a + b, top + 1))
        elif how == 2:
            del lines[at]
        elif how == 3:
            lines.insert(at, lines[at])
        elif how == 4:
            choices.shuffle(lines)
        elif how == 5:  # a rank out of place or not a rank
            encoded = lines[at].partition(b" ")[0]
            lines[at] = encoded + b" " + choices.choice([b"%d" % (top + 2), b"%d" % (top + 1), b"0", b"-1", b"", b"01",
                                                         b" 1", b"1 ", b"1e3", b"\xd9\xa1", b"%d" % 2**64, b"9" * 5000])
        elif how == 6:  # base64 that is not, or of nothing
            encoded, _, digits = lines[at].partition(b" ")
            lines[at] = choices.choice([encoded + b"=", encoded.rstrip(b"="), encoded[:-1], b"", b"====", b"YQ",
                                        encoded + b"\t", b"-_" + encoded, encoded.lower()]) + b" " + digits
        elif how == 7:
            lines[at] = lines[at] + b"\r"
        elif how == 8:
            lines.insert(at, choices.choice([b"", b"\r", b" ", b"#", b"YQ== 0 0", b"YQ==  0", b"YQ==\t0"]))
        elif how == 9 and parsed:  # a token twice, under another rank
            lines.insert(at, _rank_line(choices.choice(parsed)[0], top + 1))
        elif how == 10:
            lines = lines[: 1 + choices.randrange(len(lines))]
        else:  # a long or odd token
            token = choices.choice([b"\x00", b"\xff" * 40, "床前明月光".encode(), b" " * 300, b"<|endoftext|>"])
            lines.insert(at, _rank_line(token, top + 1))
    return b"\n".join(lines)


def mutate_merges(merges: bytes, vocab: bytes, choices: random.Random) -> bytes:
    """1-3 changes of merges.txt's lines."""
    lines = merges.split(b"\n")
    try:
        tokens = [t.encode() for t in json.loads(vocab)]
    except (ValueError, TypeError, AttributeError, RecursionError):
        tokens = [b"a", b"b"]
    for _ in range(1 + choices.randrange(3)):
        lines = lines or [b""]
        at = choices.randrange(len(lines))
        how = choices.randrange(8)
        if how == 0:
            del lines[at]
        elif how == 1:
            lines.insert(at, lines[at])
        elif how == 2 and len(lines) > 1:
            j = choices.randrange(len(lines))
            lines[at], lines[j] = lines[j], lines[at]
        elif how == 3 and tokens:  # two tokens of the vocabulary: their merge may be no token
            lines.insert(at, choices.choice(tokens) + b" " + choices.choice(tokens))
        elif how == 4:
            lines.insert(at, choices.choice([b"#version: 0.2", b"#", b"", b"a", b"a b c", b"a  b", b"\xff b", b"\r"]))
        elif how == 5:
            lines[at] = lines[at] + b"\r"
        elif how == 6:
            lines[at] = lines[at].replace(b" ", choices.choice([b"", b"  ", b"\t"]), 1)
        else:
            lines = lines[: 1 + choices.randrange(len(lines))]
    return b"\n".join(lines)


_mutator_errors: set[str] = set()


def custom_mutator(data: bytes, max_size: int, seed: int) -> bytes:
    """The structure-aware mutation (``mutate``); a mutation that fails (a document too odd to
    change) is libFuzzer's instead."""
    try:
        return mutate(data, max_size, seed)
    except Exception as err:  # noqa: BLE001  (the harness's own slip, not a finding: said once)
        if type(err).__name__ not in _mutator_errors:
            _mutator_errors.add(type(err).__name__)
            print(f"\ncustom_mutator: {type(err).__name__}: {err}", file=sys.stderr)
        return atheris.Mutate(data, max_size)


def mutate(data: bytes, max_size: int, seed: int) -> bytes:
    choices = random.Random(seed)
    if len(data) < 2 or choices.randrange(8) == 0:
        return atheris.Mutate(data, max_size)
    first, payload = data[0], data[1:]
    if choices.randrange(10) == 0:  # other arguments, the same loader
        first = (first & 3) | (choices.randrange(64) << 2)
        if first & 3 <= 1:
            first = (first & ~3) | choices.randrange(2)
        return bytes([first]) + payload
    mode = header(first)["mode"]
    out: bytes | None
    if mode == "ranks":
        out = mutate_ranks(payload, choices)
    elif mode == "json":
        out = mutate_json(payload, choices)
    else:
        vocab, separator, merges = payload.partition(SEPARATOR)
        if choices.randrange(2):
            new = mutate_json(vocab, choices)
            out = None if new is None else new + separator + merges
        else:
            out = vocab + SEPARATOR + mutate_merges(merges, vocab, choices)
    if out is None or len(out) + 1 > max_size:
        return atheris.Mutate(data, max_size)
    return bytes([first]) + out


# --- seeds --------------------------------------------------------------------------------------

def shrink(document: dict[str, Any], n: int) -> dict[str, Any]:
    """The tokenizer.json cut to its first ``n`` tokens and the merges among them."""
    document = copy.deepcopy(document)
    model = document["model"]
    vocab = {token: kid for token, kid in model["vocab"].items() if kid < n}
    model["vocab"] = vocab
    model["merges"] = [m for m in model["merges"] if all(p in vocab for p in (m.split(" ") if isinstance(m, str) else m))
                       and "".join(m.split(" ") if isinstance(m, str) else m) in vocab]
    ids = {}  # the added tokens' ids as HF gives them, in the template too
    for entry in document.get("added_tokens") or []:
        entry["id"] = ids.setdefault(entry["content"], vocab.get(entry["content"], len(vocab) + len(ids)))

    def fix(stage: Any) -> None:
        if not isinstance(stage, dict):
            return
        for inner in stage.get("processors", []):
            fix(inner)
        for entry in (stage.get("special_tokens") or {}).values():
            entry["ids"] = [ids.get(token, kid) for token, kid in zip(entry["tokens"], entry["ids"])]
        for end in ("cls", "sep"):
            if end in stage:
                stage[end][1] = ids.get(stage[end][0], stage[end][1])

    fix(document.get("post_processor"))
    return document


def seed_files() -> dict[str, bytes]:
    seeds = {}
    for path in sorted(glob.glob(os.path.join(DATA, "*.json"))):
        name = os.path.basename(path)[:-5]
        with open(path, "rb") as f:
            raw = f.read()
        document = json.loads(raw)
        if "model" not in document:
            continue
        small = shrink(document, 320)
        variants = {name: small}
        loadable = copy.deepcopy(small)  # without the stages bbpe.BPE refuses
        loadable["normalizer"] = loadable["post_processor"] = None
        for stage in [loadable["pre_tokenizer"], *loadable["pre_tokenizer"].get("pretokenizers", [])]:
            if stage.get("type") == "ByteLevel" and stage.get("use_regex", True):
                stage["add_prefix_space"] = False
        variants[f"{name}_loadable"] = loadable
        for i, (variant, doc) in enumerate(variants.items()):
            text = json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode()
            seeds[f"json_{variant}"] = bytes([2 | i << 2]) + text
        if name == "bl300":  # its tokens by id as tiktoken ranks
            tok = bbpe.load(path)
            ranks = b"".join(_rank_line(token, kid) + b"\n" for kid, token in enumerate(tok.spec.tokens))
            seeds["ranks_bl300"] = bytes([0 | 1 << 2]) + ranks
            seeds["ranks_bl300_gz"] = bytes([0 | 2 << 2]) + gzip.compress(ranks, mtime=0)
            seeds["ranks_bl300_gzipped_by_harness"] = bytes([1 | 3 << 2 | 1 << 5]) + ranks
    small = b"".join(_rank_line(token, kid) + b"\n" for kid, token in enumerate(
        [bytes([b]) for b in range(256)] + [b"ab", b"abc", b" the", "床".encode(), b"\r\n"]))
    seeds["ranks_small"] = bytes([0 | 6 << 2 | 2 << 5]) + small
    seeds["ranks_ascii"] = bytes([0 | 7 << 2]) + b"".join(_rank_line(bytes([b]), b - 32) + b"\n" for b in range(32, 127))
    with open(os.path.join(DATA, "gpt2_vocab.json"), "rb") as f:
        vocab = f.read()
    with open(os.path.join(DATA, "gpt2_merges.txt"), "rb") as f:
        merges = f.read()
    seeds["vocab_merges"] = bytes([3 | 1 << 4]) + vocab + SEPARATOR + merges
    seeds["vocab_merges_cl100k"] = bytes([3 | 1 << 2]) + vocab + SEPARATOR + merges
    return seeds


def write_seeds(directory: str) -> None:
    os.makedirs(directory, exist_ok=True)
    for name, data in seed_files().items():
        _write(os.path.join(directory, name), data)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--write-seeds"]:
        write_seeds(sys.argv[2])
        sys.exit(0)
    atheris.Setup(sys.argv, test_one, custom_mutator=custom_mutator)
    atheris.Fuzz()
