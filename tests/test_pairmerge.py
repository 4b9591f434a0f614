"""The pair-merge engine (bbpe.pairmerge) against the plain-Python reference of HF's trainer
(tests/reference/pair_merge.py): the same merges in the same order, on random words over
small alphabets, where counts tie all the time, pairs overlap ("aaaa"), merges spell
special tokens, and max_token_length leaves counts negative.

A merge spelling a token an earlier merge made (which HF's trainer handles, and so does the
engine) did not happen in thousands of random corpora: merges apply to every word left to
right, so "ab" + "c" and "a" + "bc" do not both occur."""

from __future__ import annotations

import random

import numpy as np
import pytest
from reference import pair_merge as reference

from bbpe.pairmerge import kernels as compiled
from bbpe.pairmerge.train import WordTypes, train_merges


def _random_case(rng: random.Random) -> dict:
    alphabet = [chr(ord("a") + i) for i in range(rng.randint(1, 6))]
    if rng.random() < 0.2:
        alphabet += ["\u4e2d", "\U0001f600"]  # code points past the BMP spell tokens too
    counts: dict[str, int] = {}
    for _ in range(rng.randint(1, 40)):
        word = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14)))
        counts[word] = counts.get(word, 0) + rng.choice([1, 1, 2, 3, 7])
    specials = rng.choice([[], ["ab"], ["<s>", "abc"], ["a"]])
    tokens = list(dict.fromkeys(specials + sorted(set("".join(counts)) | {alphabet[0]})))
    ids = {t: i for i, t in enumerate(tokens)}
    return {"words": [[ids[c] for c in w] for w in counts], "counts": list(counts.values()), "tokens": tokens,
            "vocab_size": rng.randint(1, 70), "min_frequency": rng.choice([0, 0, 2, 5]),
            "max_token_length": rng.choice([None, None, 2, 3, 5])}


def _reference(case: dict, tie: str) -> list[tuple[int, int, int]]:
    return reference.merge_loop([list(w) for w in case["words"]], case["counts"], list(case["tokens"]),
                                {t: i for i, t in enumerate(case["tokens"])}, case["vocab_size"],
                                case["min_frequency"], case["max_token_length"], tie=tie)


def _engine(case: dict, tie: str) -> tuple[list[tuple[int, int, int]], int, WordTypes]:
    words = WordTypes.from_lists(case["words"], case["counts"])
    merges, n_tokens = train_merges(words, case["tokens"], case["vocab_size"], min_frequency=case["min_frequency"],
                                    max_token_length=case["max_token_length"], tie=tie)
    return [tuple(m) for m in merges.tolist()], n_tokens, words


@pytest.mark.parametrize("tie", ["ids", "first_seen"])
def test_engine_is_the_reference(tie):
    rng = random.Random(7 if tie == "ids" else 8)
    seen = {"old token": 0, "stopped by count": 0}
    for _ in range(600):
        case = _random_case(rng)
        expected = _reference(case, tie)
        got, n_tokens, _ = _engine(case, tie)
        assert got == expected, case
        made = {m[2] for m in got if m[2] >= len(case["tokens"])}
        assert n_tokens == len(case["tokens"]) + len(made)
        seen["old token"] += any(new < len(case["tokens"]) for _, _, new in got)
        seen["stopped by count"] += n_tokens < case["vocab_size"]
    assert all(seen.values()), seen  # the cases reach every path


def test_words_end_as_their_tokens():
    """Each word's symbols, rewritten in place, spell the word."""
    rng = random.Random(3)
    for _ in range(100):
        case = _random_case(rng)
        case["max_token_length"] = None
        got, _, words = _engine(case, "ids")
        tokens = list(case["tokens"])
        for a, b, new in got:
            if new == len(tokens):
                tokens.append(tokens[a] + tokens[b])
        for w, word in enumerate(case["words"]):
            spelled = "".join(tokens[s] for s in words.symbols[words.starts[w]:words.starts[w] + len(word)]
                              if s >= 0)
            assert spelled.startswith("".join(case["tokens"][s] for s in word)[:len(spelled)])


def test_progress_reports_tokens_added():
    case = {"words": [[0, 1, 0, 1, 0, 1, 2]] * 1, "counts": [5], "tokens": ["a", "b", "c"]}
    reports = []
    words = WordTypes.from_lists(case["words"], case["counts"])
    _, n_tokens = train_merges(words, case["tokens"], 100, progress=lambda *r: reports.append(r))
    assert reports[0] == ("merge", 0, 7)  # the most tokens 7 symbols can make, not vocab_size's 97
    assert reports[-1] == ("merge", n_tokens - 3, n_tokens - 3)
    assert [r[1] for r in reports] == sorted(r[1] for r in reports)


