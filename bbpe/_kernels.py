"""Numba kernels of the trainer: cutting text into chars, interning keys, counting and merging.

Every ``@njit`` function of the trainer lives here because numba's on-disk cache
(``cache=True``) does not notice edits to kernels in *other* modules that a kernel calls.
Kernels take and return numpy arrays and scalars only: no Python objects, no I/O, and no
exceptions for user errors (``train.py`` validates before calling).

Keys. A key is what the C++ calls a ``WordIdKey``: up to 24 bytes plus a length. Here it
is packed into three little-endian uint64 words (byte j sits in word j // 8 at bit
8 * (j % 8), bytes past the length are zero) with the length in the top byte of the third
word: training keys stop at 23 bytes (Q9), so that byte is free, and a key is one 24-byte
row that compares in three word compares. Every distinct key is *interned*: stored once in
``words (cap, 3) uint64`` with an open-addressing index ``slots`` (int32, row + 1, 0 =
empty) and ``meta[0]`` = number of keys, and known by its int32 row. Training lists are
then int32 arrays of key rows. A pair key is the concatenation of two keys (Q9: the left key
alone when the result would reach 24 bytes), interned like any key, so two pairs with equal
bytes share one count, as in the C++ ``unordered_map<WordIdKey, int64_t>``.
"""

import platform
import sys

import numba
import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

from ._layout import (
    CMD_EXIT,
    CMD_WALK,
    DEAD,
    DIRTY,
    FINGER,
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
    SENTINEL,
    SYNC_BLOCKED,
    SYNC_CMD,
    SYNC_DONE,
    SYNC_FOLLOWER_BELL,
    SYNC_FOLLOWER_SLEEPS,
    SYNC_FREE,
    SYNC_FREED,
    SYNC_FREES,
    SYNC_HANDED,
    SYNC_LEADER_BELL,
    SYNC_LEADER_SLEEPS,
    SYNC_MERGED,
    SYNC_PUSHES,
    SYNC_SETTLE,
    SYNC_SETTLED,
    SYNC_SLOW_SHARE,
    SYNC_STOPPED,
    SYNC_TAG,
    SYNC_WAITED,
    SYNC_WINNER,
    TAIL,
    TOK,
    TOKEN,
)

_njit = numba.njit(cache=True, nogil=True)
# The helpers of the hot loops are inlined by numba itself (``inline="always"``), not left
# to LLVM: each call passing arrays costs reference-count updates (NRT_incref/decref)
# that LLVM cannot remove: a quarter of a training run's profile (perf, zh-large at 32000)
# while they were calls.
_inline = numba.njit(cache=True, nogil=True, inline="always")


@_inline
def _release(a, b=None, c=None, d=None, e=None, f=None, g=None, h=None):
    """Nothing: a helper with branches calls it on the arrays it takes, at its one exit.

    Inlined, a helper still takes a reference to each array it is given and drops it
    after the array's last use. When that last use sits in a branch, the reference is
    dropped in each branch and LLVM's pruning cannot pair the updates, so two atomic
    reference-count updates stay in the loop; a last use at the helper's one exit lets
    them be pruned (checked by counting NRT_incref calls in the kernels' LLVM IR).
    """


@intrinsic
def prefetch(typingctx, array, row):
    """Hint that ``array[row]`` (its first element, for a 2-d array) will be read soon.

    The pair count asks for the table entry of the pair a few iterations ahead, so that
    its cache miss overlaps the work in between (count stage -30%); a merge site asks for
    what the next site and its own unlinks and lookups will read (merges -10%). A hint
    only: it never faults, whatever the index (-1 included).
    """
    if not isinstance(array, types.Array) or not isinstance(row, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        arrayty = signature.args[0]
        ary = context.make_array(arrayty)(context, builder, args[0])
        index = context.cast(builder, args[1], signature.args[1], types.intp)
        offset = builder.mul(index, cgutils.unpack_tuple(builder, ary.strides)[0])
        address = builder.add(builder.ptrtoint(ary.data, cgutils.intp_t), offset)
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        # read (0), keep in all cache levels (3), data (1)
        builder.call(fn, [builder.inttoptr(address, i8p), i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return types.void(array, row), codegen


# Atomics, for the merges on two threads (``run_merges`` and ``follow_merges``): the
# leader hands a step to the follower and waits for it through a shared array, and a new
# key is made under a spin lock. numba has no atomics for the CPU; these are LLVM's. An
# element's address comes from numba's own indexing, so the array may have any layout.


def _element_pointer(context, builder, signature, args):
    arrayty, indexty = signature.args[0], signature.args[1]
    ary = context.make_array(arrayty)(context, builder, args[0])
    index = context.cast(builder, args[1], indexty, types.intp)
    return cgutils.get_item_pointer(context, builder, arrayty, ary, [index])


def _atomic_element(array, index):
    return isinstance(array, types.Array) and array.ndim == 1 and isinstance(array.dtype, types.Integer) \
        and isinstance(index, types.Integer)


@intrinsic
def atomic_load(typingctx, array, index):
    """``array[index]``, read with acquire ordering: what the writer stored before its
    release store of this element is visible after this load."""
    if not _atomic_element(array, index):
        return None

    def codegen(context, builder, signature, args):
        ptr = _element_pointer(context, builder, signature, args)
        return builder.load_atomic(ptr, "acquire", signature.return_type.bitwidth // 8)

    return array.dtype(array, index), codegen


@intrinsic
def atomic_store(typingctx, array, index, value):
    """``array[index] = value`` with release ordering (see ``atomic_load``)."""
    if not _atomic_element(array, index) or not isinstance(value, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        ptr = _element_pointer(context, builder, signature, args)
        dtype = signature.args[0].dtype
        value = context.cast(builder, args[2], signature.args[2], dtype)
        builder.store_atomic(value, ptr, "release", dtype.bitwidth // 8)
        return context.get_dummy_value()

    return types.void(array, index, value), codegen


@intrinsic
def atomic_cas(typingctx, array, index, expected, value):
    """Set ``array[index]`` to ``value`` if it holds ``expected`` (acquire and release);
    whether it did."""
    if not _atomic_element(array, index) or not isinstance(expected, types.Integer) \
            or not isinstance(value, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        ptr = _element_pointer(context, builder, signature, args)
        dtype = signature.args[0].dtype
        old = context.cast(builder, args[2], signature.args[2], dtype)
        new = context.cast(builder, args[3], signature.args[3], dtype)
        pair = builder.cmpxchg(ptr, old, new, "acq_rel", "acquire")
        return builder.extract_value(pair, 1)

    return types.boolean(array, index, expected, value), codegen


# LLVM's intrinsic for the CPU's spin-wait hint (numba's LLVM has no inline assembler)
_PAUSE = {"x86_64": "x86", "amd64": "x86", "i386": "x86", "i686": "x86", "aarch64": "arm",
          "arm64": "arm"}.get(platform.machine().lower(), "")


@intrinsic
def spin_pause(typingctx):
    """The CPU's hint that this is a spin-wait loop (x86 ``pause``, ARM ``yield``; nothing
    elsewhere)."""

    def codegen(context, builder, signature, args):
        if _PAUSE == "x86":
            fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), []),
                                                "llvm.x86.sse2.pause")
            builder.call(fn, [])
        elif _PAUSE == "arm":
            i32 = ir.IntType(32)
            fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), [i32]),
                                                "llvm.aarch64.hint")
            builder.call(fn, [i32(1)])
        return context.get_dummy_value()

    return types.void(), codegen


# Sleeping and waking, for the waits between the merge threads (``_wait_for``): a wait
# spins for a few microseconds, then sleeps in the kernel until the other thread rings
# its bell, so that a partner thread which is not running (the machine is busy) costs
# the waiter no CPU time. On Linux the sleep is a futex on the bell (syscall numbers by
# architecture); on other POSIX systems the waiter gives up its time slice in a loop
# (sched_yield); the clock is POSIX's CLOCK_MONOTONIC.
_LINUX = sys.platform.startswith("linux")
_SYSCALLS = {"x86_64": (202, 24), "amd64": (202, 24), "aarch64": (98, 124), "arm64": (98, 124),
             "ppc64le": (221, 158)}  # SYS_futex, SYS_sched_yield
_SYS_FUTEX, _SYS_SCHED_YIELD = _SYSCALLS.get(platform.machine().lower(), (-1, -1)) if _LINUX else (-1, -1)
_FUTEX_WAIT_PRIVATE, _FUTEX_WAKE_PRIVATE = 128, 129
_CLOCK_MONOTONIC = 1 if _LINUX else 6 if sys.platform == "darwin" else -1
_SLEEP_NS = 20_000_000  # a sleep's timeout: the waiter looks again (a guard; every post rings)


def _syscall(builder, *args):
    """``syscall(args...)``, all of them as longs (glibc's wrapper is variadic)."""
    i64 = ir.IntType(64)
    fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(i64, [i64], var_arg=True), "syscall")
    return builder.call(fn, [a if isinstance(a, ir.Value) else i64(a) for a in args])


def _word_address(context, builder, signature, args):
    """The address of the 32 bits of ``array[index]`` that a futex compares: an int64
    element's low half (the bells count up by one, so that half changes with every ring)."""
    ptr = _element_pointer(context, builder, signature, args)
    address = builder.ptrtoint(ptr, ir.IntType(64))
    if sys.byteorder == "big" and signature.args[0].dtype.bitwidth == 64:
        address = builder.add(address, ir.IntType(64)(4))
    return address


