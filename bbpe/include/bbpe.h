/* bbpe.h -- the C API of bbpe's XBBPE codec, for C extensions that encode and decode with a
 * bbpe vocabulary without the GIL.
 *
 *     #include "bbpe.h"            (include_dirs=[bbpe.get_include()])
 *
 *     static const bbpe_capi* bbpe;            -- in the module init:
 *     bbpe = bbpe_import();  if (!bbpe) return NULL;
 *
 *     const bbpe_model* m = bbpe->model_view(tokenizer_model);   -- Tokenizer.model
 *     int64_t n = bbpe->encode_into(m, text, len, ids, cap, 0);  -- without the GIL
 *
 * The functions are the ones bbpe/codec.pxd declares for Cython (same names, prefixed
 * bbpe_ there), published by the module bbpe.codec as the capsule "bbpe.codec._C_API".
 * A model view is borrowed from its Model object: keep that object alive while you use
 * it. The functions never touch Python objects or allocate; many threads may use one view.
 * The struct below is versioned: bbpe_import() fails if bbpe's version differs.
 */
#ifndef BBPE_H
#define BBPE_H

#include <Python.h>
#include <stddef.h>
#include <stdint.h>

#define BBPE_CAPI_VERSION 2 /* bumped with codec.pxd's BBPE_ABI_VERSION */
#define BBPE_KEY_BYTES 24
#define BBPE_BUG_COMPAT 1      /* flag: reproduce the reference's lossy encoding */
#define BBPE_ERR_CAPACITY (-1) /* the output buffer is too small */
#define BBPE_ERR_UNKNOWN_ID (-2)

typedef struct bbpe_model bbpe_model; /* opaque here; bbpe/codec.pxd has the fields */

typedef struct {
    uint8_t pending[8];  /* incremental decoding: bytes of an unfinished UTF-8 char */
    int npending;        /* start at 0 */
} bbpe_stream;

typedef struct {
    int version;
    /* The view of a bbpe.codec.Model, or NULL with TypeError set. */
    const bbpe_model* (*model_view)(PyObject* model);
    /* UTF-8 src[0:n] -> ids in dst[0:cap]; the number written, or BBPE_ERR_CAPACITY. n ids
     * always suffice without BBPE_BUG_COMPAT; with it, n + 3 * (2 * (number of '<') + 1). */
    int64_t (*encode_into)(const bbpe_model*, const uint8_t* src, size_t n, int64_t* dst, size_t cap, int flags);
    int64_t (*encode_into32)(const bbpe_model*, const uint8_t* src, size_t n, int32_t* dst, size_t cap, int flags);
    /* Bytes that ids decode to, or BBPE_ERR_UNKNOWN_ID with *bad = its position. */
    int64_t (*decoded_size)(const bbpe_model*, const int64_t* ids, size_t n, size_t* bad);
    /* ids -> bytes in dst; bytes written, BBPE_ERR_UNKNOWN_ID (*bad set) or BBPE_ERR_CAPACITY. */
    int64_t (*decode_into)(const bbpe_model*, const int64_t* ids, size_t n, uint8_t* dst, size_t cap, size_t* bad);
    /* One id in; whole UTF-8 chars (and bytes that can never start one) out. cap >= 32. */
    int64_t (*decode_stream)(const bbpe_model*, bbpe_stream* state, int64_t id, uint8_t* dst, size_t cap);
    /* What an unfinished char left in the state; the state is reset. */
    int64_t (*stream_flush)(bbpe_stream* state, uint8_t* dst, size_t cap);
    /* Id of a key (any bytes, n <= 24), or -1. */
    int64_t (*lookup)(const bbpe_model*, const uint8_t* key, size_t n);
} bbpe_capi;

/* Import bbpe.codec and fetch its C API (with the GIL held); NULL with an exception set. */
static inline const bbpe_capi* bbpe_import(void) {
    const bbpe_capi* api = (const bbpe_capi*)PyCapsule_Import("bbpe.codec._C_API", 0);
    if (api && api->version != BBPE_CAPI_VERSION) {
        PyErr_Format(PyExc_ImportError, "bbpe C API version %d, this extension was built for %d",
                     api->version, BBPE_CAPI_VERSION);
        return NULL;
    }
    return api;
}

#endif /* BBPE_H */