def test_bad_input():
    """What the kernels would read out of bounds is refused first."""
    words = WordTypes.from_lists([[0, 1]], [1])
    with pytest.raises(ValueError, match="tie"):
        train_merges(words, ["a", "b"], 10, tie="largest")
    for lists, counts, match in (([[0, 2]], [1], "symbol 2"), ([[0, -1]], [1], "symbol -1"),
                                 ([[0, 1]], [0], "count 0"), ([[0, 1]], [1, 2], "2 counts for 1")):
        with pytest.raises(ValueError, match=match):
            train_merges(WordTypes.from_lists(lists, counts), ["a", "b"], 10)
    broken = WordTypes.from_lists([[0, 1], [1]], [1, 1])
    broken.starts[1] = 5
    with pytest.raises(ValueError, match="starts"):
        train_merges(broken, ["a", "b"], 10)


def test_jit_kernels_agree_with_compiled_ones():
    """The JIT fallback gives what the compiled kernels give (the same function when the
    build made none)."""
    rng = random.Random(11)
    jit = compiled.jit_kernels()
    for _ in range(50):
        case = _random_case(rng)
        words = WordTypes.from_lists(case["words"], case["counts"])
        from bbpe.pairmerge.train import spellings

        content, starts = spellings(case["tokens"])
        results = []
        for kernels in (compiled.kernels, jit):
            symbols = words.symbols.copy()
            merges, n = kernels.train_merges(symbols, words.starts, words.counts, content, starts,
                                             case["vocab_size"], case["min_frequency"], 1 << 62, 0,
                                             np.zeros(2, dtype=np.int64))
            results.append((merges.tolist(), n, symbols.tolist()))
        assert results[0] == results[1]


# --- counting words -------------------------------------------------------------------------

def _random_text(rng: random.Random) -> bytes:
    parts = ["the", " cat", "中文", "，", "\n", "\n\n", "  ", "\t", "123", "😀", "don't", "\r\n", " ", "é"]
    return "".join(rng.choice(parts) for _ in range(rng.randint(0, 400))).encode()


@pytest.mark.parametrize("pattern", ["gpt2", "cl100k", "o200k", "whitespace"])
def test_line_piece_ends_are_each_lines_pieces(pattern):
    """Each line split as a text of its own, and the same when ``out`` fills and the scan
    goes on from the last end; a gap's end (HF Whitespace's spaces) negated."""
    from bbpe.bpe import _pretokenize as pt

    pid = pt.PATTERN_NAMES[pattern]
    rng = random.Random(pid)
    for _ in range(200):
        data = _random_text(rng)
        expected, at = [], 0
        for line in [piece + b"\n" for piece in data.split(b"\n")[:-1]] + [data.split(b"\n")[-1]]:
            for piece in pt.split(line, pid, gaps=True):
                at += len(piece)
                expected.append(-at if piece.isspace() and pattern == "whitespace" else at)
        arr = np.frombuffer(data, dtype=np.uint8)
        for size in (1, 3, 1000):
            got, start = [], 0
            out = np.empty(size, dtype=np.int64)
            while start < len(data):
                n = pt.line_piece_ends(arr, start, len(data), pid, out)
                got += out[:n].tolist()
                start = abs(got[-1])
            assert got == expected


@pytest.mark.parametrize(("threads", "pattern"), [(1, "gpt2"), (2, "gpt2"), (3, "gpt2"), (2, "whitespace")])
def test_word_counts_equal_a_counter(threads, pattern):
    """The threads' tables add up to a Counter of the pieces (gaps left out), words in
    first-seen order."""
    from collections import Counter

    from bbpe.bpe import _pretokenize as pt
    from bbpe.pairmerge.counting import WordTable, count_words

    pid = pt.PATTERN_NAMES[pattern]
    rng = random.Random(threads)
    for _ in range(30):
        data = b"".join(_random_text(rng) for _ in range(rng.randint(1, 30)))
        expected: Counter = Counter()
        for line in [piece + b"\n" for piece in data.split(b"\n")[:-1]] + [data.split(b"\n")[-1]]:
            expected.update(pt.split(line, pid))
        table = WordTable()
        count_words(table, np.frombuffer(data, dtype=np.uint8),
                    lambda d, s, e, out: pt.line_piece_ends(d, s, e, pid, out), b"\n", threads)
        table.add_counts({b"extra": 5, b"the": 2})
        expected.update({b"extra": 5, b"the": 2})
        arena, starts, counts = table.arrays()
        got = {arena[starts[i]:starts[i + 1]].tobytes(): int(counts[i]) for i in range(len(counts))}
        assert got == dict(expected)
        assert list(got) == list(expected)


