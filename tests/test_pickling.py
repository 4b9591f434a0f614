"""Pickling, copying and comparing tokenizers (and their model and stream decoder): what
multiprocessing pools, DataLoader workers and ``datasets.map(num_proc=...)`` need."""

from __future__ import annotations

import copy
import multiprocessing
import pickle

import numpy as np
import pytest
from conftest import TANG300

import bbpe
from bbpe.codec import Model


@pytest.fixture(scope="module")
def tok():
    return bbpe.Tokenizer.train(TANG300, 2000)


TEXTS = ["床前明月光，疑是地上霜。", "mixed 中文 and English <S> text", "𡵓ゃé"]


def test_a_pickled_tokenizer_is_equal_and_encodes_the_same(tok):
    again = pickle.loads(pickle.dumps(tok))
    assert again == tok and again is not tok
    assert again.to_bytes() == tok.to_bytes()  # keys, record order and stored encodings
    assert [again.encode(t) for t in TEXTS] == [tok.encode(t) for t in TEXTS]
    assert copy.deepcopy(tok) == tok and copy.copy(tok) == tok


def test_the_pickle_holds_the_vocabulary_not_the_trie(tok):
    vocab_only = bbpe.Tokenizer(tok.keys)
    size = len(pickle.dumps(vocab_only))
    assert size < 2 * sum(map(len, tok.keys)) + 40 * len(tok), size


def test_equality_sees_every_difference(tok):
    assert tok != bbpe.Tokenizer(tok.keys)  # no stored encodings, records by id
    assert bbpe.Tokenizer(tok.keys) == bbpe.Tokenizer(tok.keys)
    assert bbpe.Tokenizer(tok.keys, bug_compat=True) != bbpe.Tokenizer(tok.keys)
    assert bbpe.Tokenizer(tok.keys[:-1]) != bbpe.Tokenizer(tok.keys)
    assert tok != "a tokenizer"
    with pytest.raises(TypeError):
        hash(tok)


def test_model_and_stream_decoder_pickle(tok):
    model = pickle.loads(pickle.dumps(tok.model))
    assert isinstance(model, Model) and model == tok.model
    assert model.encode("床前明月光".encode()) == tok.model.encode("床前明月光".encode())
    decoder = tok.decoder()
    ids = list("九".encode())  # the byte ids (Q1: id b is the byte b), one per byte
    assert decoder.feed(ids[0]) == "" and decoder.pending
    resumed = pickle.loads(pickle.dumps(decoder))
    assert resumed.pending == decoder.pending and resumed.errors == "replace"
    assert resumed.feed(ids[1:]) + resumed.flush() == "九"


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_a_tokenizer_goes_to_pool_workers(tok, method):
    if method not in multiprocessing.get_all_start_methods():
        pytest.skip(f"no {method} start method here")
    with multiprocessing.get_context(method).Pool(2) as pool:  # the bound methods carry the tokenizer
        encoded = pool.map(tok.encode, TEXTS)
        decoded = pool.map(tok.decode, encoded)
    assert encoded == [tok.encode(t) for t in TEXTS] and decoded == TEXTS


def test_numpy_ids_survive_pickling_of_encodings(tok):
    arrays = [tok.encode(t, out="numpy") for t in TEXTS]
    assert [a.tolist() for a in pickle.loads(pickle.dumps(arrays))] == [tok.encode(t) for t in TEXTS]
    assert all(isinstance(a, np.ndarray) for a in arrays)
