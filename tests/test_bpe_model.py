"""bbpe.BPE through the shared facade: tiktoken's and HF's ids, the user layer (specials,
batches, offsets, pickling, save and load) and the errors of its files. The codec, the
pre-tokenizers and the formats have tests of their own (test_bpe_codec, test_bpe_pretokenize,
test_bpe_formats)."""

from __future__ import annotations

import functools
import gzip
import io
import json
import os
import pickle
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bbpe

HERE = Path(__file__).parent
HF_FILES = sorted((HERE / "data" / "bpe").glob("*.json"))
CORPORA = [p for p in (Path(__file__).parents[2] / "shared" / "reference" / "corpora").glob("*.txt")]
tiktoken = pytest.importorskip("tiktoken", reason="tiktoken (the [test] extra) is the oracle of these tests")


def _ranks_path(name: str) -> str:
    try:
        import bpe_openai
    except ImportError:
        pytest.skip("bpe-openai (the [test] extra) ships OpenAI's ranks files")
    return os.path.join(os.path.dirname(bpe_openai.__file__), "data", f"{name}.tiktoken.gz")


@pytest.fixture(scope="module", params=["o200k_base", "cl100k_base"])
def openai(request):
    """(bbpe's tokenizer, tiktoken's Encoding) of one of OpenAI's encodings."""
    name = request.param
    specials = {"<|endoftext|>": 199999 if name == "o200k_base" else 100257}
    tok = bbpe.BPE.from_tiktoken(_ranks_path(name), name, specials)
    return tok, tok.to_tiktoken(name)


def _lines() -> list[str]:
    lines = [line for path in CORPORA for line in path.read_text(encoding="utf-8").splitlines()]
    return lines or pytest.skip("the shared corpora are not beside the checkout")


def test_every_corpus_line_has_tiktokens_ids(openai):
    tok, enc = openai
    lines = _lines()
    assert tok.encode_batch(lines) == [enc.encode_ordinary(line) for line in lines]
    assert [tok.encode(line) for line in lines[:2000]] == [enc.encode_ordinary(line) for line in lines[:2000]]
    whole = "\n".join(lines[:500])
    assert tok.encode(whole) == enc.encode_ordinary(whole)
    assert tok.decode(tok.encode(whole)) == whole


@settings(max_examples=150, deadline=None)
@given(st.text(st.characters(exclude_categories=("Cs",)), max_size=60)
       | st.lists(st.sampled_from([" ", "  ", "\n", "\r\n", "\t", "'s", "'LL", "123", "4567", "中文", "ok", "é",
                                   "\u0301", "🙂", "\u3000", "a", "A"]), max_size=20).map("".join))
def test_any_text_has_tiktokens_ids(openai, text):
    tok, enc = openai
    assert tok.encode(text) == enc.encode_ordinary(text)
    assert tok.decode(tok.encode(text)) == text


def test_specials_follow_tiktokens_arguments(openai):
    tok, enc = openai
    text = "hi <|endoftext|> 你好"
    assert tok.encode(text, allowed_special="all") == enc.encode(text, allowed_special="all")
    assert tok.encode_ordinary(text) == enc.encode_ordinary(text)
    with pytest.raises(ValueError, match="endoftext"):
        tok.encode(text, disallowed_special="all")
    assert tok.n_vocab == enc.n_vocab


def test_lone_surrogates_are_replaced_as_tiktoken_does(openai):
    tok, enc = openai
    text = "a\ud800b\udfff 中"
    assert tok.encode(text) == enc.encode_ordinary(text)


