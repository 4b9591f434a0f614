"""bbpe.hf's calls give what the bbpe tokenizer's own ``tok(...)`` gives, under every
transformers version the ``[hf]`` extra admits (issue 31); test_hf.py's test under the
oldest transformers runs this file too."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from conftest import TANG300

transformers = pytest.importorskip("transformers", reason="bbpe.hf needs transformers: pip install 'bbpe[hf]'")

import bbpe
from bbpe.common.words import word_texts
from bbpe.hf import BbpeTokenizer

TEXTS = ["床前明月光，疑是地上霜。", "举头望明月", "mixed English 和中文"]
PAIRS = ["低头思故乡", "床前明月光，疑是地上霜。", "举头"]
TYPED = ("<S> $A:0 </S>:0", "<S> $A:0 </S>:0 $B:1 </S>:1")  # BERT's form: the second text of type 1
WORDS = [["Hello", "world"], ["床前", "明月光"], ["mixed", "English", "和中文"], ["a", "", "b", "。", "c"]]


@pytest.fixture(scope="module")
def tok():
    return bbpe.Tokenizer.train(TANG300, 2000)


def _templated(tok, single="<S> $A </S>", pair=None):
    own = copy.deepcopy(tok)
    own.set_template(single, pair)
    return own


def _same(got, want):
    """The wrapper's encoding ``got`` has the columns of bbpe's ``want``, equal."""
    assert sorted(got) == sorted(want)
    for name, value in want.items():
        if isinstance(value, np.ndarray):
            assert isinstance(got[name], np.ndarray) and got[name].shape == value.shape, name
            assert (got[name] == value).all(), name
        else:
            assert got[name] == value, name


@pytest.mark.parametrize("tensors", [None, "np"])
def test_token_type_ids_are_as_long_as_the_ids(tok, tensors):
    # transformers 4.40 typed the texts without the template's ids: (2, 6) beside (2, 8)
    own = _templated(tok)
    hf = BbpeTokenizer(own)
    for kwargs in ({"padding": True}, {"padding": "max_length", "max_length": 20},
                   {"padding": True, "truncation": True, "max_length": 4}):
        got = hf(TEXTS, return_token_type_ids=True, return_tensors=tensors, **kwargs)
        _same(got, own(TEXTS, return_token_type_ids=True, return_tensors=tensors, **kwargs))
        assert np.shape(got["token_type_ids"]) == np.shape(got["input_ids"])
    assert hf(TEXTS[1], return_token_type_ids=True)["token_type_ids"] == [0] * (len(tok.encode(TEXTS[1])) + 2)


def test_a_calls_padding_side(tok):
    # transformers 4.40 has no padding_side argument: it logged it and padded on the right
    own = _templated(tok)
    hf = BbpeTokenizer(own)
    for kwargs in ({"padding": True}, {"padding": "max_length", "max_length": 20, "return_special_tokens_mask": True},
                   {"padding": True, "return_tensors": "np", "return_token_type_ids": True}):
        got = hf(TEXTS, padding_side="left", **kwargs)
        _same(got, own(TEXTS, padding_side="left", **kwargs))
        assert got["input_ids"][1][0] == own.pad_id
    assert hf.padding_side == "right"  # the call's side is the call's only
    _same(hf(TEXTS, padding=True), own(TEXTS, padding=True))
    # encode and pad take it too
    want = own(TEXTS[1], padding="max_length", max_length=9, padding_side="left")["input_ids"]
    assert hf.encode(TEXTS[1], padding="max_length", max_length=9, padding_side="left") == want
    padded = hf.pad([hf(t) for t in TEXTS], padding_side="left")
    assert padded["input_ids"] == own(TEXTS, padding=True, padding_side="left")["input_ids"]
    # and "right" on a tokenizer that pads on the left
    own.padding_side = "left"
    lefty = BbpeTokenizer(own)
    _same(lefty(TEXTS, padding=True, padding_side="right"), own(TEXTS, padding=True, padding_side="right"))
    assert lefty(TEXTS, padding=True)["input_ids"][1][0] == own.pad_id
    with pytest.raises(ValueError, match="padding_side must be 'left' or 'right', got 'middle'"):
        hf(TEXTS, padding=True, padding_side="middle")


def test_a_calls_padding_side_is_not_seen_by_other_threads(tok):
    own = _templated(tok)
    hf = BbpeTokenizer(own)
    left = own(TEXTS, padding=True, padding_side="left")["input_ids"]
    right = own(TEXTS, padding=True)["input_ids"]

    def call(i):
        return hf(TEXTS, padding=True, **({"padding_side": "left"} if i % 2 else {}))["input_ids"]

    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(call, range(40))) == [left if i % 2 else right for i in range(40)]


def test_a_max_length_shorter_than_the_template(tok):
    # the rows came out longer than max_length (transformers 4.40 did not truncate at all)
    own = _templated(tok)
    hf = BbpeTokenizer(own)
    with pytest.raises(ValueError) as raised:
        own(TEXTS, truncation=True, max_length=1)
    message = str(raised.value)
    assert message == "max_length=1 leaves no room for the template's 2 ids"
    for text, kwargs in ((TEXTS[0], {}), (TEXTS, {}), ("", {}), (TEXTS, {"padding": "max_length"}),
                         (TEXTS, {"return_tensors": "np", "padding": True})):
        with pytest.raises(ValueError, match=re.escape(message)):
            hf(text, truncation=True, max_length=1, **kwargs)
    with pytest.raises(ValueError, match=re.escape(message)):
        hf.encode(TEXTS[0], truncation=True, max_length=1)
    # a pair adds 3 ids ("<S> $A $B:1 </S>:1" does not: it adds 2)
    typed = _templated(tok, *TYPED)
    with pytest.raises(ValueError, match=re.escape("max_length=2 leaves no room for the template's 3 ids")):
        BbpeTokenizer(typed)(TEXTS[0], PAIRS[0], truncation=True, max_length=2)
    # room for the template alone: rows of the template, as bbpe gives them
    for kwargs in ({}, {"padding": "max_length"}):
        _same(hf(TEXTS, truncation=True, max_length=2, **kwargs), own(TEXTS, truncation=True, max_length=2, **kwargs))
    assert hf(TEXTS[0], truncation=True, max_length=2)["input_ids"] == [own.bos_id, own.eos_id]


PAIR_CALLS = [{}, {"padding": True}, {"padding": True, "return_special_tokens_mask": True},
              {"return_token_type_ids": False}, {"add_special_tokens": False, "return_token_type_ids": True},
              {"add_special_tokens": False, "padding": True, "return_special_tokens_mask": True},
              {"truncation": True, "max_length": 8}, {"truncation": "only_first", "max_length": 20},
              {"truncation": "only_second", "max_length": 23, "padding": "max_length"},
              {"padding": True, "return_tensors": "np", "return_special_tokens_mask": True}]


def test_pairs_follow_the_template(tok):
    # transformers put a pair between the template's prefix and suffix, typed 0 then 1
    own = _templated(tok, *TYPED)
    hf = BbpeTokenizer(own)
    for kwargs in PAIR_CALLS:
        want = own(TEXTS, PAIRS, **kwargs)
        _same(hf(TEXTS, PAIRS, **kwargs), want)
        _same(hf(text=TEXTS, text_pair=PAIRS, **kwargs), want)
        if "return_tensors" not in kwargs:
            _same(hf(TEXTS[1], PAIRS[1], **kwargs), own(TEXTS[1], PAIRS[1], **kwargs))
    _same(hf(list(zip(TEXTS, PAIRS))), own(TEXTS, PAIRS))  # transformers' own form of a batch of pairs
    a, b = own.encode(TEXTS[1]), own.encode(PAIRS[2])
    one = hf(TEXTS[1], PAIRS[2], return_special_tokens_mask=True)
    assert one["input_ids"] == [own.bos_id, *a, own.eos_id, *b, own.eos_id]
    assert one["token_type_ids"] == [0] * (len(a) + 2) + [1] * (len(b) + 1)
    assert one["special_tokens_mask"] == [1, *[0] * len(a), 1, *[0] * len(b), 1]
    assert hf.decode(one["input_ids"], skip_special_tokens=True) == TEXTS[1] + PAIRS[2]
    # the template methods transformers' other callers use
    assert (hf.num_special_tokens_to_add(), hf.num_special_tokens_to_add(pair=True)) == (2, 3)
    assert hf.build_inputs_with_special_tokens([5, 6], [7]) == [own.bos_id, 5, 6, own.eos_id, 7, own.eos_id]
    assert hf.create_token_type_ids_from_sequences([5, 6], [7]) == [0, 0, 0, 0, 1, 1]
    assert hf.create_token_type_ids_from_sequences([5, 6]) == [0, 0, 0, 0]
    assert hf.get_special_tokens_mask([5, 6], [7]) == [1, 0, 0, 1, 0, 1]
    assert hf.max_len_sentences_pair == hf.model_max_length - 3


def test_a_template_of_other_type_ids(tok):
    own = _templated(tok, "<S>:2 $A:1 </S>:3", "$A:0 <S>:1 $B:1")
    hf = BbpeTokenizer(own)
    for kwargs in ({"return_token_type_ids": True, "padding": True}, {"padding": True, "return_special_tokens_mask": True}):
        _same(hf(TEXTS, **kwargs), own(TEXTS, **kwargs))
        _same(hf(TEXTS, PAIRS, **kwargs), own(TEXTS, PAIRS, **kwargs))
    assert hf.build_inputs_with_special_tokens([5, 6], [7]) == [5, 6, own.bos_id, 7]
    assert hf.create_token_type_ids_from_sequences([5, 6]) == [2, 1, 1, 3]
    assert (hf.num_special_tokens_to_add(), hf.num_special_tokens_to_add(pair=True)) == (2, 1)


@pytest.mark.parametrize("side", ["right", "left"])
def test_pairs_are_truncated_as_bbpe_truncates_them(tok, side):
    # longest_first: HF tokenizers gives an odd id to the second text, transformers to the first
    own = _templated(tok, *TYPED)
    own.truncation_side = side
    hf = BbpeTokenizer(own)
    text = TEXTS[0]
    ids = own.encode(text)
    assert len(ids) > 5
    cut = hf(text, text, truncation=True, max_length=3 + 5)["input_ids"]
    first, second = (ids[:2], ids[:3]) if side == "right" else (ids[-2:], ids[-3:])
    assert cut == [own.bos_id, *first, own.eos_id, *second, own.eos_id]
    # from the shortest max_length that leaves each text of the batch an id to the longest
    for strategy, shortest in (("longest_first", 5), ("only_first", 16), ("only_second", 21)):
        for max_length in range(shortest, 26):
            kwargs = {"truncation": strategy, "max_length": max_length}
            _same(hf(TEXTS, PAIRS, padding=True, **kwargs), own(TEXTS, PAIRS, padding=True, **kwargs))
    # too little left for the text only_first (only_second) cuts: ValueError, as bbpe says it
    for strategy in ("only_first", "only_second"):
        with pytest.raises(ValueError) as raised:
            own(text, text, truncation=strategy, max_length=len(ids) + 3)
        with pytest.raises(ValueError, match=re.escape(str(raised.value))):
            hf(text, text, truncation=strategy, max_length=len(ids) + 3)
    with pytest.raises(ValueError, match="truncation='only_second' needs text_pair"):
        hf(text, truncation="only_second", max_length=4)


def test_pre_split_words(tok):
    # transformers tokenized each word alone and joined them: ["Hello", "world"] read "Helloworld"
    own = _templated(tok)
    hf = BbpeTokenizer(own)
    for words, text in zip(WORDS, ["Hello world", "床前明月光", "mixed English和中文", "a  b。c"]):
        ids = [i for piece in word_texts(words) for i in tok.encode(piece)]
        assert hf(words, is_split_into_words=True, add_special_tokens=False)["input_ids"] == ids
        assert hf.decode(ids) == text
        _same(hf(words, is_split_into_words=True), own(words, is_split_into_words=True))
        assert hf.encode(words, is_split_into_words=True) == [own.bos_id, *ids, own.eos_id]
    # batches, pairs, batches of pairs, and transformers' own form of the latter
    for kwargs in ({"padding": True}, {"padding": True, "return_tensors": "np", "return_special_tokens_mask": True},
                   {"add_special_tokens": False}):
        _same(hf(WORDS, is_split_into_words=True, **kwargs), own(WORDS, is_split_into_words=True, **kwargs))
        want = own(WORDS[:2], WORDS[2:], is_split_into_words=True, **kwargs)
        _same(hf(WORDS[:2], WORDS[2:], is_split_into_words=True, **kwargs), want)
        _same(hf(list(zip(WORDS[:2], WORDS[2:])), is_split_into_words=True, **kwargs), want)
    _same(hf(WORDS[0], WORDS[1], is_split_into_words=True), own(WORDS[0], WORDS[1], is_split_into_words=True))
    # a tuple of words is one text (transformers 5.x read a tuple of two as a pair)
    assert hf([tuple(WORDS[0])], is_split_into_words=True)["input_ids"] == own([WORDS[0]], is_split_into_words=True)[
        "input_ids"]
    with pytest.raises(NotImplementedError, match="no offsets for pre-split words"):
        hf(WORDS[0], is_split_into_words=True, return_offsets_mapping=True)


def test_pre_split_words_as_transformers_common_tests_check_them(tok):
    """What ``TokenizerTesterMixin.test_pretokenized_inputs`` checks, for bbpe's rule (no
    space before the first word): the words of a text no token of which spans a space
    encode as the text, by every entry point, alone, batched and paired, with and without
    special tokens."""
    hf = BbpeTokenizer(_templated(tok))
    sequence = "This is a test"
    words = sequence.split()
    assert [i for piece in word_texts(words) for i in tok.encode(piece)] == tok.encode(sequence)  # no token spans a space
    batch = [sequence, sequence, sequence + " " + sequence]
    batch_words = [s.split() for s in batch]
    pair_batch = [(sequence, sequence), (sequence + " " + sequence, sequence)]
    pair_batch_words = [tuple(s.split() for s in pair) for pair in pair_batch]
    calls = [hf.__call__] + [getattr(hf, name) for name in ("encode_plus", "batch_encode_plus") if hasattr(hf, name)]
    for special in (False, True):
        assert hf.encode(words, is_split_into_words=True, add_special_tokens=special) == hf.encode(
            sequence, add_special_tokens=special)
        assert hf.encode(words, words, is_split_into_words=True, add_special_tokens=special) == hf.encode(
            sequence, sequence, add_special_tokens=special)
        for call in calls:  # __call__ and transformers 4.x's encode_plus, batch_encode_plus
            if call.__name__ != "batch_encode_plus":
                _same(call(words, is_split_into_words=True, add_special_tokens=special),
                      call(sequence, add_special_tokens=special))
                _same(call(words, words, is_split_into_words=True, add_special_tokens=special),
                      call(sequence, sequence, add_special_tokens=special))
            if call.__name__ != "encode_plus":
                _same(call(batch_words, is_split_into_words=True, add_special_tokens=special),
                      call(batch, add_special_tokens=special))
                _same(call(pair_batch_words, is_split_into_words=True, add_special_tokens=special),
                      call(pair_batch, add_special_tokens=special))


def test_auto_tokenizer_loads_a_saved_directory(tok, tmp_path):
    # transformers could not find BbpeTokenizer (5.x then asked for sentencepiece)
    own = _templated(tok)
    own.add_special_tokens(["<|e|>"])
    own.padding_side = own.truncation_side = "left"
    hf = BbpeTokenizer(own)
    hf.add_special_tokens({"additional_special_tokens": ["<extra>"]})
    hf.save_pretrained(tmp_path)
    assert json.loads((tmp_path / "tokenizer_config.json").read_text())["tokenizer_class"] == "BbpeTokenizer"
    again = transformers.AutoTokenizer.from_pretrained(tmp_path)
    assert type(again) is BbpeTokenizer
    texts = [*TEXTS, "a<|e|>b<extra>c"]
    for kwargs in ({}, {"padding": True, "return_special_tokens_mask": True}, {"truncation": True, "max_length": 5},
                   {"padding": True, "return_tensors": "np"}):
        _same(again(texts, **kwargs), hf(texts, **kwargs))
    assert again.decode(again(texts[-1])["input_ids"], skip_special_tokens=True) == "abc"
    assert again.get_vocab() == hf.get_vocab() and len(again) == len(hf)
    assert sorted(again.all_special_tokens) == sorted(hf.all_special_tokens)
    assert (again.padding_side, again.truncation_side, again.pad_token_id) == ("left", "left", own._padding_id())
    # keyword arguments reach the class, as for transformers' own classes
    assert transformers.AutoTokenizer.from_pretrained(tmp_path, model_max_length=42).model_max_length == 42
    # a model's config saved in the same directory does not hide the tokenizer's class
    transformers.GPT2Config().save_pretrained(tmp_path)
    assert type(transformers.AutoTokenizer.from_pretrained(tmp_path)) is BbpeTokenizer


def test_auto_tokenizer_after_import_bbpe_hf_in_a_new_process(tok, tmp_path):
    """Importing bbpe.hf is all AutoTokenizer needs (the registration is no side effect of
    these tests)."""
    BbpeTokenizer(_templated(tok)).save_pretrained(tmp_path)
    code = ("import sys, bbpe.hf, transformers\n"
            "t = transformers.AutoTokenizer.from_pretrained(sys.argv[1])\n"
            "print(type(t).__name__, t('举头')['input_ids'])")
    # in tmp_path: python -c puts its working directory first on sys.path, where no other bbpe may wait
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=False,
                         cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    ids = [tok.bos_id, *tok.encode("举头"), tok.eos_id]
    assert out.stdout.split("\n")[-2] == f"BbpeTokenizer {ids}"
