"""libstdc++'s ``std::unordered_map`` iteration order, replayed (Q7, Q17).

The replay of a growing ``std::unordered_map`` that ``bbpe.xbbpe.map_order`` drives (Q7, Q17). Sentinels
in the bucket array: an empty bucket, and "the node before this bucket's first node is
the list head" (libstdc++'s &_M_before_begin).
"""

import numpy as np

from bbpe.kernels.support import _njit, exported

_UMAP_EMPTY = -1
_UMAP_HEAD = -2


@exported(lambda t: t.U8(t.a(t.u1, 2), t.I8))
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
    if prev == _UMAP_EMPTY:
        nxt[node] = head
        if head != _UMAP_EMPTY:
            # the old first node's bucket is now reached through `node`
            before[_bucket_of(hashes[head], nbuckets)] = node
        before[bucket] = _UMAP_HEAD
        return node
    if prev == _UMAP_HEAD:
        nxt[node] = head
        return node
    nxt[node] = nxt[prev]
    nxt[prev] = node
    return head


@_njit
def _rehash(hashes, nxt, head, nbuckets):
    """libstdc++ _M_rehash_aux (unique keys); returns (new bucket array, new head)."""
    before = np.full(nbuckets, _UMAP_EMPTY, dtype=np.int64)
    node = head
    head = np.int64(_UMAP_EMPTY)
    front_bucket = 0
    while node != _UMAP_EMPTY:
        following = nxt[node]
        b = _bucket_of(hashes[node], nbuckets)
        if before[b] == _UMAP_EMPTY:
            nxt[node] = head
            head = node
            before[b] = _UMAP_HEAD
            if nxt[node] != _UMAP_EMPTY:
                before[front_bucket] = node
            front_bucket = b
        elif before[b] == _UMAP_HEAD:
            nxt[node] = head
            head = node
        else:
            prev = before[b]
            nxt[node] = nxt[prev]
            nxt[prev] = node
        node = following
    return before, head


@exported(lambda t: t.I8(t.U8, t.U8, t.i8, t.i8))
@_njit
def umap_replay(hashes, counts, step, next_resize):
    """Insert nodes 0..n-1 (distinct keys) in order; return them in iteration order.

    ``counts[step]`` is the bucket count to start from and ``next_resize`` the element count
    the container may reach before it rehashes (0 for a fresh map: it allocates on the
    first insert).
    """
    n = hashes.shape[0]
    nxt = np.full(n, _UMAP_EMPTY, dtype=np.int64)
    nbuckets = np.int64(counts[step])
    before = np.full(nbuckets, _UMAP_EMPTY, dtype=np.int64)
    # typed explicitly: once the merge kernel (inlined helpers) is compiled in the same
    # process, numba's ahead-of-time build no longer widens a literal -1 here
    head = np.int64(_UMAP_EMPTY)
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
