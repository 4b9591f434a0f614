"""Q7: the order in which the first pass's single words enter the vocabulary."""

from __future__ import annotations

import numpy as np

from .map_order import blog_hashes, iteration_order


def ordered_singles(raw: np.ndarray, lens: np.ndarray, counts: np.ndarray) -> list[bytes]:
    """The single words in the order ``Train`` adds them.

    ``raw``/``lens``: the deleted keys (``(n, 24) uint8``, ``(n,)``) in first-deletion
    order, which is the insertion order of the C++ ``unordered_map single``; ``counts``:
    their counts (the first deletion counts 0). Keys shorter than 3 bytes are in the map
    but never added. ``keyId = count * 10 * size + index``, with ``index`` counting only
    keys of 3+ bytes in the map's iteration order; Train adds from the highest keyId.
    """
    order = iteration_order(blog_hashes(raw, lens))
    long_keys = order[lens[order] >= 3]
    key_ids = counts[long_keys] * (10 * raw.shape[0]) + np.arange(long_keys.shape[0])
    chosen = long_keys[np.argsort(-key_ids, kind="stable")]
    return [raw[i, : lens[i]].tobytes() for i in chosen]