@intrinsic
def sleep_while(typingctx, array, index, expected):
    """Sleep until ``array[index]`` may no longer be ``expected`` (a futex wait on its
    low 32 bits, at most ``_SLEEP_NS``); may return early. Elsewhere: sched_yield."""
    if not _atomic_element(array, index) or not isinstance(expected, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        if _SYS_FUTEX >= 0:
            address = _word_address(context, builder, signature, args)
            value = builder.zext(builder.trunc(context.cast(builder, args[2], signature.args[2], types.int64),
                                               ir.IntType(32)), i64)
            timeout = cgutils.alloca_once(builder, ir.LiteralStructType([i64, i64]))  # struct timespec
            builder.store(i64(_SLEEP_NS // 1_000_000_000), cgutils.gep_inbounds(builder, timeout, 0, 0))
            builder.store(i64(_SLEEP_NS % 1_000_000_000), cgutils.gep_inbounds(builder, timeout, 0, 1))
            _syscall(builder, _SYS_FUTEX, address, _FUTEX_WAIT_PRIVATE, value, builder.ptrtoint(timeout, i64), 0, 0)
        elif _CLOCK_MONOTONIC >= 0:
            fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.IntType(32), []), "sched_yield")
            builder.call(fn, [])
        return context.get_dummy_value()

    return types.void(array, index, expected), codegen


@intrinsic
def wake_all(typingctx, array, index):
    """Wake every thread sleeping on ``array[index]`` (``sleep_while``)."""
    if not _atomic_element(array, index):
        return None

    def codegen(context, builder, signature, args):
        if _SYS_FUTEX >= 0:
            _syscall(builder, _SYS_FUTEX, _word_address(context, builder, signature, args), _FUTEX_WAKE_PRIVATE,
                     0x7FFFFFFF, 0, 0, 0)
        return context.get_dummy_value()

    return types.void(array, index), codegen


@intrinsic
def yield_cpu(typingctx):
    """Give this thread's time slice to another (sched_yield), as a spin lock's holder may
    be waiting for one."""

    def codegen(context, builder, signature, args):
        if _SYS_SCHED_YIELD >= 0:
            _syscall(builder, _SYS_SCHED_YIELD)
        elif _CLOCK_MONOTONIC >= 0:
            fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.IntType(32), []), "sched_yield")
            builder.call(fn, [])
        return context.get_dummy_value()

    return types.void(), codegen


@intrinsic
def full_fence(typingctx):
    """A sequentially consistent fence: the stores before it are seen by every thread
    before the loads after it are made (what a post's "is anyone asleep?" needs)."""

    def codegen(context, builder, signature, args):
        builder.fence("seq_cst")
        return context.get_dummy_value()

    return types.void(), codegen


@intrinsic
def monotonic_ns(typingctx):
    """CLOCK_MONOTONIC in nanoseconds (through the vDSO on Linux: tens of nanoseconds);
    0 where there is no such clock."""

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        if _CLOCK_MONOTONIC < 0:
            return i64(0)
        now = cgutils.alloca_once(builder, ir.LiteralStructType([i64, i64]))  # struct timespec
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.IntType(32), [ir.IntType(32), i64]),
                                            "clock_gettime")
        builder.call(fn, [ir.IntType(32)(_CLOCK_MONOTONIC), builder.ptrtoint(now, i64)])
        seconds = builder.load(cgutils.gep_inbounds(builder, now, 0, 0))
        nanoseconds = builder.load(cgutils.gep_inbounds(builder, now, 0, 1))
        return builder.add(builder.mul(seconds, i64(1_000_000_000)), nanoseconds)

    return types.int64(), codegen


KEY_BYTES = 24  # sizeof(WordIdKey::idKey), MaxKeyCount = 3 * 8

_M1 = np.uint64(0x9E3779B97F4A7C15)
_M2 = np.uint64(0xC2B2AE3D27D4EB4F)
_M3 = np.uint64(0x165667B19E3779F9)
_M4 = np.uint64(0xD6E8FEB86659FD93)
_SH32 = np.uint64(32)
_SH29 = np.uint64(29)
_U64_0 = np.uint64(0)


# --------------------------------------------------------------------------- key table

_LEN_SHIFT = np.uint64(56)
_LOW56 = np.uint64((1 << 56) - 1)
_TOMBSTONE = -1  # an index entry whose key was taken out (``_forget``)


@_inline
def key_len(words, k):
    return np.int64(words[k, 2] >> _LEN_SHIFT)


@_inline
def _key_hash(w0, w1, w2):
    h = (w0 * _M1) ^ (w1 * _M2) ^ (w2 * _M3)
    h ^= h >> _SH32
    h *= _M4
    h ^= h >> _SH29
    return h


@_inline
def _find(words, slots, w0, w1, w2):
    """(slot, row): the row holding the key, or -1 and the empty slot where it would go.
    An entry is row + 1, 0 is empty. For an index without tombstones: before the merges,
    which alone take keys out (``_find_live`` is for any index)."""
    mask = slots.shape[0] - 1
    i = np.int64(_key_hash(w0, w1, w2) & np.uint64(mask))
    row = np.int64(slots[i]) - 1
    while row >= 0 and not (words[row, 0] == w0 and words[row, 1] == w1 and words[row, 2] == w2):
        i = (i + 1) & mask
        row = np.int64(slots[i]) - 1
    _release(words, slots)
    return i, row


@_inline
def _find_live(words, slots, w0, w1, w2):
    """``_find`` in an index that may hold tombstones (_TOMBSTONE: a key the merges took
    out, ``_forget``): a lookup goes on past one, and a new key may take its place."""
    i, row = _find(words, slots, w0, w1, w2)  # it stops at the first tombstone too
    if row == _TOMBSTONE - 1:  # the key may still come further on; if not, it goes here
        mask = slots.shape[0] - 1
        free = i
        while row != -1 and not (row >= 0 and words[row, 0] == w0 and words[row, 1] == w1 and words[row, 2] == w2):
            i = (i + 1) & mask
            row = np.int64(slots[i]) - 1
        if row < 0:
            i = free
    _release(words, slots)
    return i, row


@_inline
def _home(words, slots, row):
    """The index slot where the key in ``row`` is looked up first."""
    return np.int64(_key_hash(words[row, 0], words[row, 1], words[row, 2]) & np.uint64(slots.shape[0] - 1))


@_inline
def _append_row(words, meta, w0, w1, w2):
    """Put a new key in the next row, not indexed; returns the row."""
    row = meta[0]
    meta[0] = row + 1
    words[row, 0] = w0
    words[row, 1] = w1
    words[row, 2] = w2
    _release(words, meta)
    return row


@_inline
def intern(words, slots, meta, w0, w1, w2):
    """Row of the key, added if new. The caller guarantees room (``KeyTable.reserve``)."""
    slot, row = _find(words, slots, w0, w1, w2)
    if row < 0:
        row = _append_row(words, meta, w0, w1, w2)
        slots[slot] = row + 1
    _release(words, slots, meta)
    return row


@_njit
def find_rows(words, slots, query, rows):
    """rows[i]: the row of key query[i] (packed as in ``words``), or -1."""
    for i in range(query.shape[0]):
        _, rows[i] = _find_live(words, slots, query[i, 0], query[i, 1], query[i, 2])


@_njit
def index_rows(words, start, stop, slots):
    """Index rows start..stop-1 in ``slots``, which holds other keys or none, and no
    tombstones; a freed row (all zero: no key has length 0) stays out."""
    mask = slots.shape[0] - 1
    # The home of the key _AHEAD rows on is asked for now (zh-large's 606,000 keys into a
    # fresh index: 0.015-0.017 s without, 0.007-0.008 s with) and kept until its row comes,
    # so that each key is hashed once, not twice (later the same day: 0.005 s -> 0.004 s).
    homes = np.empty(_AHEAD, dtype=np.int64)
    for row in range(start, min(stop, start + _AHEAD)):
        homes[row & (_AHEAD - 1)] = _home(words, slots, row)
    for row in range(start, stop):
        i = homes[row & (_AHEAD - 1)]
        if row + _AHEAD < stop:
            ahead = _home(words, slots, row + _AHEAD)
            homes[row & (_AHEAD - 1)] = ahead
            prefetch(slots, ahead)
        if words[row, 2] == _U64_0:
            continue
        # the rows hold distinct keys: the first empty slot is the place, no compare needed
        while slots[i] != 0:
            i = (i + 1) & mask
        slots[i] = row + 1


@_njit
def reindex(words, nkeys, slots):
    """Fill a fresh (all 0) ``slots`` array with rows 0..nkeys-1 (after the table grew)."""
    index_rows(words, 0, nkeys, slots)


@_njit
def intern_rows(src, nsrc, words, slots, meta, rowmap):
    """Intern the keys src[0:nsrc] (another key table's rows) in this table, in row order;
    rowmap[r] gets the row of src's key r here. The caller guarantees room."""
    for r in range(nsrc):
        rowmap[r] = intern(words, slots, meta, src[r, 0], src[r, 1], src[r, 2])


@_inline
def _shift_left(w0, w1, w2, nbytes):
    """The 192-bit number (w2:w1:w0) shifted left by ``nbytes`` bytes (0 <= nbytes < 24)."""
    q = nbytes // 8
    r = np.uint64(8 * (nbytes % 8))
    if q == 1:
        w2, w1, w0 = w1, w0, _U64_0
    elif q == 2:
        w2, w1, w0 = w0, _U64_0, _U64_0
    if r != 0:
        back = np.uint64(64) - r
        w2 = (w2 << r) | (w1 >> back)
        w1 = (w1 << r) | (w0 >> back)
        w0 = w0 << r
    return w0, w1, w2


@_inline
def _pair_words(words, a, b):
    """The words of key a followed by key b (both shorter than 24 bytes together)."""
    la = key_len(words, a)
    lb = key_len(words, b)
    s0, s1, s2 = _shift_left(words[b, 0], words[b, 1], words[b, 2] & _LOW56, la)
    top = np.uint64(la + lb) << _LEN_SHIFT
    return words[a, 0] | s0, words[a, 1] | s1, (words[a, 2] & _LOW56) | s2 | top


