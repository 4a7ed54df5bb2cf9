/* graft._graft: the CPython extension over libgraft's public API (include/graft/graft.h, the
 * only graft header it includes). The Python layer (graft/__init__.py) gives it the ONNX
 * Runtime / TVM shaped names; this file owns the C objects, releases the GIL around every call
 * into graft, and moves tensors between numpy and graft without copies where the memory
 * allows.
 *
 * Objects:
 *   Module   a graft_irmodule (the modules derived from one share its IR context; graft
 *            serializes the calls into one context, so threads never share an arena);
 *   Model    a graft_session over a built artifact: thread-safe runs, optional profiling.
 * Errors are graft.GraftError with the error's message, status, file, layer, op, line, col. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include <graft/graft.h>

/* tools/explore_html.c is compiled into this module (the page's layout needs Graphviz, which
 * the library does not link); its one entry point. */
bool explore_write_html(json_t *doc, const char *path);

#define MAX_IO 64
#define MAX_NDIM 8

static PyObject *GraftError;

/* ---- errors ---- */

/* graft_status as the Python layer names it (graft.GraftError.status). */
static const struct {
    graft_status st;
    const char *name;
} STATUS_NAMES[] = {
    {GRAFT_OK, "GR_OK"},
    {GRAFT_ERR_PARSE, "GR_ERR_PARSE"},
    {GRAFT_ERR_TYPE, "GR_ERR_TYPE"},
    {GRAFT_ERR_INVALID, "GR_ERR_INVALID"},
    {GRAFT_ERR_UNSUPPORTED, "GR_ERR_UNSUPPORTED"},
    {GRAFT_ERR_IO, "GR_ERR_IO"},
    {GRAFT_ERR_NOMEM, "GR_ERR_NOMEM"},
    {GRAFT_ERR_RUNTIME, "GR_ERR_RUNTIME"},
    {GRAFT_ERR_NOT_FOUND, "GR_ERR_NOT_FOUND"},
};

static const char *status_name(graft_status st) {
    for (size_t i = 0; i < sizeof STATUS_NAMES / sizeof STATUS_NAMES[0]; i++)
        if (STATUS_NAMES[i].st == st) return STATUS_NAMES[i].name;
    return "GR_UNKNOWN";
}

/* Raises GraftError from a graft error (and frees it); `file` names the input when the error
 * has none. */
static PyObject *raise_error(graft_error *e, const char *file) {
    const char *ef = graft_error_file(e), *f = ef[0] ? ef : file ? file : "";
    const char *m = graft_error_message(e);
    size_t fl = strlen(f);
    bool named = !fl || (strncmp(m, f, fl) == 0 && m[fl] == ':');
    PyObject *exc = PyObject_CallFunction(GraftError, "s", m);
    if (exc && !named) {
        Py_DECREF(exc);
        exc = PyObject_CallFunction(GraftError, "N", PyUnicode_FromFormat("%s: %s", f, m));
    }
    if (!exc) {
        graft_error_free(e);
        return NULL;
    }
    const struct {
        const char *name;
        PyObject *value;
    } attrs[] = {
        {"status", PyUnicode_FromString(status_name(graft_error_status(e)))}, {"file", PyUnicode_FromString(f)},
        {"layer", PyUnicode_FromString(graft_error_layer(e))}, {"op", PyUnicode_FromString(graft_error_op(e))},
        {"line", PyLong_FromLong(graft_error_line(e))}, {"col", PyLong_FromLong(graft_error_col(e))},
        {"detail", PyUnicode_FromString(graft_error_detail(e))},
    };
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
        if (attrs[i].value) PyObject_SetAttrString(exc, attrs[i].name, attrs[i].value);
        Py_XDECREF(attrs[i].value);
    }
    graft_error_free(e);
    PyErr_SetObject(GraftError, exc);
    Py_DECREF(exc);
    return NULL;
}

/* A heap JSON string from the library as a Python str (freed here). */
static PyObject *take_str(char *s, const char *what) {
    if (!s) return PyErr_Format(GraftError, "%s: graft returned nothing", what);
    PyObject *r = PyUnicode_FromString(s);
    graft_string_free(s);
    return r;
}

/* ---- options: backends and ["dnnl.threads=2", ...] -> graft_session_options ---- */

/* backends: a list of str or None; options: a list of "backend.name=value" or None. */
static int make_options(PyObject *backends, PyObject *list, graft_session_options **out) {
    graft_session_options *o = graft_session_options_new();
    graft_error *err = NULL;
    *out = NULL;
    if (backends && backends != Py_None) {
        if (!PyList_Check(backends)) {
            graft_session_options_free(o);
            PyErr_SetString(PyExc_TypeError, "backends must be a list of str");
            return -1;
        }
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(backends); i++) {
            const char *b = PyUnicode_AsUTF8(PyList_GET_ITEM(backends, i));
            if (!b || graft_session_options_add_backend(o, b, &err) != GRAFT_OK) {
                graft_session_options_free(o);
                if (b) raise_error(err, NULL);
                return -1;
            }
        }
    }
    if (list && list != Py_None) {
        PyObject *seq = PySequence_Fast(list, "options must be a list of 'backend.name=value' strings");
        if (!seq) {
            graft_session_options_free(o);
            return -1;
        }
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
            const char *a = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(seq, i));
            if (!a || graft_session_options_set(o, a, &err) != GRAFT_OK) {
                Py_DECREF(seq);
                graft_session_options_free(o);
                if (a) raise_error(err, NULL);
                return -1;
            }
        }
        Py_DECREF(seq);
    }
    *out = o;
    return 0;
}

/* ---- Module ---- */

typedef struct {
    PyObject_HEAD
    graft_irmodule *m;
} ModuleObject;

static PyTypeObject ModuleType;

