"""What numba does not give the kernels: the decorators they are compiled with, and the
LLVM intrinsics they use (prefetch hints, atomic loads, stores and compare-and-swap, the
CPU's spin-wait hint, and sleeping and waking on a futex, for the merges' two threads).

Kernels take and return numpy arrays and scalars only: no Python objects, no I/O, and no
exceptions for user errors (the drivers validate before calling).
"""

import os
import platform
import sys

import numba
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

_njit = numba.njit(cache=True, nogil=True)
# The helpers of the hot loops are inlined by numba itself (``inline="always"``), not left
# to LLVM: each call passing arrays costs reference-count updates (NRT_incref/decref)
# that LLVM cannot remove: a quarter of a training run's profile (perf, zh-large at 32000)
# while they were calls.
_inline = numba.njit(cache=True, nogil=True, inline="always")


def exported(signature):
    """Marks a kernel that the ahead-of-time build exports (``bbpe.kernels.build``), with
    its exact signature written beside it: ``signature`` takes ``kernel_types()`` and returns
    the numba signature, and runs only when the build does (importing a kernel costs
    nothing more). Above ``@_njit``: ``@exported(lambda t: t.i8(t.I8, t.i8))``."""
    def mark(kernel):
        kernel.aot_signature = signature
        return kernel
    return mark


def kernel_types():
    """The numba types the kernels' signatures are written with, by short name: scalars
    (``i8``, ``i4``, ``u8``, ``u1``, ``boolean``, ``none``), ``Tuple``/``UniTuple``, ``a(dtype,
    ndim=1, readonly=False)`` for a C-contiguous array, the 1-d ones ``I8``, ``I4``, ``U8``,
    ``U1``, the 2-d ones ``I8_2``, ``I4_2``, ``U8_2``, and ``U1_READONLY`` (a bytes object's
    buffer). Every array the drivers pass is C-contiguous."""
    from types import SimpleNamespace

    def a(dtype, ndim=1, readonly=False):
        return types.Array(dtype, ndim, "C", readonly=readonly)

    i8, i4, u8, u1 = types.int64, types.int32, types.uint64, types.uint8
    return SimpleNamespace(i8=i8, i4=i4, u8=u8, u1=u1, boolean=types.boolean, none=types.none, Tuple=types.Tuple,
                           UniTuple=types.UniTuple, a=a, I8=a(i8), I4=a(i4), U8=a(u8), U1=a(u1), I8_2=a(i8, 2),
                           I4_2=a(i4, 2), U8_2=a(u8, 2), U1_READONLY=a(u1, readonly=True))


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
_POSIX = os.name == "posix"
_SYS_FUTEX = {"x86_64": 202, "amd64": 202, "aarch64": 98, "arm64": 98, "ppc64le": 221}.get(
    platform.machine().lower(), -1) if _LINUX else -1
_FUTEX_WAIT_PRIVATE, _FUTEX_WAKE_PRIVATE = 128, 129
_CLOCK_MONOTONIC = 1 if _LINUX else 6 if sys.platform == "darwin" else -1
_SLEEP_NS = 20_000_000  # a sleep's timeout: the waiter looks again (a guard; every post rings)


def _syscall(builder, *args):
    """``syscall(args...)``, all of them as longs (glibc's wrapper is variadic)."""
    i64 = ir.IntType(64)
    fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(i64, [i64], var_arg=True), "syscall")
    return builder.call(fn, [a if isinstance(a, ir.Value) else i64(a) for a in args])


def _sched_yield(builder):
    """libc's ``sched_yield()`` where there is one (POSIX); nothing elsewhere."""
    if _POSIX:
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.IntType(32), []), "sched_yield")
        builder.call(fn, [])


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
        else:
            _sched_yield(builder)
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
        _sched_yield(builder)
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
