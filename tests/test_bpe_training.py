"""bbpe.BPE.train against HF tokenizers' BpeTrainer: the same tokenizer.json vocabulary and
merges, and the same ids (and offsets) on every line, for HF's ByteLevel pre-tokenizer, for a
tiktoken pattern (HF's Split then ByteLevel) and for HF's Whitespace (merges over chars, no
byte fallback), at several vocabulary sizes, with min_frequency,
special tokens, limit_alphabet and max_token_length; train_from_iterator and
train_from_counts give what training on the file gives."""

from __future__ import annotations

import json
import random
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from cli_runner import run_bbpe
from conftest import SONG100, TANG300
from hypothesis import given, settings
from hypothesis import strategies as st

import bbpe
from bbpe.bpe import _pretokenize as pt
from bbpe.bpe.byte_level import to_text
from bbpe.bpe.onig import to_onig

tokenizers = pytest.importorskip("tokenizers", reason="HF tokenizers (the oracle) is not installed")
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

LARGE = Path("/tmp/bbpe-corpora")  # tools' corpora, when built (not in CI): their first lines
PRE_TOKENIZERS = ["byte_level", "cl100k_base", "whitespace"]


def _hf_tokenizer(pre_tokenizer: str) -> Tokenizer:
    tok = Tokenizer(models.BPE())
    if pre_tokenizer == "whitespace":  # no ByteLevel: a vocabulary of chars, no decoder
        tok.pre_tokenizer = pre_tokenizers.Whitespace()
        return tok
    if pre_tokenizer == "byte_level":
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    else:
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            # the pattern in Oniguruma's dialect, as bbpe writes it into tokenizer.json (HF
            # would read cl100k's \p{N}{1,3}+ as any run of digits: bbpe.bpe.onig)
            pre_tokenizers.Split(Regex(to_onig(pt.TIKTOKEN_PATTERNS[pre_tokenizer])), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    return tok


def _hf_trainer(pre_tokenizer: str, **options) -> trainers.BpeTrainer:
    """BpeTrainer with bbpe's default initial alphabet: the 256 bytes for a byte-level
    pre-tokenizer (as HF's ByteLevelBPETokenizer), none for Whitespace (BpeTrainer's)."""
    if pre_tokenizer != "whitespace":
        options.setdefault("initial_alphabet", pre_tokenizers.ByteLevel.alphabet())
    return trainers.BpeTrainer(show_progress=False, **options)


def hf_train(files: list[Path], pre_tokenizer: str = "byte_level", **options) -> Tokenizer:
    tok = _hf_tokenizer(pre_tokenizer)
    tok.train([str(f) for f in files], _hf_trainer(pre_tokenizer, **options))
    return tok


def _model(document: dict) -> tuple[dict, list]:
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in document["model"]["merges"]]
    return document["model"]["vocab"], merges


def assert_same(ours: bbpe.BPE, theirs: Tokenizer, lines: list[str], tmp_path: Path, offsets: bool = True) -> None:
    """Same vocabulary and merges in the saved files, same ids on every line (and offsets on
    every tenth, unless the lines hold chars the alphabet lacks: test_whitespace_unknown_chars);
    bbpe's file loads in HF, and HF's in bbpe, to the same ids."""
    path = tmp_path / "bbpe.json"
    ours.save(path)
    saved = json.loads(path.read_text(encoding="utf-8"))
    expected = json.loads(theirs.to_str())
    vocab, merges = _model(saved)
    hf_vocab, hf_merges = _model(expected)
    assert vocab == hf_vocab
    assert merges == hf_merges
    assert [t["content"] for t in saved["added_tokens"]] == [t["content"] for t in expected["added_tokens"]]
    loaded = Tokenizer.from_file(str(path))
    hf_path = tmp_path / "hf.json"
    theirs.save(str(hf_path))
    hf_file = bbpe.load(hf_path)  # HF's own file, read by bbpe
    for i, line in enumerate(lines):
        encoding = theirs.encode(line)
        assert ours.encode(line) == encoding.ids, line
        assert loaded.encode(line).ids == encoding.ids, line
        assert hf_file.encode(line) == encoding.ids, line
        if offsets and i % 10 == 0:
            assert [tuple(span) for span in ours(line, return_offsets_mapping=True)["offset_mapping"]] == \
                encoding.offsets, line


