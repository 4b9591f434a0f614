/* bbpe_c_demo.encode(model, data: bytes) -> list[int], written against bbpe.h only. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "bbpe.h"

static const bbpe_capi* bbpe;

static PyObject* encode(PyObject* self, PyObject* args) {
    PyObject* model;
    const char* data;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "Oy#", &model, &data, &n))
        return NULL;
    const bbpe_model* view = bbpe->model_view(model);
    if (!view)
        return NULL;
    int64_t* ids = PyMem_Malloc((n + 1) * sizeof(int64_t));
    if (!ids)
        return PyErr_NoMemory();
    int64_t count;
    Py_BEGIN_ALLOW_THREADS
    count = bbpe->encode_into(view, (const uint8_t*)data, (size_t)n, ids, (size_t)n + 1, 0);
    Py_END_ALLOW_THREADS
    PyObject* out = count < 0 ? NULL : PyList_New(count);
    for (int64_t i = 0; out && i < count; i++)
        PyList_SET_ITEM(out, i, PyLong_FromLongLong(ids[i]));
    PyMem_Free(ids);
    if (count < 0)
        PyErr_SetString(PyExc_RuntimeError, "output buffer too small");
    return out;
}

static PyObject* decode(PyObject* self, PyObject* args) {
    PyObject* model;
    PyObject* seq;
    if (!PyArg_ParseTuple(args, "OO!", &model, &PyList_Type, &seq))
        return NULL;
    const bbpe_model* view = bbpe->model_view(model);
    if (!view)
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(seq);
    int64_t* ids = PyMem_Malloc((n + 1) * sizeof(int64_t));
    if (!ids)
        return PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < n; i++)
        ids[i] = PyLong_AsLongLong(PyList_GET_ITEM(seq, i));
    size_t bad = 0;
    int64_t size = bbpe->decoded_size(view, ids, (size_t)n, &bad);
    PyObject* out = NULL;
    if (size == BBPE_ERR_UNKNOWN_ID) {
        PyErr_Format(PyExc_ValueError, "unknown id at position %zu", bad);
    } else if ((out = PyBytes_FromStringAndSize(NULL, size))) {
        bbpe->decode_into(view, ids, (size_t)n, (uint8_t*)PyBytes_AS_STRING(out), (size_t)size, &bad);
    }
    PyMem_Free(ids);
    return out;
}

static PyMethodDef methods[] = {
    {"encode", encode, METH_VARARGS, "encode(model, data: bytes) -> list[int]"},
    {"decode", decode, METH_VARARGS, "decode(model, ids: list[int]) -> bytes"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "bbpe_c_demo", NULL, -1, methods};

PyMODINIT_FUNC PyInit_bbpe_c_demo(void) {
    bbpe = bbpe_import();
    if (!bbpe)
        return NULL;
    return PyModule_Create(&module);
}
