"""Batches the HF way (``tok(texts, padding=..., truncation=..., return_tensors="np")``) and
offsets: padded 2-D arrays equal the per-text encodings, offsets slice the input back to
each token's text, the template adds BOS/EOS only when asked."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from conftest import TANG300
from hypothesis import given, settings
from hypothesis import strategies as st

import bbpe


@pytest.fixture(scope="module")
def tok():
    return bbpe.Tokenizer.train(TANG300, 2000)


def _texts(seed: int, n: int = 50) -> list[str]:
    rng = random.Random(seed)
    lines = TANG300.read_text(encoding="utf-8").splitlines()
    return [rng.choice(lines)[: rng.randint(0, 40)] + rng.choice(["", " abc", "é𡵓", "<S>"]) for _ in range(n)]


@pytest.mark.parametrize("side", ["right", "left"])
def test_padded_arrays_equal_the_per_text_encodings(tok, side):
    texts = _texts(1)
    tok.padding_side = side
    try:
        batch = tok(texts, padding=True, return_tensors="np")
        lists = tok(texts, padding=True)
    finally:
        tok.padding_side = "right"
    ids, mask = batch["input_ids"], batch.attention_mask
    assert ids.ndim == 2 and ids.shape == mask.shape and ids.shape[0] == len(texts)
    assert ids.shape[1] == max(len(tok.encode(t)) for t in texts)
    for row, m, text in zip(ids, mask, texts):
        assert row[m == 1].tolist() == tok.encode(text)
        assert (row[m == 0] == tok.pad_id).all()
        live = np.flatnonzero(m)
        if live.size:
            assert (live[0] == 0) if side == "right" else (live[-1] == ids.shape[1] - 1)
    assert lists["input_ids"] == ids.tolist() and lists["attention_mask"] == mask.tolist()


def test_unpadded_lists_truncation_and_lengths(tok):
    texts = _texts(2)
    plain = tok(texts)
    assert plain["input_ids"] == [tok.encode(t) for t in texts]
    assert plain["attention_mask"] == [[1] * len(tok.encode(t)) for t in texts]
    cut = tok(texts, truncation=True, max_length=5)
    assert cut["input_ids"] == [tok.encode(t)[:5] for t in texts]
    fixed = tok(texts, padding="max_length", truncation=True, max_length=12, return_tensors="np")
    assert fixed["input_ids"].shape == (len(texts), 12)
    multiple = tok(texts, padding=True, pad_to_multiple_of=8, return_tensors="np")
    assert multiple["input_ids"].shape[1] % 8 == 0
    longer = tok(["ab"], padding="max_length", max_length=6, return_tensors="np")
    assert longer["input_ids"].tolist() == [[97, 98] + [tok.pad_id] * 4]
    assert "attention_mask" not in tok(texts, return_attention_mask=False)


def test_one_text_gives_flat_lists(tok):
    one = tok("床前明月光")
    assert one["input_ids"] == tok.encode("床前明月光") and one.input_ids == one["input_ids"]
    assert tok("床前明月光", return_tensors="np")["input_ids"].shape == (1, len(tok.encode("床前明月光")))
    with pytest.raises(ValueError, match="needs texts of one length: pass padding=True"):
        tok(["床前", "a"], return_tensors="np")


def test_the_template_adds_bos_and_eos_when_asked(tok):
    template = bbpe.Tokenizer(tok.keys)
    template.set_template("<S> $A </S>")
    ids = tok.encode("床前")
    assert template("床前")["input_ids"] == [tok.bos_id, *ids, tok.eos_id]
    assert template("床前", add_special_tokens=False)["input_ids"] == ids
    assert tok("床前")["input_ids"] == ids  # none by default: the C++ adds none
    cut = template(["床前明月光"], truncation=True, max_length=4, return_offsets_mapping=True)
    assert cut["input_ids"] == [[tok.bos_id, *tok.encode("床前明月光")[:2], tok.eos_id]]
    assert cut["offset_mapping"][0][0] == (0, 0) and cut["offset_mapping"][0][-1] == (0, 0)
    with pytest.raises(ValueError, match="neither in the vocabulary nor a special token"):
        template.set_template("<nope> $A")
    with pytest.raises(ValueError, match=r"must hold \$A once"):
        template.set_template("<S>")


@pytest.mark.parametrize("side", ["right", "left"])
def test_padded_template_rows_with_offsets_and_without_mask(tok, side):
    """The compiled fill (codec.pad_rows) puts the template around each text's ids, on
    either side, and the offsets in the same columns; pad_to_multiple_of widens the rows."""
    template = bbpe.Tokenizer(tok.keys)
    template.set_template("<S> $A </S>")
    template.padding_side = side
    texts = _texts(2, 40)
    got = template(texts, padding=True, return_tensors="np", return_offsets_mapping=True, pad_to_multiple_of=8)
    ids, mask, offsets = got["input_ids"], got["attention_mask"], got["offset_mapping"]
    assert ids.shape[1] % 8 == 0 and ids.shape[1] >= max(len(tok.encode(t)) for t in texts) + 2
    for row, m, spans, text in zip(ids, mask, offsets, texts):
        assert row[m == 1].tolist() == [tok.bos_id, *tok.encode(text), tok.eos_id]
        assert (row[m == 0] == template.pad_id).all() and (spans[m == 0] == 0).all()
        inner = spans[m == 1][1:-1]
        assert [text[a:b] for a, b in inner.tolist()] == [text[a:b] for a, b in template.encode_with_offsets(text)[1]]
    bare = template(texts, padding=True, return_tensors="np", return_attention_mask=False)
    assert set(bare) == {"input_ids"}
    assert np.array_equal(bare["input_ids"], template(texts, padding=True, return_tensors="np")["input_ids"])
    with pytest.raises(ValueError, match="max_length=1 leaves no room for the template's 2 ids"):
        template(texts, padding="max_length", truncation=True, max_length=1, return_tensors="np")


@pytest.mark.parametrize("side", ["right", "left"])
def test_a_big_padded_batch_filled_on_threads_equals_one_thread(tok, side):
    """Past FILL_CELLS_PER_THREAD cells the rows are filled on several threads, each its own."""
    from bbpe.common.batch import FILL_CELLS_PER_THREAD

    texts = _texts(3, 700)
    texts[100] = "".join(texts)  # one long row: the batch is rows x its length
    tok.padding_side = side
    try:
        two = tok(texts, padding=True, return_tensors="np", num_threads=3)
        one = tok(texts, padding=True, return_tensors="np", num_threads=1)
    finally:
        tok.padding_side = "right"
    assert two["input_ids"].size > 2 * FILL_CELLS_PER_THREAD
    assert np.array_equal(two["input_ids"], one["input_ids"]) and np.array_equal(two["attention_mask"],
                                                                                 one["attention_mask"])
    for k in (0, 100, 699):
        assert two["input_ids"][k][two["attention_mask"][k] == 1].tolist() == tok.encode(texts[k])


def _cut(items, cap, cut_left):
    """The items truncation keeps: all (cap None), the first cap, or the last cap."""
    if cap is None or len(items) <= cap:
        return items
    return items[len(items) - cap :] if cut_left else items[:cap]


def _hf_rows(encodings, prefix, suffix, *, cap, width, pad, left, cut_left=False):
    """The HF rows, written out plainly: each text's ids cut to ``cap`` (its last ``cap``
    with ``cut_left``, truncation_side="left"), the template around them, padded with
    ``pad`` to ``width`` when shorter (None: not padded; a longer row stays as it is, as
    transformers leaves it); and the masks."""
    ids, masks = [], []
    for enc in encodings:
        inner = prefix + _cut(enc, cap, cut_left) + suffix
        pads = 0 if width is None else max(0, width - len(inner))
        ids.append([pad] * pads + inner if left else inner + [pad] * pads)
        masks.append([0] * pads + [1] * len(inner) if left else [1] * len(inner) + [0] * pads)
    return ids, masks


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(1, 12), side=st.sampled_from(["right", "left"]),
       template=st.booleans(), padding=st.sampled_from([False, True, "max_length"]),
       truncation=st.sampled_from([None, False, True]), cut_left=st.booleans(), max_length=st.integers(2, 30),
       multiple=st.sampled_from([None, 1, 4, 7]), offsets=st.booleans(), mask=st.booleans())
def test_lists_and_arrays_are_the_hf_rows(seed, n, side, template, padding, truncation, cut_left, max_length, multiple,
                                          offsets, mask):
    """Every combination of the options: the lists (``codec.frame_rows``) are the rows HF
    gives, written out plainly here, with each token's offsets where it went; the arrays
    (``codec.pad_rows``) hold the same, or are refused when the rows are not of one length.
    Left unset, truncation is on when max_length comes without padding; with both on, a
    max_length that is no multiple of pad_to_multiple_of is refused (both as transformers)."""
    texts = _texts(seed, n)
    tok = _TEMPLATED if template else _TOK
    encodings = [_TOK.encode(t) for t in texts]
    prefix, suffix = ([_TOK.bos_id], [_TOK.eos_id]) if template else ([], [])
    options = {"padding": padding, "truncation": truncation, "max_length": max_length,
               "pad_to_multiple_of": multiple, "return_offsets_mapping": offsets, "return_attention_mask": mask}
    if truncation is None:
        truncation = padding is False
    if truncation and padding is not False and multiple and max_length % multiple:
        with pytest.raises(ValueError, match="not a multiple of pad_to_multiple_of"):
            tok(texts, **options)
        return
    cap = max_length - len(prefix) - len(suffix) if truncation else None
    longest = max(len(prefix) + len(_cut(e, cap, cut_left)) + len(suffix) for e in encodings)
    width = None if padding is False else max_length if padding == "max_length" else longest
    if width is not None and multiple and width % multiple:
        width += multiple - width % multiple
    left = side == "left"
    want_ids, want_masks = _hf_rows(encodings, prefix, suffix, cap=cap, width=width, pad=_TOK.pad_id, left=left,
                                    cut_left=cut_left)
    tok.padding_side = side
    tok.truncation_side = "left" if cut_left else "right"
    try:
        lists = tok(texts, **options)
        if width is not None and longest > width:
            with pytest.raises(ValueError, match="pass truncation=True"):
                tok(texts, return_tensors="np", **options)
            arrays = None
        else:
            arrays = tok(texts, return_tensors="np", **options) if width is not None else None
    finally:
        tok.padding_side = tok.truncation_side = "right"
    assert lists["input_ids"] == want_ids
    assert lists.get("attention_mask") == (want_masks if mask else None)
    if offsets:
        want_offsets = []
        for text, row in zip(texts, want_ids):
            spans = _TOK.encode_with_offsets(text)[1]
            inner = [(0, 0)] * len(prefix) + _cut(spans, cap, cut_left) + [(0, 0)] * len(suffix)
            pads = [(0, 0)] * (len(row) - len(inner))
            want_offsets.append(pads + inner if left else inner + pads)
        assert lists["offset_mapping"] == want_offsets
    if arrays is not None:
        assert arrays["input_ids"].tolist() == want_ids
        assert (arrays["attention_mask"].tolist() == want_masks) if mask else ("attention_mask" not in arrays)
        if offsets:
            assert [[tuple(p) for p in row] for row in arrays["offset_mapping"].tolist()] == lists["offset_mapping"]


def test_unpadded_arrays_are_not_rounded_up(tok):
    """pad_to_multiple_of only applies when padding, as in transformers."""
    texts = ["床前明月光", "疑是地上霜"]
    assert len(tok.encode(texts[0])) == len(tok.encode(texts[1]))
    got = tok(texts, return_tensors="np", pad_to_multiple_of=64)["input_ids"]
    assert got.shape == (2, len(tok.encode(texts[0])))


def test_batch_lists_are_not_tracked_by_the_collector(tok):
    """The lists of a kept batch hold only ints, so the collections need not walk them
    (item 10 of the user layer): the encoder's lists, the ones framed around them, and
    the rows of the paths that make ordinary lists (added special tokens, offsets)."""
    import gc

    special = bbpe.Tokenizer(_TOK.keys)
    special.add_special_tokens(["<|eot|>"])
    for tokenizer, options in ((_TEMPLATED, {}), (_TEMPLATED, {"padding": True}),
                               (_TEMPLATED, {"truncation": True, "max_length": 3}), (_TOK, {}),
                               (_TOK, {"return_offsets_mapping": True}), (special, {})):
        out = tokenizer([*_texts(4, 20), "天<|eot|>地"], **options)
        rows = out["input_ids"] + out["attention_mask"]
        assert rows and not any(gc.is_tracked(row) for row in rows), options
        assert gc.is_tracked(out["input_ids"])  # the outer list: the caller may add anything to it


def test_a_finaliser_that_walks_the_heap_sees_no_half_made_list(tmp_path):
    """A collection set off by an allocation inside frame_rows may run a finaliser that
    calls gc.get_objects() and reads every list it finds: none may hold holes. In a
    subprocess, since a failure is a crash."""
    import subprocess
    import sys

    script = """
