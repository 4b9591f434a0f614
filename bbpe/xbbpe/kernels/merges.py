"""The incremental merges: each step applies the winner at its occurrences and updates the
counts around them only (Q8-Q10), on one thread or, with two classes of slots, two.

Why it is a little over 500 lines: one step's walk, its settling and its end are one
protocol between the leader (``run_merges``) and the follower (``follow_merges``), best
read side by side; what they share with other stages (lists, heap, key states, pair keys,
the hand-over) lives in the modules it imports.

Every pair key K keeps its occurrences in a list sorted by slot, from kst[K, HEAD] to
kst[K, TAIL]; kst[K, OCC] is its weighted number of occurrences (a slot counts the
multiplicity of its type, smul[slot]), and kst[K, FLAGS] its flags: one 16-byte row
per key, so a site touches one cache line per key. A lazy max-heap on
(occ desc, tail asc) picks the winner.

Two classes of slots. On a large corpus the merges run on two threads. The types are
then in two classes, by blocks of 2**shift slots of the layout taken alternately (so
that the occurrences of nearly every pair fall about evenly into both), and each class
has lists of its own: its own key states (``kst`` for class 0, ``kst1`` for class 1),
fingers and list of changed keys. A step applies the winner at its sites of class 0
on the leader's thread (``run_merges``) while the follower's thread (``follow_merges``)
does those of class 1. A site reads and writes only the slots of its own type and the
key states of its own class, so the two threads never write the same thing except
the key table, where a new key is made under a lock. A key's count is the sum of its
classes' counts and its last occurrence the later of their tails, so every choice of
winner is the one of a single list. The vocabulary's flags (TOKEN, IN_VOCAB) are
class 0's. With one class (``classes == 1``), kst1 and the other arrays of class 1 are
placeholders, never read.
"""

import numpy as np

from bbpe.kernels.support import _inline, _njit, _release, atomic_load, exported, monotonic_ns, prefetch

from .handover import _command, _leader_waits_for, _post_to_follower, _post_to_leader, _wait_for, too_slow
from .heap import _heap_pop_valid, heap_push, heap_rebuild
from .key_states import _CLEAR_STEP_BITS, _KEEP, _occ, _tail, count_live
from .keys import _append_refused, _free_row, _free_rows, _key_hash, _pair_words, reindex
from .lists import _link, _mark, _next_alive, _prev_alive, _unlink, _unlink_marking
from .pair_keys import _pair_key_reusing
from .tables import (
    CMD_WALK,
    DEAD,
    DIRTY,
    FLAGS,
    FOLLOWER_FAILED,
    HEAD,
    IN_VOCAB,
    NEED_ROWS,
    NO_WINNER,
    NXT,
    OCC,
    PK,
    PRV,
    RAISED,
    RESTART,
    SYNC_CMD,
    SYNC_DONE,
    SYNC_FOLLOWER_BELL,
    SYNC_FOLLOWER_SLEEPS,
    SYNC_FREE,
    SYNC_FREED,
    SYNC_FREES,
    SYNC_HANDED,
    SYNC_MERGED,
    SYNC_PUSHES,
    SYNC_SETTLE,
    SYNC_SETTLED,
    SYNC_SLOW_SHARE,
    SYNC_TAG,
    SYNC_WAITED,
    SYNC_WINNER,
    TOK,
    TOKEN,
)


@_inline
def _index_fits(meta, fmeta, slots, extra):
    """Whether the index, its keys (the rows not on the free list) and tombstones
    together, stays at most half full with ``extra`` more keys."""
    return 2 * (meta[0] - fmeta[0] + fmeta[1] + extra) <= slots.shape[0]


