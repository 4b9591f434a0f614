# cython: language_level=3
"""The model-free hot loops of bbpe's user layer, compiled, and the base of every compiled
model.

``CompiledModel`` (declared in _fast.pxd) is the Cython base class of each model's codec
(XBBPE's ``bbpe.codec.Model``; BPE's), and ``TokenizerBase`` the per-call hot path of
``bbpe.Tokenizer``: ``encode`` on a str or bytes into a list reaches any compiled model
through one vtable call, from Cython to C without a Python frame. ``BatchModel``, a
``CompiledModel`` whose one-text encoder runs without the GIL (BPE's, WordPiece's), has
the calls of such a model beyond one text into a list (``encode_ids``, ``encode_many``,
``encode_lists``), written once over its hooks.

The rest serves every model's batches and corpora, each a small function over Python lists
or flat arrays that would cost a Python-level pass per token or per text: with the GIL
(they make or read Python objects) the HF-style batch lists (``frame_rows``), the check
that a batch holds only str and bytes (``plain_texts``) and the scan of result lists for
given ids (``rows_holding``); without it the padded-batch fill (``pad_rows``) and the
UTF-8 check of a corpus (``utf8_valid_prefix``). The inline helpers they share with the
codecs (list and collector helpers, a str's storage) are in _cpython.pxd.

Why this module is long: it is the one compiled module every model shares, and a shared
Cython base class and the loops its subclasses call must live in one module to be reached
through cimport and the vtable; each piece is a small function or class.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_CheckExact, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF
from cpython.unicode cimport PyUnicode_CheckExact
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memcpy, memset

from bbpe.common._cpython cimport (
    PyList_CheckExact,
    PyList_GET_ITEM,
    PyList_GET_SIZE,
    PyListObject,
    PyObject_GC_IsTracked,
    PyObject_GC_Track,
    PyObject_GC_UnTrack,
    PyTupleObject,
    _add_references,
    _as_text,
    _bytes_check_exact,
    _fill,
    _fill_lists,
    _long_check_exact,
    _long_value,
    _own_copy,
    _put,
    _unicode_check_exact,
)


import numpy as np

from ..errors import UnknownIdError

# ----------------------------------------------------------------------------- the models' base

cdef class CompiledModel:
    """The base of every compiled model (``bbpe.codec.Model`` for XBBPE): what
    ``TokenizerBase.encode`` calls, from C. It encodes nothing itself."""

    cdef list _encode_list(self, object data, int flags):
        raise TypeError(f"{type(self).__name__} is no compiled model: it does not implement _encode_list")


cdef size_t _ROUND_IDS = 1 << 18  # encode_lists: ids per round (1 MB, cache-sized)


cdef class BatchModel(CompiledModel):
    """A compiled model that encodes one text without the GIL (BPE's, WordPiece's), and the
    calls every such model has, over its hooks (_fast.pxd): ``encode_ids`` (a text's ids
    in a numpy array), ``encode_many`` (the ids of many texts in one array) and
    ``encode_lists`` (a list of lists, its items written without the GIL). One vtable call
    per text reaches the model's encoder."""

    cdef int64_t _encode_many(self, list texts, int32_t** ids_out, int64_t* offs) except -2:
        """Texts (str or bytes) into one malloc'd buffer (*ids_out: the caller frees it);
        offs[0..m] bound each text's ids. The GIL is released for all of it, unless the
        model needs it (``_with_gil``: text by text under it)."""
        cdef Py_ssize_t m = len(texts), i
        cdef _text* ts = <_text*>malloc((m + 1) * sizeof(_text))
        cdef uint8_t* is_bytes = <uint8_t*>malloc(m + 1)
        cdef size_t total = 0
        cdef int64_t count = 0, out = 0
        cdef int32_t* dst = NULL
        cdef void* work = NULL
        try:
            if ts == NULL or is_bytes == NULL:
                raise MemoryError()
            work = self._work_new()
            for i in range(m):
                _as_text(texts[i], &ts[i])
                is_bytes[i] = PyBytes_CheckExact(texts[i])
                total += self._bound(&ts[i])
            dst = <int32_t*>malloc((total + 1) * sizeof(int32_t))
            if dst == NULL:
                raise MemoryError()
            offs[0] = 0
            if self._with_gil():
                for i in range(m):
                    try:
                        count = self._encode_gil(texts[i], dst + out, work)
                    except ValueError as e:
                        raise ValueError(f"texts[{i}]: {e}") from None
                    out += count
                    offs[i + 1] = out
            else:
                with nogil:
                    for i in range(m):
                        count = self._encode_nogil(&ts[i], is_bytes[i], dst + out, work)
                        if count < 0:
                            break
                        out += count
                        offs[i + 1] = out
                if count < 0:
                    self._raise_code(count, work, f"texts[{i}]: ")
            ids_out[0] = dst
            dst = NULL
            return out
        finally:
            free(ts)
            free(is_bytes)
            free(dst)
            if work != NULL:
                self._work_release(work)

    cdef object _text_of(self, object data):
        if not (PyBytes_CheckExact(data) or PyUnicode_CheckExact(data)):
            data = _plain_text(data, "text")
        return data

    def encode_ids(self, data, int flags=0):
        """Like ``encode``, the ids as a numpy array of uint32, written there (no list is
        made)."""
        cdef _text t
        cdef int64_t count
        cdef uint32_t[::1] view
        cdef void* work
        data = self._text_of(data)
        _as_text(data, &t)
        out = np.empty(self._bound(&t), dtype=np.uint32)
        view = out
        work = self._work_new()
        try:
            count = self._encode_gil(data, <int32_t*>&view[0], work)
        finally:
            self._work_release(work)
        return out[:count].copy() if count < view.shape[0] // 2 else out[:count]

    def encode_many(self, list texts, int flags=0, Py_ssize_t start=0, stop=None):
        """Encode a list of str or bytes (``texts[start:stop]``, so that threads can each
        take a range of one list); the GIL is released while encoding.

        Returns (ids, offsets): numpy arrays of uint32 ids and int64 offsets (text i of the
        range is ids[offsets[i]:offsets[i + 1]]).
        """
        cdef list items = self._batch_items(texts, start, stop)
        cdef int32_t* ids = NULL
        cdef int64_t count
        cdef uint32_t[::1] view
        offsets = np.empty(len(items) + 1, dtype=np.int64)
        cdef int64_t[::1] offs = offsets
        try:
            count = self._encode_many(items, &ids, &offs[0])
            out = np.empty(count, dtype=np.uint32)
            view = out
            if count:
                memcpy(&view[0], ids, count * sizeof(int32_t))
            return out, offsets
        finally:
            free(ids)

    def encode_lists(self, list texts, int flags=0, Py_ssize_t start=0, stop=None):
        """Encode a list of str or bytes (``texts[start:stop]``) into a list of lists of ids,
        nearly all of it without the GIL, so threads that each take a slice of a batch run
        side by side (as codec.Model.encode_lists: rounds of about a megabyte of ids in one
        reused buffer; the lists made under the GIL, their items written without it, each a
        borrowed pointer to the model's shared int for its id, the references added at the
        end). A model that needs the GIL (``_with_gil``) encodes each text under it."""
        cdef list items = self._batch_items(texts, start, stop)
        cdef Py_ssize_t m = len(items), i = 0, j, k
        cdef _text* ts = <_text*>malloc((m + 1) * sizeof(_text))
        cdef uint8_t* is_bytes = <uint8_t*>malloc(m + 1)
        cdef int64_t* offs = <int64_t*>malloc((m + 1) * sizeof(int64_t))
        cdef PyObject*** slots = <PyObject***>malloc((m + 1) * sizeof(PyObject**))
        cdef int64_t n_ids = self._n_ids()
        cdef int64_t* refs = <int64_t*>calloc(n_ids + 1, sizeof(int64_t))
        cdef size_t cap = _ROUND_IDS, need, bound
        cdef int32_t* buf = <int32_t*>malloc(cap * sizeof(int32_t))
        cdef PyObject** ints = (<PyTupleObject*>self._ints).ob_item
        cdef int64_t count = 0
        cdef list out = PyList_New(m)
        cdef void* work = NULL
        cdef bint with_gil = self._with_gil()
        PyObject_GC_UnTrack(<PyObject*>out)
        try:
            if ts == NULL or is_bytes == NULL or offs == NULL or slots == NULL or refs == NULL or buf == NULL:
                raise MemoryError()
            work = self._work_new()
            for k in range(m):
                _as_text(items[k], &ts[k])
                is_bytes[k] = PyBytes_CheckExact(items[k])
            while i < m:
                need = 0
                j = i
                while j < m:
                    bound = self._bound(&ts[j])
                    if j > i and need + bound > cap:
                        break
                    need += bound
                    j += 1
                if need > cap:  # one text larger than a round
                    free(buf)
                    buf = <int32_t*>malloc(need * sizeof(int32_t))
                    if buf == NULL:
                        raise MemoryError()
                    cap = need
                offs[i] = 0
                if with_gil:
                    for k in range(i, j):
                        try:
                            count = self._encode_gil(items[k], buf + offs[k], work)
                        except ValueError as e:
                            raise ValueError(f"texts[{k}]: {e}") from None
                        offs[k + 1] = offs[k] + count
                else:
                    with nogil:
                        for k in range(i, j):
                            count = self._encode_nogil(&ts[k], is_bytes[k], buf + offs[k], work)
                            if count < 0:
                                break
                            offs[k + 1] = offs[k] + count
                    if count < 0:
                        self._raise_code(count, work, f"texts[{k}]: ")
                _fill_lists(out, i, j, buf, offs, slots, ints, refs)  # (in C, the items without the GIL)
                i = j
            PyObject_GC_Track(<PyObject*>out)  # whole now; it may hold what the caller adds
            return out
        finally:
            if refs != NULL:
                _add_references(ints, refs, n_ids)  # before anything can drop a list
            free(ts)
            free(is_bytes)
            free(offs)
            free(slots)
            free(refs)
            free(buf)
            if work != NULL:
                self._work_release(work)

    # ------------------------------------------------------------------ the hooks (a model's)

    cdef int64_t _n_ids(self) noexcept nogil:
        return 0

    cdef list _batch_items(self, list texts, Py_ssize_t start, object stop):
        return _own_copy(texts, start, stop)

    cdef void* _work_new(self) except NULL:
        raise TypeError(f"{type(self).__name__} does not implement the hooks of BatchModel")

    cdef void _work_release(self, void* work) noexcept:
        pass

    cdef size_t _bound(self, const _text* t) noexcept nogil:
        return 0

    cdef int64_t _encode_nogil(self, const _text* t, bint is_bytes, int32_t* dst, void* work) noexcept nogil:
        return -1

    cdef bint _with_gil(self):
        return False

    cdef int64_t _encode_gil(self, object data, int32_t* dst, void* work) except -2:
        raise TypeError(f"{type(self).__name__} does not encode under the GIL")

    cdef int _raise_code(self, int64_t code, void* work, str where) except -1:
        raise ValueError(f"{where}error {code}")