import gc
from bbpe.codec import frame_rows

class Walker:
    def __init__(self):
        self.me = self  # a cycle: only the collector frees it
    def __del__(self):
        for obj in gc.get_objects():
            if type(obj) is list:
                for item in obj:
                    id(item)
        Walker()  # the next collection finds another

rows = [list(range(k)) for k in range(5)]
hold = []
for threshold in range(1, 9):
    gc.set_threshold(threshold)
    Walker()
    for _ in range(30):
        for args in (((), (), -1, -1), ((1,), (2,), -1, 12)):
            del hold
            hold = [[] for _ in range(100)]  # the free list of lists emptied: new ones are collected
            frame_rows(rows, *args, 0, False, True)
print("ok")
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False,
                          cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]


def test_pad_token_id_takes_numpy_integers_and_refuses_the_rest(tok):
    """``pad_token_id`` as transformers code sets it, maybe from ``argmax()`` (a numpy
    integer): both paths pad with it; anything but an integer or None is refused, named."""
    other = bbpe.Tokenizer(tok.keys)
    other.pad_token_id = np.int64(7)
    assert type(other.pad_token_id) is int
    texts = ["床前明月光", "疑"]
    assert other(texts, padding=True)["input_ids"][1][-1] == 7
    assert other(texts, padding=True, return_tensors="np")["input_ids"][1, -1] == 7
    for bad, error in ((7.0, TypeError), ("7", TypeError), (True, TypeError), (-1, ValueError)):
        with pytest.raises(error, match="pad_token_id"):
            other.pad_token_id = bad
    other.pad_token_id = 7
    document = json.loads(other.to_bytes(format="json"))
    assert bbpe.from_bytes(json.dumps(document).encode()).pad_token_id == 7
    document["bbpe"]["pad_token_id"] = "7"  # a hostile or broken file: refused, named
    with pytest.raises(bbpe.FormatError, match="pad_token_id must be an int or None, got str"):
        bbpe.from_bytes(json.dumps(document).encode())
    other.pad_token_id = None
    assert other(texts, padding=True)["input_ids"][1][-1] == other.pad_id