def _lines(path: Path, limit: int | None = None) -> list[str]:
    with open(path, encoding="utf-8", newline="") as f:
        lines = f.read().split("\n")
    return lines[:limit]


def _random_corpus(rng: random.Random, path: Path) -> Path:
    """Mixed Chinese and English lines with digits, punctuation, runs of spaces, tabs, CRLF,
    emoji, accents and contractions: what the pre-tokenizers cut differently."""
    words = ["the", "The", "don't", "we're", "café", "naïve", "2024", "3.14", "x1", "GPT-4", "Hello", "world",
             "中文", "分词", "模型", "训练", "。", "，", "“", "”", "！", "😀", "👍🏽", "\t", "  ", "   ", "...", "--",
             "東京", "한국어", "Ελλάδα", "日本語です", "$", "%", "'s", "'LL"]
    lines = []
    for _ in range(rng.randint(50, 400)):
        n = rng.randint(0, 25)
        line = "".join(rng.choice(words) + rng.choice(["", " ", " ", "", "\u3000"]) for _ in range(n))
        lines.append(line + rng.choice(["\n", "\n", "\r\n", "  \n"]))
    path.write_text("".join(lines), encoding="utf-8", newline="")
    return path


@pytest.mark.parametrize("pre_tokenizer", PRE_TOKENIZERS)
@pytest.mark.parametrize("vocab_size", [300, 1000, 4000])
def test_shared_corpora(pre_tokenizer, vocab_size, tmp_path):
    files = [TANG300, SONG100]
    ours = bbpe.BPE.train(files, vocab_size=vocab_size, pre_tokenizer=pre_tokenizer, show_progress=False)
    theirs = hf_train(files, pre_tokenizer, vocab_size=vocab_size)
    assert_same(ours, theirs, _lines(TANG300) + _lines(SONG100), tmp_path)


OPTIONS = [
    {"min_frequency": 3},
    {"min_frequency": 40},
    {"special_tokens": ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]},
    {"special_tokens": ["<|endoftext|>", "<|中文|>", "a", "the"]},  # specials that a char or a merge spells
    {"max_token_length": 3},
    {"max_token_length": 6, "min_frequency": 2},
    {"initial_alphabet": []},
    {"initial_alphabet": ["a", "Ġ", "ä"], "special_tokens": ["<s>"]},
]


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items())[:40])
@pytest.mark.parametrize("pre_tokenizer", PRE_TOKENIZERS)
def test_options(options, pre_tokenizer, tmp_path):
    files = [TANG300, _random_corpus(random.Random(len(str(options))), tmp_path / "random.txt")]
    ours = bbpe.BPE.train(files, vocab_size=2500, pre_tokenizer=pre_tokenizer, show_progress=False, **options)
    theirs = hf_train(files, pre_tokenizer, vocab_size=2500, **options)
    assert_same(ours, theirs, _lines(files[1]) + _lines(TANG300)[:200], tmp_path)


def _char_counts(files: list[Path], pre_tokenizer: str) -> Counter:
    pre = _hf_tokenizer(pre_tokenizer).pre_tokenizer
    counts: Counter = Counter()
    for f in files:
        for line in _lines(f):
            for word, _ in pre.pre_tokenize_str(line + "\n"):
                counts.update(word)
    return counts


