/* .npy load/save tests: round trips for every dtype, hand-written files of other versions and
 * shapes, and malformed files that must fail with GR_ERR_INVALID naming the file. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ir/dtype.h"
#include "runtime/npy.h"

static char dir[64];
static gr_diag diag;

static void setup(void) {
    snprintf(dir, sizeof dir, "/tmp/graft_npy_XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    gr_diag_clear(&diag);
}

static void teardown(void) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(npy, .init = setup, .fini = teardown);

static const char *path_of(const char *name) {
    static char p[128];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return p;
}

static void write_bytes(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(data, 1, n, f), n);
    fclose(f);
}

/* A v1 file with `dict` as the header (padded to 64 bytes) followed by `data`. */
static void write_npy(const char *path, int major, const char *dict, const void *data, size_t n) {
    unsigned char buf[4096];
    size_t pre = major == 1 ? 10 : 12, dl = strlen(dict);
    size_t total = (pre + dl + 1 + 63) / 64 * 64, hl = total - pre;
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (unsigned char)major;
    buf[7] = 0;
    buf[8] = (unsigned char)(hl & 0xff);
    buf[9] = (unsigned char)(hl >> 8);
    if (major != 1) buf[10] = buf[11] = 0;
    memcpy(buf + pre, dict, dl);
    memset(buf + pre + dl, ' ', hl - dl - 1);
    buf[total - 1] = '\n';
    memcpy(buf + total, data, n);
    write_bytes(path, buf, total + n);
}

Test(npy, round_trip_every_dtype) {
    static const struct { const char *name; ir_dtype dt; } rows[] = {
        {"float32", IR_DTYPE_F32}, {"float64", IR_DTYPE_F64}, {"float16", IR_DTYPE_F16},
        {"int8", IR_DTYPE_I8},     {"int16", IR_DTYPE_I16},   {"int32", IR_DTYPE_I32},
        {"int64", IR_DTYPE_I64},   {"uint8", IR_DTYPE_U8},    {"uint16", {kDLUInt, 16, 1}},
        {"uint32", {kDLUInt, 32, 1}}, {"uint64", {kDLUInt, 64, 1}}, {"bool", IR_DTYPE_BOOL},
    };
    int64_t shape[3] = {2, 3, 4};
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        rt_tensor *t = rt_tensor_new(rows[r].dt, 3, shape);
        for (int64_t i = 0; i < 24; i++)
            rt_tensor_set_f64(t, i, rows[r].dt.bits == 1 ? (double)(i % 3 == 0) : (double)(i % 7));
        char name[64];
        snprintf(name, sizeof name, "%s.npy", rows[r].name);
        const char *p = path_of(name);
        cr_assert_eq(rt_npy_save(p, t, &diag), GR_OK, "%s", diag.msg);
        /* header is 64-byte aligned */
        FILE *f = fopen(p, "rb");
        unsigned char pre[10];
        cr_assert_eq(fread(pre, 1, 10, f), 10);
        fclose(f);
        cr_assert_eq((10 + pre[8] + pre[9] * 256) % 64, 0);
        cr_assert_eq(pre[6], 1);
        rt_tensor *u = NULL;
        cr_assert_eq(rt_npy_load(p, &u, &diag), GR_OK, "%s: %s", rows[r].name, diag.msg);
        cr_assert(ir_dtype_eq(u->dl.dtype, rows[r].dt), "%s", rows[r].name);
        cr_assert(rt_tensor_same_shape(t, u));
        cr_assert_eq(memcmp(rt_tensor_data(t), rt_tensor_data(u), rt_tensor_nbytes(t)), 0, "%s",
                     rows[r].name);
        rt_tensor_release(t);
        rt_tensor_release(u);
    }
}

Test(npy, round_trip_scalar_and_1d_and_empty) {
    int64_t s1 = 5, s0[2] = {0, 3};
    rt_tensor *ts[3] = {rt_tensor_new(IR_DTYPE_F32, 0, NULL), rt_tensor_new(IR_DTYPE_I64, 1, &s1),
                        rt_tensor_new(IR_DTYPE_F32, 2, s0)};
    rt_tensor_set_f64(ts[0], 0, 2.5);
    for (int i = 0; i < 5; i++) rt_tensor_set_f64(ts[1], i, -i);
    for (int k = 0; k < 3; k++) {
        const char *p = path_of("t.npy");
        cr_assert_eq(rt_npy_save(p, ts[k], &diag), GR_OK, "%s", diag.msg);
        rt_tensor *u = NULL;
        cr_assert_eq(rt_npy_load(p, &u, &diag), GR_OK, "%s", diag.msg);
        cr_assert_eq(u->dl.ndim, ts[k]->dl.ndim);
        cr_assert(rt_tensor_same_shape(u, ts[k]));
        cr_assert_eq(memcmp(rt_tensor_data(u), rt_tensor_data(ts[k]), rt_tensor_nbytes(u)), 0);
        rt_tensor_release(u);
        rt_tensor_release(ts[k]);
    }
}