@_njit
def _index_room(words, meta, fmeta, slots, extra, may_grow):
    """Whether the index has room for ``extra`` more keys (``_index_fits``), and the
    index: ``slots`` itself, if need be rebuilt in place without its tombstones, or else
    (``may_grow``) a larger one."""
    if _index_fits(meta, fmeta, slots, extra):
        return True, slots
    size = slots.shape[0]
    while 2 * (meta[0] - fmeta[0] + extra) > size:
        size *= 2
    if size == slots.shape[0]:
        slots[:] = 0
    elif may_grow:
        slots = np.zeros(size, dtype=slots.dtype)
    else:
        return False, slots
    reindex(words, meta[0], slots)
    fmeta[1] = 0
    return True, slots


_SITES_PER_BATCH = 4096  # sites between two checks of the room in the index and the dirty list


@_inline
def _prefetch_unlink(s, S, kst):
    """Ask for what unlinking slot s will touch: its key's state and its list neighbours."""
    prefetch(kst, S[s, PK])
    prefetch(S, S[s, PRV])
    prefetch(S, S[s, NXT])
    _release(S, kst)


# Within a step the new pairs are (left neighbour, w) and (w, right neighbour), and the
# same neighbour tokens come back at many sites: their pair keys are remembered in a small
# direct-mapped cache per side, indexed by the neighbour's token and tagged with the step
# (rows are neither moved nor freed within a step), which spares the hashing, the index
# probe and the key compare of the repeats.
_PAIR_CACHE = 4096


@_inline
def _new_pair(side, tok, w):
    """The new pair of a site: (left neighbour's token, w) on side 0, (w, right's) on 1."""
    t = np.int64(tok)
    return (t, w) if side == 0 else (w, t)


@_inline
def _cached_pair_key(side, tok, w, tag, pcode, pkey, words, slots, meta, free, fmeta, kst, kst1, classes, lock):
    """``_pair_key_reusing`` of the new pair of ``side`` with the neighbour's token ``tok``."""
    i = tok & (_PAIR_CACHE - 1)
    code = (tag << 32) | tok
    if pcode[side, i] == code:
        k = np.int64(pkey[side, i])
    else:
        a, b = _new_pair(side, tok, w)
        k = _pair_key_reusing(words, slots, meta, free, fmeta, kst, kst1, classes, lock, a, b)
        pcode[side, i] = code
        pkey[side, i] = k
    _release(pcode, pkey, words, slots, meta, free, fmeta, kst)
    _release(kst1, lock)
    return k


@_inline
def _prefetch_cached_pair_key(side, tok, w, tag, pcode, words, slots):
    """Ask for the index entry of that pair's key, unless the cache has the key."""
    if pcode[side, tok & (_PAIR_CACHE - 1)] != (tag << 32) | tok:
        a, b = _new_pair(side, tok, w)
        _prefetch_pair_key(words, slots, a, b)
    _release(pcode, words, slots)


@_inline
def _prefetch_pair_key(words, slots, a, b):
    """Ask for the index entry where the pair key of (a, b) is looked up first."""
    if not _append_refused(words, a, b):
        w0, w1, w2 = _pair_words(words, a, b)
        prefetch(slots, np.int64(_key_hash(w0, w1, w2) & np.uint64(slots.shape[0] - 1)))
    _release(words, slots)


