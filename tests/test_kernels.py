"""The numba kernels on hand-checkable inputs (QUIRKS Q3-Q9)."""

from __future__ import annotations

import numpy as np
from reference.simple_engine import TrainingLists, collect_lists, merge_steps

from bbpe.xbbpe.kernels import jit_kernels

K = jit_kernels()  # the kernels themselves, through numba's JIT


def lists_of(texts: list[str]) -> tuple[TrainingLists, list[list[bytes]]]:
    lists = collect_lists([t.encode() for t in texts])
    out = []
    for li in range(lists.nlists):
        out.append([lists.key(int(r)) for r in lists.toks[lists.bounds[li] : lists.bounds[li + 1]]])
    return lists, out


def decoded(lists: TrainingLists) -> list[list[str]]:
    return [[lists.key(int(r)).decode() for r in lists.toks[lists.bounds[li] : lists.bounds[li + 1]]]
            for li in range(lists.nlists)]


def test_char_len_and_delimiters():
    assert [K.char_len(b) for b in (0x41, 0x80, 0xBF, 0xC3, 0xE4, 0xF0, 0xF8, 0xFF)] == [1, 1, 1, 2, 3, 4, 1, 1]
    text = np.frombuffer("a b，c·d\u200be：f".encode(), dtype=np.uint8)
    found = [(i, K.delimiter_len(text, i, len(text))) for i in range(len(text)) if K.delimiter_len(text, i, len(text))]
    assert found == [(1, 1), (3, 3), (7, 2), (10, 3)]  # '：' is not a delimiter (Q3)


def test_segmentation():
    """Q3: delimiters are dropped, one-char segments are dropped, chars come by lead byte."""
    _, lists = lists_of(["作者：张九龄", "天，地", "ab", "x"])
    assert [b"".join(w).decode() for w in lists] == ["作者：张九龄", "ab"]
    assert [len(w) for w in lists] == [6, 2]
    _, lists = lists_of(["éx"])
    assert lists == [["é".encode(), b"x"]]


def test_cut_char_is_padded_in_training():
    lists = collect_lists([b"a\xe4\xb8"])  # Q20.1: the reference reads the NUL terminator
    assert [lists.key(int(r)) for r in lists.toks[:2]] == [b"a", b"\xe4\xb8\x00"]


def test_pair_key_refuses_24_bytes():
    lists = collect_lists(["一二三四五六七八".encode()])
    a, b = (int(r) for r in lists.toks[:2])
    k = lists.keys
    seven = "一二三四五六七".encode()
    w = np.frombuffer(seven.ljust(24, b"\0"), dtype="<u8").astype(np.uint64)
    w[2] |= np.uint64(len(seven)) << np.uint64(56)  # the length rides in the top byte
    row = K.intern(k.words, k.slots, k.meta, w[0], w[1], w[2])
    assert lists.key(row) == seven and k.find(seven) == row
    assert K.pair_key(k.words, k.slots, k.meta, row, b) == row  # Q9: 21 + 3 bytes >= 24
    assert lists.key(K.pair_key(k.words, k.slots, k.meta, a, b)) == "一二".encode()


def test_find_all_rows():
    """KeyTable.find_all: each key's row, -1 for a key the table lacks or cannot hold
    (empty, 24 bytes or more), in one kernel call."""
    lists = collect_lists(["天地人 abc".encode()])
    k = lists.keys
    present = [lists.key(int(r)) for r in lists.toks[:4]]
    rows = k.find_all([*present, b"zz", b"", b"x" * 24, b"x" * 30, present[0]])
    assert rows.tolist() == [*(int(r) for r in lists.toks[:4]), -1, -1, -1, -1, int(lists.toks[0])]
    assert k.find_all([]).tolist() == []


def test_tie_goes_to_first_to_reach_the_maximum():
    """Q5: tie.txt = abxy / xyab: 'xy' reaches count 1 first."""
    lists, _ = lists_of(["abxy", "xyab"])
    best, _ = next(merge_steps(lists))
    assert lists.key(best) == b"xy"


def test_counts_are_one_too_low():
    """Q4: aaa / aaa -> 'aa' seen 4 times, count 3; then 'aaa' count 1."""
    lists, _ = lists_of(["aaa", "aaa"])
    steps = merge_steps(lists)
    best, _ = next(steps)
    assert lists.key(best) == b"aa" and lists.counts[best] == 3
    assert decoded(lists) == [["aa", "a"], ["aa", "a"]]  # Q8: left to right, no overlap
    best, _ = next(steps)
    assert lists.key(best) == b"aaa" and lists.counts[best] == 1


def test_first_pass_deletes_and_joins():
    """Q6 join.txt: xa1b / xa2b -> merge 'xa', delete '1' and '2' -> [xa, b] twice."""
    lists, _ = lists_of(["xa1b", "xa2b"])
    steps = merge_steps(lists)
    best, singles = next(steps)
    assert lists.key(best) == b"xa" and singles == []  # 1-byte singles never enter the vocab
    assert decoded(lists) == [["xa", "b"], ["xa", "b"]]
    best, _ = next(steps)
    assert lists.key(best) == b"xab"


def test_singles_in_libstdcxx_order():
    """Q7 cjk6: deleted once each, added as 一 四 二 三 五 六."""
    lists, _ = lists_of([f"天地{c}人" for c in "一二三四五六"])
    best, singles = next(merge_steps(lists))
    assert lists.key(best).decode() == "天地"
    assert [s.decode() for s in singles] == list("一四二三五六")


def test_index_with_tombstones():
    """The merges take keys out of the index as tombstones (``_forget``), or as empty
    entries at a cluster's end; lookups (``_find_live``) go past tombstones, a new key
    may take one's place, and ``fmeta[1]`` counts those left. Random keys crowded into a
    small index, taken out and put back at random (rebuilt when half of it is keys and
    tombstones): every key there is found in its row, every key taken out is not, and
    the count is right."""
    import random

    rng = random.Random(5)
    size = 64
    words = np.zeros((400, 3), dtype=np.uint64)
    slots = np.zeros(size, dtype=np.int32)
    fmeta = np.zeros(2, dtype=np.int64)
    keys = [(np.uint64(rng.getrandbits(56)), np.uint64(rng.randrange(8)), np.uint64(1 << 56)) for _ in range(400)]
    present: dict[int, tuple] = {}
    for step in range(3000):
        if present and (len(present) >= size // 2 or rng.random() < 0.45):
            row = rng.choice(list(present))
            K._forget(words, slots, row, fmeta)
            words[row] = 0
            del present[row]
        else:
            if 2 * (len(present) + fmeta[1] + 1) > size:  # as _index_room keeps it: rebuilt
                slots[:] = 0
                K.reindex(words, len(keys), slots)
                fmeta[1] = 0
            row = rng.choice([r for r in range(len(keys)) if r not in present])
            key = keys[row]
            slot, found = K._find_live(words, slots, *key)
            assert found == -1
            if slots[slot] == -1:
                fmeta[1] -= 1  # as _pair_key_reusing does
            words[row] = key
            slots[slot] = row + 1
            present[row] = key
        assert fmeta[1] == np.count_nonzero(slots == -1)
        for row in rng.sample(range(len(keys)), 20):
            assert K._find_live(words, slots, *keys[row])[1] == (row if row in present else -1)
