"""bbpe.bpe._codec.BpeCodec, BPE's compiled codec: ids identical to tiktoken's (the real
o200k_base and cl100k_base ranks, shipped in the ``bpe_openai`` package) and to HF
tokenizers' ``BPE`` models (trained here, small), on generated text and on the corpora;
its two merge algorithms (the backtracking search and the replayed merges) against each
other; batches, threads, pickling, and the errors it raises.

The oracles are optional: what needs tiktoken + bpe_openai or tokenizers is skipped, with
the reason, when they are not installed.
"""

from __future__ import annotations

import base64
import gzip
import importlib.util
import json
import pickle
import random
import threading
import time
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from bbpe.bpe._codec import PIECES, BpeCodec
from bbpe.errors import UnknownIdError

CORPORA = Path("/work/shared/reference/corpora")
LARGE = Path("/tmp/bbpe-corpora")
REFERENCE_FILES = sorted(CORPORA.glob("*.txt"))
ENCODINGS = {"o200k_base": PIECES["o200k"], "cl100k_base": PIECES["cl100k"]}
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _fixed(text: str) -> str:
    """A str as tiktoken encodes it: its lone surrogates replaced (tiktoken/core.py)."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _bytes_alphabet() -> list[bytes]:
    return [bytes([b]) for b in range(256)]


# ----------------------------------------------------------------------------- oracles

@pytest.fixture(scope="session", params=sorted(ENCODINGS))
def tik(request):
    """(tiktoken's Encoding, our codec with the compiled pre-tokenizer, the pattern string)
    for one of the real encodings."""
    name = request.param
    return _tiktoken(name)


_TIK_CACHE: dict = {}


def _tiktoken(name: str):
    if name in _TIK_CACHE:
        return _TIK_CACHE[name]
    if importlib.util.find_spec("tiktoken") is None:
        pytest.skip("tiktoken is not installed: no oracle for tiktoken's encodings")
    if importlib.util.find_spec("bpe_openai") is None:
        pytest.skip("bpe_openai is not installed: it ships the o200k_base/cl100k_base ranks (tiktoken downloads them)")
    import bpe_openai
    import tiktoken
    from tiktoken_ext import openai_public

    path = Path(bpe_openai.__file__).parent / "data" / f"{name}.tiktoken.gz"
    if not path.exists():
        pytest.skip(f"{path} is not there")
    ranks = {}
    with gzip.open(path, "rt") as f:
        for line in f:
            if line.strip():
                token, rank = line.split()
                ranks[base64.b64decode(token)] = int(rank)
    # tiktoken's own constructor of the encoding, with the ranks it would download
    loader = openai_public.load_tiktoken_bpe
    openai_public.load_tiktoken_bpe = lambda *args, **kwargs: ranks
    try:
        spec = getattr(openai_public, name)()
    finally:
        openai_public.load_tiktoken_bpe = loader
    enc = tiktoken.Encoding(name=name, pat_str=spec["pat_str"], mergeable_ranks=ranks, special_tokens={})
    tokens = sorted(ranks, key=ranks.get)
    assert [ranks[t] for t in tokens] == list(range(len(tokens)))
    codec = BpeCodec(tokens, pattern=ENCODINGS[name])
    _TIK_CACHE[name] = (enc, codec, spec["pat_str"], tokens)
    return _TIK_CACHE[name]


def _hf():
    if importlib.util.find_spec("tokenizers") is None:
        pytest.skip("tokenizers is not installed: no oracle for HF's BPE")
    import tokenizers

    return tokenizers


def _u2b() -> dict[str, int]:
    """HF ByteLevel's alphabet: char -> byte (GPT-2's bytes_to_unicode, inverted)."""
    bs = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    cs = bs[:]
    extra = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + extra)
            extra += 1
    return {chr(c): b for b, c in zip(bs, cs)}


U2B = _u2b()


def _train(files, size: int, alphabet: bool = True):
    """A small HF byte-level BPE trained on ``files``: (vocab str -> id, merges as str pairs)."""
    tk = _hf()
    tok = tk.Tokenizer(tk.models.BPE())
    tok.pre_tokenizer = tk.pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = tk.trainers.BpeTrainer(vocab_size=size, show_progress=False,
                                     initial_alphabet=tk.pre_tokenizers.ByteLevel.alphabet() if alphabet else [])
    tok.train([str(f) for f in files], trainer)
    model = json.loads(tok.to_str())["model"]
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]
    return dict(model["vocab"]), merges


def _hf_tokenizer(vocab, merges, ignore_merges=False, unk=None, fuse_unk=False, pre=None):
    tk = _hf()
    tok = tk.Tokenizer(tk.models.BPE(vocab, merges, ignore_merges=ignore_merges, unk_token=unk, fuse_unk=fuse_unk))
    tok.pre_tokenizer = pre or tk.pre_tokenizers.ByteLevel(add_prefix_space=False)
    return tok


def _token_bytes(s: str) -> bytes:
    return bytes(U2B[ch] for ch in s) if all(ch in U2B for ch in s) else s.encode()


def _our(vocab, merges, **kwargs) -> BpeCodec:
    tokens = [b""] * len(vocab)
    for s, i in vocab.items():
        tokens[i] = _token_bytes(s)
    return BpeCodec(tokens, [(vocab[a], vocab[b]) for a, b in merges], **kwargs)


def _lines(path: Path, limit: int | None = None) -> list[str]:
    return path.read_text(encoding="utf-8").split("\n")[:limit]


def _sample_lines() -> list[str]:
    lines = [line for f in REFERENCE_FILES for line in _lines(f)]
    if (LARGE / "mixed.txt").exists():
        lines += _lines(LARGE / "mixed.txt", 1500)
    lines += ["Hello, world! It's 2024: naïve café, ÀÉÎ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 🎉🎉", "  x\n\n\ty  ", "   ", "中文 English 日本語 한국어"]
    return lines


# ----------------------------------------------------------------------------- tiktoken

@SETTINGS
@given(text=st.text(st.characters(blacklist_categories=("Cs",)), max_size=300))
def test_ids_are_tiktokens(tik, text):
    enc, codec, _, _ = tik
    expected = enc.encode_ordinary(text)
    assert codec.encode(text) == expected
    assert codec.encode(text.encode()) == expected


@SETTINGS
@given(text=st.text(st.characters(codec="utf-8") | st.characters(categories=("Cs",)), max_size=60))
def test_lone_surrogates_are_replaced_as_tiktoken_does(tik, text):
    enc, codec, _, _ = tik
    assert codec.encode(text) == enc.encode_ordinary(text)  # tiktoken replaces them itself
    assert codec.decode(codec.encode(text)) == _fixed(text).encode()


@SETTINGS
@given(text=st.text(max_size=200))
def test_decode_gives_the_text_back(tik, text):
    _, codec, _, _ = tik
    ids = codec.encode(text)
    assert codec.decode(ids) == _fixed(text).encode()
    assert codec.decode(np.array(ids, dtype=np.uint32)) == _fixed(text).encode()
    assert codec.decode_str(ids) == _fixed(text)


@pytest.mark.skipif(not REFERENCE_FILES, reason=f"no reference corpora in {CORPORA}")
def test_every_line_of_the_reference_corpora_is_tiktokens(tik):
    enc, codec, _, _ = tik
    for path in REFERENCE_FILES:
        text = path.read_text(encoding="utf-8")
        for k, line in enumerate(text.split("\n")):
            assert codec.encode(line) == enc.encode_ordinary(line), f"{path.name}:{k + 1}"
        assert codec.encode(text) == enc.encode_ordinary(text), path.name


@pytest.mark.slow
@pytest.mark.parametrize("corpus", ["zh-large", "en-large", "mixed"])
def test_a_sample_of_the_large_corpora_is_tiktokens(tik, corpus):
    enc, codec, _, _ = tik
    path = LARGE / f"{corpus}.txt"
    if not path.exists():
        pytest.skip(f"{path} is not there")
    lines = _lines(path)
    sample = lines[::max(1, len(lines) // 20000)]
    ids, offsets = codec.encode_many(sample)
    for k, line in enumerate(sample):
        expected = enc.encode_ordinary(line)
        assert codec.encode(line) == expected, f"{corpus}: line {k}"
        assert ids[offsets[k]:offsets[k + 1]].tolist() == expected


@pytest.mark.parametrize("text", ["a" * 100_000, "中" * 50_000, "".join(chr(0x4E00 + i * 7919 % 20000) for i in range(50_000)),
                                  " " * 100_000, "ab" * 50_000, "\u00e9\u0301" * 30_000])
def test_long_pieces_are_fast_and_tiktokens(text):
    enc, codec, _, _ = _tiktoken("o200k_base")
    start = time.perf_counter()
    ids = codec.encode(text)
    took = time.perf_counter() - start
    assert ids == enc.encode_ordinary(text)
    assert took < 0.5, f"{len(text.encode())} bytes took {took:.2f} s"


def test_the_regex_pre_tokenizer_gives_the_compiled_ones_pieces(tik):
    regex = pytest.importorskip("regex", reason="the regex package runs PIECES_REGEX's patterns")
    enc, codec, pat_str, tokens = tik
    slow = BpeCodec(tokens, pattern=regex.compile(pat_str))
    for line in _sample_lines():
        assert slow.encode(line) == codec.encode(line) == enc.encode_ordinary(line)
    texts = _sample_lines()[:300]
    assert slow.encode_lists(texts) == codec.encode_lists(texts)


# ----------------------------------------------------------------------------- the two algorithms

@SETTINGS
@given(data=st.data())
def test_the_search_gives_the_replayed_merges_ids(tik, data):
    """Any bytes (not only UTF-8), as pieces: the backtracking search == the heap."""
    _, codec, _, tokens = tik
    parts = data.draw(st.lists(st.binary(min_size=1, max_size=4) | st.sampled_from(tokens), max_size=40))
    piece = b"".join(parts)
    assert codec._merge(piece, "search") == codec._merge(piece, "heap")


@pytest.mark.parametrize("piece", [b"\xe0\x80\x80", b"\xed\xa0\x80", b"\xc0\xaf", b"\xe4\xb8", b"\xe4\xb8\xad" * 3 + b"\xe4",
                                   b"\xc3", b"\xe4\x00\x00\xe4\xb8\xad", b"\xf0\x9f\x8e\x89\xff", b"\xb8\xad\xe6\x96\x87"])
def test_the_search_takes_any_bytes(tik, piece):
    _, codec, _, _ = tik
    assert codec._merge(piece, "search") == codec._merge(piece, "heap")


def test_the_search_gives_the_replayed_merges_ids_on_whole_files(tik):
    _, codec, _, _ = tik
    for path in REFERENCE_FILES:
        data = path.read_bytes()[:20000]  # one piece of 20 kB
        assert codec._merge(data, "search") == codec._merge(data, "heap")


def test_every_token_merges_into_itself(tik):
    _, codec, _, tokens = tik
    assert codec.backtracking
    for i in random.Random(0).sample(range(len(tokens)), 3000):
        assert codec._merge(tokens[i], "heap") == [i]


def test_a_vocabulary_whose_merges_are_out_of_rank_order_takes_the_heap():
    # abc is made by (ab, c) at rank 0, before ab exists: merging never follows rank order
    tokens = [*_bytes_alphabet(), b"ab", b"abc", b"bc"]
    ab, abc, bc = 256, 257, 258
    codec = BpeCodec(tokens, [(ab, ord("c")), (ord("a"), ord("b")), (ord("b"), ord("c"))])
    assert not codec.backtracking
    assert codec.encode("abc") == [abc]
    assert codec.encode("xbc") == [ord("x"), bc]
    in_order = BpeCodec(tokens, [(ord("a"), ord("b")), (ab, ord("c")), (ord("b"), ord("c"))])
    assert in_order.backtracking
    assert in_order.encode("abc") == [abc]


# ----------------------------------------------------------------------------- HF tokenizers

@pytest.mark.skipif(not REFERENCE_FILES, reason=f"no reference corpora in {CORPORA}")
@pytest.mark.parametrize("size", [300, 1000, 5000])
@pytest.mark.parametrize("ignore_merges", [False, True])
def test_ids_are_hfs_on_trained_models(size, ignore_merges):
    vocab, merges = _train(REFERENCE_FILES, size)
    hf = _hf_tokenizer(vocab, merges, ignore_merges)
    ours = _our(vocab, merges, ignore_merges=ignore_merges, pattern=PIECES["gpt2"])
    assert ours.backtracking
    for line in _sample_lines():
        assert ours.encode(line) == hf.encode(line).ids, line


@pytest.mark.skipif(not REFERENCE_FILES, reason=f"no reference corpora in {CORPORA}")
def test_ignore_merges_as_hf_where_merging_cannot_make_a_piece():
    """Half the merges dropped: many tokens are no merge's result, and only ignore_merges
    makes a piece that is one of them that token (HF differs on some lines, so do we)."""
    vocab, merges = _train(REFERENCE_FILES, 3000)
    merges = merges[: len(merges) // 2]
    lines = _sample_lines()
    differ = 0
    for ignore in (False, True):
        hf = _hf_tokenizer(vocab, merges, ignore)
        ours = _our(vocab, merges, ignore_merges=ignore, pattern=PIECES["gpt2"])
        for line in lines:
            assert ours.encode(line) == hf.encode(line).ids, (ignore, line)
    plain = _hf_tokenizer(vocab, merges, False)
    ignoring = _hf_tokenizer(vocab, merges, True)
    differ = sum(plain.encode(line).ids != ignoring.encode(line).ids for line in lines)
    assert differ > 0  # the case is exercised


@pytest.mark.skipif(not REFERENCE_FILES, reason=f"no reference corpora in {CORPORA}")
@pytest.mark.parametrize("seed", [1, 2])
def test_shuffled_merges_are_merged_as_hf_does(seed):
    vocab, merges = _train(REFERENCE_FILES, 600)
    merges = merges[:]
    random.Random(seed).shuffle(merges)
    hf = _hf_tokenizer(vocab, merges)
    ours = _our(vocab, merges, pattern=PIECES["gpt2"])
    for line in _sample_lines()[:2000]:
        assert ours.encode(line) == hf.encode(line).ids, line


@pytest.mark.skipif(not REFERENCE_FILES, reason=f"no reference corpora in {CORPORA}")
def test_a_merge_given_twice_has_its_last_rank_as_in_hf():
    vocab, merges = _train(REFERENCE_FILES, 800)
    merges = merges[:]
    for k in (3, 10, 40):
        merges.append(merges[k])  # the same pair again, last
    hf = _hf_tokenizer(vocab, merges)
    ours = _our(vocab, merges, pattern=PIECES["gpt2"])
    for line in _sample_lines()[:2000]:
        assert ours.encode(line) == hf.encode(line).ids, line


@pytest.mark.skipif(not REFERENCE_FILES, reason=f"no reference corpora in {CORPORA}")
@pytest.mark.parametrize(("unk", "fuse"), [(None, False), ("<unk>", False), ("<unk>", True)])
def test_bytes_that_are_no_token_as_hf(unk, fuse):
    """Trained on Chinese poems without the byte alphabet: most bytes are no token; HF makes
    each one the unk token (consecutive ones one, fused) or drops it without one."""
    vocab, merges = _train(REFERENCE_FILES, 400, alphabet=False)
    if unk is not None:
        vocab[unk] = len(vocab)
    hf = _hf_tokenizer(vocab, merges, unk=unk, fuse_unk=fuse)
    ours = _our(vocab, merges, pattern=PIECES["gpt2"], unk_id=vocab[unk] if unk else -1, fuse_unk=fuse)
    lines = [*_sample_lines(), "Zebra 🎉 ÿ xyz", "床前明月光 Привет"]
    seen_missing = False
    for line in lines:
        assert ours.encode(line) == hf.encode(line).ids, line
        seen_missing = seen_missing or any(ours.lookup(bytes([b])) < 0 for b in line.encode())
    assert seen_missing


def test_isolated_gaps_as_hf_split():
    """keep_gaps: the text between the pattern's matches is a piece too (HF Split "isolated");
    without, it is dropped (tiktoken encodes only the matches)."""
    regex = pytest.importorskip("regex", reason="the regex package runs PIECES_REGEX's patterns")
    tk = _hf()
    vocab, merges = _train(REFERENCE_FILES, 600) if REFERENCE_FILES else pytest.skip("no reference corpora")
    pattern = r"\d+|[a-z]+"
    pre = tk.pre_tokenizers.Sequence([tk.pre_tokenizers.Split(tk.Regex(pattern), "isolated"),
                                      tk.pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    hf = _hf_tokenizer(vocab, merges, pre=pre)
    gaps = _our(vocab, merges, pattern=regex.compile(pattern), keep_gaps=True)
    matches = _our(vocab, merges, pattern=regex.compile(pattern))
    whole = _our(vocab, merges)
    for line in ["ab12 cd!!34ef", "  ", "床前 明月光 42", "x", "", *_sample_lines()[:300]]:
        assert gaps.encode(line) == hf.encode(line).ids, line
        assert matches.encode(line) == [i for m in regex.finditer(pattern, line) for i in whole.encode(m.group())]


# ----------------------------------------------------------------------------- batches and the Python API

@pytest.fixture(scope="module")
def small():
    """A small tiktoken-style vocabulary: the bytes and some merges of them."""
    tokens = _bytes_alphabet()
    for word in (b"th", b"he", b"the", b"in", b" t", b" the", "中".encode(), "文".encode(), "中文".encode()):
        tokens.append(word)
    return BpeCodec(tokens, pattern=PIECES["gpt2"])


def test_encode_many_and_encode_lists_are_encode(tik):
    _, codec, _, _ = tik
    texts = _sample_lines()[:800] + [b"bytes too", "", "\ud800 lone"]
    expected = [codec.encode(t) for t in texts]
    ids, offsets = codec.encode_many(texts)
    assert ids.dtype == np.uint32 and offsets.dtype == np.int64 and len(offsets) == len(texts) + 1
    assert [ids[a:b].tolist() for a, b in pairwise(offsets)] == expected
    assert codec.encode_lists(texts) == expected
    ids, offsets = codec.encode_many(texts, 0, 10, 30)
    assert [ids[a:b].tolist() for a, b in pairwise(offsets)] == expected[10:30]
    assert codec.encode_lists(texts, 0, 10, 30) == expected[10:30]
    assert codec.encode_ids(texts[5]).tolist() == expected[5]


def test_one_codec_on_two_threads(tik):
    _, codec, _, _ = tik
    texts = _sample_lines() * 3
    expected = codec.encode_lists(texts)
    results: dict = {}

    def run(k):
        for _ in range(3):
            ids, offsets = codec.encode_many(texts, 0, k * len(texts) // 2, (k + 1) * len(texts) // 2)
            results[k, "many"] = [ids[a:b].tolist() for a, b in pairwise(offsets)]
            results[k, "lists"] = codec.encode_lists(texts, 0, k * len(texts) // 2, (k + 1) * len(texts) // 2)
            results[k, "one"] = [codec.encode(t) for t in texts[k::7]]

    threads = [threading.Thread(target=run, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results[0, "many"] + results[1, "many"] == expected
    assert results[0, "lists"] + results[1, "lists"] == expected
    assert results[0, "one"] == expected[0::7] and results[1, "one"] == expected[1::7]


def test_inputs(small):
    expected = small.encode("the 中文")
    for data in (b"the \xe4\xb8\xad\xe6\x96\x87", bytearray("the 中文".encode()), memoryview("the 中文".encode()),
                 np.frombuffer("the 中文".encode(), dtype=np.uint8)):
        assert small.encode(data) == expected
    assert small.encode("", 1) == [] and small.encode(b"") == []
    with pytest.raises(TypeError):
        small.encode(12)
    with pytest.raises(TypeError):
        small.encode_many(["ok", 12])


def test_vocabulary(small):
    assert small.n_keys == 265
    assert small.token_bytes(258) == b"the"
    assert small.lookup(b"the") == 258 and small.lookup(b"xyz") == -1 and small.lookup(b"") == -1
    assert small.tokens()[256:] == [b"th", b"he", b"the", b"in", b" t", b" the", "中".encode(), "文".encode(),
                                    "中文".encode()]
    with pytest.raises(IndexError):
        small.token_bytes(265)


def test_pickling(tik, small):
    _, codec, _, _ = tik
    text = "Pickled: 中文 and English, 12345."
    assert pickle.loads(pickle.dumps(codec)).encode(text) == codec.encode(text)
    assert pickle.loads(pickle.dumps(small)).encode(text) == small.encode(text)
    regex = pytest.importorskip("regex", reason="the regex package runs PIECES_REGEX's patterns")
    hf_style = BpeCodec(_bytes_alphabet() + [b"ab", b"abc"], [(97, 98), (256, 99)], ignore_merges=False,
                        pattern=regex.compile(r"\w+"), keep_gaps=True, unk_id=3, fuse_unk=True)
    again = pickle.loads(pickle.dumps(hf_style))
    assert again.encode("abc, ab") == hf_style.encode("abc, ab") == [257, 44, 32, 256]


# ----------------------------------------------------------------------------- errors

def test_unknown_ids(small):
    with pytest.raises(UnknownIdError) as e:
        small.decode([104, 265, 1])
    assert e.value.id == 265 and e.value.position == 1
    with pytest.raises(UnknownIdError) as e:
        small.decode(np.array([1, 2, -3]))
    assert e.value.id == -3 and e.value.position == 2
    with pytest.raises(UnknownIdError):
        small.decode([1 << 70])
    with pytest.raises(UnknownIdError):
        small.decode(np.array([1 << 63], dtype=np.uint64))
    with pytest.raises(TypeError):
        small.decode([1.0])
    with pytest.raises(TypeError):
        small.decode(np.array([1.5]))
    assert small.decode([]) == b"" and small.decode(np.array([], dtype=np.int64)) == b""
    assert small.decode((np.int64(104), True)) == b"h\x01"


@SETTINGS
@given(data=st.binary(max_size=60))
def test_bytes_that_are_not_utf8_name_the_offset(small, data):
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        with pytest.raises(ValueError, match=f"invalid UTF-8 at byte offset {e.start}$"):
            small.encode(data)
        with pytest.raises(ValueError, match=f"texts\\[1\\]: invalid UTF-8 at byte offset {e.start}$"):
            small.encode_many([b"fine", data])
        with pytest.raises(ValueError, match=f"texts\\[1\\]: invalid UTF-8 at byte offset {e.start}$"):
            small.encode_lists(["fine", data])
    else:
        assume(False)


def test_invalid_utf8_far_into_a_long_text(small):
    data = "中文".encode() * 5000 + b"\xff" + b"x" * 10
    with pytest.raises(ValueError, match=f"byte offset {6 * 5000}$"):
        small.encode(data)


def test_bad_vocabularies():
    alphabet = _bytes_alphabet()
    with pytest.raises(ValueError, match=r"merge 1: b'a' \+ b'z' \(ids 97, 122\) makes b'az', which is no token"):
        BpeCodec([*alphabet, b"ab"], [(97, 98), (97, 122)])
    with pytest.raises(ValueError, match="merge 0: .* not in 0..256"):
        BpeCodec([*alphabet, b"ab"], [(97, 999)])
    with pytest.raises(ValueError, match="tokens 97 and 256 are the same bytes: b'a'"):
        BpeCodec([*alphabet, b"a"])
    with pytest.raises(ValueError, match=r"tokens\[3\] is empty"):
        BpeCodec([b"a", b"b", b"c", b""])
    with pytest.raises(TypeError, match=r"tokens\[1\] must be bytes"):
        BpeCodec([b"a", "b"])
    with pytest.raises(ValueError, match="no tokens"):
        BpeCodec([])
    with pytest.raises(ValueError, match="unk_id 300"):
        BpeCodec(alphabet, unk_id=300)
    with pytest.raises(ValueError, match="no compiled pre-tokenizer"):
        BpeCodec(alphabet, pattern=99)
    with pytest.raises(ValueError, match="no compiled pre-tokenizer"):
        BpeCodec(alphabet, pattern=PIECES["regex"])
    with pytest.raises(TypeError, match="pattern must be"):
        BpeCodec(alphabet, pattern=3.5)