@_njit
def _walk_sites(w, tag, grow, S, smul, words, slots, meta, kst, finger, dirty, nd, kst0, kst1, classes, free, fmeta,
                lock, pcode, pkey):
    """Apply the winner w at every one of its sites in one class: ``kst``, ``finger`` and
    ``dirty`` are that class's (``dirty[:nd]`` the keys it marked so far), kst0 and kst1
    every class's (a new key gets a state in each). Returns (nd, the slots merged away,
    slots, dirty).

    With ``grow``, before each batch of sites the index ``slots`` (touched all over) grows
    if the batch could fill more than half of it, and ``dirty`` if the batch could
    overflow it; new arrays are ``np.empty`` where they can be, so only what is written
    costs memory. Without, the caller has made room for the whole walk: the other thread
    shares these arrays.
    """
    merged = 0
    # The sites are w's list, walked as it changes: a site only ever unlinks the next
    # site (its right element, Q8 "aaa") and relinks slots at or before itself (Q9), so
    # the walk goes on from the next site that stays.
    s = np.int64(kst[w, HEAD])
    while s >= 0:
        # Room for a batch of sites (a site adds at most two keys and marks at most
        # four), made outside the loop over them: an array that could be replaced in that
        # loop would cost reference counting at every use there.
        if grow:
            _, slots = _index_room(words, meta, fmeta, slots, 2 * _SITES_PER_BATCH, True)
            dirty = _with_room(dirty, nd, 4 * _SITES_PER_BATCH)
        batch = 0
        while s >= 0 and batch < _SITES_PER_BATCH:
            batch += 1
            m = smul[s]
            j = _next_alive(S, s)
            y = _next_alive(S, j)
            following = np.int64(S[s, NXT])
            if following == j:
                following = S[j, NXT]  # j is merged into s right here
            # what the next site and this one's new pairs will read, asked for now: their
            # cache misses then overlap the unlinks below
            prefetch(S, following)
            prefetch(smul, following)
            x = -1 if _append_refused(words, S[s, TOK], S[j, TOK]) else _prev_alive(S, s)
            if x >= 0:
                _prefetch_unlink(x, S, kst)
            if y >= 0:
                _prefetch_unlink(j, S, kst)
            if x >= 0:
                _prefetch_cached_pair_key(0, S[x, TOK], w, tag, pcode, words, slots)
            if y >= 0:
                _prefetch_cached_pair_key(1, S[y, TOK], w, tag, pcode, words, slots)
            if x >= 0:
                nd = _unlink_marking(x, m, S, kst, dirty, nd)
            _unlink(s, m, S, kst)
            if y >= 0:
                nd = _unlink_marking(j, m, S, kst, dirty, nd)
            # Q9: for a pair of 24+ bytes the key is the left element itself: it stays,
            # and only its right neighbour disappears
            S[s, TOK] = w
            S[j, TOK] = DEAD
            merged += 1
            if x >= 0:
                k = _cached_pair_key(0, S[x, TOK], w, tag, pcode, pkey, words, slots, meta, free, fmeta, kst0, kst1,
                                     classes, lock)
                _link(x, k, m, S, kst, finger)
                nd = _mark(k, kst, dirty, nd)
            if y >= 0:
                k = _cached_pair_key(1, S[y, TOK], w, tag, pcode, pkey, words, slots, meta, free, fmeta, kst0, kst1,
                                     classes, lock)
                _link(s, k, m, S, kst, finger)
                nd = _mark(k, kst, dirty, nd)
            s = following
    return nd, merged, slots, dirty


@_inline
def _with_room(array, used, extra):
    """``array``, or a larger copy of its first ``used`` entries with room for ``extra`` more."""
    if used + extra > array.shape[0]:
        grown = np.empty(2 * array.shape[0] + extra, dtype=array.dtype)
        grown[:used] = array[:used]
        array = grown
    return array


# The end of a step. The keys a step changed are in its dirty lists, one per class; a
# key in both is settled with class 0's. Class 1's list is settled by the follower while
# the leader settles class 0's (``_settle_class1``, ``_settle_class0``). Each side reads
# the key states of the other class without writing them, except that class 0's side
# clears class 1's flags of a key in both lists, which class 1's side leaves alone;
# class 0's DIRTY, which tells class 1's side which keys those are, stays set until both
# sides are done. The follower alone touches the index then: it frees the rows of class
# 1's keys as it settles them, and then those of class 0's, which the leader lists for
# it, while the leader pushes both classes' keys onto the heap (``_finish_step``).

_CLEAR_STEP_BITS_BUT_DIRTY = _CLEAR_STEP_BITS | DIRTY
_LOW31 = np.int64(0x7FFFFFFF)


