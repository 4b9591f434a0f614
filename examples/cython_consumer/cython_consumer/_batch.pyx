# The whole point: bbpe's encoder called from Cython, with no GIL, in parallel threads.
from cython.parallel cimport prange
from libc.stdint cimport int64_t, uint8_t
from libc.stdlib cimport free, malloc

from bbpe.codec cimport BBPE_BUG_COMPAT, Model, bbpe_check_abi, bbpe_encode_into, bbpe_model

bbpe_check_abi()  # the installed bbpe's structs are the ones this module was compiled for


def count_tokens(Model model, list texts, int num_threads=2, bint bug_compat=False):
    """The number of ids of each text (bytes), encoded inside a prange."""
    cdef Py_ssize_t n = len(texts), i
    cdef const bbpe_model* view = &model.view
    cdef const uint8_t** srcs = <const uint8_t**>malloc(n * sizeof(uint8_t*) + 1)
    cdef size_t* lens = <size_t*>malloc(n * sizeof(size_t) + 1)
    cdef int64_t* counts = <int64_t*>malloc(n * sizeof(int64_t) + 1)
    cdef int64_t* buf
    cdef size_t cap
    cdef int flags = BBPE_BUG_COMPAT if bug_compat else 0
    if srcs == NULL or lens == NULL or counts == NULL:
        raise MemoryError()
    try:
        for i in range(n):
            srcs[i] = <const uint8_t*><const char*>texts[i]
            lens[i] = len(texts[i])
        with nogil:
            for i in prange(n, num_threads=num_threads, schedule="dynamic"):
                cap = 4 * lens[i] + 16  # enough with or without bug_compat
                buf = <int64_t*>malloc(cap * sizeof(int64_t))
                counts[i] = bbpe_encode_into(view, srcs[i], lens[i], buf, cap, flags) if buf != NULL else -1
                free(buf)
        return [counts[i] for i in range(n)]
    finally:
        free(srcs)
        free(lens)
        free(counts)
