"""bbpe.bpe.formats: the files of byte-level BPE tokenizers read into a BpeSpec and written back.

HF ``tokenizers`` and tiktoken are the judges. A spec is checked three ways: what was read
equals what HF holds (its vocabulary, merges, added tokens); ``reference_encode`` below, a
plain transcription of HF's and tiktoken's encoding run on the spec alone, gives the ids HF
(or tiktoken) gives on corpus lines and hypothesis texts, so the spec holds every detail that
decides an id; and a written file, loaded by HF, encodes as the original. Each refusal and
error names the file and the field, line or value.

The trained files are tests/data/bpe/ (made by make_hf_models.py there); OpenAI's ranks
files come from the ``bpe_openai`` wheel when it is installed.
"""

from __future__ import annotations

import copy
import gzip
import hashlib
import importlib.util
import io
import itertools
import json
import re
import unicodedata
import warnings
from pathlib import Path
from typing import Any

import pytest
import regex  # type: ignore[import-untyped]
from conftest import DATA, SONG100, TANG300
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bbpe.bpe import formats
from bbpe.bpe.byte_level import ALPHABET, BYTE_CHARS, decoded_bytes, to_bytes, to_text
from bbpe.bpe.formats import (
    ENCODINGS,
    PATTERNS,
    AddedToken,
    BpeSpec,
    PatternError,
    dumps,
    load_tokenizer_json,
    read_tiktoken,
    read_tokenizer_json,
    read_vocab_merges,
    resolve_pattern,
    sniff,
    tiktoken_bytes,
    to_tokenizer_json,
    write_tiktoken,
)
from bbpe.bpe.onig import from_onig, to_onig
from bbpe.bpe.patterns import HF_BYTE_LEVEL_PATTERN, KNOWN_PATTERNS, pattern_name
from bbpe.errors import FormatError

tokenizers = pytest.importorskip("tokenizers", reason="HF tokenizers judges these tests (pip install tokenizers)")
from tokenizers import Regex, Tokenizer, pre_tokenizers

BPE_DATA = DATA / "bpe"
HF_FILES = ["bl300.json", "bl1000_prefix.json", "mixed5000.json", "split1000.json", "nfc_qwen1000.json",
            "unk300.json"]
EXTRA_TEXTS = [
    "", " ", "   ", "\n", "\n\n  \n", "Hello world, it's 2024!  \n\n  ok", " leading space", "trailing   \n",
    "a<|endoftext|>b <|im_start|>x<|im_end|>", "<|begin_of_text|>hi<|eot_id|><|reserved_0|>", "<s>x</s><pad>",
    "e\u0301 café ﬁ Å", "12345678 x\n\n", "I'M here, they'LL see", "tab\there\r\nCRLF", "emoji 🙂👍🏽 done",
    "中文，English；混合 text。", "\u3000全角\u3000空格", "\x00\x01\x7f control", "ÿ\u0100\u0120Ġ",
]


