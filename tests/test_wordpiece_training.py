"""WordPiece training (bbpe.wordpiece.training, on the pair-merge engine): the merges replayed
naively over the words ``pre_tokenize`` gives, each a pair of the best score at its step
(both scores); the likelihood training against the seed's algorithm written plainly here;
the frequency training against HF's ``WordPieceTrainer`` where HF is deterministic (its
vocabulary as a set, its continuing forms aside), and the trained tokenizer encoding as
HF's ``BertWordPieceTokenizer`` does with the same vocabulary.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from fractions import Fraction

import pytest
from conftest import SONG100, TANG300

import bbpe


def _words(tok: bbpe.WordPiece, lines: list[str]) -> Counter[str]:
    return Counter(word for line in lines for word, _ in tok.pre_tokenize(line))


def _segmented(words: Counter[str], vocab: set[str], prefix: str = "##") -> dict[str, list[str]]:
    """Each word as the trainer starts it: its first char, then the ## form of each next,
    chars outside the alphabet left out."""
    return {w: [c if i == 0 else prefix + c for i, c in enumerate(w) if c in vocab] for w in words}


def _scores(segs: dict[str, list[str]], words: Counter[str], score: str) -> dict[tuple[str, str], object]:
    freq: Counter[str] = Counter()
    pairs: Counter[tuple[str, str]] = Counter()
    for word, parts in segs.items():
        for t in parts:
            freq[t] += words[word]
        for pair in itertools.pairwise(parts):
            pairs[pair] += words[word]
    if score == "frequency":
        return dict(pairs)
    return {(a, b): Fraction(c, freq[a] * freq[b]) for (a, b), c in pairs.items()}


def _merge(segs: dict[str, list[str]], a: str, b: str, prefix: str = "##") -> None:
    new = a + b.removeprefix(prefix)
    for parts in segs.values():
        i = 0
        while i < len(parts) - 1:
            if parts[i] == a and parts[i + 1] == b:
                parts[i:i + 2] = [new]
            i += 1


def _lines() -> list[str]:
    return TANG300.read_text(encoding="utf-8").split("\n") + SONG100.read_text(encoding="utf-8").split("\n")[:200] + [
        "unaffable affable unhappiness happiness jumping jumped Jumps", "The quick brown fox jumps over the lazy dog",
        "don't stop believing; it's 12345 o'clock", "Ça va? Über straße café naïve"]


@pytest.mark.parametrize("handle_chinese_chars", [True, False])
def test_the_counted_words_are_the_pre_tokenizer_s(handle_chinese_chars):
    """Training counts the words ``pre_tokenize`` shows, each as often as it is met, in the
    order first met; str and bytes lines alike."""
    from bbpe.wordpiece.spec import BertNormalizer
    from bbpe.wordpiece.training import count_texts

    rng = random.Random(4)
    pieces = ["中文", "字", "Ça", "va?", "ÜBER", "café", "\u0301", "x" * 120, "😀", "[UNK]", "\x00", "\t", "ﬁ", "12,5"]
    lines = _lines() + [" ".join(rng.choices(pieces, k=rng.randint(0, 12))) for _ in range(300)]
    normalizer = BertNormalizer(handle_chinese_chars=handle_chinese_chars)
    tok = bbpe.WordPiece.from_vocab(["[UNK]", "a"], handle_chinese_chars=handle_chinese_chars)
    expected = _words(tok, lines)
    counted = count_texts([line if i % 2 else line.encode() for i, line in enumerate(lines)], normalizer)
    assert counted == expected
    assert list(counted) == list(expected)  # first met first
    again = count_texts(lines[:7], normalizer, dict(counted))  # counts add up across calls
    assert again == expected + _words(tok, lines[:7])


@pytest.mark.parametrize("score", ["likelihood", "frequency"])
def test_every_merge_is_a_best_pair_at_its_step(score):
    lines = _lines()
    tok = bbpe.WordPiece.train_from_iterator(lines, vocab_size=2400, min_frequency=2, score=score, show_progress=False)
    assert tok.merges and len(tok) <= 2400
    words = _words(tok, lines)
    vocab = set(tok.get_vocab())
    segs = _segmented(words, vocab)
    for a, b in tok.merges:
        scores = {pair: s for pair, s in _scores(segs, words, score).items()
                  if _scores(segs, words, "frequency")[pair] >= 2} if score == "likelihood" else {
            pair: s for pair, s in _scores(segs, words, score).items() if s >= 2}
        assert scores[a, b] == max(scores.values()), (a, b)
        _merge(segs, a, b)
    # the vocabulary: the special tokens, the alphabet, the ## forms, one new token per merge
    made = {a + b.removeprefix("##") for a, b in tok.merges}
    assert made <= vocab
    for word, parts in segs.items():  # every word encodes to its trained segmentation, or fewer parts
        assert len(tok.encode(word)) <= len(parts) or not parts


def seed_training(words: Counter[str], vocab_size: int, specials: list[str], min_frequency: int,
                  prefix: str = "##") -> tuple[list[str], list[tuple[str, str]]]:
    """The seed's likelihood training, plainly: the alphabet, the ## forms, then merge the
    pair of the greatest count(ab) / (count(a) * count(b)) (exact; ties: the smaller ids)."""
    vocab = list(dict.fromkeys(specials))
    vocab += sorted({c for w in words for c in w} - set(vocab))
    vocab += [prefix + c for c in sorted({c for w in words for c in w[1:]}) if prefix + c not in vocab]
    ids = {t: i for i, t in enumerate(vocab)}
    segs = {w: [c if i == 0 else prefix + c for i, c in enumerate(w)] for w in words}
    merges = []
    while len(vocab) < vocab_size:
        counts = _scores(segs, words, "frequency")
        scores = _scores(segs, words, "likelihood")
        candidates = [(s, -ids[a], -ids[b], a, b) for (a, b), s in scores.items() if counts[a, b] >= max(min_frequency, 1)]
        if not candidates:
            break
        _, _, _, a, b = max(candidates)
        new = a + b.removeprefix(prefix)
        if new not in ids:
            ids[new] = len(vocab)
            vocab.append(new)
        merges.append((a, b))
        _merge(segs, a, b, prefix)
    return vocab, merges


def test_likelihood_training_is_the_seed_s():
    rng = random.Random(3)
    for _ in range(25):
        alphabet = "abcde"[:rng.randint(2, 5)] + rng.choice(["", "中文"])
        lines = [" ".join("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 8)))
                          for _ in range(rng.randint(1, 6))) for _ in range(rng.randint(1, 30))]
        specials = rng.choice([[], ["[UNK]"], ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]])
        size, minimum = rng.randint(5, 60), rng.choice([0, 1, 2, 3])
        tok = bbpe.WordPiece.train_from_iterator(lines, vocab_size=size, min_frequency=minimum, special_tokens=specials,
                                                 limit_alphabet=None, show_progress=False)
        words = _words(tok, lines)
        vocab, merges = seed_training(words, size, specials, minimum)
        assert tok.merges == merges
        assert [tok.id_to_token(i) for i in range(len(tok))] == vocab


def test_frequency_training_is_hf_s_up_to_its_hash_order(tmp_path):
    """HF's WordPieceTrainer gives its ## forms ids in hash-map order (run to run), and its
    ties are decided by ids, so its vocabulary changes from run to run wherever two pairs
    tie (the pairs inside one word always do). On corpora without a tie, words of two chars
    with distinct counts, HF's vocabulary is one set on every run, and bbpe's is that set;
    bbpe's is the same on every run whatever the corpus."""
    tokenizers = pytest.importorskip("tokenizers", reason="the oracle is HF tokenizers: pip install 'bbpe[test]'")
    rng = random.Random(11)
    for k in range(6):
        words = list({rng.choice("abcdefgh") + rng.choice("abcdefgh中文") for _ in range(30)})
        counts = rng.sample(range(2, 400), len(words))
        lines = [w for w, c in zip(words, counts) for _ in range(c)] + ["x"] * 3
        rng.shuffle(lines)
        path = tmp_path / f"corpus{k}.txt"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        size = rng.randint(20, 50)
        hf = tokenizers.BertWordPieceTokenizer()
        hf.train([str(path)], vocab_size=size, min_frequency=2, limit_alphabet=1000, show_progress=False)
        tok = bbpe.WordPiece.train(path, vocab_size=size, min_frequency=2, score="frequency", show_progress=False)
        assert set(tok.get_vocab()) == set(hf.get_vocab())
        made = [a + b.removeprefix("##") for a, b in tok.merges]
        assert made == sorted(made, key=lambda w: -counts[words.index(w)])  # the most frequent words first
    lines = _lines()
    first = bbpe.WordPiece.train_from_iterator(lines, vocab_size=2000, score="frequency", show_progress=False)
    again = bbpe.WordPiece.train_from_iterator(lines, vocab_size=2000, score="frequency", show_progress=False)
    assert first.get_vocab() == again.get_vocab() and first.merges == again.merges


