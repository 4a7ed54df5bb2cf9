/* graft._graft: the CPython extension over libgraft's public API (GR_API functions only). The
 * Python layer (graft/__init__.py) gives it the ONNX Runtime / TVM shaped names; this file
 * owns the C objects, releases the GIL around every call into graft, and moves tensors between
 * numpy and graft without copies where the memory allows.
 *
 * Objects:
 *   Module   an IRModule and the IR context it lives in (a Ctx, shared by the modules derived
 *            from it; calls into one context take its lock, so threads never share an arena);
 *   Model    a loaded artifact (deploy/graft_model.h): thread-safe runs, optional profiling.
 * Errors are graft.GraftError with the diagnostic's message, status, file, layer and op. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "byoc/backend.h"
#include "deploy/graft_model.h"
#include "deploy/toolkit.h"
#include "include/graft/graft.h"
#include "frontend/onnx/onnx_import.h"
#include "ir/ctx.h"
#include "ir/text/parser.h"
#include "ir/text/printer.h"
#include "ir/sinfo.h"
#include "ir/span.h"
#include "runtime/value.h"
/* explore_write_html: tools/explore_html.c is compiled into this module (the page's layout
 * needs Graphviz, which the library does not link) */
#include "tools/cmd_inspect.h"
#include "runtime/kernels/const_eval.h"

#define MAX_IO 64

static PyObject *GraftError;

/* ---- errors ---- */

/* Raises GraftError from a diagnostic; `file` names the input when the diag has none. */
static PyObject *raise_diag(const gr_diag *d, const char *file) {
    const char *f = d->file[0] ? d->file : file ? file : "";
    /* gr_diag_print's wording: "<file>: layer '<layer>' (op <op>) : <message>" */
    size_t fl = strlen(f);
    bool named = fl && strncmp(d->msg, f, fl) == 0 && d->msg[fl] == ':';
    char msg[3072];
    snprintf(msg, sizeof msg, "%s%s%s%s%s%s%s%s%s", *f && !named ? f : "", *f && !named ? ": " : "",
             d->layer[0] ? "layer '" : "", d->layer, d->layer[0] ? "' " : "", d->op[0] ? "(op " : "", d->op,
             d->op[0] ? ") " : "", d->layer[0] || d->op[0] ? ": " : "");
    size_t k = strlen(msg);
    snprintf(msg + k, sizeof msg - k, "%s", d->msg[0] ? d->msg : gr_status_str(d->code));
    PyObject *exc = PyObject_CallFunction(GraftError, "s", msg);
    if (!exc) return NULL;
    const struct {
        const char *name;
        PyObject *value;
    } attrs[] = {
        {"status", PyUnicode_FromString(gr_status_name(d->code))}, {"file", PyUnicode_FromString(f)},
        {"layer", PyUnicode_FromString(d->layer)}, {"op", PyUnicode_FromString(d->op)},
        {"line", PyLong_FromLong(d->line)}, {"col", PyLong_FromLong(d->col)},
        {"detail", PyUnicode_FromString(d->msg)},
    };
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
        if (attrs[i].value) PyObject_SetAttrString(exc, attrs[i].name, attrs[i].value);
        Py_XDECREF(attrs[i].value);
    }
    PyErr_SetObject(GraftError, exc);
    Py_DECREF(exc);
    return NULL;
}

/* A heap JSON string from the library as a Python str (freed here). */
static PyObject *take_str(char *s, const char *what) {
    if (!s) return PyErr_Format(GraftError, "%s: graft returned nothing", what);
    PyObject *r = PyUnicode_FromString(s);
    free(s);
    return r;
}

/* ---- backend options: ["dnnl.threads=2", ...] -> byoc_options ---- */

static int make_options(PyObject *list, byoc_options **out) {
    *out = NULL;
    if (list == Py_None || !list) return 0;
    PyObject *seq = PySequence_Fast(list, "options must be a list of 'backend.name=value' strings");
    if (!seq) return -1;
    byoc_options *o = byoc_options_new();
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        const char *a = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(seq, i));
        gr_diag d;
        gr_diag_clear(&d);
        if (!a || byoc_options_set(o, a, &d) != GR_OK) {
            Py_DECREF(seq);
            byoc_options_free(o);
            if (a) raise_diag(&d, NULL);
            return -1;
        }
    }
    Py_DECREF(seq);
    *out = o;
    return 0;
}