@_inline
def _append_refused(words, a, b):
    """Q9: ``WordIdKey::Append`` refuses when ``len + k.len >= 24``; the pair key of (a, b)
    is then key a itself."""
    refused = key_len(words, a) + key_len(words, b) >= KEY_BYTES
    _release(words)
    return refused


@_inline
def pair_key(words, slots, meta, a, b):
    """Row of the pair key of (a, b), interned (key a itself when Append refuses, Q9)."""
    if _append_refused(words, a, b):
        row = np.int64(a)
    else:
        w0, w1, w2 = _pair_words(words, a, b)
        row = intern(words, slots, meta, w0, w1, w2)
    _release(words, slots, meta)
    return row


@_inline
def _pair_key_lookup(words, slots, a, b):
    """Row of the pair key of (a, b), or -1 if that key was never interned."""
    if _append_refused(words, a, b):
        row = np.int64(a)
    else:
        w0, w1, w2 = _pair_words(words, a, b)
        _, row = _find(words, slots, w0, w1, w2)
    _release(words, slots)
    return row


# --------------------------------------------------------------------------- cutting text


@_inline
def char_len(lead):
    """GetWordSize (Q2): the length comes from the lead byte alone; 80-BF and F8-FF -> 1."""
    if lead < 0x80:
        return 1
    if (lead & 0xE0) == 0xC0:
        return 2
    if (lead & 0xF0) == 0xE0:
        return 3
    if (lead & 0xF8) == 0xF0:
        return 4
    return 1


@_inline
def delimiter_len(buf, i, end):
    """Length of the training delimiter that starts at buf[i], 0 if none (Q3).

    The C++ splits with the byte-level regex LF ? space ! " , . and the UTF-8 of
    · ， ？ ！ 。 U+3000 U+200B. No alternative is a prefix of another, so the leftmost match
    is simply the first position where one of them starts.
    """
    c = buf[i]
    if c == 0x0A or c == 0x3F or c == 0x20 or c == 0x21 or c == 0x22 or c == 0x2C or c == 0x2E:
        return 1
    if c == 0xC2:
        return 2 if i + 1 < end and buf[i + 1] == 0xB7 else 0
    if i + 2 >= end:
        return 0
    c1 = buf[i + 1]
    c2 = buf[i + 2]
    if c == 0xEF:
        return 3 if c1 == 0xBC and (c2 == 0x8C or c2 == 0x9F or c2 == 0x81) else 0
    if c == 0xE3:
        return 3 if c1 == 0x80 and (c2 == 0x82 or c2 == 0x80) else 0
    if c == 0xE2:
        return 3 if c1 == 0x80 and c2 == 0x8B else 0
    return 0


# Bytes that can start a training delimiter (Q3, ``delimiter_len``): the scan skips all others
# with one table load each (a Chinese text is mostly bytes that cannot).
_DELIMITER_LEAD = np.zeros(256, dtype=np.uint8)
_DELIMITER_LEAD[[0x0A, 0x3F, 0x20, 0x21, 0x22, 0x2C, 0x2E, 0xC2, 0xEF, 0xE3, 0xE2]] = 1


@_inline
def _char_key(buf, start, end):
    """(w0, w2, length) of the char that starts at buf[start], in a segment ending at ``end``.

    Q20.1: the C++ reads past the end of a segment whose last char is cut short. The byte
    right after a std::string is its NUL terminator; what lies further is undefined, and
    NUL is used for it too, so a cut char is padded with NUL to its full length.
    """
    length = char_len(buf[start])
    w0 = _U64_0
    for t in range(length):
        if start + t < end:
            w0 |= np.uint64(buf[start + t]) << np.uint64(8 * t)
    return w0, np.uint64(length) << _LEN_SHIFT, length


@_inline
def _cut_segment(buf, start, end, words, slots, meta, out, pos):
    """Cut buf[start:end] into chars (Q2), intern each, write their rows from out[pos];
    returns the position after the last one."""
    j = start
    while j < end:
        w0, w2, length = _char_key(buf, j, end)
        out[pos] = intern(words, slots, meta, w0, _U64_0, w2)
        pos += 1
        j += length
    return pos


# A direct-mapped memo of char rows for the scan: ASCII at its byte, a two-byte char at
# 128 + its 11 payload bits, a three-byte char at 128 + 2048 + its 16 payload bits, when
# its tail bytes are continuation bytes (80-BF) and the segment does not cut it; others
# (four bytes, invalid or cut) take the hash table. A Chinese corpus is nearly all
# three-byte chars: the memo (265 KB) stays in cache where the table would not.


@_inline
def _char_memo_index(buf, start, end):
    lead = np.int64(buf[start])
    if lead < 0x80:
        return lead
    if (lead & 0xE0) == 0xC0:
        if start + 1 < end and (buf[start + 1] & 0xC0) == 0x80:
            return 128 + (((lead & 0x1F) << 6) | (buf[start + 1] & 0x3F))
        return -1
    if ((lead & 0xF0) == 0xE0 and start + 2 < end and (buf[start + 1] & 0xC0) == 0x80
            and (buf[start + 2] & 0xC0) == 0x80):
        return 128 + 2048 + (((lead & 0x0F) << 12) | ((np.int64(buf[start + 1]) & 0x3F) << 6) | (buf[start + 2] & 0x3F))
    return -1


@_inline
def _cut_segment_memo(buf, start, end, words, slots, meta, out, pos, memo):
    """``_cut_segment`` through the memo of char rows (row + 1, 0 = not yet known)."""
    j = start
    while j < end:
        m = _char_memo_index(buf, j, end)
        if m >= 0 and memo[m] > 0:
            out[pos] = memo[m] - 1
            pos += 1
            j += char_len(buf[j])
            continue
        w0, w2, length = _char_key(buf, j, end)
        row = intern(words, slots, meta, w0, _U64_0, w2)
        if m >= 0:
            memo[m] = row + 1
        out[pos] = row
        pos += 1
        j += length
    return pos


@_njit
def segment_lists(buf, words, slots, meta, toks, ntoks, bounds, nlists):
    """Cut ``buf`` (training texts joined by LF) into training lists, appending to the arrays.

    buf : (n,) uint8. Each run between delimiters is cut into chars (Q2); a run of one char
    is dropped (Q3); the others are appended to ``toks`` (int32 key rows) and end at
    ``bounds[1 + list index]``. Needs room for n more toks, n // 2 more lists and n more
    keys. Returns (ntoks, nlists).
    """
    n = buf.shape[0]
    seg_start = 0
    i = 0
    while i <= n:
        dlen = delimiter_len(buf, i, n) if i < n else 1
        if dlen == 0:
            i += 1
            continue
        first = ntoks
        ntoks = _cut_segment(buf, seg_start, i, words, slots, meta, toks, ntoks)
        if ntoks - first >= 2:
            nlists += 1
            bounds[nlists] = ntoks
        else:
            ntoks = first
        i += dlen
        seg_start = i
    return ntoks, nlists


# --------------------------------------------------------------------------- one merge


@_njit
def count_pairs(toks, bounds, nlists, words, slots, meta, counts, seen, epoch):
    """The counting loop of MergeMaxPairWord; returns (winner row or -1, its count).

    Q4: a pair seen once counts 0, seen n times n - 1 (``emplace(m, 0)`` then ``++``).
    Q5: the maximum is replaced only by a strictly greater count, so the winner is the pair
    that reaches the final maximum first in scan order. ``seen[row] == epoch`` marks keys
    counted in this pass, so the counts need no clearing between passes.
    """
    best = -1
    best_count = 0
    for li in range(nlists):
        for i in range(bounds[li], bounds[li + 1] - 1):
            p = pair_key(words, slots, meta, toks[i], toks[i + 1])
            if seen[p] != epoch:
                seen[p] = epoch
                counts[p] = 0
            else:
                counts[p] += 1
                if counts[p] > best_count:
                    best_count = counts[p]
                    best = p
    return best, best_count


@_njit
def _count_of(row, counts, seen, epoch):
    # merge[m] through operator[]: a key not counted in this pass reads as 0
    if row < 0 or seen[row] != epoch:
        return 0
    return counts[row]


@_njit
def apply_pass(toks, bounds, nlists, best, first_pass, words, slots, counts, seen, epoch,
               single_counts, single_order, nsingles):
    """The second loop of MergeMaxPairWord, in place; returns (ntoks, nlists, nsingles).

    Walks each list as the C++ does with its index i, keeping the already-walked part in
    toks[start:w] (so toks[w - 1] is the *current* left neighbour) and the rest in toks[r:].
    First pass only (Q6): an element whose current left pair and right pair both count 0 is
    deleted and becomes a single (first deletion counts 0, then +1 each); the next element
    is then judged against the same left neighbour, so deletions cascade. The last element
    is never looked at. Every pass (Q8): where the right pair's key is the winner, the
    element becomes the winner and its right neighbour is erased (Q9: for a truncated key
    the element stays as it is and the neighbour just disappears). After the first pass,
    lists of one element are dropped.
    """
    w = 0
    kept = 0
    start = bounds[0]
    for li in range(nlists):
        end = bounds[li + 1]
        out_start = w
        r = start
        while r + 1 < end:
            cur = toks[r]
            right = _pair_key_lookup(words, slots, cur, toks[r + 1])
            if first_pass:
                left = 0
                if w > out_start:
                    left = _count_of(_pair_key_lookup(words, slots, toks[w - 1], cur), counts, seen, epoch)
                if left == 0 and _count_of(right, counts, seen, epoch) == 0:
                    if single_counts[cur] < 0:
                        single_counts[cur] = 0
                        single_order[nsingles] = cur
                        nsingles += 1
                    else:
                        single_counts[cur] += 1
                    r += 1
                    continue
            if right == best:
                toks[w] = best
                w += 1
                r += 2
                continue
            toks[w] = cur
            w += 1
            r += 1
        while r < end:
            toks[w] = toks[r]
            w += 1
            r += 1
        start = end
        if first_pass and w - out_start <= 1:
            w = out_start
        else:
            kept += 1
            bounds[kept] = w
    return w, kept, nsingles