def test_the_shared_user_layer_works(openai, tmp_path):
    tok, _ = openai
    texts = ["床前明月光，疑是地上霜。", "Hello, world! It's 2024.", ""]
    tok.pad_token_id = tok.token_to_id("<|endoftext|>")
    try:
        batch = tok(texts, padding=True, return_offsets_mapping=True)
        for text, ids, mask, spans in zip(texts, batch["input_ids"], batch["attention_mask"],
                                          batch["offset_mapping"]):
            kept = [i for i, m in zip(ids, mask) if m]
            assert kept == tok.encode(text)
            # a token holding part of a char gets that whole char's span (as HF gives it), so
            # the spans, once overlapping ones are merged, cut the text into its tokens' chars
            assert _merged_slices(text, [s for s, m in zip(spans, mask) if m]) == text
        clone = pickle.loads(pickle.dumps(tok))
        assert clone == tok and clone.encode(texts[0]) == tok.encode(texts[0])
    finally:
        tok.pad_token_id = None
    assert tok.id_to_token(tok.encode(" the")[0]) == "Ġthe"
    assert tok.token_to_id("Ġthe") == tok.encode(" the")[0]
    decoder = tok.decoder()
    assert "".join(decoder.feed(i) for i in tok.encode(texts[0])) + decoder.flush() == texts[0]


def _merged_slices(text, spans):
    """``text`` cut at the given (start, end) spans, a span that starts before the last one
    ended (a char split over two tokens) merged with it."""
    pieces, end = [], 0
    for a, b in spans:
        assert a >= 0 and b <= len(text) and a <= b
        pieces.append(text[max(a, end):b])
        end = max(end, b)
    return "".join(pieces)


def test_save_and_load_each_format(openai, tmp_path):
    tok, _ = openai
    line = "混合 text, 混合文本 123"
    tok.save(tmp_path / "m.tiktoken")
    again = bbpe.BPE.from_tiktoken(tmp_path / "m.tiktoken", tok.spec.pattern,
                                   {t.content: t.id for t in tok.spec.added_tokens})
    assert again.encode(line) == tok.encode(line)
    tok.save(tmp_path / "tokenizer.json")
    loaded = bbpe.load(tmp_path / "tokenizer.json")
    assert isinstance(loaded, bbpe.BPE) and loaded.encode(line) == tok.encode(line)
    tokenizers = pytest.importorskip("tokenizers", reason="HF tokenizers checks the file it loads")
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    assert hf.encode(line, add_special_tokens=False).ids == tok.encode(line)


APPLIED = [p for p in HF_FILES if p.name != "gpt2_vocab.json"]  # (GPT-2's vocab.json is no tokenizer.json)


def _same_as_hf(tok, hf, texts, pairs=None):
    """bbpe's batch call and HF's encode_batch agree on ids, offsets and type ids, with
    the file's template and without it."""
    for special in (True, False):
        ours = tok(texts, pairs, add_special_tokens=special, return_offsets_mapping=True, return_token_type_ids=True)
        theirs = hf.encode_batch(texts if pairs is None else list(zip(texts, pairs)), add_special_tokens=special)
        assert ours["input_ids"] == [e.ids for e in theirs]
        assert ours["offset_mapping"] == [e.offsets for e in theirs]
        assert ours["token_type_ids"] == [e.type_ids for e in theirs]


@pytest.mark.parametrize("path", APPLIED, ids=lambda p: p.name)
def test_hf_trained_files_have_hfs_ids_and_offsets(path):
    tokenizers = pytest.importorskip("tokenizers", reason="HF tokenizers is the oracle")
    hf = tokenizers.Tokenizer.from_file(str(path))
    tok = bbpe.load(path)
    assert isinstance(tok, bbpe.BPE)
    lines = _lines()[:3000]
    assert tok.encode_batch(lines) == [e.ids for e in hf.encode_batch(lines, add_special_tokens=False)]
    _same_as_hf(tok, hf, lines[:500])
    _same_as_hf(tok, hf, lines[:200], lines[200:400])
    assert tok.get_vocab() == hf.get_vocab()
    ids = tok.encode_batch(lines[:200])
    # decode gives the text back, with the space add_prefix_space put first (HF's decode keeps it too)
    assert tok.batch_decode(ids) == hf.decode_batch(ids, skip_special_tokens=False)
    assert [text.removeprefix(" ") if tok.spec.add_prefix_space and not line.startswith(" ") else text
            for text, line in zip(tok.batch_decode(ids), lines)] == lines[:200]