@_inline
def _settle_class0(w, dirty, nd, words, slots, kst, kst1, classes, free, fmeta, frees, defer):
    """Class 0's end of the step for its dirty keys: their step bits are cleared (DIRTY
    later, ``_finish_step``), a key left without occurrences that is neither a token nor
    in the vocabulary gives its row back (``defer``: it goes into ``frees`` instead, for
    the follower), and a key linked into (RAISED, in either class) or the winner (whose
    entry was popped) that can still win stays for the heap; ``dirty[i]`` becomes -1 - k
    for a key that does not. Returns (how many stay, how many were deferred)."""
    npush = 0
    nfree = 0
    for i in range(nd):
        k = dirty[i]
        flags = kst[k, FLAGS]
        kst[k, FLAGS] = flags & _CLEAR_STEP_BITS_BUT_DIRTY
        raised = flags & RAISED
        if classes == 2:
            flags1 = kst1[k, FLAGS]
            if flags1 & DIRTY:  # in both lists
                kst1[k, FLAGS] = flags1 & _CLEAR_STEP_BITS
                raised |= flags1 & RAISED
        occ = _occ(kst, kst1, classes, k)
        if occ == 0 and flags & _KEEP == 0:
            if defer:
                frees[nfree] = k
                nfree += 1
            else:
                _free_row(words, slots, k, free, fmeta)
            dirty[i] = -1 - k
        elif (raised or k == w) and occ >= 2:
            npush += 1
        else:
            dirty[i] = -1 - k
    _release(dirty, words, slots, kst, kst1, free, fmeta)
    _release(frees)
    return npush, nfree


@_inline
def _settle_class1(dirty1, nd1, pvals1, words, slots, kst, kst1, free, fmeta):
    """Class 1's end of the step for its dirty keys, but those class 0's list has too:
    their step bits are cleared, a key left without occurrences that is neither a token
    nor in the vocabulary gives its row back, and the keys for the heap are left in
    dirty1[:n], with pvals1[:n] their (occ << 32 | tail). Returns n.

    The rows are given back after the loop, ``_free_rows`` asking for their cache lines
    ahead; until then they wait at the end of pvals1, which has room for all nd1 keys
    (the caller makes sure): each key is pushed, freed or neither, so the two ends never
    meet."""
    n = 0
    nfree = 0
    top = pvals1.shape[0] - 1
    for i in range(nd1):
        k = dirty1[i]
        if kst[k, FLAGS] & DIRTY:
            continue
        flags = kst1[k, FLAGS]
        kst1[k, FLAGS] = flags & _CLEAR_STEP_BITS
        occ = _occ(kst, kst1, 2, k)
        if occ == 0 and kst[k, FLAGS] & _KEEP == 0:
            pvals1[top - nfree] = k
            nfree += 1
        elif flags & RAISED and occ >= 2:  # not the winner: that one is in class 0's list
            dirty1[n] = k
            pvals1[n] = (occ << 32) | _tail(kst, kst1, 2, k)
            n += 1
    _free_rows(words, slots, pvals1[top - nfree + 1 : top + 1][::-1], nfree, free, fmeta)
    _release(dirty1, pvals1, words, slots, kst, kst1, free, fmeta)
    return n