static PyObject *module_wrap(graft_irmodule *m) {
    ModuleObject *o = PyObject_New(ModuleObject, &ModuleType);
    if (!o) {
        graft_irmodule_free(m);
        return NULL;
    }
    o->m = m;
    return (PyObject *)o;
}

static void module_dealloc(ModuleObject *self) {
    graft_irmodule_free(self->m);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *module_text(ModuleObject *self, PyObject *args) {
    int spans = 1, metadata = 1;
    if (!PyArg_ParseTuple(args, "|pp", &spans, &metadata)) return NULL;
    char *s;
    Py_BEGIN_ALLOW_THREADS s = graft_irmodule_text(self->m, spans, metadata);
    Py_END_ALLOW_THREADS
    if (!s) return PyErr_NoMemory();
    return take_str(s, "text");
}

static PyObject *module_layers(ModuleObject *self, PyObject *noargs) {
    (void)noargs;
    char *s;
    Py_BEGIN_ALLOW_THREADS s = graft_irmodule_layers_json(self->m);
    Py_END_ALLOW_THREADS
    return take_str(s, "layers");
}

static PyObject *module_signature(ModuleObject *self, PyObject *noargs) {
    (void)noargs;
    char *s;
    Py_BEGIN_ALLOW_THREADS s = graft_irmodule_signature_json(self->m);
    Py_END_ALLOW_THREADS
    if (!s) return PyErr_Format(GraftError, "the module has no function 'main'");
    return take_str(s, "signature");
}

static PyObject *module_optimize(ModuleObject *self, PyObject *args) {
    const char *passes = NULL;
    int level = -1;
    if (!PyArg_ParseTuple(args, "|zi", &passes, &level)) return NULL;
    graft_irmodule *out = NULL;
    graft_error *err = NULL;
    graft_status st;
    Py_BEGIN_ALLOW_THREADS st = graft_irmodule_optimize(self->m, passes, level, &out, &err);
    Py_END_ALLOW_THREADS
    if (st != GRAFT_OK) return raise_error(err, NULL);
    return module_wrap(out);
}

static PyObject *module_partition(ModuleObject *self, PyObject *args) {
    PyObject *backends, *options;
    const char *patterns = NULL;
    if (!PyArg_ParseTuple(args, "OzO", &backends, &patterns, &options)) return NULL;
    graft_session_options *o;
    if (make_options(backends, options, &o)) return NULL;
    graft_irmodule *out = NULL;
    char *report = NULL;
    graft_error *err = NULL;
    graft_status st;
    Py_BEGIN_ALLOW_THREADS st = graft_irmodule_partition(self->m, o, patterns, &out, &report, &err);
    Py_END_ALLOW_THREADS
    graft_session_options_free(o);
    if (st != GRAFT_OK) return raise_error(err, NULL);
    PyObject *mod = module_wrap(out), *rep = take_str(report, "report");
    if (!mod || !rep) {
        Py_XDECREF(mod);
        Py_XDECREF(rep);
        return NULL;
    }
    return Py_BuildValue("(NN)", mod, rep);
}

/* ---- tensors: numpy <-> graft_tensor ---- */

static const struct {
    int npy;
    graft_dtype dt;
} DTYPES[] = {
    {NPY_FLOAT32, GRAFT_FLOAT32}, {NPY_FLOAT64, GRAFT_FLOAT64}, {NPY_FLOAT16, GRAFT_FLOAT16},
    {NPY_INT64, GRAFT_INT64},     {NPY_INT32, GRAFT_INT32},     {NPY_INT16, GRAFT_INT16},
    {NPY_INT8, GRAFT_INT8},       {NPY_UINT8, GRAFT_UINT8},     {NPY_UINT16, GRAFT_UINT16},
    {NPY_UINT32, GRAFT_UINT32},   {NPY_UINT64, GRAFT_UINT64},   {NPY_BOOL, GRAFT_BOOL},
};
#define NDTYPES (sizeof DTYPES / sizeof DTYPES[0])

static int npy_of_dtype(graft_dtype t) {
    for (size_t i = 0; i < NDTYPES; i++)
        if (DTYPES[i].dt == t) return DTYPES[i].npy;
    return -1;
}

static graft_dtype dtype_of_npy(int npy) {
    for (size_t i = 0; i < NDTYPES; i++)
        if (DTYPES[i].npy == npy) return DTYPES[i].dt;
    return GRAFT_DTYPE_UNKNOWN;
}

/* Owns one graft_tensor reference; the base object of the numpy arrays that view its data. */
typedef struct {
    PyObject_HEAD
    graft_tensor *t;
} TensorRefObject;

static void tensorref_dealloc(TensorRefObject *self) {
    graft_tensor_release(self->t);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject TensorRefType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "graft._graft.TensorRef",
    .tp_basicsize = sizeof(TensorRefObject),
    .tp_dealloc = (destructor)tensorref_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Keeps a graft tensor alive while numpy arrays view its memory.",
};

static int tensor_dims(const graft_tensor *t, npy_intp *dims) {
    int nd = graft_tensor_ndim(t);
    for (int k = 0; k < nd; k++) dims[k] = (npy_intp)graft_tensor_dim(t, k);
    return nd;
}

/* A numpy array over t's data (takes the reference): no copy, unless the data lies inside one
 * of the caller's input buffers (an output that is an input), which the array must not
 * outlive. A tensor someone else still holds (a constant of the model, returned as is) is
 * viewed read-only: writing to it would change the model. */
static PyObject *array_of_tensor(graft_tensor *t, PyArrayObject *const *ins, uint32_t nin) {
    int npy = npy_of_dtype(graft_tensor_dtype(t));
    if (npy < 0) {
        PyErr_Format(GraftError, "an output of dtype %s has no numpy type",
                     graft_dtype_name(graft_tensor_dtype(t)) ? graft_dtype_name(graft_tensor_dtype(t)) : "unknown");
        graft_tensor_release(t);
        return NULL;
    }
    npy_intp dims[GRAFT_MAX_NDIM];
    int nd = tensor_dims(t, dims);
    char *data = graft_tensor_data(t);
    bool borrowed = false;
    for (uint32_t i = 0; i < nin && data; i++) {
        char *lo = PyArray_DATA(ins[i]);
        borrowed |= data >= lo && data < lo + PyArray_NBYTES(ins[i]);
    }
    if (borrowed || !data) {
        PyObject *a = PyArray_SimpleNew(nd, dims, npy);
        if (a && data) memcpy(PyArray_DATA((PyArrayObject *)a), data, graft_tensor_nbytes(t));
        graft_tensor_release(t);
        return a;
    }
    TensorRefObject *ref = PyObject_New(TensorRefObject, &TensorRefType);
    if (!ref) {
        graft_tensor_release(t);
        return NULL;
    }
    ref->t = t;
    PyObject *a = PyArray_New(&PyArray_Type, nd, dims, npy, NULL, data, 0, NPY_ARRAY_CARRAY, NULL);
    if (!a || PyArray_SetBaseObject((PyArrayObject *)a, (PyObject *)ref) < 0) {
        Py_XDECREF(a);
        Py_DECREF(ref);
        return NULL;
    }
    if (graft_tensor_is_shared(t)) PyArray_CLEARFLAGS((PyArrayObject *)a, NPY_ARRAY_WRITEABLE);
    return a;
}

/* The outputs of a run as a list of arrays. Takes the tensors. */
static PyObject *list_of_outputs(graft_tensor **outs, uint32_t n, PyArrayObject *const *ins, uint32_t nin) {
    PyObject *list = PyList_New(n);
    for (uint32_t i = 0; i < n; i++) {
        PyObject *a = list ? array_of_tensor(outs[i], ins, nin) : (graft_tensor_release(outs[i]), NULL);
        if (!a) Py_CLEAR(list);
        else PyList_SET_ITEM(list, i, a);
    }
    return list;
}

/* Input i as a tensor over the array's memory. The array must be a numpy array of the dtype
 * graft expects (want: GRAFT_DTYPE_UNKNOWN, no check); a non-contiguous or misaligned one is
 * copied (*arr replaced). */
static int tensor_of_array(PyObject *obj, graft_dtype want, uint32_t i, PyArrayObject **arr, graft_tensor **out) {
    if (!PyArray_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "input %u is not a numpy array (convert it with numpy.asarray)", i);
        return -1;
    }
    PyArrayObject *a = (PyArrayObject *)obj;
    int want_npy = npy_of_dtype(want);
    if (want_npy >= 0 && PyArray_TYPE(a) != want_npy) {
        PyArray_Descr *d = PyArray_DescrFromType(want_npy);
        PyErr_Format(PyExc_TypeError, "input %u: expected dtype %S, got %S", i, (PyObject *)d,
                     (PyObject *)PyArray_DESCR(a));
        Py_XDECREF(d);
        return -1;
    }
    graft_dtype dt = dtype_of_npy(PyArray_TYPE(a));
    if (dt == GRAFT_DTYPE_UNKNOWN) {
        PyErr_Format(PyExc_TypeError, "input %u: numpy dtype %S has no graft type", i, (PyObject *)PyArray_DESCR(a));
        return -1;
    }
    if (PyArray_NDIM(a) > GRAFT_MAX_NDIM) {
        PyErr_Format(PyExc_ValueError, "input %u has %d dims (graft takes up to %d)", i, PyArray_NDIM(a), GRAFT_MAX_NDIM);
        return -1;
    }
    if (!PyArray_ISCARRAY_RO(a)) a = (PyArrayObject *)PyArray_FromAny(obj, NULL, 0, 0, NPY_ARRAY_CARRAY_RO, NULL);
    else Py_INCREF(a);
    if (!a) return -1;
    int64_t shape[GRAFT_MAX_NDIM];
    for (int k = 0; k < PyArray_NDIM(a); k++) shape[k] = (int64_t)PyArray_DIM(a, k);
    *out = graft_tensor_wrap(dt, PyArray_NDIM(a), shape, PyArray_DATA(a));
    *arr = a;
    if (!*out) {
        Py_CLEAR(*arr);
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

typedef struct {
    graft_tensor *t[MAX_IO];
    PyArrayObject *arr[MAX_IO];
    uint32_t n;
} inputs;

static void inputs_clear(inputs *in) {
    for (uint32_t i = 0; i < in->n; i++) {
        graft_tensor_release(in->t[i]);
        Py_XDECREF(in->arr[i]);
    }
    in->n = 0;
}

/* s NULL: any number of inputs (up to MAX_IO), no dtype check; else s's inputs. */
static int inputs_take(inputs *in, PyObject *list, const graft_session *s) {
    in->n = 0;
    if (!PyList_Check(list) && !PyTuple_Check(list)) {
        PyErr_SetString(PyExc_TypeError, "inputs must be a list of numpy arrays");
        return -1;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(list);
    uint32_t want = s ? graft_session_num_inputs(s) : UINT32_MAX;
    if ((want != UINT32_MAX && (uint32_t)n != want) || n > MAX_IO) {
        PyErr_Format(PyExc_ValueError, "the model takes %u inputs, %zd given", want, n);
        return -1;
    }
    for (uint32_t i = 0; i < (uint32_t)n; i++) {
        graft_dtype dt = s ? graft_session_input_dtype(s, i) : GRAFT_DTYPE_UNKNOWN;
        if (tensor_of_array(PySequence_Fast_GET_ITEM(list, i), dt, i, &in->arr[i], &in->t[i]) < 0) {
            inputs_clear(in);
            return -1;
        }
        in->n++;
    }
    return 0;
}

/* ---- inspect (graft diff / graft explore) ---- */

typedef struct {
    PyObject *fn;
    bool failed;
} perturb_ctx;

/* Hands each observed output to the Python callable as a writable array over its data. */
static int perturb_call(const char *layer, graft_tensor *t, void *user) {
    perturb_ctx *p = user;
    PyGILState_STATE g = PyGILState_Ensure();
    int changed = 0;
    int npy = npy_of_dtype(graft_tensor_dtype(t));
    if (npy >= 0 && !p->failed) {
        npy_intp dims[GRAFT_MAX_NDIM];
        int nd = tensor_dims(t, dims);
        PyObject *a = PyArray_New(&PyArray_Type, nd, dims, npy, NULL, graft_tensor_data(t), 0, NPY_ARRAY_CARRAY, NULL);
        PyObject *r = a ? PyObject_CallFunction(p->fn, "sO", layer, a) : NULL;
        if (!r) p->failed = true;
        else changed = PyObject_IsTrue(r) == 1;
        Py_XDECREF(r);
        Py_XDECREF(a);
    }
    PyGILState_Release(g);
    return changed;
}

static PyObject *module_inspect(ModuleObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"backends", "options", "inputs", "observe", "profile", "diff", "rtol", "atol",
                             "atol_scale", "against", "perturb", NULL};
    PyObject *backends, *options, *list, *perturb = Py_None;
    int observe = 0, profile = 0, diff = 0;
    double rtol = 0, atol = 0, atol_scale = 0;
    const char *against = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO|pppdddzO", kwlist, &backends, &options, &list, &observe, &profile,
                                     &diff, &rtol, &atol, &atol_scale, &against, &perturb))
        return NULL;
    unsigned flags = (observe ? GRAFT_INSPECT_OBSERVE : 0) | (profile ? GRAFT_INSPECT_PROFILE : 0) |
                     (diff ? GRAFT_INSPECT_DIFF : 0);
    graft_session_options *opts;
    if (make_options(backends, options, &opts)) return NULL;
    inputs in = {.n = 0};
    /* the run checks the inputs against main's params */
    if (list != Py_None && inputs_take(&in, list, NULL) < 0) {
        graft_session_options_free(opts);
        return NULL;
    }
    perturb_ctx pc = {perturb, false};
    char *dj = NULL, *doc = NULL;
    graft_error *err = NULL;
    graft_status st;
    Py_BEGIN_ALLOW_THREADS st = graft_irmodule_inspect(self->m, opts, flags, against, rtol, atol, atol_scale, in.t, in.n,
                                                       perturb != Py_None ? perturb_call : NULL, &pc,
                                                       diff ? &dj : NULL, &doc, &err);
    Py_END_ALLOW_THREADS
    inputs_clear(&in);
    graft_session_options_free(opts);
    if (pc.failed) {
        graft_string_free(dj);
        graft_string_free(doc);
        graft_error_free(err);
        return NULL; /* the perturbation's exception */
    }
    if (st != GRAFT_OK) return raise_error(err, NULL);
    PyObject *a = dj ? take_str(dj, "diff") : (Py_INCREF(Py_None), Py_None), *b = take_str(doc, "document");
    if (!a || !b) {
        Py_XDECREF(a);
        Py_XDECREF(b);
        return NULL;
    }
    return Py_BuildValue("(NN)", a, b);
}