def test_limit_alphabet(tmp_path):
    """limit_alphabet keeps the most frequent chars. At a limit where two chars' counts tie,
    HF keeps one of them in hash-map order, differently from run to run: the limits here
    are where the counts differ."""
    files = [_random_corpus(random.Random(5), tmp_path / "random.txt"), TANG300]
    counts = sorted(_char_counts(files, "byte_level").values(), reverse=True)
    limits = [k for k in range(20, len(counts) - 1, 37) if counts[k - 1] != counts[k]][:4]
    assert limits
    for limit in limits:
        ours = bbpe.BPE.train(files, vocab_size=1500, limit_alphabet=limit, initial_alphabet=[],
                              show_progress=False)
        theirs = hf_train(files, vocab_size=1500, limit_alphabet=limit, initial_alphabet=[])
        assert_same(ours, theirs, _lines(files[0]), tmp_path, offsets=False)
        for line in _lines(files[0])[:300]:  # each token spans its bytes, whatever was dropped between them
            spans = ours(line, return_offsets_mapping=True)["offset_mapping"]
            for kid, (a, b) in zip(ours.encode(line), spans, strict=True):
                text = iter(line[a:b].encode())
                assert all(byte in text for byte in ours.token_bytes(kid)), line  # a subsequence


@pytest.mark.parametrize("seed", range(6))
def test_random_corpora(seed, tmp_path):
    rng = random.Random(seed)
    corpus = _random_corpus(rng, tmp_path / "random.txt")
    pre_tokenizer = PRE_TOKENIZERS[seed % len(PRE_TOKENIZERS)]
    vocab_size = rng.choice([260, 400, 900, 3000])
    ours = bbpe.BPE.train(corpus, vocab_size=vocab_size, pre_tokenizer=pre_tokenizer, show_progress=False)
    theirs = hf_train([corpus], pre_tokenizer, vocab_size=vocab_size)
    assert_same(ours, theirs, _lines(corpus), tmp_path)


@pytest.mark.parametrize("name", ["zh-large", "en-large", "mixed"])
def test_large_corpora(name, tmp_path):
    path = LARGE / f"{name}.txt"
    if not path.exists():
        pytest.skip(f"{path} is not there (bash ../shared/corpora/build.sh {LARGE})")
    part = tmp_path / f"{name}.txt"
    part.write_text("\n".join(_lines(path, 20000)), encoding="utf-8", newline="")
    for pre_tokenizer, vocab_size in (("byte_level", 8000), ("cl100k_base", 5000), ("whitespace", 8000)):
        ours = bbpe.BPE.train(part, vocab_size=vocab_size, pre_tokenizer=pre_tokenizer, show_progress=False)
        theirs = hf_train([part], pre_tokenizer, vocab_size=vocab_size)
        assert_same(ours, theirs, _lines(part)[::20], tmp_path)


def test_iterator_and_counts_equal_files(tmp_path):
    corpus = _random_corpus(random.Random(9), tmp_path / "random.txt")
    lines = [line + "\n" for line in _lines(corpus)[:-1]]
    options = {"vocab_size": 1200, "special_tokens": ["<s>"], "min_frequency": 2, "show_progress": False}
    from_file = bbpe.BPE.train(corpus, **options)
    assert bbpe.BPE.train_from_iterator(lines, **options) == from_file
    assert bbpe.BPE.train_from_iterator(iter(lines), **options) == from_file
    pre = pre_tokenizers.ByteLevel(add_prefix_space=False)
    counts = Counter(word for line in lines for word, _ in pre.pre_tokenize_str(line))
    assert bbpe.BPE.train_from_counts(counts, **options) == from_file
    assert bbpe.BPE.train_from_counts(list(counts.items()), **options) == from_file
    as_bytes = Counter({bytes(to_bytes_of(w)): c for w, c in counts.items()})
    assert bbpe.BPE.train_from_counts(as_bytes, **options) == from_file
    halves = list(counts.items())
    assert bbpe.BPE.train_from_counts(halves[::2] + halves[1::2] + [(halves[0][0], 0)], **options) == from_file


