"""Coverage-guided fuzzing of bbpe.WordPiece with atheris (see README.md here).

The first byte picks what the rest is:

- **a text** (most inputs): decoded as UTF-8 (bytes that are not become lone surrogates),
  UTF-16-LE or UTF-32-LE (any code point), then encoded by bbpe under one of eight option
  sets (lowercase, strip_accents, handle_chinese_chars, clean_text, unk_per_char) and by HF
  tokenizers' BertWordPieceTokenizer with the same vocabulary and options, on the text with
  each surrogate pair joined and each lone surrogate U+FFFD (HF takes no surrogate): the
  same ids and the same offsets (in the str's code units), the same for its UTF-8 as bytes
  (offsets in bytes); ``decode`` equals HF's; the stream decoder equals ``decode``;
  ``normalize`` equals HF's ``normalize_str``. (``unk_per_char``, the seed's encoder, has no
  HF counterpart: its ids decode without error and its offsets lie in order in the text.)
- **a vocab.txt**: ``bbpe.WordPiece.from_vocab`` of the bytes either loads or raises
  ``FormatError`` naming the file and the line; what loads encodes a sample as HF loads and
  encodes the same file (where HF loads it: it needs [SEP] and [CLS]), saves and loads back.
- **an HF tokenizer.json**: bytes that ``bbpe.load`` either reads into a tokenizer that
  encodes a sample and saves back to an equal one, or refuses with ``FormatError``; never
  another exception.

The codec is C, which atheris does not see: the feedback is bbpe's Python (the loaders, the
facade), and the mutator builds text from fragments that reach the normalizer's corners
(marks to reorder, Hangul, CJK compatibility chars, controls, new emoji, whitespace of
every kind), vocab.txt lines and tokenizer.json fields.
"""

from __future__ import annotations

import json
import os
import random
import sys
import tempfile
import warnings

import atheris

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

with atheris.instrument_imports(include=["bbpe"]):
    import bbpe
    import bbpe.tokenizer
    import bbpe.wordpiece.formats
    import bbpe.wordpiece.tokenizer
    from bbpe.errors import FormatError

from tokenizers import BertWordPieceTokenizer

FRAGMENTS = ["hello", "world", "un", "##aff", "able", " ", "  ", "\t", "\n", "\u3000", "\u00a0", "\u2028",
             "e\u0301", "a\u0315\u0301\u0300", "\u1e69\u0323", "\U0001d165\U0001d16d", "\u0345", "\u0f71\u0f72",
             "\u0130", "\u1e9e", "\u03a3", "\ufffd", "\u200b", "\ufeff", "\x00", "\x07", "\x7f", "\u00ad",
             "床前", "明月", "\uf900\ufa0e", "\uac00\ud7a3", "\U00020000", "\U0001f970", "\U0001f600",
             "[UNK]", "[CLS]", "[SEP]", "[MASK]", "don't", "12,345.6", "x" * 101, "É", "ǅ", "ﬀ", "!?",
             "\ud800", "\udc00", "\ud83d\ude00"]
OPTION_SETS = [{"lowercase": lo, "strip_accents": st, "handle_chinese_chars": ch, "clean_text": cl}
               for lo, st, ch, cl in ((True, None, True, True), (False, None, True, True), (True, False, True, True),
                                      (False, True, True, True), (True, None, False, True), (False, None, True, False),
                                      (True, True, False, False))]
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world", "un", "##aff", "##able", "able", "##s",
         "床", "前", "明", "月", "##llo", "he", "##e", "e", "a", "x", "##x", "!", "?", ",", ".", "'", "t", "##t",
         "don", "1", "##2", "##3", "12", "ǆ", "ﬀ", "ß", "σ", "ς", "i", "##i", "\u0307", "##\u0307"]
_DIR = tempfile.mkdtemp(prefix="bbpe-fuzz-wp-")
_VOCAB_PATH = os.path.join(_DIR, "vocab.txt")
with open(_VOCAB_PATH, "w", encoding="utf-8") as _f:
    _f.write("".join(f"{t}\n" for t in VOCAB))