_PIECES = st.sampled_from(["a", "b ", " ", "  ", "\n", "\t", "'s", "'LL", "12", "3456", "床前", "明月光", "，", "é",
                           "e\u0301", "🙂", "👍🏽", "\u3000", "\xa0", "\x80", "ÿ", "<|endoftext|>", "<s>", "</s>",
                           "<unk>", "<|im_start|>", "\ud800"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=st.lists(st.one_of(st.text(max_size=12), st.lists(_PIECES, max_size=10).map("".join)),
                      min_size=1, max_size=4))
def test_hf_files_agree_with_hf_on_any_text(texts):
    pytest.importorskip("tokenizers", reason="HF tokenizers is the oracle")
    texts = [t.encode("utf-8", "replace").decode("utf-8") for t in texts]  # HF takes no lone surrogate
    for path in APPLIED:
        _same_as_hf(_loaded(path), _hf(path), texts)


@functools.cache
def _loaded(path):
    return bbpe.load(path)


@functools.cache
def _hf(path):
    import tokenizers

    return tokenizers.Tokenizer.from_file(str(path))


def test_a_ranks_file_without_pattern_is_refused_by_load(tmp_path):
    path = tmp_path / "r.tiktoken"
    path.write_bytes(gzip.compress(b"YQ== 0\nYg== 1\n"))
    with pytest.raises(bbpe.FormatError, match="r.tiktoken.*from_tiktoken"):
        bbpe.load(path)


def test_a_model_of_another_kind_is_refused(tmp_path):
    tok = bbpe.Tokenizer.train(vocab_size=300)
    tok.save(tmp_path / "x.json")
    with pytest.raises(bbpe.FormatError, match="holds a XBBPE model, not a BPE one"):
        bbpe.BPE.load(tmp_path / "x.json")
    with pytest.raises(ValueError, match="bug_compat"):
        bbpe.load(APPLIED[0], bug_compat=True)


def test_a_gap_in_the_ranks_that_a_special_token_fills(openai, tmp_path):
    """p50k_base's way: a rank no token has, which a special token's id fills. The model never
    makes that id from text (tiktoken's ranks lack it); the special token gives it."""
    tok, _ = openai
    ranks = {tok.token_bytes(kid): kid for kid in range(5000)}
    gap = tok.token_bytes(3000)
    del ranks[gap]
    specials = {"<|endoftext|>": 3000, "<|fim|>": 5000}
    ours = bbpe.BPE.from_tiktoken(ranks, tok.spec.pattern, specials)
    theirs = tiktoken.Encoding("gap", pat_str=tok.spec.pattern, mergeable_ranks=ranks, special_tokens=specials)
    lines = _lines()[:1000] + [line + gap.decode("utf-8", "replace") * 3 for line in _lines()[:200]]
    assert ours.encode_batch(lines) == [theirs.encode_ordinary(line) for line in lines]
    text = "a<|endoftext|>b" + gap.decode("utf-8", "replace")
    ids = ours.encode(text, allowed_special="all")
    assert ids == theirs.encode(text, allowed_special="all") and 3000 in ids
    assert ours.decode(ids) == text and ours.token_to_id("<|endoftext|>") == 3000
    decoder = ours.decoder()
    assert "".join(decoder.feed(i) for i in ids) + decoder.flush() == text
    ours.save(tmp_path / "gap.tiktoken")
    again = bbpe.BPE.from_tiktoken(tmp_path / "gap.tiktoken", tok.spec.pattern, specials)
    assert again == ours and pickle.loads(pickle.dumps(ours)) == ours


def test_nfc_files_have_hfs_offsets_where_nfc_changes_the_text():
    pytest.importorskip("tokenizers", reason="HF tokenizers is the oracle")
    path = HERE / "data" / "bpe" / "nfc_qwen1000.json"
    texts = ["e\u0301x", "\xc5\u0323x", "x\u0302\u0323y", "\u0958\u0f73\u030a", "\u1100\u1161\u11a8z",
             "ae\u0301\u0302b<|im_start|>\u0301c", "\u212b\ufb01 e\u0301 e\u0301"]
    _same_as_hf(_loaded(path), _hf(path), texts)
    tok = _loaded(path)
    assert tok.encode_with_offsets("e\u0301x".encode())[1] == [(0, 1), (0, 1), (3, 4)]  # bytes: byte offsets


def _bl300_with(change):
    document = json.loads((HERE / "data" / "bpe" / "bl300.json").read_text(encoding="utf-8"))
    change(document)
    return json.dumps(document).encode()


def _added(content, kid):
    return {"id": kid, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
            "normalized": False, "special": True}


@pytest.mark.parametrize(("data", "message"), [
    (b"YQ== 1000000000\n", r"offset 0: rank 0 is missing \(1000000000 missing in all\)"),
    (b"YQ== " + b"9" * 5000 + b"\n", r"offset 0: line 1: the rank b'9999.* is far past any vocabulary"),
], ids=["a rank far past the others", "a rank of 5000 digits"])
def test_absurd_ranks_are_refused_at_once(data, message):
    with pytest.raises(bbpe.FormatError, match=message):
        bbpe.BPE.from_tiktoken(io.BytesIO(data), "gpt2")


def test_a_special_token_whose_bytes_a_rank_has_is_named():
    ranks = {**{bytes([b]): b for b in range(256)}, b"<|endoftext|>": 256}
    with pytest.raises(ValueError, match=r"special_tokens\['<\|endoftext\|>'\]: .* has id 257, expected 256"):
        bbpe.BPE.from_tiktoken(ranks, "gpt2", {"<|endoftext|>": 257})


@pytest.mark.parametrize(("change", "message"), [
    (lambda d: d.update(post_processor={"type": "TemplateProcessing", "pair": [], "special_tokens": {},
                                        "single": [{"SpecialToken": {"id": [], "type_id": 0}}]}),
     r"post_processor.single\[0\].SpecialToken.id: must be a str"),
    (lambda d: d["added_tokens"].append(_added("\ud800", 300)), r"added_tokens\[1\].content: holds a lone surrogate"),
    (lambda d: d["added_tokens"].append(_added("Ġ", 221)), r"added_tokens\[1\].id: token 'Ġ' has id 221"),
], ids=["a template piece's id that is no str", "a lone surrogate", "a vocabulary token's byte-level text"])
def test_what_the_fuzzer_found_in_json_files_is_named(tmp_path, change, message):
    path = tmp_path / "t.json"
    path.write_bytes(_bl300_with(change))
    with pytest.raises(bbpe.FormatError, match=message):
        bbpe.load(path)


def test_special_tokens_compare_as_a_set(tmp_path):
    path = tmp_path / "t.json"
    path.write_bytes(_bl300_with(lambda d: d["added_tokens"].insert(0, _added("<x>", 300))))
    tok = bbpe.load(path)
    tok.save(tmp_path / "again.json")
    assert bbpe.load(tmp_path / "again.json") == tok


@pytest.mark.parametrize("path", [p for p in APPLIED if p.name in ("bl1000_prefix.json", "mixed5000.json",
                                                                    "nfc_qwen1000.json")], ids=lambda p: p.name)
def test_bbpe_hf_gives_the_models_offsets_and_pairs(path):
    """The transformers wrapper gives what tok() gives: HF's prefix-space, trimmed and NFC
    offsets, and RoBERTa's type ids of a pair without special tokens."""
    hf = pytest.importorskip("bbpe.hf", reason="bbpe.hf needs transformers (the [hf] extra)")
    tok = _loaded(path)
    wrapper = hf.BbpeTokenizer(tok)
    for text in ["Hello  world e\u0301 床前", " leading", "x\u212b y"]:
        ours = tok([text], return_offsets_mapping=True)
        theirs = wrapper(text, return_offsets_mapping=True)
        assert theirs["input_ids"] == ours["input_ids"][0]
        assert [tuple(span) for span in theirs["offset_mapping"]] == ours["offset_mapping"][0]
    pair = wrapper("a b", "c", add_special_tokens=False, return_token_type_ids=True)
    assert pair["token_type_ids"] == tok(["a b"], ["c"], add_special_tokens=False,
                                         return_token_type_ids=True)["token_type_ids"][0]