# --------------------------------------------------------------------------- segment types
#
# The scalable engine stores each distinct training list once, as a *type* with its
# multiplicity and the index of its last occurrence among all lists; types are numbered
# in the order of their first occurrence (a type is made where its list first occurs).
# That changes nothing in the results: a list's first pass depends only on its own content
# and on the global counts, and merges treat equal lists alike; the scan order the C++
# uses for ties and for the order of singles is recovered from the type numbers and the
# last occurrences.
#
# Type store: tokens ``ttoks`` (int32), type t = ttoks[tstart[t]:tstart[t + 1]];
# ``tmult``/``tlast`` (int64); ``thash`` (uint64) and the index ``tslots``
# (int32, type + 1, 0 = empty); ``tmeta`` = [types, tokens, lists seen].

_SEQ_SEED = np.uint64(0x84222325CBF29CE4)


@_inline
def _same_tokens(toks, a, b, length):
    for k in range(length):
        if toks[a + k] != toks[b + k]:
            return False
    return True


_SCAN_BATCH = 32  # lists cut and hashed before the first of them is looked up


@_inline
def _store_lists(nb, bstart, blen, bhash, blist, ntypes, nt, ttoks, tstart, tmult, tlast, thash, tslots):
    """Add a batch of cut lists to the type store, in order; returns (types, tokens).

    List b's tokens were cut to ttoks[bstart[b]:] (after the store's nt tokens and the
    batch's earlier lists), its hash and index are bhash[b] and blist[b]. A new list's
    tokens move down to the end of the store (only after a repeat of the batch), a
    repeat's are dropped.
    """
    tmask = tslots.shape[0] - 1
    for b in range(nb):
        src, length, h = bstart[b], blen[b], bhash[b]
        slot = np.int64(h & np.uint64(tmask))
        while True:
            t = np.int64(tslots[slot]) - 1
            if t < 0:
                if src != nt:
                    for q in range(length):  # downwards: safe although the ranges may overlap
                        ttoks[nt + q] = ttoks[src + q]
                tslots[slot] = ntypes + 1
                thash[ntypes] = h
                tstart[ntypes + 1] = nt + length
                tmult[ntypes] = 1
                tlast[ntypes] = blist[b]
                ntypes += 1
                nt += length
                break
            if thash[t] == h and tstart[t + 1] - tstart[t] == length and _same_tokens(ttoks, tstart[t], src, length):
                tmult[t] += 1
                tlast[t] = blist[b]
                break
            slot = (slot + 1) & tmask
    _release(bstart, blen, bhash, blist, ttoks, tstart, tmult, tlast)
    _release(thash, tslots)
    return ntypes, nt


@_njit
def scan_types(buf, start, words, slots, meta, key_limit, ttoks, tstart, tmult, tlast, thash, tslots, tmeta,
               memo):
    """Cut buf[start:] into lists (as ``segment_lists``) and add them to the type store.

    The lists are looked up in the type index in batches (``_SCAN_BATCH``): each is cut
    and hashed, and its index entry asked for (prefetched), before the batch's lookups
    begin, so that their cache misses overlap (the lookups were half of the scan's time).

    Stops before a segment that might not fit (keys beyond ``key_limit``, tokens or types
    beyond the arrays, the index more than half full) and returns (its offset, its length),
    so the caller can grow the arrays and call again from there; (len(buf), 0) when done.
    """
    n = buf.shape[0]
    ntypes, nt, nlists = tmeta[0], tmeta[1], tmeta[2]
    tmask = tslots.shape[0] - 1
    bstart = np.empty(_SCAN_BATCH, dtype=np.int64)
    blen = np.empty(_SCAN_BATCH, dtype=np.int64)
    bhash = np.empty(_SCAN_BATCH, dtype=np.uint64)
    blist = np.empty(_SCAN_BATCH, dtype=np.int64)
    nb = 0
    cut = nt  # where the next list's tokens go: after the batch's
    seg_start = start
    i = start
    while i <= n:
        while i < n and _DELIMITER_LEAD[buf[i]] == 0:
            i += 1
        dlen = delimiter_len(buf, i, n) if i < n else 1
        if dlen == 0:
            i += 1
            continue
        seglen = i - seg_start
        if (meta[0] + seglen > key_limit or cut + seglen > ttoks.shape[0] or ntypes + nb + 2 > tmult.shape[0]
                or 2 * (ntypes + nb + 1) > tslots.shape[0]):
            if nb == 0:
                tmeta[0], tmeta[1], tmeta[2] = ntypes, nt, nlists
                return seg_start, seglen
            ntypes, nt = _store_lists(nb, bstart, blen, bhash, blist, ntypes, nt, ttoks, tstart, tmult, tlast,
                                      thash, tslots)
            nb = 0
            cut = nt
            continue  # the same segment again, with the batch out of the way
        k = _cut_segment_memo(buf, seg_start, i, words, slots, meta, ttoks, cut, memo)
        if k - cut >= 2:
            h = _SEQ_SEED
            for q in range(cut, k):
                h = (h ^ np.uint64(ttoks[q] + 1)) * _M1
            h ^= h >> _SH29
            prefetch(tslots, np.int64(h & np.uint64(tmask)))
            bstart[nb], blen[nb], bhash[nb], blist[nb] = cut, k - cut, h, nlists
            nb += 1
            cut = k
            nlists += 1
            if nb == _SCAN_BATCH:
                ntypes, nt = _store_lists(nb, bstart, blen, bhash, blist, ntypes, nt, ttoks, tstart, tmult, tlast,
                                          thash, tslots)
                nb = 0
                cut = nt
        i += dlen
        seg_start = i
    ntypes, nt = _store_lists(nb, bstart, blen, bhash, blist, ntypes, nt, ttoks, tstart, tmult, tlast, thash, tslots)
    tmeta[0], tmeta[1], tmeta[2] = ntypes, nt, nlists
    return n, 0


@_njit
def scan_types_backward(buf, end, words, slots, meta, key_limit, ttoks, tstart, tmult, tlast, thash, tslots, tmeta,
                        memo):
    """``scan_types`` of buf[:end] from its end to its start: the same lists, added to the
    store last to first (each list's tokens still first to last). Types are then made in
    the order of their last occurrences, latest first, and a type's ``tlast`` is the
    index, in this order, of its *first* occurrence (``TypeStore.finish`` turns both
    round). No byte inside a delimiter can start one (``delimiter_len``), so matches
    never overlap and looking for them backwards finds the forward scan's.

    Stops as ``scan_types`` does and returns (the end of the segment that might not fit,
    its length), to be called again with that end; (-1, 0) when done.
    """
    n = buf.shape[0]
    ntypes, nt, nlists = tmeta[0], tmeta[1], tmeta[2]
    bstart = np.empty(_SCAN_BATCH, dtype=np.int64)
    blen = np.empty(_SCAN_BATCH, dtype=np.int64)
    bhash = np.empty(_SCAN_BATCH, dtype=np.uint64)
    blist = np.empty(_SCAN_BATCH, dtype=np.int64)
    tmask = tslots.shape[0] - 1
    nb = 0
    cut = nt
    seg_end = end
    j = end - 1
    while True:
        while j >= 0 and (_DELIMITER_LEAD[buf[j]] == 0 or delimiter_len(buf, j, n) == 0):
            j -= 1
        seg_start = j + delimiter_len(buf, j, n) if j >= 0 else 0
        seglen = seg_end - seg_start
        if (meta[0] + seglen > key_limit or cut + seglen > ttoks.shape[0] or ntypes + nb + 2 > tmult.shape[0]
                or 2 * (ntypes + nb + 1) > tslots.shape[0]):
            if nb == 0:
                tmeta[0], tmeta[1], tmeta[2] = ntypes, nt, nlists
                return seg_end, seglen
            ntypes, nt = _store_lists(nb, bstart, blen, bhash, blist, ntypes, nt, ttoks, tstart, tmult, tlast,
                                      thash, tslots)
            nb = 0
            cut = nt
            continue  # the same segment again (j is still at its delimiter)
        k = _cut_segment_memo(buf, seg_start, seg_end, words, slots, meta, ttoks, cut, memo)
        if k - cut >= 2:
            h = _SEQ_SEED
            for q in range(cut, k):
                h = (h ^ np.uint64(ttoks[q] + 1)) * _M1
            h ^= h >> _SH29
            prefetch(tslots, np.int64(h & np.uint64(tmask)))
            bstart[nb], blen[nb], bhash[nb], blist[nb] = cut, k - cut, h, nlists
            nb += 1
            cut = k
            nlists += 1
            if nb == _SCAN_BATCH:
                ntypes, nt = _store_lists(nb, bstart, blen, bhash, blist, ntypes, nt, ttoks, tstart, tmult, tlast,
                                          thash, tslots)
                nb = 0
                cut = nt
        if j < 0:
            break
        seg_end = j
        j -= 1
    ntypes, nt = _store_lists(nb, bstart, blen, bhash, blist, ntypes, nt, ttoks, tstart, tmult, tlast, thash, tslots)
    tmeta[0], tmeta[1], tmeta[2] = ntypes, nt, nlists
    return -1, 0


@_njit
def reindex_types(thash, ntypes, tslots):
    """Fill a fresh (all 0) type index with types 0..ntypes-1."""
    tmask = tslots.shape[0] - 1
    for t in range(ntypes):
        slot = np.int64(thash[t] & np.uint64(tmask))
        while tslots[slot] != 0:
            slot = (slot + 1) & tmask
        tslots[slot] = t + 1