def corpus_lines(count: int = 200) -> list[str]:
    lines = [line for path in (SONG100, TANG300) for line in path.read_text(encoding="utf-8").splitlines()]
    return lines[:: max(1, len(lines) // count)]


TEXTS = corpus_lines() + EXTRA_TEXTS


def openai_ranks(name: str) -> Path:
    """The ranks file ``name``.tiktoken.gz of the bpe_openai wheel; skip when it is not installed."""
    spec = importlib.util.find_spec("bpe_openai")
    if spec is None or spec.origin is None:
        pytest.skip("the bpe_openai wheel (OpenAI's ranks files) is not installed")
    path = Path(spec.origin).parent / "data" / f"{name}.tiktoken.gz"
    if not path.exists():
        pytest.skip(f"{path} is not in the installed bpe_openai")
    return path


# ----------------------------------------------------------------------------------------
# a reference encoder: HF's and tiktoken's encoding, transcribed, on a spec alone


def reference_encode(spec: BpeSpec, text: str) -> list[int]:
    """The ids of ``text`` (without a template) as HF (merges) or tiktoken (ranks) gives them:
    added tokens taken out leftmost-longest, each stretch between them NFC'd (if the spec
    says), given its prefix space, split by the pattern, each piece merged."""
    ids: list[int] = []
    contents = sorted((t.content for t in spec.added_tokens), key=len, reverse=True)
    by_content = spec.special_tokens
    parts = re.split("(" + "|".join(map(re.escape, contents)) + ")", text) if contents else [text]
    for i, part in enumerate(parts):
        if i % 2:
            ids.append(by_content[part])
        elif part:
            ids += _encode_stretch(spec, part)
    return ids


def _encode_stretch(spec: BpeSpec, text: str) -> list[int]:
    if spec.normalizer == "NFC":
        text = unicodedata.normalize("NFC", text)
    if spec.add_prefix_space and not text.startswith(" "):
        text = " " + text
    if spec.pattern is None:
        pieces = [text]
    else:
        pieces, at = [], 0
        for m in regex.finditer(spec.pattern, text):
            if spec.gaps and m.start() > at:
                pieces.append(text[at : m.start()])
            pieces.append(m.group(0))
            at = m.end()
        if spec.gaps and at < len(text):
            pieces.append(text[at:])
    out: list[int] = []
    for piece in pieces:
        out += _merge(spec, piece.encode("utf-8"))
    return out


def _tables(spec: BpeSpec) -> tuple[dict[bytes, int], dict[tuple[int, int], int]]:
    cached = _TABLES.get(id(spec))
    if cached is None or cached[0] is not spec:
        vocab = {token: kid for kid, token in enumerate(spec.tokens) if kid not in spec.unreachable}
        ranks = {pair: rank for rank, pair in enumerate(spec.merges or ())}  # a pair twice: its last rank
        cached = _TABLES[id(spec)] = (spec, vocab, ranks)
    return cached[1], cached[2]


_TABLES: dict[int, tuple[BpeSpec, dict[bytes, int], dict[tuple[int, int], int]]] = {}


def _merge(spec: BpeSpec, piece: bytes) -> list[int]:
    vocab, ranks = _tables(spec)
    if spec.ignore_merges and piece in vocab:
        return [vocab[piece]]
    if spec.merges is None:  # tiktoken's byte_pair_merge: the parts whose bytes make the lowest rank
        parts = [piece[i : i + 1] for i in range(len(piece))]
        while True:
            found = [(vocab[a + b], i) for i, (a, b) in enumerate(itertools.pairwise(parts)) if a + b in vocab]
            if not found:
                return [vocab[p] for p in parts]
            _, i = min(found)
            parts[i : i + 2] = [parts[i] + parts[i + 1]]
    word: list[int] = []  # HF's merge_word: a byte that is no token is the unk id, fused, or dropped
    unknown = False
    for b in piece:
        kid = vocab.get(bytes([b]))
        if kid is None:
            if spec.unk_id is not None and not (spec.fuse_unk and unknown):
                word.append(spec.unk_id)
            unknown = True
            continue
        unknown = False
        word.append(kid)
    while True:
        found = [(ranks[pair], i) for i, pair in enumerate(itertools.pairwise(word)) if pair in ranks]
        if not found:
            return word
        _, i = min(found)
        word[i : i + 2] = [vocab[spec.tokens[word[i]] + spec.tokens[word[i + 1]]]]


# ----------------------------------------------------------------------------------------
# GPT-2's byte-to-unicode map


def test_the_byte_level_map_is_gpt2s_and_hfs() -> None:
    assert len(set(BYTE_CHARS)) == 256 and ALPHABET == set(pre_tokenizers.ByteLevel.alphabet())
    # tiktoken's data_gym map (tiktoken/load.py): printable bytes but the space as themselves, the rest from U+0100
    printable = [b for b in range(256) if chr(b).isprintable() and chr(b) != " "]
    others = [b for b in range(256) if b not in printable]
    assert {BYTE_CHARS[b] for b in printable} == {chr(b) for b in printable}
    assert [BYTE_CHARS[b] for b in others] == [chr(256 + i) for i in range(len(others))]
    every = bytes(range(256))
    assert to_bytes(to_text(every)) == every and to_text(b" \n") == "ĠĊ"
    for foreign in (" ", "\x00", "中", "a b", "\xad"):
        assert to_bytes(foreign) is None
    assert decoded_bytes("café") == b"caf\xe9" and decoded_bytes("<｜x｜>") == "<｜x｜>".encode()


# ----------------------------------------------------------------------------------------
# HF tokenizer.json: what is read is what HF holds, and means the ids HF gives


@pytest.fixture(scope="module", params=HF_FILES)
def hf_file(request: pytest.FixtureRequest) -> tuple[str, BpeSpec, Tokenizer]:
    path = BPE_DATA / request.param
    return request.param, load_tokenizer_json(path.read_bytes(), request.param), Tokenizer.from_file(str(path))


def test_the_spec_holds_hfs_vocabulary_merges_and_added_tokens(hf_file: tuple[str, BpeSpec, Tokenizer]) -> None:
    name, spec, hf = hf_file
    vocab = hf.get_vocab(with_added_tokens=False)
    assert {to_bytes(text): kid for text, kid in vocab.items()} == {t: kid for kid, t in enumerate(spec.tokens)}
    merges = json.loads((BPE_DATA / name).read_text(encoding="utf-8"))["model"]["merges"]
    assert [(spec.tokens[a], spec.tokens[b]) for a, b in spec.merges or ()] == [
        (to_bytes(a), to_bytes(b)) for a, b in (m.split(" ") if isinstance(m, str) else m for m in merges)]
    assert {t.id: (t.content, t.special) for t in spec.added_tokens} == {
        kid: (t.content, t.special) for kid, t in hf.get_added_tokens_decoder().items()}
    assert spec.n_ids == hf.get_vocab_size(with_added_tokens=True)


def test_the_reference_encoding_of_the_spec_is_hfs(hf_file: tuple[str, BpeSpec, Tokenizer]) -> None:
    name, spec, hf = hf_file
    for text in TEXTS:
        assert reference_encode(spec, text) == hf.encode(text, add_special_tokens=False).ids, (name, text)


def test_a_written_file_encodes_and_decodes_as_the_original(hf_file: tuple[str, BpeSpec, Tokenizer]) -> None:
    name, spec, hf = hf_file
    document = to_tokenizer_json(spec)
    assert read_tokenizer_json(document, "written.json") == spec
    written = Tokenizer.from_str(json.dumps(document))
    for text in TEXTS:
        ours, theirs = written.encode(text), hf.encode(text)  # with the template, if any
        assert ours.ids == theirs.ids and ours.type_ids == theirs.type_ids, (name, text)
        assert written.decode(ours.ids, skip_special_tokens=False) == hf.decode(theirs.ids, skip_special_tokens=False)
    pair = written.encode("a b", "c d"), hf.encode("a b", "c d")
    assert pair[0].ids == pair[1].ids and pair[0].type_ids == pair[1].type_ids
    assert load_tokenizer_json(dumps(spec), "dumped.json") == spec


texts_with_tokens = st.lists(st.one_of(
    st.text(alphabet=st.characters(codec="utf-8"), max_size=12),
    st.text(alphabet=" \n\t'sdmtlvre0123456789aZé中。，!?", max_size=12),
    st.sampled_from(["<|endoftext|>", "<|im_start|>", "<|begin_of_text|>", "<|reserved_0|>", "<s>", "</s>",
                     "<unk>", "e\u0301"])), max_size=8).map("".join)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=st.lists(texts_with_tokens, min_size=1, max_size=4))
def test_hypothesis_texts_encode_as_hf_encodes_them(texts: list[str]) -> None:
    for name in HF_FILES:
        spec, hf, written = _loaded(name)
        for text in texts:
            theirs = hf.encode(text).ids
            assert written.encode(text).ids == theirs, (name, text)
            assert reference_encode(spec, text) == hf.encode(text, add_special_tokens=False).ids, (name, text)


_LOADED: dict[str, tuple[BpeSpec, Tokenizer, Tokenizer]] = {}


def _loaded(name: str) -> tuple[BpeSpec, Tokenizer, Tokenizer]:
    if name not in _LOADED:
        spec = load_tokenizer_json((BPE_DATA / name).read_bytes(), name)
        _LOADED[name] = (spec, Tokenizer.from_file(str(BPE_DATA / name)),
                         Tokenizer.from_str(json.dumps(to_tokenizer_json(spec))))
    return _LOADED[name]


def test_what_the_trained_files_hold_is_read() -> None:
    specs = {name: load_tokenizer_json((BPE_DATA / name).read_bytes(), name) for name in HF_FILES}
    assert specs["bl300.json"].pattern == HF_BYTE_LEVEL_PATTERN and specs["bl300.json"].gaps
    assert specs["bl1000_prefix.json"].add_prefix_space and specs["bl1000_prefix.json"].trim_offsets
    mixed = specs["mixed5000.json"].template
    assert mixed is not None and [p.name for p in mixed.pair] == ["<s>", "$A", "</s>", "</s>", "$B", "</s>"]
    split = specs["split1000.json"]
    assert pattern_name(split.pattern) == "llama3" and split.ignore_merges and split.template is not None
    assert [t.special for t in split.added_tokens] == [True, True, True, False]
    qwen = specs["nfc_qwen1000.json"]
    assert qwen.normalizer == "NFC" and pattern_name(qwen.pattern) == "qwen2"
    unk = specs["unk300.json"]
    assert unk.unk_id == 0 and unk.fuse_unk and len({t for t in unk.tokens if len(t) == 1}) < 256


# ----------------------------------------------------------------------------------------
# GPT-2's vocab.json + merges.txt


def test_gpt2_vocab_and_merges_read_as_hf_reads_them() -> None:
    vocab, merges = BPE_DATA / "gpt2_vocab.json", BPE_DATA / "gpt2_merges.txt"
    spec = read_vocab_merges(vocab, merges, special_tokens=["<|endoftext|>"])
    whole = load_tokenizer_json((BPE_DATA / "bl300.json").read_bytes(), "bl300.json")
    assert spec.tokens == whole.tokens and spec.merges == whole.merges and spec.special_tokens == whole.special_tokens
    hf = Tokenizer(tokenizers.models.BPE.from_file(str(vocab), str(merges)))
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.add_special_tokens(["<|endoftext|>"])
    for text in TEXTS:
        assert reference_encode(spec, text) == hf.encode(text).ids, text


def test_bad_gpt2_files_are_named(tmp_path: Path) -> None:
    vocab, merges = tmp_path / "vocab.json", tmp_path / "merges.txt"
    vocab.write_text(json.dumps({"a": 0, "b": 1, "ab": 2}), encoding="utf-8")
    for text, expected in [("#version: 0.2\na b\nab  b\n", "line 3: 'ab  b' is not two tokens"),
                           ("a b\nb c\n", "line 2: 'c', is not in the vocabulary"),
                           ("b a\n", "line 1: the token they make, 'ba', is not in the vocabulary")]:
        merges.write_text(text, encoding="utf-8")
        with pytest.raises(FormatError, match=re.escape(expected)) as err:
            read_vocab_merges(vocab, merges)
        assert err.value.path == str(merges)
    merges.write_text("a b\n", encoding="utf-8")
    assert read_vocab_merges(vocab, merges).merges == ((0, 1),)
    vocab.write_text(json.dumps({"a": 0, "a b": 1}), encoding="utf-8")
    with pytest.raises(FormatError, match=r"vocab\['a b'\]: the char ' ' \(U\+0020\) is not in the byte-level"):
        read_vocab_merges(vocab, merges)
    vocab.write_text("{", encoding="utf-8")
    with pytest.raises(FormatError, match="vocab.json: offset 1: not a valid JSON file"):
        read_vocab_merges(vocab, merges)


# ----------------------------------------------------------------------------------------
# the refusals: every stage bbpe does not apply, every bad field, named


def bl300() -> dict[str, Any]:
    return json.loads((BPE_DATA / "bl300.json").read_text(encoding="utf-8"))


def _set(path: str, value: Any) -> Any:
    """A change to bl300.json: ``path`` (dots and [i]) set to ``value`` (``...``: deleted)."""
    def change(document: dict[str, Any]) -> None:
        keys = [int(k) if k.isdigit() else k for k in re.findall(r"[^.\[\]]+", path)]
        target: Any = document
        for k in keys[:-1]:
            target = target[k]
        if value is ...:
            del target[keys[-1]]
        else:
            target[keys[-1]] = copy.deepcopy(value)
    return change


SPLIT = {"type": "Split", "pattern": {"Regex": r"\p{L}+|\p{N}"}, "behavior": "Isolated", "invert": False}
BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}

