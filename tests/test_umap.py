"""The libstdc++ unordered_map order emulation, against a real libstdc++ map when g++ is there."""

from __future__ import annotations

import random
import shutil
import subprocess

import numpy as np
import pytest
from conftest import TESTS

from bbpe.xbbpe.map_order import blog_hashes, bucket_counts, iteration_order
from bbpe.xbbpe.vocab import initial_keys, key_matrix


def order_of(keys: list[bytes], cleared_after: int = 0) -> list[int]:
    rows, lens = key_matrix(keys)
    return iteration_order(blog_hashes(rows, lens), cleared_after).tolist()


def test_bucket_table_starts_like_libstdcxx():
    assert bucket_counts()[:11].tolist() == [1, 13, 29, 59, 127, 257, 541, 1109, 2357, 5087, 10273]  # Q7


def test_cjk6_single_order():
    """QUIRKS Q7: 一..六 inserted in order iterate as 六五三二四一 (13 buckets)."""
    keys = [c.encode() for c in "一二三四五六"]
    rows, lens = key_matrix(keys)
    assert (blog_hashes(rows, lens) % np.uint64(13)).tolist() == [4, 8, 11, 4, 3, 3]
    assert [keys[i].decode() for i in order_of(keys)] == list("六五三二四一")


def test_initial_vocabulary_history():
    """Q17: after InitData twice the map keeps 541 buckets; the order differs from a fresh map."""
    keys = initial_keys()
    assert order_of(keys, cleared_after=263) != order_of(keys)
    assert sorted(order_of(keys, cleared_after=263)) == list(range(263))


@pytest.fixture(scope="module")
def real_map(tmp_path_factory):
    if shutil.which("g++") is None:
        pytest.skip("g++ is not installed: no real libstdc++ map to compare with")
    exe = tmp_path_factory.mktemp("umap") / "umap_order"
    subprocess.run(["g++", "-std=c++17", "-O2", "-o", str(exe), str(TESTS / "cpp" / "umap_order.cpp")], check=True)

    def run(keys: list[bytes], prefill: int) -> list[int]:
        stdin = f"{prefill}\n" + "".join(k.hex() + "\n" for k in keys)
        out = subprocess.run([str(exe)], input=stdin, capture_output=True, text=True, check=True).stdout
        return [int(x) for x in out.split()]

    return run


@pytest.mark.parametrize("seed", range(40))
def test_matches_real_libstdcxx_map(real_map, seed):
    rng = random.Random(seed)
    n = rng.choice([0, 1, 12, 13, 14, 30, 60, 128, 258, 541, 542, 1110, 2358, rng.randint(0, 6000)])
    keys = list(dict.fromkeys(rng.randbytes(rng.randint(1, 23)) if rng.random() < 0.5 else
                              rng.choice("天地人山水风月一二三").encode() * rng.randint(1, 7) + rng.randbytes(1)
                              for _ in range(n)))
    prefill = rng.choice([0, 0, 263, 1, 14, 600])
    assert order_of(keys, prefill) == real_map(keys, prefill)