# --------------------------------------------------------------------------- slots
#
# After the scan the types are laid out one after the other in last-occurrence order, each
# followed by a SENTINEL slot; the type store is then dropped and every later stage works
# in place on these slots. Row s of ``S (n, 4) int32`` holds, in one cache line: TOK, the
# key row (DEAD once merged into its left neighbour, or deleted by the first pass); PK,
# the pair key of this slot and its right neighbour (-1 if none or not known yet);
# NXT/PRV, its neighbours in PK's occurrence list. Slot order is the C++ scan order of
# last occurrences, so "the earliest last occurrence" (Q5) is "the smallest last slot".
# (The columns and markers are in ``_layout``.)


@_njit
def slot_order(tlast, tstart, tmult, nlists, first, slot_offset, order, base, tlen, mult):
    """A part's share of the slot order, written into the slices of the whole that are its
    own (``ScannedTypes``): order[k] = first + the type whose last occurrence is the k-th
    of the part's, base[t] its first slot when the types are laid out in that order from
    ``slot_offset``, each followed by a sentinel; tlen and mult, each type's length and
    multiplicity. A list is the last occurrence of at most one type, so a scatter by last
    occurrence sorts them (``tlast`` < ``nlists``), in two linear passes."""
    n = tlast.shape[0]
    at = np.full(nlists, -1, dtype=np.int32)
    for t in range(n):
        at[tlast[t]] = t
        tlen[t] = tstart[t + 1] - tstart[t]
        mult[t] = tmult[t]
    k = 0
    slot = slot_offset
    for i in range(nlists):
        t = at[i]
        if t >= 0:
            order[k] = first + t
            base[t] = slot
            slot += tlen[t] + 1
            k += 1


@_njit
def backward_slot_order(tlast, tstart, tmult, nlists, first, slot_offset, order, base, tlen, mult):
    """``slot_order`` of a part scanned backwards (``scan_types_backward``), its types
    given in first-occurrence numbers as a forward scan numbers them. The scan made its
    types latest last occurrence first, so the slot order is the reverse of its own;
    ``tlast`` holds where each type first occurs, counted from the end, and each list is
    the first occurrence of at most one type, so a scatter by it ranks them. Returns
    ``number``: number[j] is the first-occurrence number (in the part) of the scan's type
    j, by which its tokens are still stored."""
    n = tlast.shape[0]
    at = np.full(nlists, -1, dtype=np.int32)
    for j in range(n):
        at[tlast[j]] = j
    number = np.empty(n, dtype=np.int64)
    r = 0
    for i in range(nlists - 1, -1, -1):  # the largest index from the end occurs first
        j = at[i]
        if j >= 0:
            number[j] = r
            r += 1
    slot = slot_offset
    for k in range(n):
        j = n - 1 - k
        t = number[j]
        order[k] = first + t
        base[t] = slot
        tlen[t] = tstart[j + 1] - tstart[j]
        mult[t] = tmult[j]
        slot += tlen[t] + 1
    return number


@_inline
def _lay_out(ttoks, a, b, rowmap, s, S):
    """Copy ttoks[a:b], mapped through ``rowmap`` (a part's key rows -> the key table's),
    into the slots from s, then a sentinel; every field else -1."""
    for i in range(a, b):
        S[s, TOK] = rowmap[ttoks[i]]
        S[s, PK] = -1
        S[s, NXT] = -1
        S[s, PRV] = -1
        s += 1
    S[s, TOK] = SENTINEL
    S[s, PK] = -1
    S[s, NXT] = -1
    S[s, PRV] = -1


@_njit
def layout_types(ttoks, tstart, ntypes, rowmap, base, S):
    """Lay out a part's types 0..ntypes-1, each at base[t] (``_lay_out``). By number, not
    in slot order: in slot order zh-large's forward part took 10-20% longer."""
    for t in range(ntypes):
        _lay_out(ttoks, tstart[t], tstart[t + 1], rowmap, base[t], S)


@_njit
def layout_types_backward(ttoks, tstart, number, rowmap, base, S):
    """``layout_types`` for a part scanned backwards: its tokens are by the scan's own
    type numbers j, and type j goes to base[number[j]] (``backward_slot_order``), with no
    gather of the bases (which had this part's thread start 4 ms late)."""
    for j in range(number.shape[0]):
        _lay_out(ttoks, tstart[j], tstart[j + 1], rowmap, base[number[j]], S)


# --------------------------------------------------------------------------- the first pass


# Counting the pairs of the first pass. All tokens are chars then, and a char key is as
# long as its lead byte says (a cut char is padded, Q20.1), so the bytes of a pair split
# only one way: the pair (a, b) of rows is its key. The count goes through a table keyed
# by the int64 a << 32 | b whose 32-byte entry holds the key's count, row and last slot:
# one cache line per pair instead of four (index, key, count, last slot). Only a pair seen
# for the first time is interned by its bytes.

_CODE, _COUNT, _ROW, _LAST = 0, 1, 2, 3  # columns of a pair-table entry; _ROW is row + 1, 0 = empty
_LOW32 = np.int64(0xFFFFFFFF)  # a code's right row


@_inline
def _code_slot(code, mask):
    h = np.uint64(code) * _M1
    return np.int64((h ^ (h >> _SH29)) & np.uint64(mask))


@_njit
def _grown_pair_table(table):
    grown = np.zeros((2 * table.shape[0], 4), dtype=np.int64)
    mask = grown.shape[0] - 1
    for e in range(table.shape[0]):
        if table[e, _ROW] != 0:
            i = _code_slot(table[e, _CODE], mask)
            while grown[i, _ROW] != 0:
                i = (i + 1) & mask
            grown[i] = table[e]
    return grown


@_njit
def count_slots(order, start, base, tlen, tmult, S, words, meta, key_limit, table, tmeta):
    """Weighted pair counts for the types order[start:] (last-occurrence order, so slot
    order), in the pair table (above): the number of occurrences of each pair key in the
    corpus (the C++ count is one less, Q4) and its last slot; S[s, PK] gets the key of
    each pair. ``tmeta[0]`` counts the entries.

    A pair seen for the first time is a new key, appended to the key rows but not indexed
    (the caller indexes them all afterwards, ``KeyTable.index_all``): its bytes are two
    chars', and a char is as long as its lead byte says (Q2; a cut char is padded, Q20.1),
    so they split only one way and are neither a char's nor another pair's. That spares a
    probe of the key index, with a compare against whatever key sits there, per pair.

    Returns (the next index into order, the table, which grows here at 3/4 full); stops
    early when the key rows might overflow ``key_limit`` (the caller grows them and calls
    again).
    """
    for oi in range(start, order.shape[0]):
        t = order[oi]
        a, n = base[t], tlen[t]
        if meta[0] + n > key_limit:
            return oi, table
        if 4 * (tmeta[0] + n) > 3 * table.shape[0]:
            table = _grown_pair_table(table)
        for i in range(a, a + n - 1):
            e = _tally(S, i, tmult[t], table)
            if table[e, _ROW] == 0:
                _new_pair_key(table, e, words, meta, tmeta)
            S[i, PK] = table[e, _ROW] - 1
    return order.shape[0], table


_AHEAD = 16  # slots (a power of 2): a prefetch has time to arrive (8 and 32 were slower on zh-large)


@_inline
def _tally(S, i, m, table):
    """Count the pair at slot i (weight m, last slot i) in the pair table, which has room;
    returns its entry, whose _ROW is still 0 if the pair is new (the caller sets it)."""
    mask = table.shape[0] - 1
    # ahead in slot order, across types: they are laid out one after the other in this
    # order, and most are shorter than the prefetch distance
    j = i + _AHEAD
    if j + 1 < S.shape[0] and S[j, TOK] >= 0 and S[j + 1, TOK] >= 0:
        prefetch(table, _code_slot((np.int64(S[j, TOK]) << 32) | S[j + 1, TOK], mask))
    code = (np.int64(S[i, TOK]) << 32) | S[i + 1, TOK]
    e = _probe(table, code, mask)
    table[e, _CODE] = code
    table[e, _COUNT] += m
    table[e, _LAST] = i
    _release(S, table)
    return e


@_inline
def _probe(table, code, mask):
    """The pair table's entry for ``code``, or the empty entry where it goes."""
    e = _code_slot(code, mask)
    while table[e, _ROW] != 0 and table[e, _CODE] != code:
        e = (e + 1) & mask
    _release(table)
    return e


@_inline
def _new_pair_key(table, e, words, meta, tmeta):
    """Give the new pair in entry e (its code set) a key row of its own: appended, not
    indexed (``count_slots`` says why no probe of the key index is needed)."""
    code = table[e, _CODE]
    w0, w1, w2 = _pair_words(words, code >> 32, code & _LOW32)
    table[e, _ROW] = _append_row(words, meta, w0, w1, w2) + 1
    tmeta[0] += 1
    _release(table, words, meta, tmeta)


@_njit
def count_codes(order, base, tlen, tmult, S, table, tmeta):
    """``count_slots`` for the last range of the slot order, on a thread beside the one
    counting the ranges before it (``FirstPass``): the pairs get numbers 0, 1, ... in the
    order they first appear instead of key rows (the _ROW column holds number + 1, and
    S[i, PK] the number), and no key row is touched; ``merge_counts`` turns the numbers
    into rows afterwards. Returns the table (grown at 3/4 full)."""
    for oi in range(order.shape[0]):
        t = order[oi]
        a, n = base[t], tlen[t]
        if 4 * (tmeta[0] + n) > 3 * table.shape[0]:
            table = _grown_pair_table(table)
        for i in range(a, a + n - 1):
            e = _tally(S, i, tmult[t], table)
            if table[e, _ROW] == 0:
                tmeta[0] += 1
                table[e, _ROW] = tmeta[0]
            S[i, PK] = table[e, _ROW] - 1
    return table


@_njit
def numbered_pairs(table, count):
    """``count_codes``'s pairs by number: (code, count, last slot) each."""
    pairs = np.empty((count, 3), dtype=np.int64)
    for e in range(table.shape[0]):
        if table[e, _ROW] != 0:
            number = table[e, _ROW] - 1
            pairs[number, 0] = table[e, _CODE]
            pairs[number, 1] = table[e, _COUNT]
            pairs[number, 2] = table[e, _LAST]
    return pairs