/* diff_values(backends, options, inputs, refs: {layer: array}, rtol, atol, atol_scale, atol_steps,
 * qparams_onnx): graft diff against given per-layer values (graft_irmodule_diff_values). */
static PyObject *module_diff_values(ModuleObject *self, PyObject *args) {
    PyObject *backends, *options, *list, *refs;
    double rtol, atol, atol_scale, atol_steps;
    const char *qparams_onnx = NULL;
    if (!PyArg_ParseTuple(args, "OOOO!dddd|z", &backends, &options, &list, &PyDict_Type, &refs, &rtol, &atol,
                          &atol_scale, &atol_steps, &qparams_onnx))
        return NULL;
    Py_ssize_t nr = PyDict_Size(refs);
    const char **names = PyMem_Calloc((size_t)nr + 1, sizeof(char *));
    graft_tensor **ts = PyMem_Calloc((size_t)nr + 1, sizeof(graft_tensor *));
    PyArrayObject **arrs = PyMem_Calloc((size_t)nr + 1, sizeof(PyArrayObject *));
    graft_session_options *opts = NULL;
    inputs in = {.n = 0};
    PyObject *key, *val, *result = NULL;
    Py_ssize_t pos = 0;
    uint32_t k = 0;
    bool ok = names && ts && arrs;
    while (ok && PyDict_Next(refs, &pos, &key, &val)) {
        names[k] = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL;
        if (!names[k]) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "reference keys must be layer names (str)");
            ok = false;
        } else if (tensor_of_array(val, GRAFT_DTYPE_UNKNOWN, k, &arrs[k], &ts[k]) < 0) {
            ok = false;
        } else {
            k++;
        }
    }
    ok = ok && !make_options(backends, options, &opts) && !(list != Py_None && inputs_take(&in, list, NULL) < 0);
    if (ok) {
        char *dj = NULL, *doc = NULL;
        graft_error *err = NULL;
        graft_status st;
        Py_BEGIN_ALLOW_THREADS st = graft_irmodule_diff_values(self->m, opts, rtol, atol, atol_scale, atol_steps,
                                                               qparams_onnx, in.t, in.n, names, ts, k, &dj, &doc, &err);
        Py_END_ALLOW_THREADS
        if (st != GRAFT_OK) {
            raise_error(err, NULL);
        } else {
            PyObject *a = take_str(dj, "diff"), *b = take_str(doc, "document");
            if (a && b) result = Py_BuildValue("(NN)", a, b);
            else {
                Py_XDECREF(a);
                Py_XDECREF(b);
            }
        }
    } else if (!PyErr_Occurred()) {
        PyErr_NoMemory();
    }
    for (uint32_t i = 0; i < k; i++) {
        graft_tensor_release(ts[i]);
        Py_XDECREF(arrs[i]);
    }
    inputs_clear(&in);
    if (opts) graft_session_options_free(opts);
    PyMem_Free(names);
    PyMem_Free(ts);
    PyMem_Free(arrs);
    return result;
}