REFUSALS = [
    (_set("normalizer", {"type": "NFKC"}), "normalizer: NFKC is not supported by bbpe.BPE"),
    (_set("normalizer", {"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Lowercase"}]}),
     "normalizer.normalizers[1]: Lowercase is not supported by bbpe.BPE"),
    (_set("pre_tokenizer", None), "pre_tokenizer: null: a byte-level BPE needs a ByteLevel pre-tokenizer"),
    (_set("pre_tokenizer", {"type": "Metaspace", "replacement": "▁"}), "pre_tokenizer: Metaspace is not supported"),
    (_set("pre_tokenizer", {"type": "Sequence", "pretokenizers": [{"type": "Digits", "individual_digits": True},
                                                                  BYTE_LEVEL]}),
     "pre_tokenizer.pretokenizers[0]: Digits is not supported by bbpe.BPE"),
    (_set("pre_tokenizer", {"type": "Sequence", "pretokenizers": [SPLIT, SPLIT, BYTE_LEVEL]}),
     "pre_tokenizer.pretokenizers[1]: Split is not supported by bbpe.BPE"),
    (_set("pre_tokenizer", {"type": "Sequence", "pretokenizers": [SPLIT, {**BYTE_LEVEL, "use_regex": True}]}),
     "pre_tokenizer.pretokenizers[1].use_regex: true after a Split"),
    (_set("pre_tokenizer", {"type": "Sequence", "pretokenizers": [SPLIT, {**BYTE_LEVEL, "add_prefix_space": True}]}),
     "pre_tokenizer.pretokenizers[1].add_prefix_space: true after a Split"),
    (_set("pre_tokenizer", {"type": "Sequence", "pretokenizers": [{**SPLIT, "behavior": "MergedWithPrevious"},
                                                                  BYTE_LEVEL]}),
     "pre_tokenizer.pretokenizers[0].behavior: 'MergedWithPrevious' with invert false is not supported"),
    (_set("pre_tokenizer", {"type": "Sequence", "pretokenizers": [{**SPLIT, "pattern": {"Regex": "(a"}},
                                                                  BYTE_LEVEL]}),
     "pre_tokenizer.pretokenizers[0].pattern.Regex: the pattern '(a' does not compile with the regex package"),
    (_set("pre_tokenizer", {"type": "Sequence", "pretokenizers": [{**SPLIT, "pattern": {"Regex": r"\R|\p{L}+"}},
                                                                  BYTE_LEVEL]}),
     r"pre_tokenizer.pretokenizers[0].pattern.Regex: '\\R' in"),
    (_set("pre_tokenizer.add_prefix_space", ...), "pre_tokenizer.add_prefix_space: missing"),
    (_set("decoder", {"type": "WordPiece", "prefix": "##", "cleanup": True}), "decoder: WordPiece is not supported"),
    (_set("post_processor", {"type": "BertProcessing", "sep": ["</s>", 0], "cls": ["<s>", 0]}),
     "post_processor: BertProcessing is not supported by bbpe.BPE"),
    (_set("post_processor", {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "X", "type_id": 0}}],
                             "pair": [], "special_tokens": {}}),
     "post_processor.single[0].SpecialToken.id: 'X' is not one of the template's special_tokens"),
    (_set("post_processor", {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "X", "type_id": 0}}],
                             "pair": [], "special_tokens": {"X": {"id": "X", "ids": [300], "tokens": ["X"]}}}),
     "post_processor: the template's special token 'X' has the id 300, which is no id"),
    (_set("model.type", "WordPiece"), "model.type: 'WordPiece' is not supported by bbpe.BPE (it reads BPE models)"),
    (_set("model", ...), "model: missing"),
    (_set("model.dropout", 0.1), "model.dropout: 0.1 (a float): BPE dropout"),
    (_set("model.continuing_subword_prefix", "##"), "model.continuing_subword_prefix: '##'"),
    (_set("model.end_of_word_suffix", "</w>"), "model.end_of_word_suffix: '</w>'"),
    (_set("model.byte_fallback", True), "model.byte_fallback: true is not supported by bbpe.BPE"),
    (_set("model.vocab.!", 7), "model.vocab[\"'\"]: id 7 is already the id of '!'"),
    (_set("model.vocab.!", 300), "model.vocab['!']: id 300 is not in 0..299"),
    (_set("model.vocab.!", 1.0), "model.vocab['!']: id 1.0 (a float) is not in 0..299"),
    (_set("model.merges[0]", "ï ¼ x"), "model.merges[0]: 'ï ¼ x' is not two tokens parted by one space"),
    (_set("model.merges[0]", ["ï", "q q"]), "model.merges[0]: 'q q', is not in model.vocab"),
    (_set("model.merges[0]", ["¼", "ï"]), "model.merges[0]: the token they make, '¼ï', is not in model.vocab"),
    (_set("model.merges[0]", 5), "model.merges[0]: must be 'a b' or ['a', 'b'], got 5"),
    (_set("added_tokens[0].lstrip", True), "added_tokens[0].lstrip: true for '<|endoftext|>': bbpe.BPE does not strip"),
    (_set("added_tokens[0].single_word", True), "added_tokens[0].single_word: true"),
    (_set("added_tokens[0].special", "yes"), "added_tokens[0].special: must be true or false, got 'yes'"),
    (_set("added_tokens[0].content", 5), "added_tokens[0].content: must be a str, got 5"),
    (_set("version", "2.0"), "version: unknown tokenizer version '2.0'"),
    (_set("truncation", [1]), "truncation: must be null or an object, got a list [1]"),
]