@_njit
def merge_counts(pairs, start, table, words, meta, key_limit, tmeta, rows):
    """Fold ``count_codes``'s pairs (``numbered_pairs``) into the table of the slots
    before them (``count_slots``'s), numbers start, start + 1, ...: a pair seen before adds
    its count and takes the later last slot, a new one becomes a new key row, as
    count_slots would have made it there (the numbers are in slot order). rows[number]
    gets its row. Returns (the next number, the table); stops early, as count_slots does,
    when the key rows might overflow ``key_limit``."""
    for number in range(start, pairs.shape[0]):
        if meta[0] + 1 > key_limit:
            return number, table
        if 4 * (tmeta[0] + 1) > 3 * table.shape[0]:
            table = _grown_pair_table(table)
        mask = table.shape[0] - 1
        if number + _AHEAD < pairs.shape[0]:
            # Both cache lines a probe is likely to read: most of these pairs are new, and
            # a probe for a missing code runs on to an empty entry, often in the next line
            # of two entries (zh-large: 43 -> 27 ms under the JIT, medians of 8; the
            # count's probes, mostly hits, were slower with it)
            ahead = _code_slot(pairs[number + _AHEAD, 0], mask)
            prefetch(table, ahead)
            prefetch(table, (ahead + 2) & mask)
        code = pairs[number, 0]
        e = _probe(table, code, mask)
        if table[e, _ROW] == 0:
            table[e, _CODE] = code
            _new_pair_key(table, e, words, meta, tmeta)
        table[e, _COUNT] += pairs[number, 1]
        table[e, _LAST] = pairs[number, 2]
        rows[number] = table[e, _ROW] - 1
    return pairs.shape[0], table


@_njit
def renumber_pairs(order, base, tlen, S, rows):
    """S[i, PK] = rows[S[i, PK]] for the pairs of the types ``order`` (``count_codes``'s)."""
    for oi in range(order.shape[0]):
        t = order[oi]
        for i in range(base[t], base[t] + tlen[t] - 1):
            S[i, PK] = rows[S[i, PK]]


@_njit
def pair_counts(table, occ, lastpos):
    """Scatter the pair table into per-key arrays: occ[K] occurrences, lastpos[K] last slot."""
    for e in range(table.shape[0]):
        if table[e, _ROW] != 0:
            k = table[e, _ROW] - 1
            occ[k] = table[e, _COUNT]
            lastpos[k] = table[e, _LAST]


@_njit
def best_pair(occ, lastpos, nkeys):
    """Q5: the pair with the most occurrences (at least 2), ties to the earliest last one.

    The C++ replaces its maximum only on a strictly greater count while it scans, so the
    winner is the first pair to *reach* the final maximum M; a pair reaches M at its last
    occurrence; hence: highest count, then the earliest last occurrence. Returns -1 if no
    pair occurs twice.
    """
    best = -1
    best_occ = 1
    best_pos = np.int64(0)
    for k in range(nkeys):
        o = occ[k]
        if o > best_occ or (o == best_occ and o > 1 and lastpos[k] < best_pos):
            best, best_occ, best_pos = k, o, lastpos[k]
    return best


@_njit
def first_pass(order, base, tlen, tmult, best, S, words, slots, occ, single_counts, single_first):
    """The first pass of MergeMaxPairWord (Q6) on the types ``order``, in any order.

    The same walk as ``apply_pass`` with ``first_pass`` set, on weighted counts: a key is
    "count 0" when it occurs at most once in the whole corpus. Each type is rewritten in
    place, tokens and pair keys (-1 where a pair is new, or not in ``slots``), and followed
    by a SENTINEL and DEAD slots; tlen[t] becomes its new length (0, and all DEAD, when one
    element or none is left). A type's walk reads only its own slots and the counts of
    the pass, so types can be walked in any order, in pieces: deleting a key in a type of
    multiplicity m adds m to single_counts[key], and single_first[key] keeps the smallest
    (type << 32 | offset in the type) of its deletions. Types are numbered in the order of
    their first occurrence, which is the order the C++ walks them in, so that is the
    order of the C++'s first deletions (Q7); the caller subtracts the 1 of the first.
    Returns the number of pairs left without a key (-1): at most that many new keys.
    """
    unkeyed = 0
    for oi in range(order.shape[0]):
        t = order[oi]
        start = base[t]
        end = start + tlen[t]
        m = tmult[t]
        w = start
        r = start
        left = np.int64(-1)  # pair key of S[w - 1] and S[r], when known_left
        known_left = False
        while r + 1 < end:
            if r + _WALK_AHEAD < S.shape[0]:
                prefetch(occ, S[r + _WALK_AHEAD, PK])
            cur = S[r, TOK]
            right = np.int64(S[r, PK])  # an original neighbour pair, counted
            left_occ = 0
            if w > start:
                if not known_left:
                    left = _pair_key_lookup(words, slots, S[w - 1, TOK], cur)
                    known_left = True
                if left >= 0:
                    left_occ = occ[left]
            if left_occ <= 1 and occ[right] <= 1:
                single_counts[cur] += m
                single_first[cur] = min(single_first[cur], (np.int64(t) << 32) | (r - start))
                r += 1
                known_left = False
                continue
            if w > start:
                S[w - 1, PK] = -1 if right == best else left
            if right == best:
                S[w, TOK] = best
                w += 1
                r += 2
                known_left = False
                continue
            S[w, TOK] = cur
            w += 1
            r += 1
            left = right
            known_left = True
        if r < end:
            if w > start:
                S[w - 1, PK] = left if known_left else -1
            S[w, TOK] = S[r, TOK]
            w += 1
        n = w - start
        if n < 2:
            n = 0
            w = start
        else:
            S[w - 1, PK] = -1
            S[w, TOK] = SENTINEL
            S[w, PK] = -1
            w += 1
            for i in range(start, start + n - 1):
                unkeyed += S[i, PK] < 0
        for i in range(w, end + 1):  # what the walk freed, and the old sentinel
            S[i, TOK] = DEAD if i < end or n == 0 else SENTINEL
            S[i, PK] = -1
        tlen[t] = n
    return unkeyed


# --------------------------------------------------------------------------- incremental merges
#
# Every pair key K keeps its occurrences in a list sorted by slot, from kst[K, HEAD] to
# kst[K, TAIL]; kst[K, OCC] is its weighted number of occurrences (a slot counts the
# multiplicity of its type, smul[slot]), and kst[K, FLAGS] its flags: one 16-byte row
# per key, so a site touches one cache line per key. A lazy max-heap on
# (occ desc, tail asc) picks the winner.
#
# Two classes of slots. On a large corpus the merges run on two threads. The types are
# then in two classes, by blocks of 2**shift slots of the layout taken alternately (so
# that the occurrences of nearly every pair fall about evenly into both), and each class
# has lists of its own: its own key states (``kst`` for class 0, ``kst1`` for class 1),
# fingers and list of changed keys. A step applies the winner at its sites of class 0
# on the leader's thread (``run_merges``) while the follower's thread (``follow_merges``)
# does those of class 1. A site reads and writes only the slots of its own type and the
# key states of its own class, so the two threads never write the same thing except
# the key table, where a new key is made under a lock. A key's count is the sum of its
# classes' counts and its last occurrence the later of their tails, so every choice of
# winner is the one of a single list. The vocabulary's flags (TOKEN, IN_VOCAB) are
# class 0's. With one class (``classes == 1``), kst1 and the other arrays of class 1 are
# placeholders, never read.

_CLEAR_STEP_BITS = np.uint8(0xFF ^ (DIRTY | FINGER | RAISED))
_KEEP = IN_VOCAB | TOKEN


@_inline
def _new_key_state(kst, k):
    """A key created after the table grew: its row is zero, as ``KeyTable.reserve`` leaves
    it (untouched pages cost no memory); the state of a key that never occurred is
    (OCC 0, no HEAD, no TAIL, no FLAGS)."""
    kst[k, OCC] = 0
    kst[k, HEAD] = -1
    kst[k, TAIL] = -1
    kst[k, FLAGS] = 0


@_inline
def _new_key_states(kst, kst1, classes, k):
    """``_new_key_state`` in every class."""
    _new_key_state(kst, k)
    if classes == 2:
        _new_key_state(kst1, k)
    _release(kst, kst1)


@_inline
def _occ(kst, kst1, classes, k):
    """A key's weighted number of occurrences, in all classes."""
    o = np.int64(kst[k, OCC])
    if classes == 2:
        o += kst1[k, OCC]
    _release(kst, kst1)
    return o


@_inline
def _tail(kst, kst1, classes, k):
    """A key's last occurrence, in all classes (-1: none)."""
    t = np.int64(kst[k, TAIL])
    if classes == 2 and kst1[k, TAIL] > t:
        t = kst1[k, TAIL]
    _release(kst, kst1)
    return t


@_inline
def _link_type(a, n, m, S, words, slots, meta, smul, kst, kst0, kst1, classes, lock, no_free):
    """Link the pairs of the type in slots a..a+n-1 (multiplicity m) into the lists of
    ``kst``, its class's (kst0 and kst1: every class's, for a new key)."""
    for i in range(a, a + n):  # not smul[a : a + n] = m: a view costs reference counting here
        smul[i] = m
    for i in range(a, a + n - 1):
        _prefetch_link(i, S, kst)
        k = np.int64(S[i, PK])
        if k < 0:
            k = _pair_key_reusing(words, slots, meta, no_free, no_free, kst0, kst1, classes, lock, S[i, TOK],
                                  S[i + 1, TOK])
            S[i, PK] = k
        kst[k, OCC] += m
        last = kst[k, TAIL]
        if last < 0:
            kst[k, HEAD] = i
        else:
            S[last, NXT] = i
            S[i, PRV] = last
        kst[k, TAIL] = i
    _release(S, words, slots, meta, smul, kst, kst0, kst1)
    _release(lock, no_free)


