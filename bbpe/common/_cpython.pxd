# cython: language_level=3
# The CPython internals that bbpe's compiled modules read directly, and the small inline
# helpers over them that more than one module needs (bbpe/codec.pyx, bbpe/common/_fast.pyx,
# a model's own codec). Cython inlines only within a module, so these are `cdef inline`
# here, compiled into each module that cimports them: no hot loop pays a call across two
# modules. Nothing here is API: it is not part of the ABI that codec.pxd versions.

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_CheckExact, PyBytes_GET_SIZE
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t

cdef extern from "Python.h":
    ctypedef struct PyListObject:
        PyObject** ob_item
    ctypedef struct PyTupleObject:
        PyObject** ob_item
    # a borrowed reference, for walking a list without the bounds checks of the public API
    PyObject* PyList_GET_ITEM(object lst, Py_ssize_t i)
    # a str's compact storage (UCS1, UCS2 or UCS4), readable without the GIL while it lives
    int PyUnicode_KIND(object o)
    void* PyUnicode_DATA(object o)
    Py_ssize_t PyUnicode_GET_LENGTH(object o)
    bint PyUnicode_IS_ASCII(object o)
    bint PyUnicode_CheckExact(object o)
    object PyUnicode_DecodeUTF8(const char* s, Py_ssize_t size, const char* errors)
    Py_ssize_t PyList_GET_SIZE(object lst)
    bint PyList_CheckExact(object o)
    bint _long_check_exact "PyLong_CheckExact"(PyObject* o)
    bint _bytes_check_exact "PyBytes_CheckExact"(PyObject* o)
    bint _unicode_check_exact "PyUnicode_CheckExact"(PyObject* o)
    long long _long_value "PyLong_AsLongLongAndOverflow"(PyObject* o, int* overflow)
    void PyObject_GC_UnTrack(void* o)
    void PyObject_GC_Track(void* o)
    int PyObject_GC_IsTracked(PyObject* o)
    Py_ssize_t Py_REFCNT(PyObject* o)
    void Py_SET_REFCNT(PyObject* o, Py_ssize_t n)


# ----------------------------------------------------------------------------- str input
#
# A text is given as (kind, data, length): kind 0 for UTF-8 bytes (or an ASCII str), else
# the str's code unit size (1, 2, 4). An encoder reads a str straight from its code units,
# without the GIL and without a UTF-8 copy, so batches run in parallel and the caller's str
# is left as it was (PyUnicode_AsUTF8 would cache a UTF-8 copy inside it).

ctypedef struct _text:
    int kind
    const void* data
    size_t length


cdef inline int _as_text(object obj, _text* t) except -1:
    """Borrow the bytes of a str or bytes object (the object must stay alive)."""
    if PyBytes_CheckExact(obj):
        t.kind = 0
        t.data = PyBytes_AS_STRING(obj)
        t.length = PyBytes_GET_SIZE(obj)
    elif PyUnicode_CheckExact(obj):
        t.kind = 0 if PyUnicode_IS_ASCII(obj) else PyUnicode_KIND(obj)
        t.data = PyUnicode_DATA(obj)
        t.length = PyUnicode_GET_LENGTH(obj)
    else:
        raise TypeError(f"expected str or bytes, got {type(obj).__name__}")
    return 0


# ----------------------------------------------------------------------------- lists

cdef inline list _own_copy(list items, Py_ssize_t start, object stop):
    """``items[start:stop]``, a list only the caller holds: no other thread, nor code a
    collection runs, can change it or free what it holds while the caller works without
    the GIL or allocates. Nothing else refers to it, so it is in no cycle: it is untracked,
    and the collections that the caller's allocations set off need not walk its items."""
    cdef list copy = items[start:stop]
    PyObject_GC_UnTrack(<PyObject*>copy)
    return copy


cdef inline void _put(PyObject** dst, PyObject** src, Py_ssize_t n) noexcept:
    """dst[0:n] = src[0:n], each a new reference."""
    cdef Py_ssize_t i
    for i in range(n):
        Py_INCREF(<object>src[i])
        dst[i] = src[i]


cdef inline void _fill(PyObject** dst, PyObject* item, Py_ssize_t n) noexcept:
    """n new references to one item."""
    cdef Py_ssize_t i
    for i in range(n):
        dst[i] = item
    Py_SET_REFCNT(item, Py_REFCNT(item) + n)


cdef inline void _add_references(PyObject** ints, const int64_t* refs, int64_t n) noexcept:
    """Give each shared int the references that lists took to it without the GIL (a batch
    encoder's lists, written as borrowed pointers and counted per id); the GIL is held."""
    cdef int64_t kid
    for kid in range(n):
        if refs[kid]:
            Py_SET_REFCNT(ints[kid], Py_REFCNT(ints[kid]) + refs[kid])


cdef inline void _fill_lists(list out, Py_ssize_t i, Py_ssize_t j, const int32_t* buf, const int64_t* offs,
                             PyObject*** slots, PyObject** ints, int64_t* refs):
    """One round of a batch encoder's lists: ``out[k]`` for texts i..j-1 of the round, whose
    ids are ``buf[offs[k]:offs[k + 1]]``. Each list is made empty under the GIL (untracked:
    ints only, in no cycle), then its items are written without it, each a borrowed pointer
    to the model's shared int for its id, counted in ``refs`` for ``_add_references``."""
    cdef Py_ssize_t k, t, n
    cdef object one
    cdef const int32_t* src
    cdef PyObject** dst
    for k in range(i, j):
        one = PyList_New(offs[k + 1] - offs[k])
        PyObject_GC_UnTrack(<PyObject*>one)
        slots[k] = (<PyListObject*>one).ob_item
        Py_INCREF(one)
        PyList_SET_ITEM(out, k, one)
    with nogil:
        for k in range(i, j):
            src = buf + offs[k]
            dst = slots[k]
            n = offs[k + 1] - offs[k]
            for t in range(n):
                dst[t] = ints[src[t]]
                refs[src[t]] += 1


# ----------------------------------------------------------------------------- UTF-8

cdef inline size_t _put_utf8(uint8_t* out, size_t o, uint32_t c) noexcept nogil:
    """Code point c as UTF-8 at out[o:]; returns the offset after it."""
    if c < 0x80:
        out[o] = <uint8_t>c
        return o + 1
    if c < 0x800:
        out[o] = <uint8_t>(0xC0 | (c >> 6))
        out[o + 1] = <uint8_t>(0x80 | (c & 0x3F))
        return o + 2
    if c < 0x10000:
        out[o] = <uint8_t>(0xE0 | (c >> 12))
        out[o + 1] = <uint8_t>(0x80 | ((c >> 6) & 0x3F))
        out[o + 2] = <uint8_t>(0x80 | (c & 0x3F))
        return o + 3
    out[o] = <uint8_t>(0xF0 | (c >> 18))
    out[o + 1] = <uint8_t>(0x80 | ((c >> 12) & 0x3F))
    out[o + 2] = <uint8_t>(0x80 | ((c >> 6) & 0x3F))
    out[o + 3] = <uint8_t>(0x80 | (c & 0x3F))
    return o + 4