static PyObject *model_from_module(PyObject *cls, PyObject *args);

static PyMethodDef module_methods[] = {
    {"text", (PyCFunction)module_text, METH_VARARGS, "text(spans=True, metadata=True) -> str: the TVMScript text"},
    {"layers_json", (PyCFunction)module_layers, METH_NOARGS, "the frontend layers its spans name (JSON)"},
    {"signature_json", (PyCFunction)module_signature, METH_NOARGS, "main's inputs and outputs (JSON)"},
    {"optimize", (PyCFunction)module_optimize, METH_VARARGS, "optimize(passes_csv=None, opt_level=-1) -> Module"},
    {"partition", (PyCFunction)module_partition, METH_VARARGS,
     "partition(backends, patterns_path, options) -> (Module, report JSON)"},
    {"inspect", (PyCFunction)module_inspect, METH_VARARGS | METH_KEYWORDS,
     "inspect(backends, options, inputs, observe, profile, diff, rtol, atol, atol_scale, against, perturb) -> "
     "(diff JSON or None, document JSON)"},
    {"diff_values", (PyCFunction)module_diff_values, METH_VARARGS,
     "diff_values(backends, options, inputs, refs, rtol, atol, atol_scale, atol_steps, qparams_onnx=None) -> "
     "(diff JSON, document JSON)"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ModuleType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "graft._graft.Module",
    .tp_basicsize = sizeof(ModuleObject),
    .tp_dealloc = (destructor)module_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An IRModule (the Python class graft.IRModule wraps it).",
    .tp_methods = module_methods,
};

/* ---- module constructors ---- */

static PyObject *py_import_onnx(PyObject *self, PyObject *args) {
    (void)self;
    const char *path;
    PyObject *shapes;
    int no_spans = 0;
    if (!PyArg_ParseTuple(args, "sO|p", &path, &shapes, &no_spans)) return NULL;
    graft_session_options *o = graft_session_options_new();
    graft_session_options_set_spans(o, !no_spans);
    graft_error *err = NULL;
    if (shapes != Py_None) {
        if (!PyDict_Check(shapes)) {
            graft_session_options_free(o);
            return PyErr_Format(PyExc_TypeError, "shapes must be a dict {name: [dims]}");
        }
        PyObject *k, *v;
        Py_ssize_t pos = 0;
        while (PyDict_Next(shapes, &pos, &k, &v)) {
            const char *name = PyUnicode_AsUTF8(k);
            PyObject *seq = name ? PySequence_Fast(v, "a shape is a list of ints") : NULL;
            if (!seq) {
                graft_session_options_free(o);
                return NULL;
            }
            Py_ssize_t nd = PySequence_Fast_GET_SIZE(seq);
            if (nd > GRAFT_MAX_NDIM) {
                Py_DECREF(seq);
                graft_session_options_free(o);
                return PyErr_Format(PyExc_ValueError, "shape of '%s' has more than %d dims", name, GRAFT_MAX_NDIM);
            }
            int64_t dims[GRAFT_MAX_NDIM];
            for (Py_ssize_t j = 0; j < nd; j++) dims[j] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, j));
            Py_DECREF(seq);
            if (PyErr_Occurred()) {
                graft_session_options_free(o);
                return NULL;
            }
            if (graft_session_options_set_input_shape(o, name, (int)nd, dims, &err) != GRAFT_OK) {
                graft_session_options_free(o);
                return raise_error(err, path);
            }
        }
    }
    graft_irmodule *m = NULL;
    graft_status st;
    Py_BEGIN_ALLOW_THREADS st = graft_irmodule_load(path, "onnx", o, &m, &err);
    Py_END_ALLOW_THREADS
    graft_session_options_free(o);
    return st == GRAFT_OK ? module_wrap(m) : raise_error(err, path);
}