# Slots ahead of the one at hand whose key's state the first pass and the linking ask
# for (the linking: its list's last slot at half the distance). Both walk the slots in
# order across types, most of which are shorter than that. zh-large at 8000, medians of
# 5 runs per thread of two: the linking 0.067-0.094 s without, 0.039-0.056 s at 48 (as
# at 64 and 96; 0.056-0.065 s at 16); the first pass 0.035-0.050 s -> 0.027-0.034 s.
_WALK_AHEAD = 48


@_inline
def _prefetch_link(i, S, kst):
    """Ask for what linking the slots ahead of slot i will touch (``_WALK_AHEAD``)."""
    j = i + _WALK_AHEAD
    if j < S.shape[0]:
        prefetch(kst, S[j, PK])
    j = i + _WALK_AHEAD // 2
    k = S[j, PK] if j < S.shape[0] else -1
    if k >= 0:
        prefetch(S, kst[k, TAIL])
    _release(S, kst)


@_njit
def link_slots(order, start, base, tlen, tmult, S, words, slots, meta, key_limit, smul, kst, kst0, kst1, classes, shift,
               c, lock):
    """Link every pair of the types of class ``c`` among order[start:] into its key's list
    (slot order), whose states are ``kst`` (kst0 or kst1; both, for a new key). With two
    classes, the blocks of 2**shift slots alternate (a type is in the block of its first
    slot) and the two are linked at once, by two threads: then ``key_limit`` is not
    checked, the caller having made room for every pair the first pass left without a key.
    With one class, every type is class 0.

    Types of length 0 are skipped; smul[s] gets the multiplicity of the type of slot s.
    Returns the next index into order; stops early like ``count_slots``.
    """
    no_free = np.zeros(2, dtype=np.int64)  # the merges' free rows: none yet
    for oi in range(start, order.shape[0]):
        t = order[oi]
        n = tlen[t]
        if n == 0:
            continue
        a = base[t]
        if classes == 2:
            if (a >> shift) & 1 != c:
                continue
        elif meta[0] + n > key_limit:
            return oi
        _link_type(a, n, tmult[t], S, words, slots, meta, smul, kst, kst0, kst1, classes, lock, no_free)
    return order.shape[0]


@_inline
def _ranks_above(occ, tail, occ2, tail2):
    """The heap's order (Q5): more occurrences first, then the earlier last one."""
    return occ > occ2 or (occ == occ2 and tail < tail2)


@_inline
def _heap_better(hocc, htail, i, j):
    better = _ranks_above(hocc[i], htail[i], hocc[j], htail[j])
    _release(hocc, htail)
    return better


@_inline
def _heap_swap(hocc, htail, hkey, i, j):
    hocc[i], hocc[j] = hocc[j], hocc[i]
    htail[i], htail[j] = htail[j], htail[i]
    hkey[i], hkey[j] = hkey[j], hkey[i]


@_inline
def _heap_sift_down(hocc, htail, hkey, size, i):
    c = 2 * i + 1
    while c < size:
        if c + 1 < size and _heap_better(hocc, htail, c + 1, c):
            c += 1
        if not _heap_better(hocc, htail, c, i):
            break
        _heap_swap(hocc, htail, hkey, i, c)
        i = c
        c = 2 * i + 1
    _release(hocc, htail, hkey)


@_inline
def heap_push(hocc, htail, hkey, hmeta, o, t, k):
    i = hmeta[0]
    hmeta[0] = i + 1
    hocc[i], htail[i], hkey[i] = o, t, k
    while i > 0:
        parent = (i - 1) // 2
        if not _heap_better(hocc, htail, i, parent):
            break
        _heap_swap(hocc, htail, hkey, i, parent)
        i = parent
    _release(hocc, htail, hkey, hmeta)


@_inline
def _live(kst, kst1, classes, k):
    """Whether key k has a heap entry: it occurs at least twice, so its C++ count is at
    least 1 (Q4) and it can win."""
    return _occ(kst, kst1, classes, k) >= 2


@_inline
def count_live(kst, kst1, classes, nkeys):
    """The number of keys with a heap entry (``_live``)."""
    n = 0
    for k in range(nkeys):
        n += _live(kst, kst1, classes, k)
    return n