cdef class TokenizerBase:
    """The per-call hot path of ``bbpe.Tokenizer`` (which subclasses this): ``encode`` on a
    str or bytes into a list goes straight to the C encoder, without a Python frame."""

    cdef public CompiledModel _model  # any model's codec: encode is one vtable call
    cdef public bint bug_compat
    cdef public bint _has_specials  # added special tokens: matched in Python first (``_encode_other``)
    # (str probe, bytes probe) that tell a text holding none of them (specials.SpecialTokens.probes),
    # which goes to the C encoder all the same; None without added special tokens
    cdef public object _special_probes
    cdef public bint _own_specials  # the model has special tokens of its own (XBBPE's <P>, <S>, </S>)

    def encode(self, text, *, bint gbk=False, bug_compat=None, str out="list", bint split_special_tokens=False,
               allowed_special=None, disallowed_special=()):
        """Text -> ids. ``str`` is UTF-8 encoded (lone surrogates with ``surrogatepass``);
        ``bytes`` are UTF-8, or GBK with ``gbk=True`` (converted as the reference does).
        ``out="numpy"`` (or ``"np"``) returns a uint32 array instead of a list. Special
        tokens (the model's own and those added) are matched whole, unless
        ``split_special_tokens`` (HF: then every one is plain text) or ``allowed_special``
        (tiktoken: only those named, or ``"all"``); one of ``disallowed_special``
        (``"all"``: every one not allowed) in the text raises ValueError.

        >>> tok.encode("床前明月光")                                     # doctest: +SKIP
        [229, 186, 138, 323, 400, 277, 506]
        """
        cdef bint compat = self.bug_compat if bug_compat is None else bug_compat
        if (not gbk and out == "list" and allowed_special is None and not disallowed_special
                and (not self._own_specials if split_special_tokens else  # every special is text
                     not self._has_specials or not self._holds_special(text))):
            return self._model._encode_list(text, MODEL_BUG_COMPAT if compat else 0)  # a str: in C
        return self._encode_other(text, gbk, compat, out, split_special_tokens, allowed_special, disallowed_special)

    cdef bint _holds_special(self, object text):
        """Whether ``text`` may hold an added special token: True unless it is a str or bytes
        in which ``_special_probes`` finds none (``specials.holds``, here in Cython so that
        ``encode`` reaches the model without a Python frame)."""
        cdef object probe
        if PyUnicode_CheckExact(text):
            probe = self._special_probes[0]
        elif PyBytes_CheckExact(text):
            probe = self._special_probes[1]
        else:
            return True
        if type(probe) is tuple:
            for token in <tuple>probe:
                if token in text:
                    return True
            return False
        return probe.search(text) is not None


