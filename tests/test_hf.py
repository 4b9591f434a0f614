"""bbpe.hf: a transformers tokenizer over a bbpe one (the optional ``[hf]`` extra)."""

from __future__ import annotations

import pickle
import subprocess
import sys

import pytest
from conftest import TANG300

transformers = pytest.importorskip("transformers", reason="bbpe.hf needs transformers: pip install 'bbpe[hf]'")

import bbpe
from bbpe.hf import BbpeTokenizer

TEXTS = ["床前明月光，疑是地上霜。", "举头望明月", "mixed English 和中文"]


@pytest.fixture(scope="module")
def tok():
    return bbpe.Tokenizer.train(TANG300, 2000)


@pytest.fixture
def hf(tok):
    return BbpeTokenizer(tok)


def test_calls_equal_bbpe(tok, hf):
    assert hf(TEXTS)["input_ids"] == [tok.encode(t) for t in TEXTS]
    assert hf.tokenize(TEXTS[0]) == tok.convert_ids_to_tokens(tok.encode(TEXTS[0]))
    assert hf.batch_decode(hf(TEXTS)["input_ids"]) == TEXTS
    assert (hf.pad_token, hf.bos_token, hf.eos_token) == ("<P>", "<S>", "</S>")
    assert (hf.pad_token_id, hf.bos_token_id, hf.eos_token_id) == (tok.pad_id, tok.bos_id, tok.eos_id)
    assert len(hf) == len(tok) and hf.get_vocab()["，"] == tok.token_to_id("，")


def test_pad_and_a_data_collator(tok, hf):
    features = [hf(t) for t in TEXTS]
    padded = hf.pad(features, return_tensors="np")
    width = max(len(tok.encode(t)) for t in TEXTS)
    assert padded["input_ids"].shape == (len(TEXTS), width)
    collator = transformers.DataCollatorWithPadding(hf, return_tensors="np")
    batch = collator(features)
    assert (batch["input_ids"] == padded["input_ids"]).all()
    for row, mask, text in zip(batch["input_ids"], batch["attention_mask"], TEXTS):
        assert row[mask == 1].tolist() == tok.encode(text)
        assert (row[mask == 0] == tok.pad_id).all()


def test_save_pretrained_and_from_pretrained(tok, hf, tmp_path):
    hf.add_special_tokens({"additional_special_tokens": ["<|eot|>"]})
    files = hf.save_pretrained(tmp_path)
    assert any(str(f).endswith("bbpe.json") for f in files)
    again = BbpeTokenizer.from_pretrained(tmp_path)
    text = "天<|eot|>地"
    assert again(text)["input_ids"] == hf(text)["input_ids"]
    assert hf(text)["input_ids"][1] == hf.convert_tokens_to_ids("<|eot|>")
    assert again.bbpe.keys == tok.keys and again.decode(again(text)["input_ids"]) == text


def test_it_pickles(hf):
    again = pickle.loads(pickle.dumps(hf))
    assert again(TEXTS)["input_ids"] == hf(TEXTS)["input_ids"]


def test_bad_arguments():
    with pytest.raises(TypeError, match="needs a bbpe tokenizer"):
        BbpeTokenizer()
    with pytest.raises(TypeError, match="must be a bbpe tokenizer, got str"):
        BbpeTokenizer("model.bin")


def test_import_bbpe_does_not_import_transformers():
    code = "import sys, bbpe; bbpe.Tokenizer; print('transformers' in sys.modules, 'bbpe.hf' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=TANG300.parent)
    assert out.stdout.split() == ["False", "False"]


def test_special_tokens_added_on_the_bbpe_tokenizer_stay_whole(tok):
    own = bbpe.Tokenizer(tok.keys)
    own.add_special_tokens(["<|endoftext|>"])
    hf = BbpeTokenizer(own)
    text = "床前<|endoftext|>明月"
    assert hf(text)["input_ids"] == own.encode(text)
    assert hf.convert_tokens_to_ids("<|endoftext|>") == own.token_to_id("<|endoftext|>")
    assert hf.decode(hf(text)["input_ids"]) == text
