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
The bucket counts come from ``_umap_buckets.txt``, which ``tools/libstdcxx_buckets.cpp``
read off libstdc++ itself.

Trade-off: the replay is sequential (a linked list cannot be vectorised), so it runs as a
numba kernel; it costs O(n) per map, far below training.
"""

from __future__ import annotations

import functools
from importlib import resources

import numpy as np

from ._kernels import _njit

# Sentinel values in the bucket array: an empty bucket, and "the node before this bucket's
# first node is the list head" (libstdc++'s &_M_before_begin).
_EMPTY = -1
_HEAD = -2


@functools.cache
def bucket_counts() -> np.ndarray:
    """The bucket counts of a growing libstdc++ map: ``[1, 13, 29, 59, ...]`` (uint64)."""
    text = resources.files(__package__).joinpath("_umap_buckets.txt").read_text()
    values = [int(line) for line in text.splitlines() if line and not line.startswith("#")]
    return np.array(values, dtype=np.uint64)


@_njit
def blog_hashes(keys, lens):
    """The blog's ``std::hash<WordIdKey>`` of every key.

    keys : (n, 24) uint8, zero padded; lens : (n,) integer -> (n,) uint64, where
    ``h = 0; for each byte b: h ^= b + 0x9e3779b9 + (h << 6) + (h >> 2)`` (mod 2**64).
    """
    n = keys.shape[0]
    out = np.empty(n, dtype=np.uint64)
    golden = np.uint64(0x9E3779B9)
    six = np.uint64(6)
    two = np.uint64(2)
    for k in range(n):
        h = np.uint64(0)
        for j in range(lens[k]):
            h ^= np.uint64(keys[k, j]) + golden + (h << six) + (h >> two)
        out[k] = h
    return out


@_njit
def _bucket_of(h, nbuckets):
    return np.int64(h % np.uint64(nbuckets))


@_njit
def _link_at_bucket_front(node, bucket, hashes, nxt, before, head, nbuckets):
    """libstdc++ _M_insert_bucket_begin; returns the new list head."""
    prev = before[bucket]
    if prev == _EMPTY:
        nxt[node] = head
        if head != _EMPTY:
            # the old first node's bucket is now reached through `node`
            before[_bucket_of(hashes[head], nbuckets)] = node
        before[bucket] = _HEAD
        return node
    if prev == _HEAD:
        nxt[node] = head
        return node
    nxt[node] = nxt[prev]
    nxt[prev] = node
    return head


@_njit
def _rehash(hashes, nxt, head, nbuckets):
    """libstdc++ _M_rehash_aux (unique keys); returns (new bucket array, new head)."""
    before = np.full(nbuckets, _EMPTY, dtype=np.int64)
    node = head
    head = _EMPTY
    front_bucket = 0
    while node != _EMPTY:
        following = nxt[node]
        b = _bucket_of(hashes[node], nbuckets)
        if before[b] == _EMPTY:
            nxt[node] = head
            head = node
            before[b] = _HEAD
            if nxt[node] != _EMPTY:
                before[front_bucket] = node
            front_bucket = b
        elif before[b] == _HEAD:
            nxt[node] = head
            head = node
        else:
            prev = before[b]
            nxt[node] = nxt[prev]
            nxt[prev] = node
        node = following
    return before, head


@_njit
def _replay(hashes, counts, step, next_resize):
    """Insert nodes 0..n-1 (distinct keys) in order; return them in iteration order.

    ``counts[step]`` is the bucket count to start from and ``next_resize`` the element count
    the container may reach before it rehashes (0 for a fresh map: it allocates on the
    first insert).
    """
    n = hashes.shape[0]
    nxt = np.full(n, _EMPTY, dtype=np.int64)
    nbuckets = np.int64(counts[step])
    before = np.full(nbuckets, _EMPTY, dtype=np.int64)
    head = _EMPTY
    for node in range(n):
        if node + 1 > next_resize:
            step += 1
            nbuckets = np.int64(counts[step])
            next_resize = nbuckets
            before, head = _rehash(hashes, nxt, head, nbuckets)
        b = _bucket_of(hashes[node], nbuckets)
        head = _link_at_bucket_front(node, b, hashes, nxt, before, head, nbuckets)
    order = np.empty(n, dtype=np.int64)
    node = head
    for k in range(n):
        order[k] = node
        node = nxt[node]
    return order


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
        return _replay(hashes, counts, 0, 0)
    # after k >= 1 single inserts a fresh map has the smallest bucket count >= k
    step = int(np.searchsorted(counts[1:], cleared_after)) + 1
    return _replay(hashes, counts, step, int(counts[step]))