@pytest.mark.parametrize(("change", "message"), REFUSALS, ids=[m.split(":")[0] for _, m in REFUSALS])
def test_what_bbpe_does_not_apply_is_refused_by_name(change: Any, message: str) -> None:
    document = bl300()
    change(document)
    with pytest.raises(FormatError) as err:
        read_tokenizer_json(document, "bl300.json")
    assert str(err.value).startswith("bl300.json: offset 0: ") and message in str(err.value), str(err.value)


def test_a_vocabulary_that_is_not_byte_level_is_refused() -> None:
    document = bl300()
    document["model"]["vocab"]["a b"] = document["model"]["vocab"].pop("!")
    with pytest.raises(FormatError, match=r"model.vocab\['a b'\]: the char ' ' \(U\+0020\) is not in the byte-level "
                                          r"alphabet .*no added token"):
        read_tokenizer_json(document, "bl300.json")


def test_an_unk_token_that_is_needed_and_missing_is_refused() -> None:
    document = json.loads((BPE_DATA / "unk300.json").read_text(encoding="utf-8"))
    document["model"]["unk_token"] = "<nope>"
    with pytest.raises(FormatError, match=r"model.unk_token: '<nope>' is not in model.vocab, and the byte 0x.. is no"):
        read_tokenizer_json(document, "unk300.json")
    document = bl300()  # every byte is a token: the unk token is never used
    document["model"]["unk_token"] = "<nope>"
    assert read_tokenizer_json(document, "bl300.json").unk_id is None