Test(npy, save_writes_numpy_header_text) {
    int64_t s = 3;
    rt_tensor *t = rt_tensor_new(IR_DTYPE_F32, 1, &s);
    const char *p = path_of("h.npy");
    cr_assert_eq(rt_npy_save(p, t, &diag), GR_OK);
    rt_tensor_release(t);
    char buf[256] = {0};
    FILE *f = fopen(p, "rb");
    cr_assert_eq(fread(buf, 1, 128, f), 128);
    fclose(f);
    cr_assert_eq(buf[8] + 10, 128); /* 68 bytes of text round up to 128 */
    cr_assert(strstr(buf + 10, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }"),
              "%s", buf + 10);
    cr_assert_eq(buf[127], '\n');
}

Test(npy, loads_hand_written_v1_v2_v3_files) {
    int32_t d[6] = {1, 2, 3, 4, 5, 6};
    const char *dicts[3] = {"{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }",
                            "{\"shape\": (2,3), \"descr\": \"<i4\", \"fortran_order\": False}",
                            "{'fortran_order':False,'shape':(2L, 3L),'descr':'<i4'}"};
    for (int v = 1; v <= 3; v++) {
        const char *p = path_of("v.npy");
        write_npy(p, v, dicts[v - 1], d, sizeof d);
        rt_tensor *t = NULL;
        cr_assert_eq(rt_npy_load(p, &t, &diag), GR_OK, "v%d: %s", v, diag.msg);
        cr_assert_eq(t->dl.ndim, 2);
        cr_assert_eq(t->dl.shape[1], 3);
        cr_assert_eq(((int32_t *)rt_tensor_data(t))[5], 6);
        rt_tensor_release(t);
    }
    /* '|u1' and '|b1' single-byte descrs */
    uint8_t b[2] = {1, 0};
    write_npy(path_of("b.npy"), 1, "{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }",
              b, 2);
    rt_tensor *t = NULL;
    cr_assert_eq(rt_npy_load(path_of("b.npy"), &t, &diag), GR_OK, "%s", diag.msg);
    cr_assert(ir_dtype_eq(t->dl.dtype, IR_DTYPE_BOOL));
    rt_tensor_release(t);
}

typedef struct bad_case {
    const char *name;
    const char *dict;      /* NULL: raw bytes below */
    size_t ndata;
    const char *expect;    /* substring of the message */
} bad_case;

Test(npy, malformed_files_fail_naming_the_file) {
    static const bad_case cases[] = {
        {"fortran", "{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", 8, "fortran"},
        {"bigendian", "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8,
         "big-endian"},
        {"baddtype", "{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", 16,
         "unsupported dtype"},
        {"objdtype", "{'descr': '|O', 'fortran_order': False, 'shape': (2,), }", 16,
         "unsupported dtype"},
        {"truncated", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 20,
         "truncated"},
        {"overflow", "{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904, 8), }",
         0, "too large"},
        {"bigdim", "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }",
         0, "overflow"},
        {"negdim", "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", 0, "shape"},
        {"noshape", "{'descr': '<f4', 'fortran_order': False, }", 0, "'shape'"},
        {"nodict", "['descr', '<f4']", 0, "dict"},
        {"unterminated", "{'descr': '<f4, 'fortran_order': False, 'shape': (1,), }", 4, ""},
        {"extrakey", "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", 4,
         "unexpected header key"},
        {"rank9", "{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }", 4,
         "rank"},
        {"shapenotuple", "{'descr': '<f4', 'fortran_order': False, 'shape': [1], }", 4, "tuple"},
        {"fortranweird", "{'descr': '<f4', 'fortran_order': 0, 'shape': (1,), }", 4,
         "fortran_order"},
    };
    char zeros[64] = {0};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s.npy", cases[i].name);
        const char *p = path_of(name);
        write_npy(p, 1, cases[i].dict, zeros, cases[i].ndata);
        rt_tensor *t = (rt_tensor *)1;
        gr_diag_clear(&diag);
        cr_assert_eq(rt_npy_load(p, &t, &diag), GR_ERR_INVALID, "%s: %s", cases[i].name,
                     diag.msg);
        cr_assert_null(t);
        cr_assert(strstr(diag.msg, name), "%s: %s", cases[i].name, diag.msg);
        cr_assert(strstr(diag.msg, cases[i].expect), "%s: %s", cases[i].name, diag.msg);
        cr_assert_str_eq(diag.file, p);
    }
}