def test_frame_rows_refuses_what_is_not_a_list_of_ints():
    """The codec's framing untracks what it makes, so it takes only lists of exact ints."""
    from bbpe.codec import frame_rows

    assert frame_rows([[5, 6]], (1,), (2,), -1, 6, 0, False, True) == ([[1, 5, 6, 2, 0, 0]], [[1, 1, 1, 1, 0, 0]])
    assert frame_rows([[5, 6]], (), (), -1, 4, 9, True, False) == ([[9, 9, 5, 6]], None)
    assert frame_rows([[1, 2, 3]], (), (), -1, 2, 0, False, True) == ([[1, 2, 3]], [[1, 1, 1]])  # longer: as it is
    for rows, prefix, pad, message in [([[1, [2]]], (), 0, r"rows\[0\]\[1\] is not an int"),
                                       ([(1, 2)], (), 0, r"rows\[0\] is a tuple"),
                                       ([[1]], (1.0,), 0, "the prefix must hold ints"),
                                       ([[1]], (), None, "pad_id must be an int")]:
        with pytest.raises(TypeError, match=message):
            frame_rows(rows, prefix, (), -1, 8, pad, False, True)


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("床前明月光疑是地上霜abc <>S/P，。é𡵓ゃ\n")), max_size=30))
def test_offsets_slice_the_text_back(text):
    """Each token's bytes lie in the chars of its span, and the span is the least such:
    its first char holds the token's first byte, its last char the token's last byte (a
    byte-fallback token of a char gets that whole char)."""
    ids, offsets = _TOK.encode_with_offsets(text)
    assert ids == _TOK.encode(text) and len(offsets) == len(ids)
    byte_at = [len(text[:c].encode()) for c in range(len(text) + 1)]  # where char c starts, in bytes
    at = 0
    for kid, (start, end) in zip(ids, offsets):
        size = len(_TOK.token_bytes(kid))
        assert byte_at[start] <= at < byte_at[start + 1]
        assert byte_at[end - 1] < at + size <= byte_at[end]
        at += size
    assert at == len(text.encode())


