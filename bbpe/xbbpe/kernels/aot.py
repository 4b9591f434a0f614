"""What XBBPE's kernel package exports when the build compiles it ahead of time
(``bbpe.kernels.build``, which setup.py runs): the extension's name, the kernel modules
whose functions the drivers call (``kernels`` takes them from here too), and the exact
signature of each exported kernel: the arrays the Python side (``bbpe.xbbpe.engine``,
``map_order``) passes, all C-contiguous; the scan's input buffer is read-only.
"""

from __future__ import annotations

MODULE = "_aot_kernels"
# the kernel modules whose functions the drivers call (``kernels`` takes them from here too)
MODULES = ("keys", "text", "scan", "layout", "first_pass", "linking", "key_states", "heap", "lists", "pair_keys",
           "handover", "merges", "map_order")


def signatures() -> dict:
    from numba import types as T

    i8, i4, u8, u1 = T.int64, T.int32, T.uint64, T.uint8

    def a(dtype, ndim=1, readonly=False):
        return T.Array(dtype, ndim, "C", readonly=readonly)

    I8, I4, U8 = a(i8), a(i4), a(u8)
    S, KST, WORDS, TABLE = a(i4, 2), a(i4, 2), a(u8, 2), a(i8, 2)
    pair, none = T.UniTuple(i8, 2), T.none
    return {
        # key table
        "_find": pair(WORDS, I4, u8, u8, u8),
        "find_rows": none(WORDS, I4, WORDS, I8),
        "reindex": none(WORDS, i8, I4),
        "index_rows": none(WORDS, i8, i8, I4),
        "intern_rows": none(WORDS, i8, WORDS, I4, I8, I4),
        # scan
        "scan_types": pair(a(u1, 1, readonly=True), i8, WORDS, I4, I8, i8, I4, I8, I8, I8, U8, I4, I8, I4),
        "scan_types_backward": pair(a(u1, 1, readonly=True), i8, WORDS, I4, I8, i8, I4, I8, I8, I8, U8, I4, I8, I4),
        "reindex_types": none(U8, i8, I4),
        # first pass
        "slot_order": none(I8, I8, I8, i8, i8, i8, I8, I8, I8, I8),
        "backward_slot_order": I8(I8, I8, I8, i8, i8, i8, I8, I8, I8, I8),
        "layout_types": none(I4, I8, i8, I4, I8, S),
        "layout_types_backward": none(I4, I8, I8, I4, I8, S),
        "count_slots": T.Tuple((i8, TABLE))(I8, i8, I8, I8, I8, S, WORDS, I8, i8, TABLE, I8),
        "count_codes": TABLE(I8, I8, I8, I8, S, TABLE, I8),
        "numbered_pairs": TABLE(TABLE, i8),
        "merge_counts": T.Tuple((i8, TABLE))(TABLE, i8, TABLE, WORDS, I8, i8, I8, I4),
        "renumber_pairs": none(I8, I8, I8, S, I4),
        "pair_counts": none(TABLE, I8, I8),
        "best_pair": i8(I8, I8, i8),
        "first_pass": i8(I8, I8, I8, I8, i8, S, WORDS, I4, I8, I8, I8),
        # merges
        "link_slots": i8(I8, i8, I8, I8, I8, S, WORDS, I4, I8, i8, I4, KST, KST, KST, i8, i8, i8, I8),
        "heap_rebuild": i8(I4, I4, I4, I8, KST, KST, i8, i8),
        "count_live": i8(KST, KST, i8, i8),
        "compact_slots": i8(S, i8, I4, KST, KST, i8, i8),
        "run_merges": T.Tuple((i8, i8, i8, I4, I4, I4, I4, I4, I4, I8))(
            i8, i8, i8, I4, S, I4, WORDS, I4, I8, KST, KST, i8, I4, I4, I4, I8, I4, I4, I4, I8, I8, I4, I4, I8, I4,
            I8, I8, T.boolean, i8),
        "follow_merges": i8(i8, I8, S, I4, WORDS, I4, I8, KST, KST, I4, I4, I8, I4, I4, I8, I8),
        "stop_follower": none(I8),
        "too_slow": T.boolean(i8, i8, i8),
        "follower_stopped": none(I8),
        # libstdc++ map order (map_order)
        "blog_hashes": U8(a(u1, 2), I8),
        "umap_replay": I8(U8, U8, i8, i8),
    }