def test_the_trained_tokenizer_encodes_as_hf_with_its_vocabulary(tmp_path):
    tokenizers = pytest.importorskip("tokenizers", reason="the oracle is HF tokenizers: pip install 'bbpe[test]'")
    lines = _lines()
    tok = bbpe.WordPiece.train_from_iterator(lines, vocab_size=3000, show_progress=False)
    tok.save(tmp_path / "vocab.txt")
    hf = tokenizers.BertWordPieceTokenizer(str(tmp_path / "vocab.txt"))
    assert [tok(line)["input_ids"] for line in lines] == [e.ids for e in hf.encode_batch(lines)]
    assert tok.special_tokens == {t: hf.token_to_id(t) for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")}
    files = bbpe.WordPiece.train(TANG300, vocab_size=3000, show_progress=False)
    assert files.get_vocab() == bbpe.WordPiece.train_from_iterator(
        TANG300.read_text(encoding="utf-8").splitlines(keepends=True), vocab_size=3000, show_progress=False).get_vocab()


def test_bad_arguments():
    with pytest.raises(ValueError, match="score"):
        bbpe.WordPiece.train_from_iterator(["a"], score="best")
    with pytest.raises(TypeError, match="vocab_size"):
        bbpe.WordPiece.train_from_iterator(["a"], vocab_size="10")
    with pytest.raises(ValueError, match="no token to train"):
        bbpe.WordPiece.train_from_iterator(["   "], special_tokens=[], show_progress=False)
    with pytest.raises(ValueError, match=r"texts: line 2: invalid UTF-8 at byte offset 1"):
        bbpe.WordPiece.train_from_iterator([b"ok", b"a\xff"], show_progress=False)


def test_cli_trains_a_wordpiece(tmp_path):
    from cli_runner import run_bbpe

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(_lines()) + "\n", encoding="utf-8")
    done = run_bbpe("train", "--model", "wordpiece", corpus, "-n", 1500, "-o", tmp_path / "vocab.txt", "-q")
    assert done.returncode == 0, done.stderr
    tok = bbpe.WordPiece.train(corpus, vocab_size=1500, show_progress=False)
    assert bbpe.load(tmp_path / "vocab.txt").get_vocab() == tok.get_vocab()
    done = run_bbpe("encode", "-m", tmp_path / "vocab.txt", stdin="Unaffable 床前明月光\n".encode())
    assert done.stdout.split() == [str(i).encode() for i in tok.encode("Unaffable 床前明月光")]
    done = run_bbpe("train", "--model", "wordpiece", corpus, "-n", 1500, "--score", "frequency", "--cased", "-o",
                    tmp_path / "t.json", "-q")
    assert done.returncode == 0, done.stderr
    cased = bbpe.WordPiece.train(corpus, vocab_size=1500, score="frequency", lowercase=False, show_progress=False)
    assert bbpe.load(tmp_path / "t.json").get_vocab() == cased.get_vocab()
    for args, message in ((("--model", "bpe", "--score", "frequency"), b"--score is an option of --model wordpiece"),
                          (("--model", "wordpiece", "--pre-tokenizer", "whitespace"), b"--pre-tokenizer is an option"),
                          (("--model", "wordpiece", "-o", tmp_path / "x.bin"), b"vocab.txt (.txt) or a tokenizer")):
        done = run_bbpe("train", corpus, *args)
        assert done.returncode != 0 and message in done.stderr, done.stderr