def to_bytes_of(word: str) -> bytes:
    from bbpe.bpe.byte_level import to_bytes

    data = to_bytes(word)
    assert data is not None and to_text(data) == word
    return data


def test_progress(tmp_path):
    reports = []
    bbpe.BPE.train(TANG300, vocab_size=600, show_progress=lambda *r: reports.append(r))
    stages = [r[0] for r in reports]
    assert stages[0] == "scan" and "merge" in stages
    merge = [r for r in reports if r[0] == "merge"]
    assert merge[-1][1] == merge[-1][2] == 600 - 256


def test_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="pre_tokenizer"):
        bbpe.BPE.train(TANG300, vocab_size=300, pre_tokenizer="gpt5", show_progress=False)
    with pytest.raises(TypeError, match="vocab_size"):
        bbpe.BPE.train(TANG300, vocab_size="300", show_progress=False)
    with pytest.raises(ValueError, match="min_frequency"):
        bbpe.BPE.train(TANG300, vocab_size=300, min_frequency=-1, show_progress=False)
    with pytest.raises(ValueError, match="initial_alphabet.*byte-level"):
        bbpe.BPE.train(TANG300, vocab_size=300, initial_alphabet=["中"], show_progress=False)
    with pytest.raises(ValueError, match="initial_alphabet.*surrogate"):
        bbpe.BPE.train(TANG300, vocab_size=300, initial_alphabet=["\ud800"], pre_tokenizer="whitespace",
                       show_progress=False)
    with pytest.raises(ValueError, match="not text"):
        bbpe.BPE.train_from_counts({"a\ud800": 3}, vocab_size=300, pre_tokenizer="whitespace", show_progress=False)
    with pytest.raises(ValueError, match="special_tokens: .*same bytes"):  # HF keeps both
        bbpe.BPE.train(TANG300, vocab_size=2000, special_tokens=["明月"], show_progress=False)
    with pytest.raises(ValueError, match=r"special_tokens\[1\]"):
        bbpe.BPE.train(TANG300, vocab_size=300, special_tokens=["<s>", ""], show_progress=False)
    bad = tmp_path / "bad.txt"
    bad.write_bytes("好的\n".encode() + b"ok \xff\n")
    with pytest.raises(ValueError, match=r"bad\.txt: byte 10: not UTF-8"):
        bbpe.BPE.train(bad, vocab_size=300, show_progress=False)
    with pytest.raises(FileNotFoundError):
        bbpe.BPE.train(tmp_path / "missing.txt", vocab_size=300, show_progress=False)
    with pytest.raises(ValueError, match="no file"):
        bbpe.BPE.train([], vocab_size=300, show_progress=False)
    with pytest.raises(TypeError, match="one str"):
        bbpe.BPE.train_from_iterator("some text", vocab_size=300, show_progress=False)
    with pytest.raises(ValueError, match=r"texts\[1\]: char 1"):
        bbpe.BPE.train_from_iterator(["ok", "a\ud800"], vocab_size=300, show_progress=False)
    with pytest.raises(ValueError, match="not byte-level text"):
        bbpe.BPE.train_from_counts({" hello": 3}, vocab_size=300, show_progress=False)
    with pytest.raises(ValueError, match="not a count"):
        bbpe.BPE.train_from_counts({"hello": -3}, vocab_size=300, show_progress=False)
    with pytest.raises(ValueError, match="pair"):
        bbpe.BPE.train_from_counts(["hello"], vocab_size=300, show_progress=False)


# --- the command line -----------------------------------------------------------------------

def _cli(*args) -> subprocess.CompletedProcess:
    r = run_bbpe(*args)
    r.stdout, r.stderr = r.stdout.decode(), r.stderr.decode()
    return r