static PyObject *py_parse(PyObject *self, PyObject *args) {
    (void)self;
    const char *text, *name;
    Py_ssize_t len;
    if (!PyArg_ParseTuple(args, "s#s", &text, &len, &name)) return NULL;
    graft_irmodule *m = NULL;
    graft_error *err = NULL;
    graft_status st;
    Py_BEGIN_ALLOW_THREADS st = graft_irmodule_load_buffer(text, (size_t)len, "relax", name, NULL, &m, &err);
    Py_END_ALLOW_THREADS
    return st == GRAFT_OK ? module_wrap(m) : raise_error(err, name);
}

static PyObject *py_load_module(PyObject *self, PyObject *args) {
    (void)self;
    const char *path;
    if (!PyArg_ParseTuple(args, "s", &path)) return NULL;
    graft_irmodule *m = NULL;
    graft_error *err = NULL;
    graft_status st;
    Py_BEGIN_ALLOW_THREADS st = graft_irmodule_load(path, "relax", NULL, &m, &err);
    Py_END_ALLOW_THREADS
    return st == GRAFT_OK ? module_wrap(m) : raise_error(err, path);
}

/* ---- Model: a loaded artifact ---- */

typedef struct prof_event {
    const char *kind, *name;       /* static or the session's strings */
    const char *layer;             /* first span source, or NULL */
    uint64_t end_ns, ns;
    unsigned long tid;
    /* a oneDNN primitive (kind "prim", name its region): strings of the region's engine */
    uint32_t index, nlayers;
    const char *pkind, *impl;
    const char *const *layers;
} prof_event;

typedef struct {
    PyObject_HEAD
    graft_session *s;
    pthread_mutex_t lock;          /* the profile's events (runs may be concurrent) */
    prof_event *ev;
    size_t nev, cap;
    bool profiling;
} ModelObject;