def test_added_tokens_that_hf_matches_in_two_passes_are_refused_when_they_overlap() -> None:
    document = bl300()
    token = dict(document["added_tokens"][0])
    document["added_tokens"] += [{**token, "id": 300, "content": "ab", "normalized": False},
                                 {**token, "id": 301, "content": "bc", "normalized": True}]
    with pytest.raises(FormatError, match=r"added_tokens: 'ab' \(normalized false\) and 'bc' \(normalized true\) can "
                                          "overlap"):
        read_tokenizer_json(document, "bl300.json")
    document["added_tokens"][-1]["content"] = "xy"
    assert [t.id for t in read_tokenizer_json(document, "bl300.json").added_tokens] == [0, 300, 301]
    document = json.loads((BPE_DATA / "nfc_qwen1000.json").read_text(encoding="utf-8"))
    document["added_tokens"][0]["normalized"] = True
    with pytest.raises(FormatError, match=r"added_tokens\[0\].normalized: true for '<\|endoftext\|>' with a NFC"):
        read_tokenizer_json(document, "q.json")


def test_json_errors_give_the_byte_offset() -> None:
    data = (BPE_DATA / "bl300.json").read_bytes()
    with pytest.raises(FormatError, match=r"^t.json: offset 1000: not a valid JSON file") as err:
        load_tokenizer_json(data[:1000], "t.json")
    assert err.value.offset == 1000
    with pytest.raises(FormatError, match=r"^t.json: offset 2: not a valid JSON file \(.*utf-8"):
        load_tokenizer_json(b'{"\xff": 1}', "t.json")
    with pytest.raises(FormatError, match=r"the document: must be an object"):
        load_tokenizer_json(b"[1]", "t.json")


def test_what_hf_reads_leniently_is_read_as_hf_reads_it() -> None:
    """HF's defaults: no version, a dropout of 0, null or empty options, an empty normalizer Sequence,
    ``String`` and ``Removed``+``invert`` Splits; an added token's id in the file is not
    HF's: HF warns and uses its own, bbpe too."""
    document = bl300()
    del document["version"]
    document["model"].update(dropout=0.0, fuse_unk=None, ignore_merges=None, byte_fallback=None,
                             continuing_subword_prefix="", end_of_word_suffix="")  # Qwen2's files
    document["normalizer"] = {"type": "Sequence", "normalizers": []}
    document["added_tokens"].append({**document["added_tokens"][0], "id": 999, "content": "<x y>"})
    with pytest.warns(UserWarning, match=r"added_tokens\[1\]: the file gives '<x y>' the id 999, HF tokenizers gives "
                                         "it 300"):
        spec = read_tokenizer_json(document, "bl300.json")
    assert spec.special_tokens == {"<|endoftext|>": 0, "<x y>": 300} and spec.normalizer is None
    hf = Tokenizer.from_str(json.dumps(document))
    assert hf.encode("a<x y>b").ids == reference_encode(spec, "a<x y>b")
    for split in ({**SPLIT, "pattern": {"String": "a.b"}}, {**SPLIT, "behavior": "Removed", "invert": True}):
        document["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [split, BYTE_LEVEL]}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            spec = read_tokenizer_json(document, "bl300.json")
        assert spec.gaps == (split["behavior"] == "Isolated")
        hf = Tokenizer.from_str(json.dumps(document))
        for text in ["xa.by a+b, 12 ab!", *TEXTS[:50]]:
            assert reference_encode(spec, text) == hf.encode(text).ids, (split, text)
        written = Tokenizer.from_str(json.dumps(to_tokenizer_json(spec)))
        assert all(written.encode(t).ids == hf.encode(t).ids for t in TEXTS)


def test_added_tokens_in_the_vocabulary_outside_the_alphabet_are_unreachable() -> None:
    """DeepSeek's files put their special tokens, not byte-level strs, in the model's vocabulary."""
    document = bl300()
    vocab = document["model"]["vocab"]
    text = "<｜begin▁of▁sentence｜>"
    vocab[text] = vocab.pop("<|endoftext|>")
    document["added_tokens"][0]["content"] = text
    spec = read_tokenizer_json(document, "bl300.json")
    assert spec.unreachable == {0} and spec.tokens[0] == text.encode() and spec.special_tokens == {text: 0}
    written = to_tokenizer_json(spec)
    assert read_tokenizer_json(written, "w.json") == spec
    hf, ours = Tokenizer.from_str(json.dumps(document)), Tokenizer.from_str(json.dumps(written))
    for probe in [f"a{text}b", text[:5], *TEXTS[:40]]:
        assert reference_encode(spec, probe) == hf.encode(probe).ids == ours.encode(probe).ids, probe


def test_truncation_and_padding_are_kept() -> None:
    document = bl300()
    document["truncation"] = {"direction": "Right", "max_length": 7, "strategy": "LongestFirst", "stride": 0}
    spec = read_tokenizer_json(document, "bl300.json")
    assert spec.truncation == document["truncation"] and spec.padding is None
    hf, ours = Tokenizer.from_str(json.dumps(document)), Tokenizer.from_str(json.dumps(to_tokenizer_json(spec)))
    assert ours.encode(TEXTS[0] * 3).ids == hf.encode(TEXTS[0] * 3).ids and len(hf.encode(TEXTS[0] * 3).ids) == 7


def test_what_hf_cannot_express_is_not_written() -> None:
    spec = BpeSpec(tokens=tuple(bytes([b]) for b in range(256)), pattern=r"\w+", add_prefix_space=True)
    with pytest.raises(ValueError, match="add_prefix_space with a pattern other than ByteLevel's own"):
        to_tokenizer_json(spec)
    spec = BpeSpec(tokens=tuple(bytes([b]) for b in range(256)), added_tokens=(AddedToken("<x>", 5),))
    with pytest.raises(ValueError, match="the added token '<x>' has the id 5, which is the id of the vocabulary's"):
        to_tokenizer_json(spec)
    spec = BpeSpec(tokens=tuple(bytes([b]) for b in range(256)), added_tokens=(AddedToken("x", 5),))
    with pytest.raises(ValueError, match="the added token 'x' has the id 5, but HF gives it 120, its id in the vocab"):
        to_tokenizer_json(spec)
    spec = BpeSpec(tokens=tuple(bytes([b]) for b in range(256)), pattern=r"(?P<w>\w)+")
    with pytest.raises(ValueError, match="cannot be written for HF tokenizers"):
        to_tokenizer_json(spec)


# ----------------------------------------------------------------------------------------
# HF's regex dialect (Oniguruma) and bbpe's (regex)


@pytest.mark.parametrize("pattern", [r"\p{N}{1,3}+|\p{L}+|\s", r"a$|\s+|[^a\s]+", r"^a|\s+|[^\s]", r"(?m:.)|\s",
                                     r"[\h_]+|\s+|[^\s\h_]", r"\s+\Z|\S+|\s", r"\s+\z|\S+|\s", r"(?:ab){1,2}+|\S|\s"])
def test_hf_split_patterns_find_the_same_pieces_once_translated(pattern: str) -> None:
    texts = ["x 2024 a\nba", "1234567 ab\nab a", "\n a\n\nb \n", "0xDEADbeef_G  \n", "ababab abab\n"]
    split = pre_tokenizers.Split(Regex(pattern), behavior="isolated")
    ours = from_onig(pattern)
    for text in texts:
        assert [p for p, _ in split.pre_tokenize_str(text)] == _pieces(ours, text), (pattern, ours, text)


@pytest.mark.parametrize("pattern", [*KNOWN_PATTERNS.values(), r"\p{N}{2,3}+|\S|\s", r"a{2}+|\s++$|\S|\s"])
def test_bbpe_patterns_find_the_same_pieces_in_hf_once_translated(pattern: str) -> None:
    split = pre_tokenizers.Split(Regex(to_onig(pattern)), behavior="isolated")
    for text in TEXTS[-len(EXTRA_TEXTS):] + ["aaaaa 12345", "x  \n", "x  \n\n", "  "]:
        assert [p for p, _ in split.pre_tokenize_str(text)] == _pieces(pattern, text), (pattern, text)


def _pieces(pattern: str, text: str) -> list[str]:
    pieces, at = [], 0
    for m in regex.finditer(pattern, text):
        if m.start() > at:
            pieces.append(text[at : m.start()])
        pieces.append(m.group(0))
        at = m.end()
    return pieces + ([text[at:]] if at < len(text) else [])


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet=" \n\t\r'stremvld0123456789aZé中。!?\u3000\u00a0\u2028-_", max_size=16))
def test_hf_byte_levels_regex_finds_the_pieces_of_tiktokens_gpt2_pattern(text: str) -> None:
    """So that one compiled scanner serves both (bbpe.bpe.patterns)."""
    assert regex.findall(HF_BYTE_LEVEL_PATTERN, text) == regex.findall(PATTERNS["gpt2"], text)