# ----------------------------------------------------------------------------- texts

def _plain_text(obj, str name):
    """A text that is not exactly a str or bytes, as the str or bytes the encoder takes: a
    str or bytes subclass (numpy's ``str_``, ``bytes_``) as the plain object, a buffer of
    bytes (bytearray, memoryview, a uint8 array) copied; anything else is a TypeError that
    names ``name`` and the type (``None`` is no empty text, an int no count of NULs)."""
    if isinstance(obj, str):
        return str.__str__(obj)  # the chars it holds, whatever its own __str__ says
    if isinstance(obj, bytes):
        return PyBytes_FromStringAndSize(PyBytes_AS_STRING(obj), PyBytes_GET_SIZE(obj))
    try:
        view = memoryview(obj)
    except TypeError:
        raise TypeError(f"{name} must be a str or a bytes-like object, got {type(obj).__name__}") from None
    if view.itemsize != 1 or view.format not in ("B", "b", "c"):
        raise TypeError(f"{name} must be a str or a bytes-like object of bytes, got a buffer of "
                        f"{view.format!r} items ({type(obj).__name__})")
    return view.tobytes()


def plain_texts(list texts):
    """True when every item is exactly a str or bytes (what the batch encoder takes as is);
    a C loop, so a large batch needs no Python-level pass to check it."""
    cdef Py_ssize_t i
    cdef PyObject* item
    for i in range(PyList_GET_SIZE(texts)):
        item = PyList_GET_ITEM(texts, i)
        if not (_unicode_check_exact(item) or _bytes_check_exact(item)):
            return False
    return True