static PyTypeObject ModelType;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void push_event(ModelObject *m, const prof_event *pe) {
    pthread_mutex_lock(&m->lock);
    if (m->nev == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 1024;
        prof_event *p = realloc(m->ev, cap * sizeof *p);
        if (p) {
            m->ev = p;
            m->cap = cap;
        }
    }
    if (m->nev < m->cap) m->ev[m->nev++] = *pe;
    pthread_mutex_unlock(&m->lock);
}

/* Each step and each primitive of this session's runs (per session, so two sessions profile
 * independently). */
static void on_event(const graft_profile_event *e, void *user) {
    bool prim = strcmp(e->kind, "prim") == 0;
    prof_event pe = {e->kind, e->name, e->layer, now_ns(), e->ns, (unsigned long)pthread_self(),
                     e->prim_index, e->nlayers, prim ? e->prim_kind : NULL, e->prim_impl, e->layers};
    push_event(user, &pe);
}

static void set_profiling(ModelObject *m, bool on) {
    graft_session_set_event_profiler(m->s, on ? on_event : NULL, 1, on ? m : NULL);
    m->profiling = on;
}

static PyObject *model_wrap(graft_session *s) {
    ModelObject *o = PyObject_New(ModelObject, &ModelType);
    if (!o) {
        graft_session_free(s);
        return NULL;
    }
    o->s = s;
    pthread_mutex_init(&o->lock, NULL);
    o->ev = NULL;
    o->nev = o->cap = 0;
    o->profiling = false;
    return (PyObject *)o;
}

static void model_dealloc(ModelObject *self) {
    if (self->profiling) set_profiling(self, false);
    graft_session_free(self->s);
    free(self->ev);
    pthread_mutex_destroy(&self->lock);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Model.load(path_or_bytes, options): a built artifact. */
static PyObject *model_load(PyObject *cls, PyObject *args) {
    (void)cls;
    PyObject *src, *options;
    if (!PyArg_ParseTuple(args, "OO", &src, &options)) return NULL;
    const char *path = NULL;
    if (!PyBytes_Check(src) && !(path = PyUnicode_AsUTF8(src))) return NULL;
    graft_session_options *o;
    if (make_options(NULL, options, &o)) return NULL;
    graft_session *s = NULL;
    graft_error *err = NULL;
    graft_status st;
    if (!path) {
        const void *buf = PyBytes_AS_STRING(src);
        size_t len = (size_t)PyBytes_GET_SIZE(src);
        Py_BEGIN_ALLOW_THREADS st = graft_session_load_buffer(buf, len, "graft", o, &s, &err);
        Py_END_ALLOW_THREADS
    } else {
        Py_BEGIN_ALLOW_THREADS st = graft_session_load(path, o, &s, &err);
        Py_END_ALLOW_THREADS
    }
    graft_session_options_free(o);
    if (st != GRAFT_OK) return raise_error(err, path);
    return model_wrap(s);
}

/* Model.from_module(module, options, path=None): builds the artifact in memory (written to
 * path when given) and loads it. */
static PyObject *model_from_module(PyObject *cls, PyObject *args) {
    (void)cls;
    ModuleObject *mod;
    PyObject *options;
    const char *path = NULL;
    if (!PyArg_ParseTuple(args, "O!O|z", &ModuleType, &mod, &options, &path)) return NULL;
    graft_session_options *o;
    if (make_options(NULL, options, &o)) return NULL;
    graft_session *s = NULL;
    graft_error *err = NULL;
    graft_status st;
    Py_BEGIN_ALLOW_THREADS st = graft_session_from_irmodule(mod->m, o, &s, &err);
    if (st == GRAFT_OK && path) st = graft_session_save(s, path, &err);
    Py_END_ALLOW_THREADS
    graft_session_options_free(o);
    if (st != GRAFT_OK) {
        graft_session_free(s);
        return raise_error(err, path);
    }
    return model_wrap(s);
}

/* One run; outputs (as many as the session has) on success. */
static graft_status run_once(graft_session *s, const inputs *in, graft_tensor **outs, graft_error **err) {
    return graft_session_run(s, in->t, in->n, outs, graft_session_num_outputs(s), err);
}

/* run(inputs) -> [arrays]: inputs in the model's order, numpy arrays of its dtypes. */
static PyObject *model_run(ModelObject *self, PyObject *list) {
    inputs in;
    if (inputs_take(&in, list, self->s) < 0) return NULL;
    uint32_t nout = graft_session_num_outputs(self->s);
    if (nout > MAX_IO) {
        inputs_clear(&in);
        return PyErr_Format(GraftError, "the model has %u outputs (up to %d)", nout, MAX_IO);
    }
    graft_tensor *outs[MAX_IO];
    graft_error *err = NULL;
    graft_status st;
    Py_BEGIN_ALLOW_THREADS st = run_once(self->s, &in, outs, &err);
    Py_END_ALLOW_THREADS
    PyObject *r = st == GRAFT_OK ? list_of_outputs(outs, nout, in.arr, in.n) : raise_error(err, NULL);
    inputs_clear(&in);
    return r;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* time_c_run(inputs, n) -> median ns of graft_session_run over n runs on these inputs, called
 * from C with no Python in the loop (the C API's cost, to measure what run adds). */
static PyObject *model_time_c_run(ModelObject *self, PyObject *args) {
    PyObject *list;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "On", &list, &n)) return NULL;
    if (n < 1) return PyErr_Format(PyExc_ValueError, "n must be >= 1");
    uint32_t nout = graft_session_num_outputs(self->s);
    if (nout > MAX_IO) return PyErr_Format(GraftError, "the model has %u outputs (up to %d)", nout, MAX_IO);
    inputs in;
    if (inputs_take(&in, list, self->s) < 0) return NULL;
    uint64_t *t = malloc((size_t)n * sizeof *t);
    if (!t) {
        inputs_clear(&in);
        return PyErr_NoMemory();
    }
    graft_error *err = NULL;
    graft_status st = GRAFT_OK;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n && st == GRAFT_OK; i++) {
        graft_tensor *outs[MAX_IO];
        uint64_t t0 = now_ns();
        st = run_once(self->s, &in, outs, &err);
        for (uint32_t k = 0; st == GRAFT_OK && k < nout; k++) graft_tensor_release(outs[k]);
        t[i] = now_ns() - t0;
    }
    Py_END_ALLOW_THREADS
    inputs_clear(&in);
    qsort(t, (size_t)n, sizeof *t, cmp_u64);
    uint64_t med = t[n / 2];
    free(t);
    if (st != GRAFT_OK) return raise_error(err, NULL);
    return PyLong_FromUnsignedLongLong(med);
}