def test_what_the_dialects_read_differently_and_bbpe_cannot_translate_is_refused() -> None:
    for pattern in [r"(?P<x>a)", r"\1", r"[a[b]]", r"[a&&b]", r"\R", r"(?#c)", "a\\"]:
        with pytest.raises(PatternError):
            from_onig(pattern)
    for pattern in [r"(?m)^a", r"\z", r"(?P<x>a)"]:
        with pytest.raises(PatternError):
            to_onig(pattern)


# ----------------------------------------------------------------------------------------
# pattern names


def test_pattern_names_are_tiktokens(monkeypatch: pytest.MonkeyPatch) -> None:
    openai_public = pytest.importorskip("tiktoken_ext.openai_public", reason="tiktoken is not installed")
    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", lambda *args, **kwargs: {})  # no download
    monkeypatch.setattr(openai_public, "data_gym_to_mergeable_bpe_ranks", lambda *args, **kwargs: {})
    source = Path(openai_public.__file__).read_text(encoding="utf-8")
    for name, encoding in ENCODINGS.items():
        made = openai_public.ENCODING_CONSTRUCTORS[name]()
        assert resolve_pattern(name) == made["pat_str"] == encoding.pattern, name
        assert made["special_tokens"] == encoding.special_tokens, name
        if encoding.expected_hash:
            assert f'expected_hash="{encoding.expected_hash}"' in source, name
    assert pattern_name(PATTERNS["cl100k_base"]) == "cl100k_base" and pattern_name("x") is None


def test_bad_patterns_are_named() -> None:
    with pytest.raises(PatternError, match="unknown pattern name 'cl100k': the known names are gpt2, r50k_base, "
                                           "p50k_base, p50k_edit, cl100k_base, o200k_base"):
        resolve_pattern("cl100k")
    unknown = r"\p{Foo}"
    message = f"the pattern {unknown!r} does not compile with the regex package: unknown property"
    with pytest.raises(PatternError, match=re.escape(message)):
        resolve_pattern(unknown)
    with pytest.raises(PatternError, match=r"the pattern '\(\?<x' does not compile with the regex package: .+"):
        resolve_pattern("(?<x")
    assert resolve_pattern(r"\w+|\s") == r"\w+|\s"
    with pytest.raises(TypeError):
        resolve_pattern(None)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------------------