def test_cli_train_and_count_words(tmp_path):
    """bbpe train --model bpe writes HF's file; count-words + --counts trains the same; the
    counts of two files add up."""
    out = tmp_path / "tokenizer.json"
    r = _cli("train", "--model", "bpe", TANG300, SONG100, "--vocab-size", 1500, "--special-token", "<s>",
             "--special-token", "</s>", "--min-frequency", 2, "-o", out)
    assert r.returncode == 0, r.stderr
    theirs = hf_train([TANG300, SONG100], vocab_size=1500, special_tokens=["<s>", "</s>"], min_frequency=2)
    assert_same(bbpe.load(out), theirs, _lines(TANG300)[:300], tmp_path)
    for name, files in (("a.tsv", [TANG300]), ("b.tsv", [SONG100]), ("both.tsv", [TANG300, SONG100])):
        r = _cli("count-words", *files, "-o", tmp_path / name, "-q")
        assert r.returncode == 0, r.stderr
    both = dict(line.split("\t") for line in (tmp_path / "both.tsv").read_text(encoding="utf-8").splitlines())
    added: Counter = Counter()
    for name in ("a.tsv", "b.tsv"):
        for line in (tmp_path / name).read_text(encoding="utf-8").splitlines():
            word, count = line.split("\t")
            added[word] += int(count)
    assert {w: int(c) for w, c in both.items()} == dict(added)
    assert bbpe.BPE.count_words([TANG300, SONG100], show_progress=False) == {w: int(c) for w, c in both.items()}
    again = tmp_path / "again.json"
    r = _cli("train", "--model", "bpe", "--counts", tmp_path / "a.tsv", "--counts", tmp_path / "b.tsv",
             "--vocab-size", 1500, "--special-token", "<s>", "--special-token", "</s>", "--min-frequency", 2,
             "-o", again, "-q")
    assert r.returncode == 0, r.stderr
    assert again.read_bytes() == out.read_bytes()


def test_cli_errors(tmp_path):
    cases = [
        (["train", "--model", "bpe", TANG300, "--gbk"], "--gbk is an option of --model xbbpe"),
        (["train", TANG300, "--special-token", "<s>"], "--special-token is an option of --model bpe"),
        (["train", "--model", "bpe"], "corpus files or on --counts"),
        (["train", "--model", "bpe", "--pre-tokenizer", "gpt9", TANG300], "pre_tokenizer"),
        (["train", "--model", "bpe", "--counts", tmp_path / "bad.tsv"], "bad.tsv: line 2"),
        (["train", "--model", "bpe", TANG300, "-o", tmp_path / "x.tiktoken"], "tokenizer.json"),
        (["count-words", tmp_path / "missing.txt", "-o", tmp_path / "x.tsv"], "missing.txt"),
    ]
    (tmp_path / "bad.tsv").write_text("Ġthe\t3\nno count here\n", encoding="utf-8")
    for args, message in cases:
        r = _cli(*args)
        assert r.returncode != 0 and message in r.stderr, (args, r.stderr)
    assert not (tmp_path / "x.tsv").exists() and not (tmp_path / "tokenizer.json").exists()


def test_limit_alphabet_ties():
    """At a limit inside a run of chars of equal count HF keeps some of them in hash-map
    order (another set on each run); bbpe keeps the smaller code points, and HF's kept
    chars are always from that run."""
    texts = ["abcdefghij", "abcdefghij", "klmnopqrst"]  # k..t seen once each: 3 of them fit
    ours = bbpe.BPE.train_from_iterator(texts, vocab_size=40, limit_alphabet=13, initial_alphabet=[],
                                        show_progress=False)
    assert sorted(c for c in ours.get_vocab() if len(c) == 1) == list("abcdefghijklm")
    tok = _hf_tokenizer("byte_level")
    tok.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=40, limit_alphabet=13, show_progress=False))
    kept = {c for c in json.loads(tok.to_str())["model"]["vocab"] if len(c) == 1}
    assert set("abcdefghij") <= kept and len(kept - set("abcdefghij")) == 3 and kept <= set("abcdefghijklmnopqrst")