@_inline
def _finish_step(dirty, nd, npush, dirty1, pvals1, n1, meta, kst, kst1, classes, hocc, htail, hkey, hmeta):
    """The leader's part of the end of a step, once both sides settled: class 0's DIRTY
    cleared, and the keys left for the heap pushed. The heap gets
    the keys linked into (RAISED) only. A key that only lost occurrences keeps its old
    entry, above its value: an upper bound is all that the winner's choice needs (every
    live key has an entry at least as high as its value, so an entry on top that equals
    its key's value is the maximum), and the pop lowers such an entry when it comes up
    (_heap_pop_valid); most never do. That spares nearly half of the pushes. Returns the heap arrays (they grow when it is full)."""
    rebuild = hmeta[0] + npush + n1 > hocc.shape[0]
    for i in range(n1):
        if not rebuild:
            heap_push(hocc, htail, hkey, hmeta, pvals1[i] >> 32, pvals1[i] & _LOW31, dirty1[i])
    for i in range(nd):
        k = dirty[i]
        push = k >= 0
        k = k if push else -1 - k
        kst[k, FLAGS] &= _CLEAR_STEP_BITS
        if push and not rebuild:
            heap_push(hocc, htail, hkey, hmeta, _occ(kst, kst1, classes, k), _tail(kst, kst1, classes, k), k)
    if rebuild:
        # full: rebuild it from the key states (dropping the stale entries), larger if need be
        live = count_live(kst, kst1, classes, meta[0])
        if live + live // 2 > hocc.shape[0]:
            hocc = np.empty(2 * live + 1024, dtype=np.int32)
            htail = np.empty(2 * live + 1024, dtype=np.int32)
            hkey = np.empty(2 * live + 1024, dtype=np.int32)
        heap_rebuild(hocc, htail, hkey, hmeta, kst, kst1, classes, meta[0])
    _release(dirty, dirty1, pvals1, meta, kst, kst1)
    return hocc, htail, hkey


