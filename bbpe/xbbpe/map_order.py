"""Replays the iteration order of a libstdc++ ``std::unordered_map`` (QUIRKS Q7, Q17).

Two outputs of XBBPE depend on the order in which an ``unordered_map`` is iterated: the
single-word map of the first pass (it breaks ties between single words, Q7) and the
vocabulary map that ``SaveFile`` writes record by record (Q17). Both maps only ever grow
by one ``emplace`` of a new key at a time, so their order is a function of the key hashes
in insertion order and of the bucket counts the container moves through. This module
replays libstdc++'s node list and bucket array on those hashes; it never needs the keys.

libstdc++ keeps one singly linked list of all nodes; ``bucket[b]`` points at the node
*before* the first node of bucket ``b`` (the list head itself for the bucket at the front).
A new key goes to the front of its bucket if the bucket is non-empty, else to the front of
the whole list. A rehash walks the old list in order and relinks each node the same way.
The bucket counts come from ``map_order_buckets.txt``, which ``tools/libstdcxx_buckets.cpp``
read off libstdc++ itself.

Trade-off: the replay is sequential (a linked list cannot be vectorised), so it runs as a
kernel (``kernels.map_order``); it costs O(n) per map, far below
training.
"""

from __future__ import annotations

import functools
import os

import numpy as np

from .kernels import kernels as K


@functools.cache
def bucket_counts() -> np.ndarray:
    """The bucket counts of a growing libstdc++ map: ``[1, 13, 29, 59, ...]`` (uint64)."""
    # beside this module (bbpe has compiled extensions, so it is never imported from a
    # zip); not importlib.resources, whose imports (zipfile, pathlib...) cost 5-8 ms of
    # every start
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "map_order_buckets.txt"), encoding="ascii") as f:
        text = f.read()
    values = [int(line) for line in text.splitlines() if line and not line.startswith("#")]
    return np.array(values, dtype=np.uint64)


def blog_hashes(keys: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """The blog's ``std::hash<WordIdKey>`` of every key: keys (n, 24) uint8, zero padded;
    lens (n,) -> (n,) uint64 (``kernels.map_order.blog_hashes``)."""
    return K.blog_hashes(np.ascontiguousarray(keys, dtype=np.uint8), np.ascontiguousarray(lens, dtype=np.int64))


def iteration_order(hashes: np.ndarray, cleared_after: int = 0) -> np.ndarray:
    """Iteration order of a libstdc++ map after inserting keys with these hashes.

    ``hashes`` are the keys' hashes in insertion order (all keys distinct). With
    ``cleared_after=k`` the map first held k other keys and was then ``clear()``-ed, which
    keeps its buckets (Q17: ``InitData`` runs twice, so the vocabulary map starts with the
    541 buckets of 263 inserts). Returns a permutation of ``range(len(hashes))``.

    >>> iteration_order(blog_hashes(cjk6_keys, cjk6_lens))   # doctest: +SKIP
    array([5, 4, 2, 1, 3, 0])           # 六五三二四一, QUIRKS Q7
    """
    counts = bucket_counts()
    hashes = np.ascontiguousarray(hashes, dtype=np.uint64)
    if cleared_after <= 0:
        return K.umap_replay(hashes, counts, 0, 0)
    # after k >= 1 single inserts a fresh map has the smallest bucket count >= k
    step = int(np.searchsorted(counts[1:], cleared_after)) + 1
    return K.umap_replay(hashes, counts, step, int(counts[step]))