# ----------------------------------------------------------------------------- batches

def longest_row(const int64_t[::1] starts):
    """The most ids of one text in a flat batch whose text r is ``starts[r]:starts[r+1]``."""
    cdef Py_ssize_t r
    cdef int64_t most = 0
    for r in range(starts.shape[0] - 1):
        most = max(most, starts[r + 1] - starts[r])
    return most


cdef inline Py_ssize_t _capped(Py_ssize_t n, Py_ssize_t cap) noexcept nogil:
    """How many of a text's ``n`` ids a batch keeps: the first ``cap`` (all when ``cap`` < 0)."""
    return cap if 0 <= cap < n else n


def pad_rows(const uint32_t[::1] flat, const int64_t[::1] starts, Py_ssize_t cap,
             const int64_t[::1] prefix, const int64_t[::1] suffix, int64_t pad_id, bint left,
             int64_t[:, ::1] ids, int64_t[:, ::1] mask=None, bint keep_end=False):
    """Fill a padded batch in one pass, without the GIL: row r of ``ids`` gets ``prefix``,
    the ids ``flat[starts[r]:starts[r+1]]`` (the first ``cap`` of them, or the last with
    ``keep_end``; all when ``cap`` < 0), ``suffix``, and ``pad_id`` in the rest (before them
    when ``left``); row r of ``mask`` 1 under those ids and 0 under the padding. The padded
    arrays are mostly padding, so the cost is writing them once, which numpy's fancy
    indexing and broadcast masks do several times over."""
    cdef Py_ssize_t rows = ids.shape[0], width = ids.shape[1], r, c, shift, n
    cdef Py_ssize_t npre = prefix.shape[0], nsuf = suffix.shape[0], total
    cdef int64_t* row
    cdef int64_t* mrow
    cdef const uint32_t* src
    if starts.shape[0] < rows + 1 or (mask is not None and (mask.shape[0] != rows or mask.shape[1] != width)):
        raise ValueError("pad_rows: the shapes of starts, ids and mask do not agree")
    for r in range(rows):  # each test on its own, so that no sum can overflow
        n = _capped(starts[r + 1] - starts[r], cap)
        if (starts[r] < 0 or starts[r + 1] < starts[r] or starts[r + 1] > flat.shape[0]
                or n > width - npre - nsuf):
            raise ValueError(f"pad_rows: row {r} does not fit ({n} ids from {starts[r]}, width {width})")
    if rows == 0 or width == 0:
        return
    with nogil:
        for r in range(rows):
            n = _capped(starts[r + 1] - starts[r], cap)
            total = npre + n + nsuf
            shift = width - total if left else 0
            row = &ids[r, 0]
            for c in range(shift):
                row[c] = pad_id
            for c in range(npre):
                row[shift + c] = prefix[c]
            src = &flat[starts[r + 1] - n if keep_end else starts[r]] if n else NULL
            for c in range(n):  # widened from the codec's uint32
                row[shift + npre + c] = src[c]
            for c in range(nsuf):
                row[shift + npre + n + c] = suffix[c]
            for c in range(shift + total, width):
                row[c] = pad_id
            if mask is not None:
                mrow = &mask[r, 0]
                memset(mrow, 0, shift * sizeof(int64_t))
                for c in range(shift, shift + total):
                    mrow[c] = 1
                memset(mrow + shift + total, 0, (width - shift - total) * sizeof(int64_t))