@pytest.mark.parametrize("suffix", [".txt", ".json"])
def test_every_cli_verb_takes_a_wordpiece(tmp_path, suffix):
    """encode, decode, count, vocab and info read a vocab.txt and a WordPiece tokenizer.json;
    trainenc and special, XBBPE's own, say so."""
    from cli_runner import run_bbpe

    tok = bbpe.WordPiece.train_from_iterator(_lines(), vocab_size=600, show_progress=False)
    model = tmp_path / f"model{suffix}"
    tok.save(model)
    lines = ["Unaffable 床前明月光", "jumped over the lazy dog"]
    (tmp_path / "in.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")

    def ok(*args, stdin=None) -> str:
        done = run_bbpe(*args, stdin=stdin)
        assert done.returncode == 0, done.stderr
        return done.stdout.decode()

    ids = ok("encode", "-m", model, tmp_path / "in.txt")
    assert [list(map(int, line.split())) for line in ids.splitlines()] == [tok.encode(line) for line in lines]
    assert ok("decode", "-m", model, stdin=ids.encode()).splitlines() == [tok.decode(tok.encode(x)) for x in lines]
    assert list(map(int, ok("count", "-m", model, tmp_path / "in.txt").split())) == [len(tok.encode(x)) for x in lines]
    rows = ok("vocab", model).splitlines()
    assert rows == [f"{i}\t{len(k)}\t{k.hex()}" for i, k in enumerate(tok.keys)]
    info = ok("info", model)
    assert "model             WordPiece" in info and f"{len(tok):,} ids" in info and "[UNK] 1" in info
    assert "normalizer        BERT's: lowercase, strip_accents, clean_text, handle_chinese_chars" in info
    assert "prefix '##', unknown token '[UNK]', at most 100 chars" in info
    for verb in ("trainenc", "special"):
        done = run_bbpe(verb, model)
        assert done.returncode != 0 and b"holds a WordPiece model" in done.stderr, done.stderr