def test_offsets_in_bytes_for_bytes_and_for_special_tokens(tok):
    data = "床前 ab".encode()
    ids, offsets = tok.encode_with_offsets(data)
    assert b"".join(data[s:e] for s, e in offsets) == data
    special = bbpe.Tokenizer(tok.keys)
    special.add_special_tokens(["<|eot|>"])
    ids, offsets = special.encode_with_offsets("天<|eot|>地")
    assert offsets[ids.index(special.token_to_id("<|eot|>"))] == (1, 8)
    batch = special(["天<|eot|>地", "x"], padding=True, return_offsets_mapping=True, return_tensors="np")
    assert batch["offset_mapping"].shape == batch["input_ids"].shape + (2,)
    assert batch["offset_mapping"][1, 1:].tolist() == [[0, 0]] * (batch["input_ids"].shape[1] - 1)


def test_bad_options_are_named(tok):
    for kwargs, message in [({"padding": "yes"}, "padding must be"), ({"truncation": "x"}, "truncation must be"),
                            ({"return_tensors": "tf"}, "return_tensors must be None, 'np' or 'pt'"),
                            ({"padding": "max_length"}, "needs max_length"), ({"truncation": True}, "needs max_length"),
                            ({"max_length": 0, "truncation": True}, "max_length must be a positive int")]:
        with pytest.raises(ValueError, match=message):
            tok(["a"], **kwargs)
    with pytest.raises(TypeError, match=r"texts\[1\]"):
        tok(["a", 5])
    with pytest.raises(ValueError, match="offsets need bbpe's lossless encoding"):
        bbpe.Tokenizer(tok.keys, bug_compat=True).encode_with_offsets("a")