def frame_rows(list rows, tuple prefix, tuple suffix, Py_ssize_t cap, Py_ssize_t width, object pad_id,
               bint left, bint mask, bint keep_end=False):
    """A batch as lists, the HF way, in one C pass: (ids, masks or None). Row r of ``ids``
    is ``prefix + rows[r][:cap] + suffix`` (``rows[r][-cap:]`` with ``keep_end``; all of the
    row when ``cap`` < 0), padded with ``pad_id`` to ``width`` when it is shorter (before it
    when ``left``; a longer row stays as it is, as transformers leaves it); row r of
    ``masks`` is 1 under those ids and 0 under the padding.

    Every list it returns holds only ints and is untracked by the collector, like the
    encoder's (see ``bbpe.codec.Model._as_list``): a kept batch costs the collections nothing. The
    template's and the padding's ids are checked to be exactly int, and so are the items
    of a row the collector tracks, which is copied; a row that is untracked already (the
    encoder's) and gets nothing added is returned as it is."""
    cdef Py_ssize_t npre = len(prefix), nsuf = len(suffix), m, r, n, shift, at, w, first
    cdef list items, ids_out, masks_out = None, one, row
    cdef PyObject** dst
    cdef PyObject* item
    cdef PyObject* pad = <PyObject*>pad_id
    cdef PyObject* one_int = <PyObject*>_ONE
    cdef PyObject* zero_int = <PyObject*>_ZERO
    for item in (<PyTupleObject*>prefix).ob_item[:npre]:
        if not _long_check_exact(item):
            raise TypeError(f"frame_rows: the prefix must hold ints, got {type(<object>item).__name__}")
    for item in (<PyTupleObject*>suffix).ob_item[:nsuf]:
        if not _long_check_exact(item):
            raise TypeError(f"frame_rows: the suffix must hold ints, got {type(<object>item).__name__}")
    if not _long_check_exact(pad):
        raise TypeError(f"frame_rows: pad_id must be an int, got {type(pad_id).__name__}")
    items = _own_copy(rows, 0, None)  # what a finaliser run by an allocation does to rows cannot reach it
    m = PyList_GET_SIZE(items)
    # each outer list untracked as soon as it is made, before anything else is allocated: the
    # collection an allocation may set off can run a finaliser that calls gc.get_objects(),
    # which must not find a list with holes
    ids_out = PyList_New(m)
    PyObject_GC_UnTrack(<PyObject*>ids_out)
    if mask:
        masks_out = PyList_New(m)
        PyObject_GC_UnTrack(<PyObject*>masks_out)
    for r in range(m):
        item = PyList_GET_ITEM(items, r)
        if not PyList_CheckExact(<object>item):
            raise TypeError(f"frame_rows: rows[{r}] is a {type(<object>item).__name__}, not a list")
        row = <list>item
        n = _capped(PyList_GET_SIZE(row), cap)
        w = max(width, npre + n + nsuf)
        shift = w - (npre + n + nsuf)
        if shift == 0 and npre + nsuf == 0 and n == PyList_GET_SIZE(row) and not PyObject_GC_IsTracked(
                <PyObject*>row):
            Py_INCREF(row)  # the encoder's, with nothing to add: as it is
            PyList_SET_ITEM(ids_out, r, row)
        else:
            one = PyList_New(w)
            PyObject_GC_UnTrack(<PyObject*>one)  # ints only
            # checked after the allocation, which may run a finaliser that changes the row,
            # and before the copy, between which nothing runs
            if PyList_GET_SIZE(row) < n:
                raise RuntimeError(f"frame_rows: rows[{r}] changed while it was framed")
            first = PyList_GET_SIZE(row) - n if keep_end else 0  # the first id kept
            _check_ints(row, first, n, r)
            dst = (<PyListObject*>one).ob_item
            at = shift if left else 0  # where the ids begin
            _put(dst + at, (<PyTupleObject*>prefix).ob_item, npre)
            _put(dst + at + npre, (<PyListObject*>row).ob_item + first, n)
            _put(dst + at + npre + n, (<PyTupleObject*>suffix).ob_item, nsuf)
            _fill(dst + (0 if left else w - shift), pad, shift)
            Py_INCREF(one)
            PyList_SET_ITEM(ids_out, r, one)
        if mask:
            one = PyList_New(w)
            PyObject_GC_UnTrack(<PyObject*>one)
            dst = (<PyListObject*>one).ob_item
            _fill(dst, zero_int if left else one_int, shift if left else w - shift)
            _fill(dst + (shift if left else w - shift), one_int if left else zero_int, w - shift if left else shift)
            Py_INCREF(one)
            PyList_SET_ITEM(masks_out, r, one)
    PyObject_GC_Track(<PyObject*>ids_out)  # whole now; they may hold what the caller adds
    if mask:
        PyObject_GC_Track(<PyObject*>masks_out)
    return ids_out, masks_out