@settings(max_examples=150, deadline=None)
@given(texts=st.lists(st.lists(st.sampled_from(list("ab c\n\t'sS1中文。😀é") + ["\r\n", "  "]), max_size=30)
                      .map("".join), max_size=25),
       vocab_size=st.integers(250, 330), min_frequency=st.sampled_from([0, 0, 2]),
       pre_tokenizer=st.sampled_from(PRE_TOKENIZERS))
def test_generated_texts(texts, vocab_size, min_frequency, pre_tokenizer):
    """train_from_iterator on any texts (empty ones, whitespace runs, CRLF, contractions)
    makes HF's vocabulary and merges; where HF's vocabulary is empty (Whitespace over no
    word), bbpe refuses to make a model that drops every char."""
    tok = _hf_tokenizer(pre_tokenizer)
    tok.train_from_iterator(texts, _hf_trainer(pre_tokenizer, vocab_size=vocab_size, min_frequency=min_frequency))
    expected = _model(json.loads(tok.to_str()))
    if not expected[0]:
        with pytest.raises(ValueError, match="no token to train"):
            bbpe.BPE.train_from_iterator(texts, vocab_size=vocab_size, pre_tokenizer=pre_tokenizer,
                                         show_progress=False)
        return
    ours = bbpe.BPE.train_from_iterator(texts, vocab_size=vocab_size, min_frequency=min_frequency,
                                        pre_tokenizer=pre_tokenizer, show_progress=False)
    assert _model(json.loads(ours.to_bytes(format="json"))) == expected


def test_options_as_iterators_and_checked_first():
    """special_tokens and initial_alphabet may be iterators (read once); bad options fail
    before the corpus is read."""
    texts = ["abcabc ab\n"] * 5
    lists = bbpe.BPE.train_from_iterator(texts, vocab_size=300, special_tokens=["<s>"], initial_alphabet=list("abc"),
                                         show_progress=False)
    assert bbpe.BPE.train_from_iterator(texts, vocab_size=300, special_tokens=iter(["<s>"]),
                                        initial_alphabet=iter("abc"), show_progress=False) == lists

    def never_read():
        raise AssertionError("the texts were read before the options were checked")
        yield "x"

    with pytest.raises(ValueError, match="vocab_size"):
        bbpe.BPE.train_from_iterator(never_read(), vocab_size=-5, show_progress=False)


# --- HF's Whitespace: merges over chars, no byte fallback -----------------------------------

def test_whitespace_counts_and_cli_equal_files(tmp_path):
    """Counted words are text under "whitespace": train_from_counts on HF's own pre-tokenized
    words, and count-words then --counts on the command line, give what the files give."""
    corpus = _random_corpus(random.Random(11), tmp_path / "random.txt")
    options = {"vocab_size": 900, "special_tokens": ["[UNK]"], "pre_tokenizer": "whitespace", "show_progress": False}
    from_file = bbpe.BPE.train(corpus, **options)
    words = Counter(word for line in _lines(corpus) for word, _ in
                    pre_tokenizers.Whitespace().pre_tokenize_str(line + "\n"))
    assert bbpe.BPE.count_words(corpus, pre_tokenizer="whitespace", show_progress=False) == dict(words)
    assert bbpe.BPE.train_from_counts(words, **options) == from_file
    counts, out = tmp_path / "counts.tsv", tmp_path / "tok.json"
    assert _cli("count-words", corpus, "--pre-tokenizer", "whitespace", "-o", counts, "-q").returncode == 0
    r = _cli("train", "--model", "bpe", "--counts", counts, "--pre-tokenizer", "whitespace", "--vocab-size", 900,
             "--special-token", "[UNK]", "-o", out, "-q")
    assert r.returncode == 0, r.stderr
    assert bbpe.load(out) == from_file