_TOK = bbpe.Tokenizer.train(TANG300, 2000)
_TEMPLATED = bbpe.Tokenizer(_TOK.keys)
_TEMPLATED.set_template("<S> $A </S>")


def test_max_length_alone_truncates_as_in_transformers(tok):
    """transformers: ``max_length`` without padding and with truncation left unset truncates
    (longest_first); with padding, or truncation=False, it does not."""
    texts = ["床前明月光疑是地上霜", "a"]
    assert [len(r) for r in tok(texts, max_length=3)["input_ids"]] == [3, 1]
    assert tok(texts, max_length=3, truncation=False)["input_ids"][0] == tok.encode(texts[0])
    assert tok(texts, max_length=30, padding="max_length")["input_ids"][0][: len(tok.encode(texts[0]))] == tok.encode(
        texts[0])


def test_truncation_side_left_keeps_the_last_ids(tok):
    """truncation_side="left" keeps each text's last ids, in lists, arrays and offsets, and
    travels with the tokenizer (pickle, the JSON file); anything but left/right is refused."""
    import pickle

    text = "床前明月光疑是地上霜"
    ids = tok.encode(text)
    tok.truncation_side = "left"
    try:
        assert tok([text], max_length=4)["input_ids"] == [ids[-4:]]
        arrays = tok([text, "a"], max_length=4, truncation=True, padding=True, return_tensors="np",
                     return_offsets_mapping=True)
        assert arrays["input_ids"][0].tolist() == ids[-4:]
        assert arrays["offset_mapping"][0].tolist() == [list(p) for p in tok.encode_with_offsets(text)[1][-4:]]
        assert pickle.loads(pickle.dumps(tok)).truncation_side == "left"
        assert bbpe.Tokenizer.from_bytes(tok.to_bytes(format="json")).truncation_side == "left"
    finally:
        tok.truncation_side = "right"
    assert tok([text], max_length=4)["input_ids"] == [ids[:4]]
    with pytest.raises(ValueError, match="truncation_side must be 'left' or 'right'"):
        tok.truncation_side = "middle"