# tiktoken ranks files


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_openai_ranks_files_are_tiktokens(name: str, tmp_path: Path) -> None:
    """The wheel's files are the ones tiktoken checks (expected_hash, of the plain file), and
    bbpe reads what tiktoken's own loader reads from them."""
    path = openai_ranks(name)
    plain = gzip.decompress(path.read_bytes())
    assert hashlib.sha256(plain).hexdigest() == ENCODINGS[name].expected_hash
    spec = read_tiktoken(path, pattern=name, special_tokens=ENCODINGS[name].special_tokens)
    load = pytest.importorskip("tiktoken.load", reason="tiktoken is not installed")
    (tmp_path / "plain.tiktoken").write_bytes(plain)
    theirs = load.load_tiktoken_bpe(str(tmp_path / "plain.tiktoken"))
    assert {token: kid for kid, token in enumerate(spec.tokens)} == theirs
    assert tiktoken_bytes(spec) == plain and spec.pattern == PATTERNS[name] and spec.text_form == "bytes"
    assert spec.special_tokens == ENCODINGS[name].special_tokens and not spec.unreachable


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_openai_ranks_as_hf_encode_as_tiktoken(name: str) -> None:
    tiktoken = pytest.importorskip("tiktoken", reason="tiktoken is not installed")
    spec = read_tiktoken(openai_ranks(name), pattern=name, special_tokens=ENCODINGS[name].special_tokens)
    enc = tiktoken.Encoding(name, pat_str=spec.pattern, special_tokens=spec.special_tokens,
                            mergeable_ranks={token: kid for kid, token in enumerate(spec.tokens)})
    document = to_tokenizer_json(spec)
    back = read_tokenizer_json(document, "converted.json")
    assert back.tokens == spec.tokens and pattern_name(back.pattern) == name and not back.gaps
    hf = Tokenizer.from_str(json.dumps(document))
    texts = TEXTS + ["<|endofprompt|>x<|endoftext|>", "12345678901234567890", "x \n\n y", "  \n"]
    for text in texts:
        theirs = enc.encode(text, allowed_special="all")
        assert hf.encode(text).ids == theirs, text
        assert reference_encode(spec, text) == theirs, text


def _ranks_file(tokens: list[bytes], ranks: list[int] | None = None) -> bytes:
    import base64
    return b"".join(base64.b64encode(t) + b" %d\n" % r for t, r in zip(tokens, ranks or range(len(tokens))))


SMALL = [bytes([b]) for b in range(256)] + [b"ab", b"abc", b"  "]


def test_tiktoken_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "small.tiktoken"
    path.write_bytes(_ranks_file(SMALL))
    spec = read_tiktoken(path, pattern="gpt2")
    assert spec.tokens == tuple(SMALL) and spec.merges is None and spec.ignore_merges
    for compress in (False, True):
        out = tmp_path / f"out{compress}.tiktoken"
        write_tiktoken(spec, out, compress=compress)
        assert out.read_bytes().startswith(b"\x1f\x8b") == compress  # told by content, whatever the name
        assert read_tiktoken(out, pattern="gpt2") == spec
    assert (tmp_path / "outFalse.tiktoken").read_bytes() == path.read_bytes()
    buffer = io.BytesIO()
    write_tiktoken(spec, buffer)
    assert read_tiktoken(io.BytesIO(buffer.getvalue()), pattern="gpt2") == spec
    assert read_tiktoken(dict(zip(SMALL, range(len(SMALL)))), pattern="gpt2") == spec
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".bbpe-")] == []  # no temporary left
    hf_spec = load_tokenizer_json((BPE_DATA / "bl300.json").read_bytes(), "bl300.json")
    with pytest.raises(ValueError, match="HF merges, whose ids are not merge ranks"):
        write_tiktoken(hf_spec, tmp_path / "x.tiktoken")


def test_a_gap_that_a_special_token_fills_is_read_and_written_back(tmp_path: Path) -> None:
    """p50k_base's ranks skip 50256, <|endoftext|>'s id."""
    data = _ranks_file(SMALL, [*range(257), 258, 259])
    path = tmp_path / "gap.tiktoken"
    path.write_bytes(data)
    with pytest.raises(FormatError, match="rank 257 is missing"):
        read_tiktoken(path, pattern="gpt2")
    spec = read_tiktoken(path, pattern="gpt2", special_tokens={"<|endoftext|>": 257, "<|x|>": 300})
    assert spec.tokens[257] == b"<|endoftext|>" and spec.unreachable == {257} and spec.n_ids == 301
    assert tiktoken_bytes(spec) == data
    tiktoken = pytest.importorskip("tiktoken", reason="tiktoken is not installed")
    enc = tiktoken.Encoding("gap", pat_str=spec.pattern, special_tokens=spec.special_tokens,
                            mergeable_ranks={t: r for r, t in enumerate(spec.tokens) if r not in spec.unreachable})
    hf = Tokenizer.from_str(json.dumps(to_tokenizer_json(spec)))
    for text in ["abc ab<|endoftext|>  x<|x|>", "<|endoftext", *TEXTS[-len(EXTRA_TEXTS):]]:
        assert hf.encode(text).ids == enc.encode(text, allowed_special="all") == reference_encode(spec, text), text
    with pytest.raises(ValueError, match=r"special_tokens\['<\|x\|>'\]: id 3 is the rank of the token b'\\x03'"):
        read_tiktoken(path, pattern="gpt2", special_tokens={"<|x|>": 3})
    with pytest.raises(ValueError, match=r"special_tokens\['ab'\]: it fills the gap at rank 257, but its bytes are"):
        read_tiktoken(path, pattern="gpt2", special_tokens={"ab": 257})


BAD_RANKS = [
    (b"YQ== 0\nYg==  1\n", 7, "line 2: b'Yg==  1' is not 'base64 rank'"),
    (b"YQ== 0\nYg== -1\n", 7, "line 2: b'Yg== -1' is not 'base64 rank'"),
    (b"YQ== 0\nYg==\n", 7, "line 2: b'Yg==' is not 'base64 rank'"),
    (b"YQ== 0\nY!== 1\n", 7, "line 2: b'Y!==' is not valid base64"),
    (b"YQ== 0\nYg= 1\n", 7, "line 2: b'Yg=' is not valid base64"),
    (b"YQ== 0\n= 1\n", 7, "line 2: b'=' is not valid base64"),
    (b"YQ== 0\n\nYg== 1\n", 7, "line 2: b'' is not 'base64 rank'"),
    (b"YQ== 0\nYg== 0\n", 7, "line 2: rank 0 is already the rank of line 1"),
    (b"YQ== 0\r\nYQ== 1\r\n", 8, "line 2: the token b'a' (base64 b'YQ==') is already on line 1"),
    (b"YQ== 0\nYg== 2\n", 0, "rank 1 is missing (1 missing in all): the ranks must be 0..n-1, and line 2 has rank 2"),
    (b"", 0, "empty file"),
    (b'{"model": {}}', 0, "this is a JSON file, not a .tiktoken ranks file"),
    (gzip.compress(b""), 0, "empty file (gzipped)"),
    (gzip.compress(_ranks_file(SMALL), mtime=0)[:500], 500, "truncated gzip data"),
    (b"\x1f\x8b\x08\x00garbage-garbage", 0, "not valid gzip data"),
    (gzip.compress(b"YQ== 0\nYg== 0\n"), 7, "line 2: rank 0 is already the rank of line 1"),
]