cdef object _ONE = 1
cdef object _ZERO = 0


cdef int _check_ints(list row, Py_ssize_t first, Py_ssize_t n, Py_ssize_t r) except -1:
    """That ``row[first:first + n]`` holds only exact ints, when the collector tracks the
    row: an untracked one (the encoder's) holds only ints already."""
    cdef Py_ssize_t c
    if PyObject_GC_IsTracked(<PyObject*>row):
        for c in range(first, first + n):
            if not _long_check_exact(PyList_GET_ITEM(row, c)):
                raise TypeError(f"frame_rows: rows[{r}][{c}] is not an int")
    return 0


def rows_holding(list rows, const int64_t[::1] ids):
    """The indices of the rows (lists of ints, as the encoder makes them) that hold one of
    the few ``ids``: a C loop, so that finding the texts in which a special token read as
    plain text was matched costs little beside encoding them (``encode_ordinary_batch``)."""
    cdef Py_ssize_t r, i, n = ids.shape[0]
    cdef PyObject* item
    cdef int overflow = 0
    hits = []
    for r in range(PyList_GET_SIZE(rows)):
        row = <object>PyList_GET_ITEM(rows, r)
        if not PyList_CheckExact(row):
            raise TypeError(f"rows[{r}] must be a list, got {type(row).__name__}")
        for i in range(PyList_GET_SIZE(row)):
            item = PyList_GET_ITEM(row, i)
            if _long_check_exact(item) and _holds(ids, n, _long_value(item, &overflow)) and not overflow:
                hits.append(r)
                break
    return hits


cdef inline bint _holds(const int64_t[::1] ids, Py_ssize_t n, int64_t kid) noexcept:
    cdef Py_ssize_t j
    for j in range(n):
        if ids[j] == kid:
            return True
    return False


# ----------------------------------------------------------------------------- UTF-8