Test(npy, broken_preambles) {
    struct { const char *name; const char *bytes; size_t n; const char *expect; } cases[] = {
        {"empty.npy", "", 0, "magic"},
        {"magic.npy", "\x93NUMPZ\x01\x00\x10\x00", 10, "magic"},
        {"version.npy", "\x93NUMPY\x07\x00\x10\x00", 10, "version 7"},
        {"nolen.npy", "\x93NUMPY\x01\x00\x10", 9, "header length"},
        {"hdrlen.npy", "\x93NUMPY\x01\x00\xff\xff{'descr'", 17, "exceeds"},
        {"hdrlen2.npy", "\x93NUMPY\x02\x00\xff\xff\xff\x7f{", 13, "exceeds"},
        {"nul.npy", "\x93NUMPY\x01\x00\x04\x00{\0}\n", 14, "NUL"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *p = path_of(cases[i].name);
        write_bytes(p, cases[i].bytes, cases[i].n);
        rt_tensor *t = NULL;
        gr_diag_clear(&diag);
        cr_assert_eq(rt_npy_load(p, &t, &diag), GR_ERR_INVALID, "%s: %s", cases[i].name,
                     diag.msg);
        cr_assert(strstr(diag.msg, cases[i].name), "%s", diag.msg);
        cr_assert(strstr(diag.msg, cases[i].expect), "%s: %s", cases[i].name, diag.msg);
    }
}

Test(npy, missing_file_and_unwritable_path_are_io_errors) {
    rt_tensor *t = NULL;
    cr_assert_eq(rt_npy_load(path_of("absent.npy"), &t, &diag), GR_ERR_IO);
    cr_assert(strstr(diag.msg, "absent.npy"), "%s", diag.msg);
    gr_diag_clear(&diag);
    int64_t s = 2;
    rt_tensor *u = rt_tensor_new(IR_DTYPE_F32, 1, &s);
    cr_assert_eq(rt_npy_save(path_of("no/such/dir.npy"), u, &diag), GR_ERR_IO);
    cr_assert(strstr(diag.msg, "dir.npy"), "%s", diag.msg);
    gr_diag_clear(&diag);
    rt_tensor *bf = rt_tensor_new(IR_DTYPE_BF16, 1, &s);
    cr_assert_eq(rt_npy_save(path_of("bf.npy"), bf, &diag), GR_ERR_UNSUPPORTED);
    cr_assert(strstr(diag.msg, "bfloat16"), "%s", diag.msg);
    rt_tensor_release(u);
    rt_tensor_release(bf);
}

/* Random byte mutations and truncations of a valid file: each load succeeds or fails cleanly
 * (the sanitizer build turns any out-of-bounds read into a failure). */
Test(npy, mutated_files_never_crash) {
    int64_t shape[2] = {3, 5};
    rt_tensor *t = rt_tensor_new(IR_DTYPE_F32, 2, shape);
    const char *p = path_of("base.npy");
    cr_assert_eq(rt_npy_save(p, t, &diag), GR_OK);
    rt_tensor_release(t);
    unsigned char base[256];
    FILE *f = fopen(p, "rb");
    size_t n = fread(base, 1, sizeof base, f);
    fclose(f);
    cr_assert_eq(n, 128 + 60);
    unsigned seed = 12345;
    int ok = 0, bad = 0;
    for (int iter = 0; iter < 600; iter++) {
        unsigned char buf[256];
        memcpy(buf, base, n);
        size_t len = n;
        seed = seed * 1103515245u + 12345u;
        int nmut = 1 + (int)((seed >> 16) % 4);
        for (int k = 0; k < nmut; k++) {
            seed = seed * 1103515245u + 12345u;
            size_t pos = (seed >> 8) % 128; /* the preamble and header */
            seed = seed * 1103515245u + 12345u;
            static const char pick[] = "(),:'\" {}0123456789<>|fiubTF\n\x00\xff";
            buf[pos] = (seed >> 12) % 3 ? (unsigned char)pick[(seed >> 16) % (sizeof pick - 1)]
                                        : (unsigned char)(seed >> 20);
        }
        if (iter % 5 == 0) {
            seed = seed * 1103515245u + 12345u;
            len = (seed >> 10) % n;
        }
        write_bytes(p, buf, len);
        rt_tensor *u = NULL;
        gr_diag_clear(&diag);
        gr_status st = rt_npy_load(p, &u, &diag);
        if (st == GR_OK) {
            ok++;
            cr_assert_not_null(u);
            cr_assert_leq(rt_tensor_nbytes(u), len);
            rt_tensor_release(u);
        } else {
            bad++;
            cr_assert_eq(st, GR_ERR_INVALID, "%s", diag.msg);
            cr_assert_null(u);
            cr_assert(strstr(diag.msg, "base.npy"), "%s", diag.msg);
        }
    }
    cr_assert_gt(bad, 0);
    cr_assert_gt(ok, 0); /* mutations of padding spaces keep the file valid */
}