@exported(lambda t: t.Tuple((t.i8, t.i8, t.i8, t.I4, t.I4, t.I4, t.I4, t.I4, t.I4, t.I8))(
    t.i8, t.i8, t.i8, t.I4, t.I4_2, t.I4, t.U8_2, t.I4, t.I8, t.I4_2, t.I4_2, t.i8, t.I4, t.I4, t.I4, t.I8, t.I4,
    t.I4, t.I4, t.I8, t.I8, t.I4, t.I4, t.I8, t.I4, t.I8, t.I8, t.boolean, t.i8
))
@_njit
def run_merges(max_steps, size, limit, winners, S, smul, words, slots, meta, kst, kst1, classes, finger, finger1,
               free, fmeta, hocc, htail, hkey, hmeta, smeta, dirty, dirty1, pvals1, frees0, sync, lock, follower,
               parallel_from):
    """Apply up to ``max_steps`` merges; returns (status, steps done, vocabulary size) and
    the arrays that may have grown: (slots, hocc, htail, hkey, dirty, dirty1, pvals1).

    Each step is one non-first MergeMaxPairWord (Q8, Q9) followed by Train's bookkeeping
    (Q10): the winner is applied at every one of its occurrences, left to right, then added
    to the vocabulary unless it is already there (IN_VOCAB). ``winners[i]`` receives the
    i-th winner. A pair key whose last occurrence goes, and which is neither a token nor
    in the vocabulary, gives its row back (``free``; ``fmeta[0]`` rows in it, fmeta[1]
    tombstones in the index); smeta[0] counts the slots merged away, smeta[1] the steps
    (the pair-key caches' tags).

    With two classes and a ``follower`` (``follow_merges`` on another thread, waiting on
    ``sync``), a step is applied and settled in both classes at once when its winner
    occurs in both, at least ``parallel_from`` times (a hand-over costs a few hundred
    nanoseconds each way), and the step fits in the arrays the two share (the index
    ``slots``, ``dirty1``, ``frees0``) as they are. Any other step is done here, one class
    after the other, growing what it must; a step that replaced an array the follower
    has ends the call (``RESTART``).

    Growth. The heap grows when it is full; the key rows are the caller's (``KeyTable``,
    lazily zeroed): a step that might need more fresh rows than there are (two per site,
    at most its winner's occurrences) returns first. Status: ``limit`` reached (1),
    ``NO_WINNER``, ``NEED_ROWS`` (reserve ``hmeta[1]`` more rows, then call again),
    ``RESTART``, ``FOLLOWER_FAILED``, or 0 after ``max_steps``.
    """
    steps = 0
    pcode = np.full((2, _PAIR_CACHE), -1, dtype=np.int64)
    pkey = np.empty((2, _PAIR_CACHE), dtype=np.int32)
    restart = False
    # Hand-overs stop for the rest of the call once the follower has kept this thread
    # waiting for too much of its time: it is not getting a CPU of its own (``too_slow``).
    handing = follower
    waited, start = sync[SYNC_WAITED], monotonic_ns()
    while steps < max_steps and not restart:
        w = _heap_pop_valid(hocc, htail, hkey, hmeta, kst, kst1, classes)
        if w < 0:
            return NO_WINNER, steps, size, slots, hocc, htail, hkey, dirty, dirty1, pvals1
        occ0 = np.int64(kst[w, OCC])
        occ1 = np.int64(kst1[w, OCC]) if classes == 2 else np.int64(0)
        fresh_rows = 2 * (occ0 + occ1) - fmeta[0]
        if meta[0] + fresh_rows > words.shape[0]:
            heap_push(hocc, htail, hkey, hmeta, occ0 + occ1, _tail(kst, kst1, classes, w), w)
            hmeta[1] = fresh_rows
            return NEED_ROWS, steps, size, slots, hocc, htail, hkey, dirty, dirty1, pvals1
        kst[w, FLAGS] |= TOKEN
        nd = _mark(w, kst, dirty, 0)
        tag = smeta[1]  # this step's tag in the pair-key caches
        smeta[1] = tag + 1
        parallel = handing and occ0 > 0 and occ1 > 0 and occ0 + occ1 >= parallel_from
        # (pvals1 too: it can grow apart from dirty1 in a step on one thread, and class 1's
        # settling writes as many entries of it as dirty1 holds keys)
        if parallel and 4 * occ1 <= min(dirty1.shape[0], pvals1.shape[0]) and 1 + 4 * occ0 <= frees0.shape[0]:
            # the follower has this index too: it may be rebuilt in place, not replaced
            parallel, _ = _index_room(words, meta, fmeta, slots, 2 * (occ0 + occ1), False)
        else:
            parallel = False
        if parallel:
            dirty = _with_room(dirty, nd, 4 * occ0)
            sync[SYNC_WINNER] = w
            sync[SYNC_TAG] = tag
            command = (sync[SYNC_CMD] >> 2) + 1
            sync[SYNC_HANDED] += 1
            _command(sync, command, CMD_WALK)
            nd, merged, _, _ = _walk_sites(w, tag, False, S, smul, words, slots, meta, kst, finger, dirty, nd, kst,
                                           kst1, classes, free, fmeta, lock, pcode, pkey)
            _post_to_follower(sync, SYNC_SETTLE, command)  # class 0's flags are final: class 1 may settle
            if not _leader_waits_for(sync, SYNC_DONE, command):
                return FOLLOWER_FAILED, steps, size, slots, hocc, htail, hkey, dirty, dirty1, pvals1
            merged += sync[SYNC_MERGED]
            npush, nfree = _settle_class0(w, dirty, nd, words, slots, kst, kst1, classes, free, fmeta, frees0, True)
            sync[SYNC_FREES] = nfree
            _post_to_follower(sync, SYNC_FREE, command)
            if not _leader_waits_for(sync, SYNC_SETTLED, command):
                return FOLLOWER_FAILED, steps, size, slots, hocc, htail, hkey, dirty, dirty1, pvals1
            n1 = sync[SYNC_PUSHES]
        else:
            shared = (slots.shape[0], dirty1.shape[0], pvals1.shape[0])
            nd, merged, slots, dirty = _walk_sites(w, tag, True, S, smul, words, slots, meta, kst, finger, dirty, nd,
                                                   kst, kst1, classes, free, fmeta, lock, pcode, pkey)
            n1 = 0
            if classes == 2:
                nd1, merged1, slots, dirty1 = _walk_sites(w, tag, True, S, smul, words, slots, meta, kst1, finger1,
                                                          dirty1, 0, kst, kst1, classes, free, fmeta, lock, pcode,
                                                          pkey)
                merged += merged1
                pvals1 = _with_room(pvals1, 0, nd1)
                n1 = _settle_class1(dirty1, nd1, pvals1, words, slots, kst, kst1, free, fmeta)
            npush, _deferred = _settle_class0(w, dirty, nd, words, slots, kst, kst1, classes, free, fmeta, frees0,
                                              False)
            restart = follower and (slots.shape[0] != shared[0] or dirty1.shape[0] != shared[1]
                                    or pvals1.shape[0] != shared[2])
        smeta[0] += merged
        hocc, htail, hkey = _finish_step(dirty, nd, npush, dirty1, pvals1, n1, meta, kst, kst1, classes, hocc, htail,
                                         hkey, hmeta)
        if parallel:
            if not _leader_waits_for(sync, SYNC_FREED, command):
                return FOLLOWER_FAILED, steps, size, slots, hocc, htail, hkey, dirty, dirty1, pvals1
            handing = not too_slow(sync[SYNC_WAITED] - waited, monotonic_ns() - start, sync[SYNC_SLOW_SHARE])
        winners[steps] = w
        steps += 1
        if kst[w, FLAGS] & IN_VOCAB == 0:
            kst[w, FLAGS] |= IN_VOCAB
            size += 1
            if size >= limit:
                return 1, steps, size, slots, hocc, htail, hkey, dirty, dirty1, pvals1
    return RESTART if restart else 0, steps, size, slots, hocc, htail, hkey, dirty, dirty1, pvals1