@pytest.mark.parametrize(("data", "offset", "message"), BAD_RANKS, ids=[m for _, _, m in BAD_RANKS])
def test_bad_ranks_files_name_the_file_line_and_value(tmp_path: Path, data: bytes, offset: int, message: str) -> None:
    path = tmp_path / "bad.tiktoken"
    path.write_bytes(data)
    with pytest.raises(FormatError) as err:
        read_tiktoken(path, pattern="cl100k_base")
    assert str(err.value).startswith(f"{path}: offset {offset}: ") and message in str(err.value), str(err.value)
    with pytest.raises(FormatError, match=re.escape(message)):
        read_tiktoken(io.BytesIO(data), "named.tiktoken", pattern="cl100k_base")


def test_bad_tiktoken_sources_are_named(tmp_path: Path) -> None:
    path = tmp_path / "small.tiktoken"
    path.write_bytes(_ranks_file(SMALL))
    with pytest.raises(ValueError, match="a .tiktoken file holds only the ranks, no pre-tokenizer pattern: pass"):
        read_tiktoken(path)
    with pytest.raises(PatternError, match="unknown pattern name 'cl100k'"):
        read_tiktoken(path, pattern="cl100k")
    with pytest.raises(PatternError, match=r"the pattern '\[a' does not compile"):
        read_tiktoken(path, pattern="[a")
    with pytest.raises(FileNotFoundError, match="missing.tiktoken"):
        read_tiktoken(tmp_path / "missing.tiktoken", pattern="gpt2")
    with pytest.raises(IsADirectoryError, match=str(tmp_path)):
        read_tiktoken(tmp_path, pattern="gpt2")
    with open(path, encoding="ascii") as text_file, pytest.raises(TypeError, match="open it in 'rb' mode"):
        read_tiktoken(text_file, pattern="gpt2")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not the file's bytes"):
        read_tiktoken(path.read_bytes(), pattern="gpt2")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"<ranks>\[b'b'\]: rank 0 is already the rank of b'a'"):
        read_tiktoken({b"a": 0, b"b": 0}, pattern="gpt2")
    with pytest.raises(ValueError, match=r"<ranks>\[b''\]: a token must be non-empty bytes"):
        read_tiktoken({b"": 0}, pattern="gpt2")
    with pytest.raises(FormatError, match="rank 0 is missing"):
        read_tiktoken({b"a": 1}, pattern="gpt2")
    with pytest.raises(FileNotFoundError):
        write_tiktoken(read_tiktoken(path, pattern="gpt2"), tmp_path / "no" / "such" / "dir.tiktoken")


# ----------------------------------------------------------------------------------------
# sniff


def test_sniff_tells_the_formats_apart(tmp_path: Path) -> None:
    ranks = _ranks_file(SMALL)
    assert sniff(ranks[:4096]) == "tiktoken" and sniff(ranks[:5]) == "tiktoken" and sniff(ranks[:3]) == "tiktoken"
    assert sniff(gzip.compress(ranks)[:64]) == "tiktoken" and sniff(gzip.compress(ranks)) == "tiktoken"
    for name in HF_FILES:
        assert sniff((BPE_DATA / name).read_bytes()[:4096]) == "tokenizer.json", name
    assert sniff((BPE_DATA / "gpt2_vocab.json").read_bytes()[:4096]) == "vocab.json"
    assert sniff(dumps(load_tokenizer_json((BPE_DATA / "bl300.json").read_bytes()))[:100]) == "tokenizer.json"
    assert sniff(SONG100.read_bytes()[:4096]) == "unknown"
    assert sniff(b'{"a": "b"}') == "unknown" and sniff(b"") == "unknown" and sniff(b"\x1f\x8bjunk") == "unknown"
    assert sniff(gzip.compress(b'{"version": "1.0"}')) == "unknown"
    assert sniff(min((DATA / "golden").glob("*.bin")).read_bytes()[:4096]) == "unknown"  # bbpe's own .bin
    openai = importlib.util.find_spec("bpe_openai")
    if openai is not None and openai.origin is not None:
        with open(Path(openai.origin).parent / "data" / "cl100k_base.tiktoken.gz", "rb") as f:
            assert sniff(f.read(4096)) == "tiktoken"


def test_the_format_layer_is_documented_in_one_place() -> None:
    for name in formats.__all__:
        assert hasattr(formats, name), name


def test_ranks_without_every_byte_warn(tmp_path: Path) -> None:
    """Ranks where some byte is no token: bbpe drops that byte when encoding (tiktoken fails
    on such a text), and says so when it reads them."""
    import bbpe

    ranks = {bytes([b]): i for i, b in enumerate(b"abc ")} | {b"ab": 4}
    with pytest.warns(UserWarning, match=r"<ranks>: 252 of the 256 bytes are no token \(0x00, .*drops them"):
        tok = bbpe.BPE.from_tiktoken(ranks, r"\w+| ")
    assert tok.encode("ab1c") == [4, 2]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bbpe.BPE.from_tiktoken({bytes([b]): b for b in range(256)}, "gpt2")  # every byte: no warning