@_njit
def heap_rebuild(hocc, htail, hkey, hmeta, kst, kst1, classes, nkeys):
    """Drop every stale entry: one entry per live key, heapified."""
    size = 0
    for k in range(nkeys):
        if _live(kst, kst1, classes, k):
            hocc[size], htail[size], hkey[size] = _occ(kst, kst1, classes, k), _tail(kst, kst1, classes, k), k
            size += 1
    hmeta[0] = size
    for i in range(size // 2 - 1, -1, -1):
        _heap_sift_down(hocc, htail, hkey, size, i)
    return size


@_inline
def _heap_pop_valid(hocc, htail, hkey, hmeta, kst, kst1, classes):
    """Pop until an entry matches its key's current (occ, tail); -1 if none is left.

    An entry above its key's current value (the key only lost occurrences since it was
    pushed, ``run_merges``) is replaced by that value, which sinks to its place; one below
    it is dropped: the key has another entry at least as high.
    """
    found = -1
    while found < 0 and hmeta[0] > 0:
        o, t, k = hocc[0], htail[0], hkey[0]
        occ, tail = _occ(kst, kst1, classes, k), _tail(kst, kst1, classes, k)
        if occ >= 2 and _ranks_above(o, t, occ, tail):
            hocc[0], htail[0] = occ, tail
            _heap_sift_down(hocc, htail, hkey, hmeta[0], 0)
            continue
        size = hmeta[0] - 1
        hmeta[0] = size
        if size > 0:
            hocc[0], htail[0], hkey[0] = hocc[size], htail[size], hkey[size]
            _heap_sift_down(hocc, htail, hkey, size, 0)
        if occ == o and tail == t and occ >= 2:
            found = k
    _release(hocc, htail, hkey, hmeta, kst, kst1)
    return found


@_inline
def _next_alive(S, s):
    t = s + 1
    while S[t, TOK] == DEAD:
        t += 1
    if S[t, TOK] == SENTINEL:
        t = -1
    _release(S)
    return t


@_inline
def _prev_alive(S, s):
    t = s - 1
    while t >= 0 and S[t, TOK] == DEAD:
        t -= 1
    if t >= 0 and S[t, TOK] == SENTINEL:
        t = -1
    _release(S)
    return t


@_inline
def _mark(k, kst, dirty_list, nd):
    if kst[k, FLAGS] & DIRTY == 0:
        kst[k, FLAGS] |= DIRTY
        dirty_list[nd] = k
        nd += 1
    _release(kst, dirty_list)
    return nd


@_inline
def _connect(S, kst, k, a, b):
    """Make slot b follow slot a in key k's list (-1 stands for the list's ends)."""
    if a >= 0:
        S[a, NXT] = b
    else:
        kst[k, HEAD] = b
    if b >= 0:
        S[b, PRV] = a
    else:
        kst[k, TAIL] = a
    _release(S, kst)


@_inline
def _unlink(s, m, S, kst):
    """Take slot s out of its pair key's list; returns that key."""
    k = S[s, PK]
    _connect(S, kst, k, S[s, PRV], S[s, NXT])
    S[s, NXT] = -1
    S[s, PRV] = -1
    S[s, PK] = -1
    kst[k, OCC] -= m
    _release(S, kst)
    return k


@_inline
def _unlink_marking(s, m, S, kst, dirty, nd):
    """``_unlink``, putting the key on the dirty list only if this class has no occurrence
    of it left: a key that only lost some needs nothing at the end of the step (its heap
    entry stays, an upper bound, ``run_merges``) unless it may have none left at all."""
    k = _unlink(s, m, S, kst)
    if kst[k, OCC] == 0:
        nd = _mark(k, kst, dirty, nd)
    _release(S, kst, dirty)
    return nd


@_inline
def _link(s, k, m, S, kst, finger):
    """Add slot s to key k's list at its place in slot order.

    Nearly always that is the end. When it is not, the place is searched from the slot
    linked into k last in this step (``finger[k]``, valid while k has FINGER): within one
    step the slots linked into a key only grow (sites are visited in slot order, and a
    site links its left neighbour and itself), so a step walks each list at most once.
    Walking back from the tail every time would be quadratic: a Q9 winner is relinked
    into its own list at every one of its sites.
    """
    S[s, PK] = k
    kst[k, OCC] += m
    kst[k, FLAGS] |= RAISED
    p = kst[k, TAIL]
    if p > s:
        # not the end: the finger is read (and kept, FINGER) only here, so the common
        # case touches no finger at all
        f = finger[k]
        if kst[k, FLAGS] & FINGER and S[f, PK] == k and f < s:
            p = f
            while True:
                q = S[p, NXT]
                if q < 0 or q > s:
                    break
                p = q
        else:
            while p > s:
                p = S[p, PRV]
        finger[k] = s
        kst[k, FLAGS] |= FINGER
    q = kst[k, HEAD] if p < 0 else S[p, NXT]
    _connect(S, kst, k, p, s)
    _connect(S, kst, k, s, q)
    _release(S, kst, finger)


@_inline
def _forget(words, slots, row, fmeta):
    """Take a key out of the index: its entry becomes a tombstone, counted in fmeta[1]
    until the index is rebuilt (``_index_room``). Shifting the rest of its probe cluster
    back instead would read the key of every entry moved, a cache miss each: that was
    two thirds of the end of a step.

    At the end of a cluster (the next entry empty) no lookup goes past the entry, so it
    becomes empty instead, and so do the tombstones right before it: no key lies beyond
    an empty entry from its home, so none lies beyond these. Most entries at this load
    are there, so few tombstones stay."""
    mask = slots.shape[0] - 1
    i = _home(words, slots, row)
    while slots[i] != row + 1:
        i = (i + 1) & mask
    if slots[(i + 1) & mask] == 0:
        slots[i] = 0
        i = (i - 1) & mask
        while slots[i] == _TOMBSTONE:
            slots[i] = 0
            fmeta[1] -= 1
            i = (i - 1) & mask
    else:
        slots[i] = _TOMBSTONE
        fmeta[1] += 1
    _release(words, slots, fmeta)


@_inline
def _free_row(words, slots, row, free, fmeta):
    """Forget a key and put its row on the free list (fmeta[0] rows), zeroed so
    ``reindex`` skips it."""
    _forget(words, slots, row, fmeta)
    words[row, 0] = _U64_0
    words[row, 1] = _U64_0
    words[row, 2] = _U64_0
    free[fmeta[0]] = row
    fmeta[0] += 1
    _release(words, slots, free, fmeta)


_FREE_AHEAD = 8  # rows: a freed row's key is read this far ahead, its home slot half as far


@_inline
def _free_rows(words, slots, rows, n, free, fmeta):
    """``_free_row`` for rows[:n], each one's key and then its index slot asked for ahead
    (two cache misses a row, which otherwise come one after the other)."""
    for i in range(n):
        if i + _FREE_AHEAD < n:
            prefetch(words, rows[i + _FREE_AHEAD])
        if i + _FREE_AHEAD // 2 < n:
            prefetch(slots, _home(words, slots, rows[i + _FREE_AHEAD // 2]))
        _free_row(words, slots, rows[i], free, fmeta)
    _release(words, slots, rows, free, fmeta)


_LOCK_SPINS = 1024  # a spin lock's pauses (tens of microseconds) before it yields each try


@_inline
def _lock(lock):
    spins = 0
    while not atomic_cas(lock, 0, 0, 1):
        if spins < _LOCK_SPINS:  # the holder makes one key: usually a few hundred nanoseconds
            spins += 1
            spin_pause()
        else:  # the holder is not running: let it
            yield_cpu()
    _release(lock)


@_inline
def _unlock(lock):
    atomic_store(lock, 0, 0)
    _release(lock)


@_inline
def _pair_key_reusing(words, slots, meta, free, fmeta, kst, kst1, classes, lock, a, b):
    """``pair_key``, but a new key takes a freed row when there is one; its states (every
    class's) are set.

    With two classes the other thread may be making keys at the same time. The index is
    read without the lock: a key found there is whole, because its row is written before
    the release store that indexes it. A key not found is looked for again under the lock
    and made there if it is still missing.
    """
    if _append_refused(words, a, b):
        row = np.int64(a)
    else:
        w0, w1, w2 = _pair_words(words, a, b)
        slot, row = _find_live(words, slots, w0, w1, w2)
        if row < 0:
            if classes == 2:
                _lock(lock)
                slot, row = _find_live(words, slots, w0, w1, w2)
            if row < 0:
                if fmeta[0] > 0:
                    fmeta[0] -= 1
                    row = np.int64(free[fmeta[0]])
                else:
                    row = meta[0]
                    meta[0] = row + 1
                _new_key_states(kst, kst1, classes, row)
                words[row, 0] = w0
                words[row, 1] = w1
                words[row, 2] = w2
                if slots[slot] == _TOMBSTONE:
                    fmeta[1] -= 1
                atomic_store(slots, slot, row + 1)
            if classes == 2:
                _unlock(lock)
    _release(words, slots, meta, free, fmeta, kst, kst1, lock)
    return row


@_njit
def compact_slots(S, n, smul, kst, kst1, classes, nkeys):
    """Squeeze out the DEAD slots, in place; returns the new number of slots.

    The renumbering keeps slot order, so every list stays sorted and the tie rule is
    unchanged; links and list ends are renumbered, multiplicities move with their slots
    (the heap must be rebuilt).
    """
    new = np.empty(n, dtype=np.int32)
    j = 0
    for s in range(n):
        if S[s, TOK] != DEAD:
            new[s] = j
            j += 1
    for s in range(n):
        if S[s, TOK] != DEAD:
            t = new[s]
            nxt, prv = S[s, NXT], S[s, PRV]
            S[t, TOK] = S[s, TOK]
            S[t, PK] = S[s, PK]
            S[t, NXT] = new[nxt] if nxt >= 0 else -1
            S[t, PRV] = new[prv] if prv >= 0 else -1
            smul[t] = smul[s]
    for k in range(nkeys):
        if kst[k, HEAD] >= 0:
            kst[k, HEAD] = new[kst[k, HEAD]]
            kst[k, TAIL] = new[kst[k, TAIL]]
        if classes == 2 and kst1[k, HEAD] >= 0:
            kst1[k, HEAD] = new[kst1[k, HEAD]]
            kst1[k, TAIL] = new[kst1[k, TAIL]]
    return j


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
    (_heap_pop_valid); most never do. That spares nearly half of the pushes (zh-large at
    8000: 562,000 -> 299,000). Returns the heap arrays (they grow when it is full)."""
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


_SPIN_NS = 50_000  # how long a wait spins before it sleeps (most hand-overs take less)


@_inline
def _wait_for(sync, what, number, equal, watch, expected, sleeps, bell):
    """Wait until ``sync[what] == number`` is ``equal`` (the other thread posted there),
    spinning for ``_SPIN_NS``, then sleeping on ``sync[bell]`` with ``sync[sleeps]`` set,
    which ``_post`` rings. Gives up if ``sync[watch]`` stops being ``expected`` first (no
    watch if ``watch`` < 0). Returns the nanoseconds waited (0 for a wait of a few
    pauses), or -1 if given up. The leader waits for the follower's SYNC_DONE,
    SYNC_SETTLED and SYNC_FREED, given up if SYNC_STOPPED is set; the follower for the
    leader's next command and for its SYNC_SETTLE and SYNC_FREE, given up if a newer
    command comes (CMD_EXIT: the leader stopped with an error). Without a clock
    (``monotonic_ns`` is 0) it only spins."""
    start = np.int64(0)
    now = np.int64(0)
    spins = 0
    given_up = False
    while (atomic_load(sync, what) == number) != equal:
        if watch >= 0 and atomic_load(sync, watch) != expected:
            given_up = True
            break
        spins += 1
        if spins & 15 != 0:
            spin_pause()
            continue
        now = monotonic_ns()
        if start == 0:
            start = now
        elif now - start > _SPIN_NS:
            ring = atomic_load(sync, bell)
            atomic_store(sync, sleeps, 1)
            full_fence()  # the poster sees the flag, or this sees its post
            if (atomic_load(sync, what) == number) != equal and (watch < 0 or atomic_load(sync, watch) == expected):
                sleep_while(sync, bell, ring)
            atomic_store(sync, sleeps, 0)
    waited = np.int64(-1) if given_up else monotonic_ns() - start if start != 0 else np.int64(0)
    _release(sync)
    return waited


@_inline
def _post(sync, what, value, sleeps, bell):
    """``sync[what] = value`` (a release store), and the bell rung if the other thread may
    be asleep (``_wait_for``)."""
    atomic_store(sync, what, value)
    full_fence()
    if atomic_load(sync, sleeps) != 0:
        atomic_store(sync, bell, sync[bell] + 1)
        wake_all(sync, bell)
    _release(sync)


@_inline
def _post_to_follower(sync, what, value):
    _post(sync, what, value, SYNC_FOLLOWER_SLEEPS, SYNC_FOLLOWER_BELL)


@_inline
def _post_to_leader(sync, what, value):
    _post(sync, what, value, SYNC_LEADER_SLEEPS, SYNC_LEADER_BELL)


@_inline
def _leader_waits_for(sync, what, number):
    """The leader's wait for the follower's post; False if the follower failed. Adds the
    time waited to SYNC_WAITED, and counts the waits that outlasted the spin (SYNC_BLOCKED)."""
    waited = _wait_for(sync, what, number, True, SYNC_STOPPED, 0, SYNC_LEADER_SLEEPS, SYNC_LEADER_BELL)
    if waited < 0:
        return False
    sync[SYNC_WAITED] += waited
    if waited > _SPIN_NS:
        sync[SYNC_BLOCKED] += 1
    return True


@_inline
def _command(sync, command, code):
    """Hand the follower command number ``command``: one release store of the word."""
    _post_to_follower(sync, SYNC_CMD, (command << 2) | code)


_SLOW_NS = 500_000  # waits of less than this in a call of run_merges say nothing yet


@_njit
def too_slow(waited, elapsed, share):
    """Whether a follower that kept the leader waiting ``waited`` ns of ``elapsed`` is
    too slow to be worth its hand-overs: more than 1/``share`` of the time (never if
    ``share`` is 0). Alone on a machine the leader waits a few per cent of its time
    (the classes' walks differ a little); with the follower's CPU taken by other work,
    most of it."""
    return share > 0 and waited >= _SLOW_NS and waited * share > elapsed


@_njit
def stop_follower(sync):
    """Tell the follower to return (CMD_EXIT), from the leader's side: the caller of
    ``run_merges``, once it has returned."""
    _command(sync, (sync[SYNC_CMD] >> 2) + 1, CMD_EXIT)


@_njit
def follower_stopped(sync):
    """Tell the leader that the follower's thread has stopped (SYNC_STOPPED): a leader
    still waiting for it gives up."""
    _post_to_leader(sync, SYNC_STOPPED, 1)


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
    # waiting past the spin too often: it is not getting a CPU of its own (``_too_slow``).
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


# --------------------------------------------------------------------------- libstdc++ map order
#
# The replay of a growing ``std::unordered_map`` that ``_umap`` drives (Q7, Q17). Sentinels
# in the bucket array: an empty bucket, and "the node before this bucket's first node is
# the list head" (libstdc++'s &_M_before_begin).

_UMAP_EMPTY = -1
_UMAP_HEAD = -2


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