static PyObject *model_signature(ModelObject *self, PyObject *noargs) {
    (void)noargs;
    return take_str(graft_session_signature_json(self->s), "signature");
}

static PyObject *model_set_profiling(ModelObject *self, PyObject *arg) {
    int on = PyObject_IsTrue(arg);
    if (on < 0) return NULL;
    set_profiling(self, on);
    Py_RETURN_NONE;
}

/* take_profile() -> [(kind, name, layers or None, start_us, dur_us, tid, primitive or None)],
 * emptying the buffer; primitive: (index, kind, impl) of a oneDNN primitive, whose layers are
 * the frontend layers of its nodes, comma-separated. */
static PyObject *model_take_profile(ModelObject *self, PyObject *noargs) {
    (void)noargs;
    pthread_mutex_lock(&self->lock);
    PyObject *list = PyList_New((Py_ssize_t)self->nev);
    for (size_t i = 0; list && i < self->nev; i++) {
        const prof_event *e = &self->ev[i];
        PyObject *layers = NULL, *prim = NULL;
        if (e->pkind) {
            layers = PyUnicode_FromString("");
            for (uint32_t k = 0; layers && k < e->nlayers; k++) {
                PyObject *next = PyUnicode_FromFormat("%U%s%s", layers, k ? "," : "", e->layers[k]);
                Py_SETREF(layers, next);
            }
            prim = Py_BuildValue("(Iss)", e->index, e->pkind, e->impl ? e->impl : "");
        } else {
            layers = e->layer ? PyUnicode_FromString(e->layer) : (Py_INCREF(Py_None), Py_None);
            prim = (Py_INCREF(Py_None), Py_None);
        }
        PyObject *t = layers && prim ? Py_BuildValue("(ssNddkN)", e->kind ? e->kind : "", e->name ? e->name : "", layers,
                                                     (double)(e->end_ns - e->ns) / 1e3, (double)e->ns / 1e3, e->tid, prim)
                                     : NULL;
        if (!t) {
            if (!layers || !prim) {
                Py_XDECREF(layers);
                Py_XDECREF(prim);
            }
            Py_CLEAR(list);
        } else {
            PyList_SET_ITEM(list, (Py_ssize_t)i, t);
        }
    }
    self->nev = 0;
    pthread_mutex_unlock(&self->lock);
    return list;
}

/* regions() -> [(name, kind, "layer,layer")] from the artifact's span table */
static PyObject *model_regions(ModelObject *self, PyObject *noargs) {
    (void)noargs;
    uint32_t n = graft_session_num_regions(self->s);
    PyObject *list = PyList_New(n);
    for (uint32_t i = 0; list && i < n; i++) {
        const char *name = graft_session_region_name(self->s, i), *kind = graft_session_region_kind(self->s, i),
                   *layers = graft_session_region_layers(self->s, i);
        PyObject *t = Py_BuildValue("(sss)", name ? name : "", kind ? kind : "", layers ? layers : "");
        if (!t) Py_CLEAR(list);
        else PyList_SET_ITEM(list, i, t);
    }
    return list;
}

/* info() -> the plan summary as a dict; external_modules a list of (name, engine). */
static PyObject *model_info(ModelObject *self, PyObject *noargs) {
    (void)noargs;
    char *s = graft_session_info_json(self->s);
    json_t *j = s ? json_loads(s, 0, NULL) : NULL;
    graft_string_free(s);
    if (!j) return PyErr_Format(GraftError, "info: graft returned nothing");
    PyObject *d = PyDict_New();
    const char *key;
    json_t *v;
    json_object_foreach(j, key, v) {
        PyObject *x = NULL;
        if (json_is_integer(v)) {
            x = PyLong_FromLongLong(json_integer_value(v));
        } else if (json_is_real(v)) {
            x = PyFloat_FromDouble(json_real_value(v));
        } else if (json_is_string(v)) {
            x = PyUnicode_FromString(json_string_value(v));
        } else if (json_is_array(v)) {
            x = PyList_New((Py_ssize_t)json_array_size(v));
            size_t k;
            json_t *e;
            json_array_foreach(v, k, e) {
                if (!x) break;
                const char *name = json_string_value(json_array_get(e, 0)), *engine = json_string_value(json_array_get(e, 1));
                PyObject *t = Py_BuildValue("(ss)", name ? name : "", engine ? engine : "");
                if (!t) Py_CLEAR(x);
                else PyList_SET_ITEM(x, (Py_ssize_t)k, t);
            }
        }
        if (!x || !d || PyDict_SetItemString(d, key, x) < 0) Py_CLEAR(d);
        Py_XDECREF(x);
        if (!d) break;
    }
    json_decref(j);
    return d;
}