cdef Py_ssize_t _utf8_valid_prefix(const uint8_t* s, Py_ssize_t n, bint* invalid) noexcept nogil:
    """The length of the longest prefix of s[0:n] made of whole valid UTF-8 sequences (as
    Python's strict decoder defines them: no overlongs, no surrogates, at most U+10FFFF);
    *invalid says whether what follows is invalid (rather than a sequence cut by the end)."""
    cdef Py_ssize_t i = 0, need, k
    cdef uint64_t word
    cdef uint8_t c, c1, lo, hi
    invalid[0] = False
    while i < n:
        if i + 8 <= n:  # eight ASCII bytes at once (most of the text, even Chinese text's spaces and digits)
            memcpy(&word, s + i, 8)
            if (word & 0x8080808080808080ULL) == 0:
                i += 8
                continue
        c = s[i]
        if c < 0x80:
            i += 1
            continue
        lo, hi = 0x80, 0xBF
        if 0xC2 <= c <= 0xDF:
            need = 1
        elif 0xE0 <= c <= 0xEF:
            need = 2
            if c == 0xE0:
                lo = 0xA0
            elif c == 0xED:
                hi = 0x9F
        elif 0xF0 <= c <= 0xF4:
            need = 3
            if c == 0xF0:
                lo = 0x90
            elif c == 0xF4:
                hi = 0x8F
        else:
            invalid[0] = True
            return i
        for k in range(1, need + 1):
            if i + k >= n:
                return i  # cut by the end: the caller may have the rest
            c1 = s[i + k]
            if not ((lo if k == 1 else 0x80) <= c1 <= (hi if k == 1 else 0xBF)):
                invalid[0] = True
                return i
        i += need + 1
    return n


def utf8_valid_prefix(const uint8_t[::1] data, Py_ssize_t start=0):
    """(length, invalid): the longest prefix of ``data`` that is whole valid UTF-8 (from
    ``start``, where a char must begin), and whether the bytes after it are invalid
    (False: valid, or a sequence the end cuts). Without the GIL."""
    cdef Py_ssize_t n = data.shape[0], at
    cdef bint invalid = False
    if not 0 <= start <= n:
        raise ValueError(f"start {start} is outside the data (0..{n})")
    with nogil:
        at = start + _utf8_valid_prefix(&data[0] + start if n else NULL, n - start, &invalid)
    return at, invalid


# ----------------------------------------------------------------------------- ids to decode

cdef Py_ssize_t _list_ids(list ids, int64_t n_keys, int64_t** out) except -1:
    """The ids of a list, checked (integers in 0..n_keys-1), into a malloc'd array (*out,
    which the caller frees): a codec's decode of a list."""
    cdef Py_ssize_t n = PyList_GET_SIZE(ids), i
    cdef int64_t kid
    cdef int overflow = 0
    cdef PyObject* item
    cdef int64_t* buf = <int64_t*>malloc((n + 1) * sizeof(int64_t))
    if buf == NULL:
        raise MemoryError()
    out[0] = buf
    for i in range(n):
        item = PyList_GET_ITEM(ids, i)  # borrowed: no reference counting per id
        if _long_check_exact(item):
            kid = _long_value(item, &overflow)
            if overflow:
                raise UnknownIdError(<object>item, i, n_keys)
        else:
            kid = _as_id(<object>item, i, n_keys)
        if kid < 0 or kid >= n_keys:
            raise UnknownIdError(<object>item, i, n_keys)
        buf[i] = kid
    return n


cdef int64_t _as_id(object item, Py_ssize_t pos, int64_t n_keys) except? -2:
    # a list item that is not exactly an int: bool, numpy integer... or junk
    if isinstance(item, float) or not hasattr(item, "__index__"):
        raise TypeError(f"ids must be integers, got {type(item).__name__} at position {pos}")
    value = item.__index__()
    if not -(1 << 63) <= value < (1 << 63):
        raise UnknownIdError(value, pos, n_keys)
    return value


cdef object _id_array(object ids, int64_t n_keys):
    """Ids that are not a list (an array, a buffer, any iterable of integers) as a
    C-contiguous int64 array, its values not yet checked against n_keys; TypeError for what
    is no integer, UnknownIdError for a uint64 past int64."""
    cdef Py_ssize_t i
    arr = np.asarray(ids)
    if arr.dtype.kind not in "iu" and arr.size:
        raise TypeError(f"ids must be integers, got an array of {arr.dtype}")
    if arr.dtype == np.uint64 and arr.size and int(arr.max()) >= (1 << 63):
        i = int(np.argmax(arr >= (1 << 63)))
        raise UnknownIdError(int(arr[i]), i, n_keys)
    return np.ascontiguousarray(arr, dtype=np.int64).reshape(-1)