PAIRS = [(bbpe.WordPiece.from_vocab(_VOCAB_PATH, **o), BertWordPieceTokenizer(_VOCAB_PATH, **o)) for o in OPTION_SETS]
SEED = bbpe.WordPiece.from_vocab(_VOCAB_PATH, unk_per_char=True)
SAMPLE = "Hello, world! unaffable 床前明月光 ǅ e\u0301"


def _text(data: bytes, how: int) -> str:
    if how == 0:
        return data.decode("utf-8", "surrogateescape")
    if how == 1:
        return data[: len(data) // 2 * 2].decode("utf-16-le", "surrogatepass")
    return "".join(chr(int.from_bytes(data[i:i + 4], "little") % 0x110000) for i in range(0, len(data) - 3, 4))


def _as_hf(text: str) -> tuple[str, list[int]]:
    """The text as bbpe reads a str (pairs joined, lone surrogates U+FFFD) and each char's
    code units in the original."""
    out, units, i = [], [], 0
    while i < len(text):
        c = text[i]
        if "\ud800" <= c < "\udc00" and i + 1 < len(text) and "\udc00" <= text[i + 1] <= "\udfff":
            out.append(chr(0x10000 + ((ord(c) - 0xD800) << 10) + (ord(text[i + 1]) - 0xDC00)))
            units.append(2)
        else:
            out.append("\ufffd" if "\ud800" <= c <= "\udfff" else c)
            units.append(1)
        i += units[-1]
    return "".join(out), units


def check_text(data: bytes) -> None:
    pick = data[0]
    text = _text(data[1:], (pick >> 4) % 3)
    if pick % 8 == 7:  # the seed's encoder
        ids, spans = SEED.encode_with_offsets(text)
        SEED.decode(ids)
        last = (0, 0)
        for a, b in spans:
            assert 0 <= a < b <= len(text) and a >= last[0] and b >= last[1], (text, spans)
            last = (a, b)
        return
    tok, hf = PAIRS[pick % 7]
    seen, units = _as_hf(text)
    expected = hf.encode(seen, add_special_tokens=False)
    bounds = [0]
    for u in units:
        bounds.append(bounds[-1] + u)
    ids, spans = tok.encode_with_offsets(text)
    assert ids == expected.ids, (text, ids, expected.ids)
    assert spans == [(bounds[a], bounds[b]) for a, b in expected.offsets], (text, spans, expected.offsets)
    utf8 = seen.encode("utf-8")
    byte_ids, byte_spans = tok.encode_with_offsets(utf8)
    byte_bounds = [0]
    for c in seen:
        byte_bounds.append(byte_bounds[-1] + len(c.encode("utf-8")))
    assert byte_ids == ids and byte_spans == [(byte_bounds[a], byte_bounds[b]) for a, b in expected.offsets]
    assert tok.decode(ids) == hf.decode(ids, skip_special_tokens=False)
    decoder = tok.decoder()
    assert "".join(decoder.feed(i) for i in ids) + decoder.flush() == tok.decode(ids)
    assert tok.normalize(text) == hf.normalizer.normalize_str(seen)


def check_vocab(data: bytes) -> None:
    path = os.path.join(_DIR, "fuzzed-vocab.txt")
    with open(path, "wb") as f:
        f.write(data)
    try:
        tok = bbpe.WordPiece.from_vocab(path)
    except FormatError as err:
        assert "fuzzed-vocab.txt" in str(err) and "line" in str(err), err
        return
    ids = tok.encode(SAMPLE) if tok.token_to_id("[UNK]") is not None else None
    try:
        hf = BertWordPieceTokenizer(path)
    except Exception:  # noqa: BLE001 -- HF refuses a vocabulary without [SEP] or [CLS]
        hf = None
    if hf is not None and ids is not None:
        assert ids == hf.encode(SAMPLE, add_special_tokens=False).ids
    if len(set(tok.spec.tokens)) == len(tok.spec.tokens) and all(
            t == t.rstrip() and "\n" not in t and "\r" not in t for t in tok.spec.tokens):
        again = bbpe.WordPiece.from_vocab(tok.spec.tokens)
        assert again.get_vocab() == tok.get_vocab()


def check_json(data: bytes) -> None:
    try:
        with warnings.catch_warnings():  # an added token's id that HF would change: HF warns too
            warnings.simplefilter("ignore", UserWarning)
            tok = bbpe.from_bytes(data, name="fuzzed.json")
    except FormatError:
        return
    except (ValueError, TypeError) as err:  # only a FormatError is a refusal: anything else is a finding
        raise AssertionError(f"not a FormatError: {err!r}") from err
    if not isinstance(tok, bbpe.WordPiece):
        return
    try:
        ids = tok.encode(SAMPLE)
    except ValueError as err:  # a vocabulary without an unknown token: said, never a wrong id
        assert "no unknown token" in str(err), err
        return
    tok.decode(ids)
    try:
        again = bbpe.from_bytes(tok.to_bytes(format="json"))
    except ValueError as err:  # what HF's file cannot hold (a token listed twice): said when saving
        assert "tokenizer.json" in str(err) or "twice" in str(err), err
        return
    assert again.encode(SAMPLE) == ids


def test_one_input(data: bytes) -> None:
    if len(data) < 2:
        return
    kind = data[0] % 10
    if kind < 8:
        check_text(data[1:])
    elif kind == 8:
        check_vocab(data[1:])
    else:
        check_json(data[1:])


def seed_json() -> bytes:
    hf = BertWordPieceTokenizer(_VOCAB_PATH)
    return b"\x09" + hf.to_str().encode("utf-8")


def mutate(data: bytes, max_size: int, seed: int) -> bytes:
    """Text inputs grow from fragments; vocab and JSON inputs get token lines and field
    changes; otherwise libFuzzer's byte mutations."""
    rng = random.Random(seed)
    if not data or rng.random() < 0.3:
        return atheris.Mutate(data, max_size)
    kind = data[0] % 10
    if kind < 8:
        pieces = [rng.choice(FRAGMENTS) for _ in range(rng.randint(1, 8))]
        text = _text(data[2:], 0) if len(data) > 2 else ""
        at = rng.randint(0, len(text))
        text = text[:at] + "".join(pieces) + text[at:]
        return (bytes([data[0], data[1] & 0x0F if len(data) > 1 else 0])
                + text.encode("utf-8", "surrogatepass"))[:max_size]
    if kind == 8:
        lines = data[1:].split(b"\n")
        lines.insert(rng.randint(0, len(lines)), rng.choice(FRAGMENTS).encode("utf-8", "surrogatepass"))
        return (data[:1] + b"\n".join(lines))[:max_size]
    try:
        document = json.loads(data[1:])
    except ValueError:
        return atheris.Mutate(data, max_size)
    model = document.get("model") if isinstance(document, dict) else None
    if isinstance(model, dict):
        field = rng.choice(["unk_token", "continuing_subword_prefix", "max_input_chars_per_word", "vocab"])
        model[field] = rng.choice(["[UNK]", "##", "", 0, -1, 2 ** 64, None, {"a": 0}, {"a": 1}, ["x"], 1.5])
    if isinstance(document, dict) and rng.random() < 0.5:
        field = rng.choice(["normalizer", "pre_tokenizer", "decoder", "post_processor", "added_tokens"])
        document[field] = rng.choice([None, {"type": "BertNormalizer", "lowercase": "yes"}, {"type": "NFC"},
                                      {"type": "BertProcessing", "sep": ["[SEP]", 99], "cls": ["[CLS]", 2]},
                                      [{"id": 0, "content": "[PAD]", "special": True}], []])
    return (data[:1] + json.dumps(document).encode("utf-8"))[:max_size]


def write_seeds(path: str) -> None:
    os.makedirs(path, exist_ok=True)
    with open(_VOCAB_PATH, "rb") as f:
        vocab = f.read()
    seeds = [bytes([k, 0]) + SAMPLE.encode() for k in range(8)] + [b"\x08" + vocab, seed_json()]
    for i, seed in enumerate(seeds):
        with open(os.path.join(path, f"seed{i}"), "wb") as f:
            f.write(seed)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--write-seeds":
        write_seeds(sys.argv[2])
        sys.exit(0)
    atheris.Setup(sys.argv, test_one_input, custom_mutator=mutate)
    atheris.Fuzz()