static PyMethodDef model_methods[] = {
    {"load", (PyCFunction)model_load, METH_VARARGS | METH_CLASS, "load(path_or_bytes, options) -> Model"},
    {"from_module", (PyCFunction)model_from_module, METH_VARARGS | METH_CLASS,
     "from_module(module, options, path=None) -> Model: build the artifact (written to path when given) and load it"},
    {"run", (PyCFunction)model_run, METH_O, "run([arrays]) -> [arrays]"},
    {"signature_json", (PyCFunction)model_signature, METH_NOARGS, "inputs and outputs (JSON)"},
    {"time_c_run", (PyCFunction)model_time_c_run, METH_VARARGS,
     "time_c_run([arrays], n) -> median ns of graft_session_run called from C"},
    {"set_profiling", (PyCFunction)model_set_profiling, METH_O, "turn the per-instruction profile on or off"},
    {"take_profile", (PyCFunction)model_take_profile, METH_NOARGS, "the profile's events so far (and clear them)"},
    {"regions", (PyCFunction)model_regions, METH_NOARGS, "the span table: (name, kind, layers)"},
    {"info", (PyCFunction)model_info, METH_NOARGS, "the plan summary"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ModelType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "graft._graft.Model",
    .tp_basicsize = sizeof(ModelObject),
    .tp_dealloc = (destructor)model_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A loaded graft artifact (graft.InferenceSession wraps it).",
    .tp_methods = model_methods,
};

/* ---- module functions ---- */

/* input_data_ptr(array) -> the address graft would read input data from (the array's own
 * memory unless it had to be copied): what the zero-copy tests check. */
static PyObject *py_input_data_ptr(PyObject *self, PyObject *obj) {
    (void)self;
    PyArrayObject *a;
    graft_tensor *t;
    if (tensor_of_array(obj, GRAFT_DTYPE_UNKNOWN, 0, &a, &t) < 0) return NULL;
    PyObject *r = PyLong_FromVoidPtr(graft_tensor_data(t));
    graft_tensor_release(t);
    Py_DECREF(a);
    return r;
}

static PyObject *py_backends_json(PyObject *self, PyObject *noargs) {
    (void)self;
    (void)noargs;
    return take_str(graft_backends_json(), "backends");
}

static PyObject *py_load_backend(PyObject *self, PyObject *args) {
    (void)self;
    const char *path;
    if (!PyArg_ParseTuple(args, "s", &path)) return NULL;
    graft_error *err = NULL;
    graft_status st;
    Py_BEGIN_ALLOW_THREADS st = graft_backend_load(path, &err);
    Py_END_ALLOW_THREADS
    if (st == GRAFT_OK) Py_RETURN_NONE;
    PyErr_SetString(GraftError, graft_error_message(err));
    graft_error_free(err);
    return NULL;
}

static PyObject *py_onnx_io_names(PyObject *self, PyObject *args) {
    (void)self;
    const char *path;
    if (!PyArg_ParseTuple(args, "s", &path)) return NULL;
    graft_error *err = NULL;
    char *s;
    Py_BEGIN_ALLOW_THREADS s = graft_onnx_io_names_json(path, &err);
    Py_END_ALLOW_THREADS
    return s ? take_str(s, "io names") : raise_error(err, path);
}

static PyObject *py_write_explore_html(PyObject *self, PyObject *args) {
    (void)self;
    const char *doc, *path;
    if (!PyArg_ParseTuple(args, "ss", &doc, &path)) return NULL;
    json_error_t je;
    json_t *j = json_loads(doc, 0, &je);
    if (!j) return PyErr_Format(PyExc_ValueError, "the explorer document is not JSON: %s", je.text);
    bool ok;
    Py_BEGIN_ALLOW_THREADS ok = explore_write_html(j, path);
    Py_END_ALLOW_THREADS
    json_decref(j);
    if (!ok) return PyErr_Format(GraftError, "%s: cannot write the explorer page", path);
    Py_RETURN_NONE;
}

static PyMethodDef functions[] = {
    {"input_data_ptr", py_input_data_ptr, METH_O, "input_data_ptr(array) -> int: where graft reads the input"},
    {"import_onnx", py_import_onnx, METH_VARARGS, "import_onnx(path, shapes, no_spans=False) -> Module"},
    {"parse", py_parse, METH_VARARGS, "parse(text, name) -> Module"},
    {"load_module", py_load_module, METH_VARARGS, "load_module(path) -> Module"},
    {"backends_json", py_backends_json, METH_NOARGS, "the registered backends (JSON)"},
    {"load_backend", py_load_backend, METH_VARARGS, "load_backend(path): load a backend plugin library"},
    {"onnx_io_names", py_onnx_io_names, METH_VARARGS, "onnx_io_names(path) -> JSON {inputs, outputs}"},
    {"write_explore_html", py_write_explore_html, METH_VARARGS, "write_explore_html(document_json, path)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moddef = {
    PyModuleDef_HEAD_INIT, "_graft", "graft's C extension over libgraft (use the graft package).", -1, functions,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__graft(void);
PyMODINIT_FUNC PyInit__graft(void) {
    import_array();
    PyTypeObject *types[] = {&ModuleType, &ModelType, &TensorRefType};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (PyType_Ready(types[i]) < 0) return NULL;
    PyObject *m = PyModule_Create(&moddef);
    if (!m) return NULL;
    GraftError = PyErr_NewExceptionWithDoc(
        "graft.GraftError",
        "An error graft reported: the message names the file, the frontend layer and the op; the attributes "
        "status (GR_ERR_...), file, layer, op, line, col and detail (graft's own message) hold them apart.",
        PyExc_RuntimeError, NULL);
    if (!GraftError || PyModule_AddObject(m, "GraftError", GraftError) < 0) return NULL;
    Py_INCREF(GraftError);
    Py_INCREF(&ModuleType);
    PyModule_AddObject(m, "Module", (PyObject *)&ModuleType);
    Py_INCREF(&ModelType);
    PyModule_AddObject(m, "Model", (PyObject *)&ModelType);
    return m;
}