/* A list of str -> C strings borrowed from the list (which the caller keeps alive). */
static int str_array(PyObject *seq, const char **out, uint32_t *n, const char *what) {
    *n = 0;
    if (seq == Py_None) return 0;
    if (!PyList_Check(seq)) {
        PyErr_Format(PyExc_TypeError, "%s must be a list of str", what);
        return -1;
    }
    if (PyList_GET_SIZE(seq) > MAX_IO) {
        PyErr_Format(PyExc_ValueError, "too many %s", what);
        return -1;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(seq); i++) {
        const char *s = PyUnicode_AsUTF8(PyList_GET_ITEM(seq, i));
        if (!s) return -1;
        out[(*n)++] = s;
    }
    return 0;
}

/* ---- Ctx: an IR context shared by the modules made in it ---- */

typedef struct {
    PyObject_HEAD
    ir_ctx_t *ctx;
    pthread_mutex_t lock;
} CtxObject;

static void ctx_dealloc(CtxObject *self) {
    ir_ctx_free(self->ctx);
    pthread_mutex_destroy(&self->lock);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject CtxType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "graft._graft.Ctx",
    .tp_basicsize = sizeof(CtxObject),
    .tp_dealloc = (destructor)ctx_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An IR context (arena) shared by the modules built in it.",
};

static CtxObject *ctx_new(void) {
    CtxObject *c = PyObject_New(CtxObject, &CtxType);
    if (!c) return NULL;
    c->ctx = ir_ctx_new();
    rt_const_eval_attach(c->ctx); /* graft.optimize folds constants on the reference kernels */
    pthread_mutex_init(&c->lock, NULL);
    return c;
}

/* Runs `stmt` with the GIL released and the context locked. */
#define WITH_CTX(c, stmt)                      \
    do {                                       \
        Py_BEGIN_ALLOW_THREADS                 \
        pthread_mutex_lock(&(c)->lock);        \
        stmt;                                  \
        pthread_mutex_unlock(&(c)->lock);      \
        Py_END_ALLOW_THREADS                   \
    } while (0)

/* ---- Module ---- */

typedef struct {
    PyObject_HEAD
    CtxObject *ctx;
    ir_module *m;
} ModuleObject;

static PyTypeObject ModuleType;

static PyObject *module_wrap(CtxObject *c, ir_module *m) {
    ModuleObject *o = PyObject_New(ModuleObject, &ModuleType);
    if (!o) return NULL;
    Py_INCREF(c);
    o->ctx = c;
    o->m = m;
    return (PyObject *)o;
}