@pytest.mark.parametrize("fuse_unk", [False, True])
def test_whitespace_unknown_chars(fuse_unk, tmp_path):
    """Chars the vocabulary lacks: HF drops them, or with an unk token gives one per char
    (one per run inside a piece with fuse_unk); bbpe gives the same ids, for HF's own file
    and for the file bbpe writes, and HF's offsets with an unk token. Where a char is
    dropped, HF's offsets after it in its piece are shifted left by it (model.rs,
    merge_word, counts only the chars it keeps): bbpe's are where each token's text is."""
    trained = hf_train([TANG300], "whitespace", vocab_size=600, special_tokens=["[UNK]"], limit_alphabet=300)
    texts = ["床前明月光，疑是地上霜。", "ẞtrange ∰∰ chars ok", "无人知是荔枝来 ∰∰x∰ [UNK] a∰∰", "  ∰ ", "",
             "中国的𝕏 😀😀。", "∰[UNK]∰"]
    for unk in (None, "[UNK]"):
        document = json.loads(trained.to_str())
        document["model"]["unk_token"], document["model"]["fuse_unk"] = unk, fuse_unk
        path = tmp_path / "unk.json"
        path.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
        theirs, ours = Tokenizer.from_file(str(path)), bbpe.load(path)
        written = tmp_path / "written.json"
        ours.save(written)
        again = Tokenizer.from_file(str(written))
        for text in texts:
            expected = theirs.encode(text)
            assert ours.encode(text) == expected.ids == again.encode(text).ids, (unk, text)
            spans = [tuple(s) for s in ours(text, return_offsets_mapping=True)["offset_mapping"]]
            if unk is not None:
                assert spans == expected.offsets, (unk, text)
            else:
                tokens = [ours.id_to_token(i) for i in expected.ids]
                assert [text[a:b] for a, b in spans] == tokens, (unk, text)


def test_whitespace_files_refused(tmp_path):
    """A Whitespace BPE file with a stage bbpe does not apply is refused, naming it."""
    base = json.loads(hf_train([TANG300], "whitespace", vocab_size=400).to_str())
    cases = [
        ({"decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}},
         "decoder"),
        ({"pre_tokenizer": {"type": "WhitespaceSplit"}}, "WhitespaceSplit"),
        ({"model": {**base["model"], "end_of_word_suffix": "</w>"}}, "end_of_word_suffix"),
        ({"model": {**base["model"], "unk_token": "<nope>"}}, "unk_token"),
    ]
    for change, message in cases:
        path = tmp_path / "bad.json"
        path.write_text(json.dumps({**base, **change}), encoding="utf-8")
        with pytest.raises(ValueError, match=message):
            bbpe.load(path)


def test_memory_running_out_is_named(monkeypatch):
    """Memory that runs out while training is one InsufficientMemoryError naming the stage
    (the kernels raise MemoryError when an array cannot be had, on the merge thread too,
    which train_merges raises again on the caller's), never a crash; the memory check
    refuses a corpus that would not fit before reading it."""
    from bbpe.bpe import training
    from bbpe.common import resources
    from bbpe.pairmerge import kernels

    def no_memory(*args, **kwargs):
        raise MemoryError("Allocation failed (probably too large).")  # numba's, from np.empty

    monkeypatch.setattr(kernels.kernels, "train_merges", no_memory)
    with pytest.raises(bbpe.InsufficientMemoryError, match=r"tang300.txt: memory ran out while merging"):
        bbpe.BPE.train(TANG300, vocab_size=600, show_progress=False)
    monkeypatch.undo()
    need = resources.training_estimate(TANG300.stat().st_size, per_byte=training.BYTES_PER_CORPUS_BYTE)
    monkeypatch.setattr(resources, "available_memory", lambda: need - 1)
    with pytest.raises(bbpe.InsufficientMemoryError, match=r"tang300.txt: training on .* may need up to"):
        bbpe.BPE.train(TANG300, vocab_size=600, show_progress=False)
    assert len(bbpe.BPE.train(TANG300, vocab_size=600, show_progress=False, memory_check=False)) == 600