def test_padding_side_per_call(tok):
    """``padding_side=`` on the call, as transformers takes it, for that call only."""
    left = tok(["a", "bb"], padding=True, padding_side="left")
    assert left["input_ids"][0] == [tok.pad_id, 97] and left["attention_mask"][0] == [0, 1]
    assert tok(["a", "bb"], padding=True)["input_ids"][0] == [97, tok.pad_id]
    with pytest.raises(ValueError, match="padding_side must be"):
        tok(["a"], padding=True, padding_side="up")


@pytest.mark.parametrize(("options", "error", "message"), [
    ({"padding": "max_length", "max_length": 2**63}, ValueError, "padded to 9223372036854775808 ids"),
    ({"truncation": True, "max_length": 3, "padding": True, "pad_to_multiple_of": 4}, ValueError,
     r"truncation length \(3\) is not a multiple of pad_to_multiple_of \(4\)"),
    ({"max_length": 2.5}, TypeError, "max_length must be a positive int or None, got float"),
    ({"max_length": 0}, ValueError, "max_length must be a positive int or None, got 0"),
    ({"num_threads": "4"}, TypeError, "num_threads must be a positive int or None, got str"),
    ({"num_threads": 0}, ValueError, "num_threads must be a positive int or None, got 0"),
])
def test_bad_sizes_are_named(tok, options, error, message):
    for tensors in (None, "np"):
        with pytest.raises(error, match=message):
            tok(["床前明月光"] * 3, return_tensors=tensors, **options)


def test_sizes_may_be_numpy_integers_or_past_every_text(tok):
    """numpy integers are sizes (transformers takes them), and a max_length past every text
    (transformers' model_max_length is 1e30) cuts nothing."""
    text = "床前明月光"
    assert tok([text], max_length=np.int64(2))["input_ids"] == [tok.encode(text)[:2]]
    assert tok([text], truncation=True, max_length=int(1e30))["input_ids"] == [tok.encode(text)]
    assert tok([text], truncation=True, max_length=2**63, padding=True,
               return_tensors="np")["input_ids"].tolist() == [tok.encode(text)]