static void module_dealloc(ModuleObject *self) {
    Py_XDECREF(self->ctx);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *module_text(ModuleObject *self, PyObject *args) {
    int spans = 1, metadata = 1;
    if (!PyArg_ParseTuple(args, "|pp", &spans, &metadata)) return NULL;
    char *buf = NULL;
    size_t len = 0;
    ir_print_opts po = {.no_spans = !spans, .no_metadata = !metadata};
    bool ok = false;
    WITH_CTX(self->ctx, {
        FILE *f = open_memstream(&buf, &len);
        if (f) {
            ir_print_module(self->m, f, &po);
            ok = fclose(f) == 0;
        }
    });
    if (!ok) {
        free(buf);
        return PyErr_NoMemory();
    }
    PyObject *r = PyUnicode_FromStringAndSize(buf, (Py_ssize_t)len);
    free(buf);
    return r;
}

static PyObject *module_layers(ModuleObject *self, PyObject *noargs) {
    (void)noargs;
    char *s = NULL;
    WITH_CTX(self->ctx, s = graft_module_layers_json(self->m));
    return take_str(s, "layers");
}

static PyObject *module_signature(ModuleObject *self, PyObject *noargs) {
    (void)noargs;
    char *s = NULL;
    WITH_CTX(self->ctx, s = graft_module_signature_json(self->m));
    if (!s) return PyErr_Format(GraftError, "the module has no function 'main'");
    return take_str(s, "signature");
}

static PyObject *module_optimize(ModuleObject *self, PyObject *args) {
    const char *passes = NULL;
    int level = -1;
    if (!PyArg_ParseTuple(args, "|zi", &passes, &level)) return NULL;
    ir_module *out = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    gr_status st;
    WITH_CTX(self->ctx, st = graft_module_optimize(self->m, passes, level, &out, &d));
    if (st != GR_OK) return raise_diag(&d, NULL);
    return module_wrap(self->ctx, out);
}

static PyObject *module_partition(ModuleObject *self, PyObject *args) {
    PyObject *backends, *options;
    const char *patterns = NULL;
    if (!PyArg_ParseTuple(args, "OzO", &backends, &patterns, &options)) return NULL;
    const char *names[MAX_IO];
    uint32_t n;
    byoc_options *o;
    if (str_array(backends, names, &n, "backends") || make_options(options, &o)) return NULL;
    ir_module *out = NULL;
    char *report = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    gr_status st;
    WITH_CTX(self->ctx, st = graft_module_partition(self->ctx->ctx, self->m, names, n, patterns, o, &out, &report, &d));
    byoc_options_free(o);
    if (st != GR_OK) return raise_diag(&d, NULL);
    PyObject *mod = module_wrap(self->ctx, out), *rep = take_str(report, "report");
    if (!mod || !rep) {
        Py_XDECREF(mod);
        Py_XDECREF(rep);
        return NULL;
    }
    return Py_BuildValue("(NN)", mod, rep);
}

/* ---- tensors: numpy <-> rt_tensor ---- */

static const struct {
    int npy;
    DLDataType dl;
} DTYPES[] = {
    {NPY_FLOAT32, {kDLFloat, 32, 1}}, {NPY_FLOAT64, {kDLFloat, 64, 1}}, {NPY_FLOAT16, {kDLFloat, 16, 1}},
    {NPY_INT64, {kDLInt, 64, 1}},     {NPY_INT32, {kDLInt, 32, 1}},     {NPY_INT16, {kDLInt, 16, 1}},
    {NPY_INT8, {kDLInt, 8, 1}},       {NPY_UINT8, {kDLUInt, 8, 1}},     {NPY_UINT16, {kDLUInt, 16, 1}},
    {NPY_UINT32, {kDLUInt, 32, 1}},   {NPY_UINT64, {kDLUInt, 64, 1}},   {NPY_BOOL, {kDLUInt, 1, 1}},
};
#define NDTYPES (sizeof DTYPES / sizeof DTYPES[0])

static int npy_of_dl(DLDataType t) {
    for (size_t i = 0; i < NDTYPES; i++)
        if (DTYPES[i].dl.code == t.code && DTYPES[i].dl.bits == t.bits && DTYPES[i].dl.lanes == t.lanes) return DTYPES[i].npy;
    return -1;
}

static int dl_of_npy(int npy, DLDataType *out) {
    for (size_t i = 0; i < NDTYPES; i++)
        if (DTYPES[i].npy == npy) {
            *out = DTYPES[i].dl;
            return 0;
        }
    return -1;
}

/* Owns one rt_tensor reference; the base object of the numpy arrays that view its data. */
typedef struct {
    PyObject_HEAD
    rt_tensor *t;
} TensorRefObject;

static void tensorref_dealloc(TensorRefObject *self) {
    rt_tensor_release(self->t);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject TensorRefType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "graft._graft.TensorRef",
    .tp_basicsize = sizeof(TensorRefObject),
    .tp_dealloc = (destructor)tensorref_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Keeps a graft tensor alive while numpy arrays view its memory.",
};

/* A numpy array over t's data (takes the reference): no copy, unless the data lies inside one
 * of the caller's input buffers (an output that is an input), which the array must not
 * outlive. */
static PyObject *array_of_tensor(rt_tensor *t, PyArrayObject *const *ins, uint32_t nin) {
    int npy = npy_of_dl(t->dl.dtype);
    if (npy < 0) {
        rt_tensor_release(t);
        return PyErr_Format(GraftError, "an output of dtype code %d bits %d has no numpy type", t->dl.dtype.code,
                            t->dl.dtype.bits);
    }
    npy_intp dims[RT_MAX_NDIM];
    for (int32_t k = 0; k < t->dl.ndim; k++) dims[k] = (npy_intp)t->dl.shape[k];
    char *data = rt_tensor_data(t);
    bool borrowed = false;
    for (uint32_t i = 0; i < nin && data; i++) {
        char *lo = PyArray_DATA(ins[i]);
        borrowed |= data >= lo && data < lo + PyArray_NBYTES(ins[i]);
    }
    if (borrowed || !data) {
        PyObject *a = PyArray_SimpleNew(t->dl.ndim, dims, npy);
        if (a && data) memcpy(PyArray_DATA((PyArrayObject *)a), data, rt_tensor_nbytes(t));
        rt_tensor_release(t);
        return a;
    }
    TensorRefObject *ref = PyObject_New(TensorRefObject, &TensorRefType);
    if (!ref) {
        rt_tensor_release(t);
        return NULL;
    }
    ref->t = t;
    PyObject *a = PyArray_New(&PyArray_Type, t->dl.ndim, dims, npy, NULL, data, 0, NPY_ARRAY_CARRAY, NULL);
    if (!a || PyArray_SetBaseObject((PyArrayObject *)a, (PyObject *)ref) < 0) {
        Py_XDECREF(a);
        Py_DECREF(ref);
        return NULL;
    }
    return a;
}

/* The result of a run as a list of arrays (a tuple gives one per field). Takes the value. */
static PyObject *list_of_value(rt_value *v, PyArrayObject *const *ins, uint32_t nin) {
    bool tup = v->kind == RT_VAL_TUPLE;
    uint32_t n = tup ? v->u.tuple.n : 1;
    PyObject *list = PyList_New(n);
    for (uint32_t i = 0; list && i < n; i++) {
        rt_value *x = tup ? &v->u.tuple.items[i] : v;
        if (x->kind != RT_VAL_TENSOR) {
            Py_CLEAR(list);
            PyErr_Format(GraftError, "output %u is not a tensor (value kind %d)", i, x->kind);
            break;
        }
        PyObject *a = array_of_tensor(rt_tensor_retain(x->u.t), ins, nin);
        if (!a) Py_CLEAR(list);
        else PyList_SET_ITEM(list, i, a);
    }
    rt_value_clear(v);
    /* a result tensor someone else still holds (a constant of the model, returned as is) is
     * viewed read-only: writing to it would change the model */
    for (uint32_t i = 0; list && i < n; i++) {
        PyArrayObject *a = (PyArrayObject *)PyList_GET_ITEM(list, i);
        PyObject *base = PyArray_BASE(a);
        if (base && Py_TYPE(base) == &TensorRefType && ((TensorRefObject *)base)->t->obj.refcount > 1)
            PyArray_CLEARFLAGS(a, NPY_ARRAY_WRITEABLE);
    }
    return list;
}

/* Input i as a tensor over the array's memory. The array must be a numpy array of the dtype
 * graft expects; a non-contiguous or misaligned one is copied (*arr replaced). */
static int tensor_of_array(PyObject *obj, const ir_sinfo *s, uint32_t i, PyArrayObject **arr, rt_tensor **out) {
    if (!PyArray_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "input %u is not a numpy array (convert it with numpy.asarray)", i);
        return -1;
    }
    PyArrayObject *a = (PyArrayObject *)obj;
    if (s && s->kind == IR_SINFO_TENSOR && s->dtype.bits) {
        int want = npy_of_dl(s->dtype);
        if (want >= 0 && PyArray_TYPE(a) != want) {
            PyArray_Descr *d = PyArray_DescrFromType(want);
            PyErr_Format(PyExc_TypeError, "input %u: expected dtype %S, got %S", i, (PyObject *)d,
                         (PyObject *)PyArray_DESCR(a));
            Py_XDECREF(d);
            return -1;
        }
    }
    DLDataType dt;
    if (dl_of_npy(PyArray_TYPE(a), &dt) < 0) {
        PyErr_Format(PyExc_TypeError, "input %u: numpy dtype %S has no graft type", i, (PyObject *)PyArray_DESCR(a));
        return -1;
    }
    if (PyArray_NDIM(a) > RT_MAX_NDIM) {
        PyErr_Format(PyExc_ValueError, "input %u has %d dims (graft takes up to %d)", i, PyArray_NDIM(a), RT_MAX_NDIM);
        return -1;
    }
    if (!PyArray_ISCARRAY_RO(a)) a = (PyArrayObject *)PyArray_FromAny(obj, NULL, 0, 0, NPY_ARRAY_CARRAY_RO, NULL);
    else Py_INCREF(a);
    if (!a) return -1;
    int64_t shape[RT_MAX_NDIM];
    for (int k = 0; k < PyArray_NDIM(a); k++) shape[k] = (int64_t)PyArray_DIM(a, k);
    *out = rt_tensor_wrap(dt, PyArray_NDIM(a), shape, PyArray_DATA(a));
    *arr = a;
    if (!*out) {
        Py_CLEAR(*arr);
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

typedef struct {
    rt_value v[MAX_IO];
    PyArrayObject *arr[MAX_IO];
    uint32_t n;
} inputs;

static void inputs_clear(inputs *in) {
    for (uint32_t i = 0; i < in->n; i++) {
        rt_value_clear(&in->v[i]);
        Py_XDECREF(in->arr[i]);
    }
    in->n = 0;
}

/* want: the number of inputs (UINT32_MAX: any, up to MAX_IO); sinfo NULL or giving NULL: no
 * check of the dtype. */
static int inputs_take(inputs *in, PyObject *list, uint32_t want, const ir_sinfo *(*sinfo)(const void *, uint32_t),
                       const void *user) {
    in->n = 0;
    if (!PyList_Check(list) && !PyTuple_Check(list)) {
        PyErr_SetString(PyExc_TypeError, "inputs must be a list of numpy arrays");
        return -1;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(list);
    if ((want != UINT32_MAX && (uint32_t)n != want) || n > MAX_IO) {
        PyErr_Format(PyExc_ValueError, "the model takes %u inputs, %zd given", want, n);
        return -1;
    }
    for (uint32_t i = 0; i < (uint32_t)n; i++) {
        rt_tensor *t;
        if (tensor_of_array(PySequence_Fast_GET_ITEM(list, i), sinfo ? sinfo(user, i) : NULL, i, &in->arr[i], &t) < 0) {
            inputs_clear(in);
            return -1;
        }
        in->v[i] = rt_value_tensor(t);
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
static bool perturb_call(const char *layer, rt_tensor *t, void *user) {
    perturb_ctx *p = user;
    PyGILState_STATE g = PyGILState_Ensure();
    bool changed = false;
    int npy = npy_of_dl(t->dl.dtype);
    if (npy >= 0 && !p->failed) {
        npy_intp dims[RT_MAX_NDIM];
        for (int32_t k = 0; k < t->dl.ndim; k++) dims[k] = (npy_intp)t->dl.shape[k];
        PyObject *a = PyArray_New(&PyArray_Type, t->dl.ndim, dims, npy, NULL, rt_tensor_data(t), 0, NPY_ARRAY_CARRAY, NULL);
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
    graft_inspect_opts o = {0};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO|pppdddzO", kwlist, &backends, &options, &list, &observe, &profile,
                                     &diff, &o.rtol, &o.atol, &o.atol_scale, &o.against, &perturb))
        return NULL;
    o.observe = observe;
    o.profile = profile;
    o.diff = diff;
    const char *names[MAX_IO];
    uint32_t n;
    byoc_options *opts;
    if (str_array(backends, names, &n, "backends") || make_options(options, &opts)) return NULL;
    inputs in = {.n = 0};
    /* the run checks the inputs against main's params */
    if (list != Py_None && inputs_take(&in, list, UINT32_MAX, NULL, NULL) < 0) {
        byoc_options_free(opts);
        return NULL;
    }
    perturb_ctx pc = {perturb, false};
    if (perturb != Py_None) {
        o.perturb = perturb_call;
        o.perturb_user = &pc;
    }
    char *dj = NULL, *doc = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    gr_status st;
    WITH_CTX(self->ctx, st = graft_module_inspect(self->ctx->ctx, self->m, names, n, opts, &o, in.v, in.n,
                                                  diff ? &dj : NULL, &doc, &d));
    inputs_clear(&in);
    byoc_options_free(opts);
    if (pc.failed) {
        free(dj);
        free(doc);
        return NULL; /* the perturbation's exception */
    }
    if (st != GR_OK) return raise_diag(&d, NULL);
    PyObject *a = dj ? take_str(dj, "diff") : (Py_INCREF(Py_None), Py_None), *b = take_str(doc, "document");
    if (!a || !b) {
        Py_XDECREF(a);
        Py_XDECREF(b);
        return NULL;
    }
    return Py_BuildValue("(NN)", a, b);
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
    onnx_input_shape sh[MAX_IO];
    uint32_t ns = 0;
    if (shapes != Py_None) {
        if (!PyDict_Check(shapes)) return PyErr_Format(PyExc_TypeError, "shapes must be a dict {name: [dims]}");
        PyObject *k, *v;
        Py_ssize_t pos = 0;
        while (PyDict_Next(shapes, &pos, &k, &v)) {
            if (ns == MAX_IO) return PyErr_Format(PyExc_ValueError, "too many shapes");
            sh[ns].name = PyUnicode_AsUTF8(k);
            PyObject *seq = sh[ns].name ? PySequence_Fast(v, "a shape is a list of ints") : NULL;
            if (!seq) return NULL;
            Py_ssize_t nd = PySequence_Fast_GET_SIZE(seq);
            if (nd > RT_MAX_NDIM) {
                Py_DECREF(seq);
                return PyErr_Format(PyExc_ValueError, "shape of '%s' has more than %d dims", sh[ns].name, RT_MAX_NDIM);
            }
            sh[ns].ndim = (int32_t)nd;
            for (Py_ssize_t j = 0; j < nd; j++) sh[ns].dims[j] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, j));
            Py_DECREF(seq);
            if (PyErr_Occurred()) return NULL;
            ns++;
        }
    }
    onnx_import_opts o = {.shapes = sh, .nshapes = ns, .no_spans = no_spans};
    CtxObject *c = ctx_new();
    if (!c) return NULL;
    ir_module *m = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    gr_status st;
    WITH_CTX(c, st = onnx_import_file(c->ctx, path, &o, &m, &d));
    PyObject *r = st == GR_OK ? module_wrap(c, m) : raise_diag(&d, path);
    Py_DECREF(c);
    return r;
}

static PyObject *py_parse(PyObject *self, PyObject *args) {
    (void)self;
    const char *text, *name;
    Py_ssize_t len;
    if (!PyArg_ParseTuple(args, "s#s", &text, &len, &name)) return NULL;
    CtxObject *c = ctx_new();
    if (!c) return NULL;
    ir_module *m = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    gr_status st;
    WITH_CTX(c, st = ir_parse_module(c->ctx, name, text, (size_t)len, &m, &d));
    PyObject *r = st == GR_OK ? module_wrap(c, m) : raise_diag(&d, name);
    Py_DECREF(c);
    return r;
}

static PyObject *py_load_module(PyObject *self, PyObject *args) {
    (void)self;
    const char *path;
    if (!PyArg_ParseTuple(args, "s", &path)) return NULL;
    CtxObject *c = ctx_new();
    if (!c) return NULL;
    ir_module *m = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    gr_status st;
    WITH_CTX(c, st = ir_parse_file(c->ctx, path, &m, &d));
    PyObject *r = st == GR_OK ? module_wrap(c, m) : raise_diag(&d, path);
    Py_DECREF(c);
    return r;
}

/* ---- Model: a loaded artifact ---- */

typedef struct prof_event {
    const char *kind, *name;       /* static or the model's strings */
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
    graft_model *gm;
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

static void on_event(const rt_exec_event *e, void *user) {
    prof_event pe = {e->kind, e->name, e->span && e->span->n ? e->span->locs[0].source : NULL, now_ns(), e->ns,
                     (unsigned long)pthread_self(), 0, 0, NULL, NULL, NULL};
    push_event(user, &pe);
}

/* The models that profile; the primitive profiler is process-wide, so each primitive goes to
 * the models that have its region. */
/* Each model's primitive profiler reports its own regions' primitives (per model, so two
 * sessions profile independently). */
static void on_prim(const rt_prim_event *e, void *user) {
    prof_event pe = {"prim", e->region, NULL, now_ns(), e->ns, (unsigned long)pthread_self(),
                     e->index, e->info->nlayers, e->info->kind, e->info->impl, e->info->layers};
    push_event((ModelObject *)user, &pe);
}

static void set_profiling(ModelObject *m, bool on) {
    graft_model_set_prim_profiler(m->gm, on ? on_prim : NULL, on ? m : NULL);
    graft_model_set_profiler(m->gm, on ? on_event : NULL, on ? m : NULL);
    m->profiling = on;
}

static PyObject *model_wrap(graft_model *gm) {
    ModelObject *o = PyObject_New(ModelObject, &ModelType);
    if (!o) {
        graft_model_free(gm);
        return NULL;
    }
    o->gm = gm;
    pthread_mutex_init(&o->lock, NULL);
    o->ev = NULL;
    o->nev = o->cap = 0;
    o->profiling = false;
    return (PyObject *)o;
}

static void model_dealloc(ModelObject *self) {
    if (self->profiling) set_profiling(self, false);
    graft_model_free(self->gm);
    free(self->ev);
    pthread_mutex_destroy(&self->lock);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Model.load(path_or_bytes, options) */
static PyObject *model_load(PyObject *cls, PyObject *args) {
    (void)cls;
    PyObject *src, *options;
    if (!PyArg_ParseTuple(args, "OO", &src, &options)) return NULL;
    byoc_options *o;
    if (make_options(options, &o)) return NULL;
    graft_model *gm = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    gr_status st;
    const char *path = NULL;
    if (PyBytes_Check(src)) {
        const uint8_t *buf = (const uint8_t *)PyBytes_AS_STRING(src);
        size_t len = (size_t)PyBytes_GET_SIZE(src);
        Py_BEGIN_ALLOW_THREADS st = graft_model_load_buffer_opts(buf, len, o, &gm, &d);
        Py_END_ALLOW_THREADS
    } else {
        path = PyUnicode_AsUTF8(src);
        if (!path) {
            byoc_options_free(o);
            return NULL;
        }
        Py_BEGIN_ALLOW_THREADS st = graft_model_load_opts(path, o, &gm, &d);
        Py_END_ALLOW_THREADS
    }
    byoc_options_free(o);
    if (st != GR_OK) return raise_diag(&d, path);
    return model_wrap(gm);
}

/* Model.from_module(module, options): builds the artifact in memory and loads it. */
static PyObject *model_from_module(PyObject *cls, PyObject *args) {
    (void)cls;
    ModuleObject *mod;
    PyObject *options;
    const char *path = NULL;
    if (!PyArg_ParseTuple(args, "O!O|z", &ModuleType, &mod, &options, &path)) return NULL;
    byoc_options *o;
    if (make_options(options, &o)) return NULL;
    uint8_t *buf = NULL;
    size_t len = 0;
    graft_model *gm = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    gr_status st;
    WITH_CTX(mod->ctx, st = graft_model_build(mod->m, &buf, &len, &d));
    if (st == GR_OK && path) {
        Py_BEGIN_ALLOW_THREADS
        FILE *f = fopen(path, "wb");
        bool ok = f && fwrite(buf, 1, len, f) == len;
        if (f && fclose(f) != 0) ok = false;
        if (!ok) {
            snprintf(d.msg, sizeof d.msg, "cannot write the artifact");
            snprintf(d.file, sizeof d.file, "%s", path);
            d.code = st = GR_ERR_IO;
        }
        Py_END_ALLOW_THREADS
    }
    if (st == GR_OK) {
        Py_BEGIN_ALLOW_THREADS st = graft_model_load_buffer_opts(buf, len, o, &gm, &d);
        Py_END_ALLOW_THREADS
    }
    free(buf);
    byoc_options_free(o);
    if (st != GR_OK) return raise_diag(&d, path);
    return model_wrap(gm);
}

static const ir_sinfo *model_input_sinfo(const void *gm, uint32_t i) { return graft_model_input_sinfo(gm, i); }

/* run(inputs) -> [arrays]: inputs in the model's order, numpy arrays of its dtypes. */
static PyObject *model_run(ModelObject *self, PyObject *list) {
    inputs in;
    if (inputs_take(&in, list, graft_model_num_inputs(self->gm), model_input_sinfo, self->gm) < 0) return NULL;
    rt_value result = {0};
    gr_diag d;
    gr_diag_clear(&d);
    gr_status st;
    Py_BEGIN_ALLOW_THREADS st = graft_model_run(self->gm, in.v, in.n, &result, &d);
    Py_END_ALLOW_THREADS
    PyObject *r = st == GR_OK ? list_of_value(&result, in.arr, in.n) : raise_diag(&d, NULL);
    inputs_clear(&in);
    return r;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* time_c_run(inputs, n) -> median ns of graft_model_run over n runs on these inputs, called
 * from C with no Python in the loop (the C API's cost, to measure what run adds). */
static PyObject *model_time_c_run(ModelObject *self, PyObject *args) {
    PyObject *list;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "On", &list, &n)) return NULL;
    if (n < 1) return PyErr_Format(PyExc_ValueError, "n must be >= 1");
    inputs in;
    if (inputs_take(&in, list, graft_model_num_inputs(self->gm), model_input_sinfo, self->gm) < 0) return NULL;
    uint64_t *t = malloc((size_t)n * sizeof *t);
    if (!t) {
        inputs_clear(&in);
        return PyErr_NoMemory();
    }
    gr_diag d;
    gr_diag_clear(&d);
    gr_status st = GR_OK;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n && st == GR_OK; i++) {
        rt_value r = {0};
        uint64_t t0 = now_ns();
        st = graft_model_run(self->gm, in.v, in.n, &r, &d);
        rt_value_clear(&r);
        t[i] = now_ns() - t0;
    }
    Py_END_ALLOW_THREADS
    inputs_clear(&in);
    qsort(t, (size_t)n, sizeof *t, cmp_u64);
    uint64_t med = t[n / 2];
    free(t);
    if (st != GR_OK) return raise_diag(&d, NULL);
    return PyLong_FromUnsignedLongLong(med);
}

static PyObject *model_signature(ModelObject *self, PyObject *noargs) {
    (void)noargs;
    return take_str(graft_model_signature_json(self->gm), "signature");
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
    uint32_t n = graft_model_num_regions(self->gm);
    PyObject *list = PyList_New(n);
    for (uint32_t i = 0; list && i < n; i++) {
        const char *name = "", *kind = "", *layers = "";
        graft_model_region(self->gm, i, &name, &kind, &layers);
        PyObject *t = Py_BuildValue("(sss)", name ? name : "", kind ? kind : "", layers ? layers : "");
        if (!t) Py_CLEAR(list);
        else PyList_SET_ITEM(list, i, t);
    }
    return list;
}

static PyObject *model_info(ModelObject *self, PyObject *noargs) {
    (void)noargs;
    graft_model_info mi;
    graft_model_get_info(self->gm, &mi);
    PyObject *ext = PyList_New(graft_model_num_externals(self->gm));
    for (uint32_t i = 0; ext && i < graft_model_num_externals(self->gm); i++) {
        const char *name = "", *engine = "";
        graft_model_external(self->gm, i, &name, &engine);
        PyList_SET_ITEM(ext, i, Py_BuildValue("(ss)", name ? name : "", engine ? engine : ""));
    }
    if (!ext) return NULL;
    return Py_BuildValue("{s:n, s:n, s:n, s:I, s:I, s:I, s:I, s:I, s:d, s:s, s:N}", "arena_bytes", (Py_ssize_t)mi.arena_bytes,
                         "intermediate_bytes", (Py_ssize_t)mi.intermediate_bytes, "host_object_bytes",
                         (Py_ssize_t)mi.host_object_bytes, "host_kernels", mi.nhost, "kernels", mi.nkernel, "externs",
                         mi.nextern, "fused_ops", mi.nfused_ops, "planned", mi.nplanned, "load_ms",
                         (double)mi.load_ns / 1e6, "host_cpu", mi.host_cpu ? mi.host_cpu : "", "external_modules", ext);
}

static PyMethodDef model_methods[] = {
    {"load", (PyCFunction)model_load, METH_VARARGS | METH_CLASS, "load(path_or_bytes, options) -> Model"},
    {"from_module", (PyCFunction)model_from_module, METH_VARARGS | METH_CLASS,
     "from_module(module, options, path=None) -> Model: build the artifact (written to path when given) and load it"},
    {"run", (PyCFunction)model_run, METH_O, "run([arrays]) -> [arrays]"},
    {"signature_json", (PyCFunction)model_signature, METH_NOARGS, "inputs and outputs (JSON)"},
    {"time_c_run", (PyCFunction)model_time_c_run, METH_VARARGS,
     "time_c_run([arrays], n) -> median ns of graft_model_run called from C"},
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
    rt_tensor *t;
    if (tensor_of_array(obj, NULL, 0, &a, &t) < 0) return NULL;
    PyObject *r = PyLong_FromVoidPtr(rt_tensor_data(t));
    rt_tensor_release(t);
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
    gr_diag d;
    gr_diag_clear(&d);
    char *s;
    Py_BEGIN_ALLOW_THREADS s = onnx_model_io_names(path, &d);
    Py_END_ALLOW_THREADS
    return s ? take_str(s, "io names") : raise_diag(&d, path);
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
    PyTypeObject *types[] = {&CtxType, &ModuleType, &ModelType, &TensorRefType};
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