@exported(lambda t: t.i8(
    t.i8, t.I8, t.I4_2, t.I4, t.U8_2, t.I4, t.I8, t.I4_2, t.I4_2, t.I4, t.I4, t.I8, t.I4, t.I4, t.I8, t.I8
))
@_njit
def follow_merges(seen, sync, S, smul, words, slots, meta, kst, kst1, finger1, dirty1, pvals1, frees0, free, fmeta,
                  lock):
    """The merges' second thread: applies each winner that ``run_merges`` hands it
    (CMD_WALK on ``sync``) at its sites of class 1; once the leader is done with class 0's,
    settles the keys that changed, freeing rows; then frees the rows of class 0's keys
    that the leader lists in ``frees0``; until CMD_EXIT. ``seen`` is the command word from
    before the leader's first command. Returns the number of steps it did."""
    pcode = np.full((2, _PAIR_CACHE), -1, dtype=np.int64)
    pkey = np.empty((2, _PAIR_CACHE), dtype=np.int32)
    walks = 0
    while True:
        _wait_for(sync, SYNC_CMD, seen, False, -1, 0, SYNC_FOLLOWER_SLEEPS, SYNC_FOLLOWER_BELL)
        command = atomic_load(sync, SYNC_CMD)
        seen = command
        if command & 3 != CMD_WALK:
            return walks
        number = command >> 2
        w, tag = sync[SYNC_WINNER], sync[SYNC_TAG]
        nd, merged, _, _ = _walk_sites(w, tag, False, S, smul, words, slots, meta, kst1, finger1, dirty1, 0, kst,
                                       kst1, 2, free, fmeta, lock, pcode, pkey)
        sync[SYNC_MERGED] = merged
        _post_to_leader(sync, SYNC_DONE, number)
        if _wait_for(sync, SYNC_SETTLE, number, True, SYNC_CMD, command, SYNC_FOLLOWER_SLEEPS,
                     SYNC_FOLLOWER_BELL) < 0:
            return walks
        sync[SYNC_PUSHES] = _settle_class1(dirty1, nd, pvals1, words, slots, kst, kst1, free, fmeta)
        _post_to_leader(sync, SYNC_SETTLED, number)
        if _wait_for(sync, SYNC_FREE, number, True, SYNC_CMD, command, SYNC_FOLLOWER_SLEEPS,
                     SYNC_FOLLOWER_BELL) < 0:
            return walks
        _free_rows(words, slots, frees0, sync[SYNC_FREES], free, fmeta)
        _post_to_leader(sync, SYNC_FREED, number)
        walks += 1