def test_many_first_tokens():
    """Past DENSE_FIRST_TOKENS first tokens the first pair count looks pairs up in the hash
    index instead of the dense square: the same merges."""
    from bbpe.pairmerge.kernels.merge_loop import DENSE_FIRST_TOKENS

    rng = random.Random(5)
    for n in (DENSE_FIRST_TOKENS - 1, DENSE_FIRST_TOKENS + 100):
        tokens = [chr(0x4E00 + i) for i in range(n)]
        words = [[rng.randrange(n) if rng.random() < 0.3 else rng.randrange(12) for _ in range(rng.randint(1, 9))]
                 for _ in range(300)]
        counts = [rng.randint(1, 4) for _ in words]
        case = {"words": words, "counts": counts, "tokens": tokens, "vocab_size": n + 60, "min_frequency": 0,
                "max_token_length": None}
        assert _engine(case, "ids")[0] == _reference(case, "ids")


def test_the_word_arena_compacts_in_place():
    """``_compacted`` moves each live entry's words to the front of the arena, in the order
    they lie there, past the garbage of merged entries, whatever the heap's order; it
    copies the arena into a larger one only when too little of it would be free."""
    from bbpe.pairmerge.kernels import merge_loop, queue

    rng = random.Random(9)
    for _ in range(200):
        ranges, arena = [], []
        for _ in range(rng.randint(0, 30)):
            if rng.random() < 0.4:
                arena += [merge_loop.GARBAGE] * rng.randint(1, 6)
            words = [rng.randrange(1000) for _ in range(rng.randint(1, 8))]
            ranges.append((len(arena), words))
            arena += words
        rng.shuffle(ranges)  # the heap's order is not the arena's
        heap = np.zeros((len(ranges) + 1, queue.WIDTH), dtype=np.int64)
        for i, (start, words) in enumerate(ranges):
            heap[i, queue.START], heap[i, queue.ROW_LENGTH] = start, (i << 32) | len(words)
        room = rng.randint(len(arena), 2 * len(arena) + 8)
        positions = np.full(room, 7, dtype=np.int32)
        positions[:len(arena)] = arena
        needed = rng.randint(0, 20)
        out, used = merge_loop._compacted(positions, len(arena), heap, len(ranges), needed)
        assert used == sum(len(words) for _, words in ranges)
        assert (out is positions) == ((used + needed) * 3 // 2 <= room)
        assert len(out) >= (used + needed) * 3 // 2
        for i, (_, words) in enumerate(ranges):
            start = heap[i, queue.START]
            assert out[start:start + len(words)].tolist() == words
        assert sorted(int(heap[i, queue.START]) for i in range(len(ranges))) == sorted(
            sum(len(w) for _, w in sorted(ranges)[:k]) for k in range(len(ranges)))


def test_engine_is_the_reference_on_larger_corpora():
    """Corpora large enough that the word arena fills and is compacted many times."""
    rng = random.Random(13)
    for _ in range(6):
        alphabet = "abcd"[:rng.randint(2, 4)]
        counts: dict[str, int] = {}
        for _ in range(rng.randint(300, 600)):
            word = "".join(rng.choice(alphabet) for _ in range(rng.randint(2, 16)))
            counts[word] = counts.get(word, 0) + rng.choice([1, 1, 2, 5])
        tokens = sorted(set("".join(counts)))
        ids = {t: i for i, t in enumerate(tokens)}
        case = {"words": [[ids[c] for c in w] for w in counts], "counts": list(counts.values()), "tokens": tokens,
                "vocab_size": 400, "min_frequency": 0, "max_token_length": None}
        for tie in ("ids", "first_seen"):
            assert _engine(case, tie)[0] == _reference(case, tie)


def test_vocab_size_far_past_the_words():
    """A vocab_size no corpus can reach sizes nothing by it: training runs until no pair
    is left, as HF's does."""
    words = WordTypes.from_lists([[0, 1, 0, 1, 2], [2, 2]], [3, 1])
    merges, n_tokens = train_merges(words, ["a", "b", "c"], (1 << 31) - 1)
    assert n_tokens == 3 + len(merges) and len(merges) >= 2
