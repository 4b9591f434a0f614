"""The call shapes of HF ``transformers``/``tokenizers`` and tiktoken on the shared layer:
pairs and their templates, token types, special-tokens masks, lengths, overflowing windows
with a stride, pre-split words, torch tensors, ``batch_decode``, ``skip_special_tokens``,
``encode_ordinary``, ``allowed_special``/``disallowed_special`` everywhere.

The truncation of pairs and the overflowing windows are checked against HF ``tokenizers``
itself (the oracle, installed with the ``[hf]`` extra): a word-level model whose word
``t<k>`` is id ``k`` gives any id sequence, so its rows can be compared with bbpe's rows
for the same ids.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bbpe
from bbpe.common.rows import Encoded, build_rows, make_cut, pair_lengths
from bbpe.common.template import parse_template
from bbpe.common.words import word_texts

TEXTS = ["床前明月光", "疑是地上霜。举头望明月", "a", ""]
PAIRS = ["低头思故乡", "天地", "bc<S>", "x"]


@pytest.fixture(scope="module")
def base():
    return bbpe.Tokenizer.train(vocab_size=800)


@pytest.fixture
def tok(base):
    tok = bbpe.Tokenizer(base.keys)
    tok.set_template("<S> $A </S>", "<S> $A:0 </S>:0 $B:1 </S>:1")
    return tok


def _framed(tok, a, b=None):
    return tok._template.frame(tok.encode(a), None if b is None else tok.encode(b))


# ----------------------------------------------------------------------------- pairs, types, masks


def test_pairs_follow_the_pair_template_with_types_and_masks(tok):
    out = tok(TEXTS, PAIRS, return_special_tokens_mask=True, return_length=True)
    for i, (a, b) in enumerate(zip(TEXTS, PAIRS)):
        ids, types, special = _framed(tok, a, b)
        assert out["input_ids"][i] == ids
        assert out["token_type_ids"][i] == types and set(types[: len(tok.encode(a)) + 2]) == {0}
        assert out["special_tokens_mask"][i] == special and sum(special) == 3
        assert out["length"][i] == len(ids)
    assert tok(TEXTS[0], text_pair=PAIRS[0])["input_ids"] == out["input_ids"][0]  # one pair: flat lists


def test_the_derived_pair_template_and_none(tok):
    tok.set_template("<S> $A </S>")  # the pair: "<S> $A $B:1 </S>:1"
    ids, types, special = _framed(tok, "天", "地")
    assert ids == [tok.bos_id, *tok.encode("天"), *tok.encode("地"), tok.eos_id]
    assert types == [0] * (1 + len(tok.encode("天"))) + [1] * (len(tok.encode("地")) + 1)
    assert special == [1] + [0] * (len(ids) - 2) + [1]
    assert tok("天", "地")["input_ids"] == ids
    tok.set_template(None)
    assert tok("天", "地")["input_ids"] == tok.encode("天") + tok.encode("地")
    assert tok("天")["input_ids"] == tok.encode("天")
    with pytest.raises(ValueError, match=r"\$A and then \$B"):
        tok.set_template("$A", "$B $A")
    with pytest.raises(ValueError, match="no \\$B"):
        tok.set_template("$A $B")


def test_single_texts_get_types_masks_and_lengths_padded(tok):
    out = tok(TEXTS, padding=True, return_token_type_ids=True, return_special_tokens_mask=True,
              return_length=True, return_tensors="np")
    width = max(len(tok.encode(t)) for t in TEXTS) + 2
    assert out["input_ids"].shape == out["special_tokens_mask"].shape == out["token_type_ids"].shape == (4, width)
    assert out["length"].tolist() == [len(tok.encode(t)) + 2 for t in TEXTS]
    # padding is special (1), as transformers pads the mask; the mask's 0s are the text's ids
    assert (out["special_tokens_mask"] == 1 - out["attention_mask"] + np.isin(
        out["input_ids"], [tok.bos_id, tok.eos_id]) * out["attention_mask"]).all()
    assert not out["token_type_ids"].any()


def test_the_fast_and_general_paths_agree(tok):
    """The compiled framing (single texts) and the rows path (asked for a mask) give the
    same ids, masks and offsets, padded on either side and truncated at either end."""
    for side in ("left", "right"):
        tok.truncation_side = side
        for kwargs in ({}, {"padding": True}, {"padding": "max_length", "max_length": 6, "truncation": True},
                       {"max_length": 4}, {"padding": True, "pad_to_multiple_of": 4}):
            fast = tok(TEXTS, padding_side=side, return_offsets_mapping=True, **kwargs)
            general = tok(TEXTS, padding_side=side, return_offsets_mapping=True, return_length=True, **kwargs)
            for key in ("input_ids", "attention_mask", "offset_mapping"):
                assert fast[key] == general[key], (side, kwargs, key)


@given(n1=st.integers(0, 30), n2=st.integers(0, 30), budget=st.integers(0, 40))
def test_pair_lengths_are_hf_tokenizers(n1, n2, budget):
    hf = _word_level()
    hf.enable_truncation(budget + 3, strategy="longest_first")
    enc = hf.encode(_words(range(1, n1 + 1)), _words(range(1, n2 + 1)))
    assert pair_lengths(n1, n2, budget) == (enc.type_ids.count(0) - 2, enc.type_ids.count(1) - 1)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(n1=st.integers(0, 25), n2=st.integers(0, 25) | st.none(), max_length=st.integers(4, 30),
       stride=st.integers(0, 6), strategy=st.sampled_from(["longest_first", "only_first", "only_second"]),
       overflow=st.booleans(), left=st.booleans())
def test_truncation_and_overflow_are_hf_tokenizers(n1, n2, max_length, stride, strategy, overflow, left):
    """bbpe's rows for ids 1..n1 (and 40..40+n2) against HF tokenizers' encoding of the
    same ids: ids, type ids, special-tokens masks, and every overflowing window."""
    if n2 is None and strategy == "only_second":
        return
    pair = n2 is not None
    if not overflow:
        stride = 0  # HF asserts on the stride even when the windows are not asked for
    first = list(range(1, n1 + 1))
    second = None if n2 is None else list(range(40, 40 + n2))
    template = parse_template("t90 $A t91", "t90 $A:0 t91:0 $B:1 t91:1", {f"t{i}": i for i in range(100)}.get)
    if overflow and 0 <= max_length - template.added(pair) <= stride:
        # bbpe refuses such a stride on every input; HF only where its windows are cut
        with pytest.raises(ValueError, match=f"stride={stride} must be less"):
            _rows(first, second, template, strategy, max_length, left, overflow, stride)
        return
    hf = _word_level()
    try:
        hf.enable_truncation(max_length, stride=stride, strategy=strategy, direction="left" if left else "right")
        enc = hf.encode(_words(first), None if second is None else _words(second))
    except BaseException as err:
        if "PanicException" not in type(err).__name__ and "stride" not in str(err) and "Truncation" not in str(err):
            raise
        with pytest.raises(ValueError):
            _rows(first, second, template, strategy, max_length, left, overflow, stride)
        return
    want = [enc] + (list(enc.overflowing) if overflow else [])
    if overflow and pair and strategy == "longest_first":  # bbpe refuses: which text would overflow?
        with pytest.raises(ValueError, match="needs truncation='only_first' or 'only_second'"):
            _rows(first, second, template, strategy, max_length, left, overflow, stride)
        return
    rows = _rows(first, second, template, strategy, max_length, left, overflow, stride)
    assert [row.ids for row in rows] == [e.ids for e in want]
    assert [row.types for row in rows] == [e.type_ids for e in want]
    assert [row.special for row in rows] == [e.special_tokens_mask for e in want]


def _rows(first, second, template, strategy, max_length, left, overflow, stride):
    cut = make_cut(strategy, max_length, template.added(second is not None), left, overflow, stride)
    return build_rows([Encoded(first)], None if second is None else [Encoded(second)], template, cut)


def _word_level():
    tokenizers = pytest.importorskip("tokenizers", reason="HF tokenizers is the oracle (the [hf] extra)")
    from tokenizers import models, pre_tokenizers, processors

    hf = tokenizers.Tokenizer(models.WordLevel({f"t{i}": i for i in range(100)}, unk_token="t0"))
    hf.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    hf.post_processor = processors.TemplateProcessing(single="t90 $A t91", pair="t90 $A:0 t91:0 $B:1 t91:1",
                                                      special_tokens=[("t90", 90), ("t91", 91)])
    return hf


def _words(ids):
    return " ".join(f"t{i}" for i in ids)


def test_overflowing_windows_with_offsets_cover_the_text(tok):
    text = "床前明月光，疑是地上霜。举头望明月，低头思故乡。"
    out = tok([text, "天地"], max_length=8, truncation=True, stride=2, return_overflowing_tokens=True,
              return_offsets_mapping=True, padding=True, return_tensors="np")
    ids = tok.encode(text)
    windows = [row[mask == 1][1:-1].tolist() for row, mask in zip(out["input_ids"], out["attention_mask"])]
    mapping = out["overflow_to_sample_mapping"].tolist()
    assert mapping == [0] * (len(windows) - 1) + [1]
    assert windows[0] == ids[:6] and windows[1] == ids[4:10]  # 6 ids a window, 2 shared with the one before
    assert [i for w in windows[:-1] for i in w[: len(w) - 2]] + windows[-2][-2:] == ids
    for row, spans in zip(out["input_ids"][:-1], out["offset_mapping"][:-1]):
        covered = "".join(text[a:b] for a, b in spans.tolist() if b > a)
        assert covered and covered in "".join(text[a:b] for a, b in tok.encode_with_offsets(text)[1])
    with pytest.raises(ValueError, match="stride=6 must be less"):
        tok(text, max_length=8, truncation=True, stride=6, return_overflowing_tokens=True)
    with pytest.raises(ValueError, match="needs truncation"):
        tok(text, return_overflowing_tokens=True)


def test_max_length_shorter_than_the_template_is_refused(tok):
    for kwargs in ({}, {"return_special_tokens_mask": True}):
        with pytest.raises(ValueError, match="leaves no room for the template's 2 ids"):
            tok(TEXTS, max_length=1, truncation=True, **kwargs)
    with pytest.raises(ValueError, match="leaves no room for the template's 3 ids"):
        tok(TEXTS, PAIRS, max_length=2, truncation=True)
    with pytest.raises(ValueError, match="only_second.*needs text_pair"):
        tok(TEXTS, max_length=5, truncation="only_second")
    with pytest.raises(ValueError, match="text_pair must match"):
        tok(TEXTS, PAIRS[:2])


# ----------------------------------------------------------------------------- words


def test_pre_split_words_are_encoded_one_by_one(tok):
    words = ["Hello", "world", "床前", "明月光", "ok", "。", "x"]
    out = tok(words, is_split_into_words=True, return_offsets_mapping=True)
    pieces = word_texts(words)
    assert pieces == ["Hello", " world", "床前", "明月光", "ok", "。", "x"]
    assert out["input_ids"] == [tok.bos_id, *[i for p in pieces for i in tok.encode(p)], tok.eos_id]
    assert tok.decode(out["input_ids"], skip_special_tokens=True) == "Hello world床前明月光ok。x"
    word_ids = out.word_ids()
    assert word_ids[0] is None and word_ids[-1] is None
    assert word_ids[1:-1] == [w for w, p in enumerate(pieces) for _ in tok.encode(p)]
    for w, (a, b) in zip(word_ids, out["offset_mapping"]):  # offsets are in each word's own chars
        assert (w is None and (a, b) == (0, 0)) or 0 <= a <= b <= len(words[w])
    batch = tok([words, ["a", "b"]], is_split_into_words=True, padding=True)
    assert batch["input_ids"][0] == out["input_ids"] and batch.word_ids(1)[1:3] == [0, 1]
    assert tok.decode(tok(["a", "b"], is_split_into_words=True, add_special_tokens=False)["input_ids"]) == "a b"
    with pytest.raises(TypeError, match="list of words"):
        tok("Hello world", is_split_into_words=True)
    with pytest.raises(ValueError, match="is_split_into_words"):
        tok("Hello world").word_ids()


def test_word_pairs(tok):
    out = tok(["天", "地"], ["a", "b"], is_split_into_words=True)
    assert out["input_ids"] == _framed(tok, "天地", "a b")[0]
    assert out.word_ids() == [None, 0, 1, None, 0, 1, None][: len(out["input_ids"])] or len(out.word_ids()) == len(
        out["input_ids"])


# ----------------------------------------------------------------------------- tensors, decoding


def test_torch_tensors(tok):
    torch = pytest.importorskip("torch", reason="return_tensors='pt' needs torch (the [torch] extra)")
    for kwargs in ({}, {"return_special_tokens_mask": True}):
        pt = tok(TEXTS, PAIRS, padding=True, return_tensors="pt", **kwargs)
        np_ = tok(TEXTS, PAIRS, padding=True, return_tensors="np", **kwargs)
        assert set(pt) == set(np_)
        for key in pt:
            assert isinstance(pt[key], torch.Tensor) and pt[key].dtype == torch.int64
            assert (pt[key].numpy() == np_[key]).all()
    assert tok.batch_decode(pt["input_ids"]) == [tok.decode(row) for row in np_["input_ids"].tolist()]
    assert tok.decode(pt["input_ids"][0], skip_special_tokens=True) == TEXTS[0] + PAIRS[0]


def test_ragged_rows_are_refused_as_tensors(tok):
    with pytest.raises(ValueError, match="pass padding=True"):
        tok(TEXTS, PAIRS, return_tensors="np")


def test_batch_decode_and_skip_special_tokens(tok):
    tok.add_special_tokens(["<|eot|>"])
    rows = tok(["天<|eot|>地", "a"], padding=True, return_tensors="np")["input_ids"]
    assert tok.batch_decode(rows) == [tok.decode(r) for r in rows.tolist()]
    assert tok.batch_decode(rows, skip_special_tokens=True) == ["天地", "a"]
    assert tok.decode(rows[1], skip_special_tokens=True) == "a"  # <P> padding is special too
    with pytest.raises(TypeError, match="batch_decode takes a batch"):
        tok.batch_decode(5)
    with pytest.raises(TypeError, match="use batch_decode"):
        tok.decode(rows.tolist())


def test_tiktoken_names(tok):
    assert tok.n_vocab == len(tok) == tok.get_vocab_size() == tok.get_vocab_size(with_added_tokens=False)
    tok.add_special_tokens(["<|eot|>"])
    assert tok.n_vocab == tok.get_vocab_size(with_added_tokens=False) + 1
    assert tok.encode("天地", out="np").tolist() == tok.encode("天地")
    assert tok.encode_ordinary("a<|eot|><S>") == tok.encode("a<|eot|><S>", split_special_tokens=True)
    assert tok.encode_ordinary_batch(["a<|eot|>"]) == [tok.encode_ordinary("a<|eot|>")]
    assert tok.pad_token_id == tok.pad_id  # the id padding uses, not None
    tok.pad_token_id = tok.eos_id
    assert tok.pad_token_id == tok.eos_id and tok(["a", "ab"], padding=True)["input_ids"][0][-1] == tok.eos_id
    tok.pad_token_id = None
    assert tok.pad_token_id == tok.pad_id


# ----------------------------------------------------------------------------- special tokens per call


def test_the_models_own_specials_obey_each_call(tok):
    text = "天<S>地</S><P>"
    assert tok.encode(text)[1] == tok.bos_id  # the C++'s reading (Q12, Q13), by default
    for kwargs in ({"disallowed_special": "all"}, {"disallowed_special": ["<S>"]}, {"disallowed_special": "<P>"},
                   {"allowed_special": ["<S>"], "disallowed_special": "all"}):
        with pytest.raises(ValueError, match="holds the special token '<[SP/]+>' at"):
            tok.encode(text, **kwargs)
        with pytest.raises(ValueError, match=r"texts\[1\] holds the special token"):
            tok.encode_batch(["天", text], **kwargs)
        with pytest.raises(ValueError, match="holds the special token"):
            tok([text], **kwargs)
    plain = tok.encode(text, split_special_tokens=True)
    assert not {tok.bos_id, tok.eos_id, tok.pad_id} & set(plain)
    assert tok.decode(plain) == text
    only_s = tok.encode(text, allowed_special={"<S>"})
    assert tok.bos_id in only_s and tok.eos_id not in only_s and tok.pad_id not in only_s
    assert tok.encode(text, allowed_special="all") == tok.encode(text)
    assert tok.encode_batch([text], split_special_tokens=True) == [plain]
    assert tok([text], split_special_tokens=True, add_special_tokens=False)["input_ids"] == [plain]
    with pytest.raises(ValueError, match="allowed_special: '<X>' is not a special token"):
        tok.encode(text, allowed_special=["<X>"])


_MARKS = st.sampled_from(["<", ">", "/", "S", "P", "<S>", "</S>", "<P>", "<S", "</", "天", "地", "a", " ", "<<", "\n"])


@settings(max_examples=400, deadline=None)
@given(parts=st.lists(_MARKS, max_size=14))
def test_plain_specials_encode_as_a_vocabulary_without_them(base, parts):
    """``split_special_tokens=True`` reads ``<P>``, ``<S>``, ``</S>`` as plain text: the
    tokens are exactly those of the same vocabulary without those three keys."""
    without = _without_specials(base)
    text = "".join(parts)
    got = [base.token_bytes(i) for i in base.encode(text, split_special_tokens=True)]
    assert got == [without.token_bytes(i) for i in without.encode(text)]
    assert b"".join(got) == text.encode()


_WITHOUT: dict[int, bbpe.Tokenizer] = {}


def _without_specials(base):
    if id(base) not in _WITHOUT:
        _WITHOUT[id(base)] = bbpe.Tokenizer([k for k in base.keys if k not in (b"<P>", b"<S>", b"</S>")])
    return _WITHOUT[id(base)]


def test_disallowed_special_in_a_file_names_its_line(tok, tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text("天地\n人\n天<S>\n", encoding="utf-8")
    assert list(tok.encode_file(path, split_special_tokens=True))[2] == tok.encode("天<S>", split_special_tokens=True)
    with pytest.raises(ValueError, match=r"corpus.txt: line 3 holds the special token '<S>' at byte 3"):
        list(tok.encode_file(path, disallowed_special="all"))


# ----------------------------------------------------------------------------- files and state


def test_the_pair_template_is_pickled(tok):
    again = pickle.loads(pickle.dumps(tok))
    assert again(TEXTS, PAIRS)["token_type_ids"] == tok(TEXTS, PAIRS)["token_type_ids"]


def test_training_to_a_json_path_writes_json(tmp_path):
    out = tmp_path / "model.json"
    trained = bbpe.Tokenizer.train(vocab_size=800, output=out)
    assert out.read_bytes().lstrip().startswith(b"{")
    loaded = bbpe.Tokenizer.load(out)
    assert loaded.keys == trained.keys and loaded.encode("床前明月光") == trained.encode("床前明月光")
    bin_path = tmp_path / "model.bin"
    bbpe.Tokenizer.train(vocab_size=800, output=bin_path)
    assert not bin_path.read_bytes().lstrip().startswith(b"{") and bbpe.Tokenizer.load(bin_path).keys == loaded.keys


def test_load_refuses_a_text_mode_file(tok, tmp_path):
    path = tmp_path / "m.bin"
    tok.save(path)
    with open(path, encoding="latin-1") as f, pytest.raises(TypeError, match="text mode.*'rb'"):
        bbpe.Tokenizer.load(f)


@pytest.mark.parametrize("out", ["list", "numpy"])
def test_ordinary_batches_equal_ordinary_texts(base, out):
    """A large batch is encoded on threads, then only the texts in which the model matched
    one of its specials are encoded again without it (``codec.rows_holding``)."""
    texts = [f"{i}床前<S>明月{'</S>' * (i % 3)}光<P" if i % 7 == 0 else f"{i}疑是地上霜" for i in range(3000)]
    got = base.encode_ordinary_batch(texts, out=out, num_threads=2)
    want = [base.encode_ordinary(t) for t in texts]
    assert [list(ids) for ids in got] == want
    assert list(base.encode_batch(texts, allowed_special={"</S>"}, out=out)[7][-3:]) == base.encode(texts[7])[-3:]
    assert not {base.bos_id, base.eos_id, base.pad_id} & {i for ids in want for i in ids}
    arrays = base(texts, split_special_tokens=True, padding=True, return_tensors="np", num_threads=2)
    assert [row[mask == 1].tolist() for row, mask in zip(arrays["input_ids"], arrays["attention_mask"])] == want
