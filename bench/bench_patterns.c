/* Pattern matching benchmark: a table of 40 patterns (first match wins, indexed by root op so a
 * binding only tries the patterns whose root op is its op) over generated functions of 10k,
 * 100k and 1M bindings, and over PP-OCRv4 rec (imported from ONNX when the model is cached by
 * scripts/fetch_models.sh).
 *
 *   bench_patterns [MAX_BINDINGS] [REC_REPEATS]    (defaults 1000000 and 50)
 *
 * Reported per run: block info build (use-def) time, match time, total, matches, matches/s,
 * ns per binding and patterns tried per binding. Times are CPU time of this process (the
 * machine is shared); each size runs several times and the fastest run is reported (the first
 * run of a large block also pays the kernel's first-touch page faults of the use-def arrays). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/tensor.h"
#include "frontend/onnx/onnx_import.h"
#include "ir/builder.h"
#include "ir/op.h"
#include "patterns/match.h"

enum { NPATS = 40 };

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what, const gr_diag *d) {
    fprintf(stderr, "bench_patterns: %s: %s\n", what, d ? d->msg : "");
    exit(1);
}

/* ---- the generated model ---- */

static ir_expr *op_call(ir_ctx_t *ctx, const char *op, uint32_t n, ir_expr *const *args,
                        uint32_t nattrs, const char *const *keys, const ir_attr *vals, gr_diag *d) {
    const ir_op_def *def = ir_op_def_find(op);
    const ir_attrs *attrs = NULL;
    if (def->nattrs &&
        ir_op_attrs_normalize(ctx, def, nattrs ? ir_attrs_new(ctx, nattrs, keys, vals) : NULL, &attrs, d) != GR_OK)
        die(op, d);
    return &ir_call_new(ctx, &ir_op_get_def(ctx, def)->base, n, args, attrs, 0, NULL, NULL)->base;
}

static ir_expr *scalar(ir_ctx_t *ctx, float v) {
    rt_tensor *t = rt_tensor_new(IR_DTYPE_F32, 0, NULL);
    *(float *)rt_tensor_data(t) = v;
    ir_expr *c = &ir_const_new(ctx, t, NULL)->base;
    rt_tensor_release(t);
    return c;
}

/* main(x, w, b) with units of 10 bindings on (1, 4, 8, 8) tensors:
 *   conv2d(h, w, padding 1) -> add(., b) -> relu -> multiply(., 0.5) -> sigmoid ->
 *   multiply(m, sigmoid(m)) -> tanh -> add(., h) -> permute_dims(0, 1, 3, 2) -> softmax */
static ir_func *build_model(ir_ctx_t *ctx, uint32_t nbind) {
    gr_diag d;
    gr_diag_clear(&d);
    int64_t xs[4] = {1, 4, 8, 8}, ws[4] = {4, 4, 3, 3}, bs[4] = {1, 4, 1, 1};
    ir_var *x = ir_var_new(ctx, "x", ir_sinfo_tensor_static(ctx, IR_DTYPE_F32, 4, xs), NULL);
    ir_var *w = ir_var_new(ctx, "w", ir_sinfo_tensor_static(ctx, IR_DTYPE_F32, 4, ws), NULL);
    ir_var *b = ir_var_new(ctx, "b", ir_sinfo_tensor_static(ctx, IR_DTYPE_F32, 4, bs), NULL);
    ir_expr *half = scalar(ctx, 0.5f);
    const char *pk[1] = {"padding"};
    ir_attr pv = ir_attr_ints(ctx, 2, (int64_t[]){1, 1});
    const char *ak[1] = {"axes"};
    ir_attr av = ir_attr_ints(ctx, 4, (int64_t[]){0, 1, 3, 2});
    const char *sk[1] = {"axis"};
    ir_attr sv = ir_attr_int(-1);
    ir_bb_t *bb = ir_bb_new(ctx, &d);
    ir_bb_begin_dataflow(bb);
    ir_expr *h = &x->base;
    uint32_t units = nbind / 10 ? nbind / 10 : 1;
    for (uint32_t u = 0; u < units; u++) {
        ir_expr *a2[2];
        a2[0] = h; a2[1] = &w->base;
        ir_expr *c = &ir_bb_emit(bb, op_call(ctx, "relax.nn.conv2d", 2, a2, 1, pk, &pv, &d), NULL)->base;
        a2[0] = c; a2[1] = &b->base;
        ir_expr *a = &ir_bb_emit(bb, op_call(ctx, "relax.add", 2, a2, 0, NULL, NULL, &d), NULL)->base;
        ir_expr *r = &ir_bb_emit(bb, op_call(ctx, "relax.nn.relu", 1, &a, 0, NULL, NULL, &d), NULL)->base;
        a2[0] = r; a2[1] = half;
        ir_expr *m = &ir_bb_emit(bb, op_call(ctx, "relax.multiply", 2, a2, 0, NULL, NULL, &d), NULL)->base;
        ir_expr *g = &ir_bb_emit(bb, op_call(ctx, "relax.sigmoid", 1, &m, 0, NULL, NULL, &d), NULL)->base;
        a2[0] = m; a2[1] = g;
        ir_expr *k = &ir_bb_emit(bb, op_call(ctx, "relax.multiply", 2, a2, 0, NULL, NULL, &d), NULL)->base;
        ir_expr *t = &ir_bb_emit(bb, op_call(ctx, "relax.tanh", 1, &k, 0, NULL, NULL, &d), NULL)->base;
        a2[0] = t; a2[1] = h;
        ir_expr *p = &ir_bb_emit(bb, op_call(ctx, "relax.add", 2, a2, 0, NULL, NULL, &d), NULL)->base;
        ir_expr *q = &ir_bb_emit(bb, op_call(ctx, "relax.permute_dims", 1, &p, 1, ak, &av, &d), NULL)->base;
        bool last = u + 1 == units;
        ir_expr *sm = op_call(ctx, "relax.nn.softmax", 1, &q, 1, sk, &sv, &d);
        h = last ? &ir_bb_emit_output(bb, sm, "gv")->base : &ir_bb_emit(bb, sm, NULL)->base;
        if (!h) die("build", &d);
    }
    ir_bb_end_block(bb);
    ir_seq *body = ir_bb_finish(bb, h, NULL);
    ir_bb_free(bb);
    if (!body) die("build", &d);
    ir_var *params[3] = {x, w, b};
    return ir_func_new(ctx, 3, params, &body->base, NULL, NULL, NULL);
}

/* ---- the pattern table ---- */

typedef struct table {
    const pat_t *pats[NPATS];
    const char *names[NPATS];
    uint32_t n;
    gr_map by_root;                 /* op name pointer -> 1 + index into lists */
    GR_VEC(uint32_t) lists[NPATS * 4];
    uint32_t nlists;
    GR_VEC(uint32_t) any_root;      /* patterns that are not rooted at an op call */
    uint64_t hits[NPATS];
} table;

static void add(table *t, ir_ctx_t *ctx, const char *name, const pat_t *p) {
    if (!p) { fprintf(stderr, "bench_patterns: pattern %s failed to build\n", name); exit(1); }
    (void)ctx;
    t->pats[t->n] = p;
    t->names[t->n++] = name;
}

static void index_table(table *t) {
    gr_map_init(&t->by_root);
    for (uint32_t i = 0; i < t->n; i++) {
        const char *roots[16];
        int nr = pat_root_ops(t->pats[i], roots, 16);
        if (nr < 0 || nr > 16) { gr_vec_push(&t->any_root, i); continue; }
        for (int k = 0; k < nr; k++) {
            uint64_t li = gr_map_get_or(&t->by_root, GR_MAP_PTR(roots[k]), 0);
            if (!li) {
                li = ++t->nlists;
                gr_map_put(&t->by_root, GR_MAP_PTR(roots[k]), li);
            }
            gr_vec_push(&t->lists[li - 1], i);
        }
    }
}

static void free_table(table *t) {
    gr_map_free(&t->by_root);
    for (uint32_t i = 0; i < t->nlists; i++) gr_vec_free(&t->lists[i]);
    gr_vec_free(&t->any_root);
}

#define W() pat_wildcard(ctx)
#define C1(op, a) pat_call1(ctx, "relax." op, a)
#define C2(op, a, b) pat_call2(ctx, "relax." op, a, b)

static void build_table(table *t, ir_ctx_t *ctx) {
    memset(t, 0, sizeof(*t));
    const char *k1[1] = {"strides"}, *k2[1] = {"axis"};
    ir_attr s22 = ir_attr_ints(ctx, 2, (int64_t[]){2, 2}), ax0 = ir_attr_int(0);
    pat_t *conv = C2("nn.conv2d", W(), W());
    pat_t *conv_s2 = pat_has_attr(ctx, C2("nn.conv2d", W(), W()), ir_attrs_new(ctx, 1, k1, &s22));
    pat_t *bias_c = C2("add", conv, pat_const(ctx));
    pat_t *bias_any = C2("add", conv, W());
    pat_t *f16 = pat_has_dtype(ctx, W(), IR_DTYPE_F16);
    pat_t *m = W();
    /* 1-10: fused conv chains (some never match: stride 2, constant bias, float16, batch_norm) */
    add(t, ctx, "conv2d_s2_relu", C1("nn.relu", conv_s2));
    add(t, ctx, "conv2d_constbias_relu", C1("nn.relu", bias_c));
    add(t, ctx, "conv2d_f16_bias_relu", C1("nn.relu", C2("add", C2("nn.conv2d", f16, W()), W())));
    add(t, ctx, "conv2d_bn_relu", C1("nn.relu", pat_tgi(ctx, pat_call_varargs(ctx, pat_op(ctx, "relax.nn.batch_norm"), 1, (const pat_t *[]){conv}), 0)));
    add(t, ctx, "conv2d_bias_relu", C1("nn.relu", pat_optional(ctx, conv, bias_any)));
    add(t, ctx, "conv2d_relu6", C1("nn.relu6", pat_optional(ctx, conv, bias_any)));
    add(t, ctx, "conv2d_bias_gelu", C1("nn.gelu", pat_optional(ctx, conv, bias_any)));
    add(t, ctx, "conv2d_bias_silu", C1("nn.silu", pat_optional(ctx, conv, bias_any)));
    add(t, ctx, "conv2d_bias_sigmoid", C1("sigmoid", bias_any));
    add(t, ctx, "conv2d_bias_tanh", C1("tanh", bias_any));
    /* 11-20: activation idioms */
    add(t, ctx, "silu_f16", C2("multiply", pat_has_dtype(ctx, m, IR_DTYPE_F16), C1("sigmoid", m)));
    pat_t *m2 = W();
    add(t, ctx, "silu", C2("multiply", m2, C1("sigmoid", m2)));
    add(t, ctx, "hardswish", C2("divide", C2("multiply", W(), C1("nn.relu6", C2("add", W(), pat_const(ctx)))), pat_const(ctx)));
    add(t, ctx, "gelu_erf", C2("multiply", C2("multiply", W(), C2("add", C1("erf", W()), pat_const(ctx))), pat_const(ctx)));
    add(t, ctx, "tanh_silu", C1("tanh", C2("multiply", W(), C1("sigmoid", W()))));
    add(t, ctx, "exp_sum", C1("exp", C2("subtract", W(), W())));
    add(t, ctx, "sqrt_mean", C1("sqrt", C1("mean", W())));
    add(t, ctx, "rsqrt", C1("rsqrt", W()));
    add(t, ctx, "clip", C1("clip", W()));
    add(t, ctx, "leaky", C1("nn.leakyrelu", W()));
    /* 21-30: residuals, attention pieces, layouts */
    pat_t *res_in = W();
    add(t, ctx, "residual_tanh", C2("add", C1("tanh", W()), res_in));
    add(t, ctx, "residual_relu", C2("add", C1("nn.relu", W()), W()));
    add(t, ctx, "matmul_bias", C2("add", C2("matmul", W(), W()), W()));
    add(t, ctx, "matmul_softmax", C1("nn.softmax", C2("matmul", W(), W())));
    add(t, ctx, "softmax_axis0", pat_has_attr(ctx, C1("nn.softmax", W()), ir_attrs_new(ctx, 1, k2, &ax0)));
    add(t, ctx, "transpose_softmax", C1("nn.softmax", C1("permute_dims", C2("add", W(), W()))));
    add(t, ctx, "reshape_transpose", C1("permute_dims", C2("reshape", W(), W())));
    add(t, ctx, "layer_norm", pat_call_varargs(ctx, pat_op(ctx, "relax.nn.layer_norm"), 1, (const pat_t *[]){W()}));
    add(t, ctx, "scaled_relu", C2("multiply", C1("nn.relu", W()), pat_const(ctx)));
    add(t, ctx, "sigmoid_scaled", C1("sigmoid", C2("multiply", W(), pat_const(ctx))));
    /* 31-40: single ops and logic */
    const char *pools[2] = {"relax.nn.max_pool2d", "relax.nn.avg_pool2d"};
    add(t, ctx, "pool", pat_call(ctx, pat_op_any(ctx, 2, pools), 1, (const pat_t *[]){W()}));
    add(t, ctx, "concat", C1("concat", W()));
    add(t, ctx, "conv2d", conv);
    add(t, ctx, "add_not_const", C2("add", W(), pat_not(ctx, pat_const(ctx))));
    add(t, ctx, "multiply", C2("multiply", W(), W()));
    add(t, ctx, "relu", C1("nn.relu", W()));
    add(t, ctx, "sigmoid", C1("sigmoid", W()));
    add(t, ctx, "tanh_or_exp", pat_or(ctx, C1("tanh", W()), C1("exp", W())));
    add(t, ctx, "permute_dims", C1("permute_dims", W()));
    add(t, ctx, "softmax", C1("nn.softmax", W()));
    if (t->n != NPATS) { fprintf(stderr, "bench_patterns: %u patterns\n", t->n); exit(1); }
    index_table(t);
}

/* ---- matching ---- */

typedef struct run_stats {
    uint64_t bindings, matches, tried;
    double info_s, match_s;
} run_stats;

static void match_block(table *t, ir_ctx_t *ctx, const ir_block *blk, pat_match_result *m, run_stats *rs) {
    double t0 = now();
    pat_block_info *info = pat_block_info_build(ctx, blk);
    double t1 = now();
    for (uint32_t i = 0; i < blk->n; i++) {
        const ir_binding *b = &blk->bindings[i];
        rs->bindings++;
        const ir_expr *v = b->value;
        const GR_VEC(uint32_t) *cand = NULL;
        if (v->kind == IR_CALL && ((const ir_call *)v)->callee->kind == IR_OP) {
            uint64_t li = gr_map_get_or(&t->by_root, GR_MAP_PTR(((const ir_op *)((const ir_call *)v)->callee)->def->name), 0);
            if (li) cand = (const void *)&t->lists[li - 1];
        }
        /* First match wins in table order: merge the root list with the any-root list. */
        uint32_t a = 0, z = 0, na = cand ? cand->len : 0, nz = t->any_root.len;
        while (a < na || z < nz) {
            uint32_t pi;
            if (z >= nz || (a < na && cand->data[a] < t->any_root.data[z])) pi = cand->data[a++];
            else pi = t->any_root.data[z++];
            rs->tried++;
            if (pat_match(t->pats[pi], &b->var->base, info, m)) {
                rs->matches++;
                t->hits[pi]++;
                break;
            }
        }
    }
    double t2 = now();
    pat_block_info_free(info);
    rs->info_s += t1 - t0;
    rs->match_s += t2 - t1;
}

static void match_func(table *t, ir_ctx_t *ctx, const ir_func *f, run_stats *rs) {
    pat_match_result m;
    pat_match_result_init(&m);
    if (f->body->kind == IR_SEQ) {
        const ir_seq *s = (const ir_seq *)f->body;
        for (uint32_t i = 0; i < s->nblocks; i++) match_block(t, ctx, s->blocks[i], &m, rs);
    }
    pat_match_result_free(&m);
}

static void print_row(const char *what, const run_stats *rs, uint32_t reps) {
    double total = rs->info_s + rs->match_s;
    double per = total / (double)reps;
    printf("| %-22s | %9llu | %8.4f | %8.4f | %8.4f | %8llu | %11.0f | %7.1f | %5.2f |\n", what,
           (unsigned long long)(rs->bindings / reps), rs->info_s / reps, rs->match_s / reps, per,
           (unsigned long long)(rs->matches / reps), (double)rs->matches / total,
           1e9 * total / (double)rs->bindings, (double)rs->tried / (double)rs->bindings);
}

int main(int argc, char **argv) {
    uint32_t maxb = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 1000000;
    uint32_t rec_reps = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 10) : 50;
    printf("| run                    |  bindings |  info s  | match s  |  total s |  matches |   matches/s | ns/bind | tries |\n");
    printf("|------------------------|-----------|----------|----------|----------|----------|-------------|---------|-------|\n");
    double per100k = 0, per10k = 0, per1m = 0;
    uint64_t hits100k[NPATS] = {0};
    for (uint32_t n = 10000; n <= maxb; n *= 10) {
        ir_ctx_t *ctx = ir_ctx_new();
        table t;
        build_table(&t, ctx);
        ir_func *f = build_model(ctx, n);
        run_stats rs = {0};
        uint32_t reps = n <= 10000 ? 20 : n <= 100000 ? 5 : 3;
        for (uint32_t r = 0; r < reps; r++) {
            run_stats one = {0};
            memset(t.hits, 0, sizeof t.hits);
            match_func(&t, ctx, f, &one);
            if (r == 0 || one.info_s + one.match_s < rs.info_s + rs.match_s) rs = one;
        }
        char what[64];
        snprintf(what, sizeof what, "generated %uk", n / 1000);
        print_row(what, &rs, 1);
        double per = (rs.info_s + rs.match_s) / (double)rs.bindings;
        if (n == 10000) per10k = per;
        if (n == 100000) { per100k = per; memcpy(hits100k, t.hits, sizeof hits100k); }
        if (n == 1000000) per1m = per;
        free_table(&t);
        ir_ctx_free(ctx);
    }
    /* PP-OCRv4 rec */
    const char *rec = getenv("GRAFT_MODEL_REC");
    char path[1024];
    if (!rec) {
        FILE *env = fopen("build/third_party/models.env", "r");
        char line[1024];
        while (env && fgets(line, sizeof line, env))
            if (strncmp(line, "GRAFT_MODEL_REC=", 16) == 0) {
                snprintf(path, sizeof path, "%s", line + 16);
                path[strcspn(path, "\n")] = 0;
                rec = path;
            }
        if (env) fclose(env);
    }
    if (rec) {
        ir_ctx_t *ctx = ir_ctx_new();
        gr_diag d;
        gr_diag_clear(&d);
        ir_module *mod = NULL;
        if (onnx_import_file(ctx, rec, NULL, &mod, &d) != GR_OK) {
            fprintf(stderr, "bench_patterns: PP-OCRv4 rec import failed: %s\n", d.msg);
        } else {
            table t;
            build_table(&t, ctx);
            run_stats rs = {0};
            for (uint32_t r = 0; r < rec_reps; r++) match_func(&t, ctx, ir_module_func(mod, "main"), &rs);
            print_row("PP-OCRv4 rec", &rs, rec_reps);
            printf("\nPP-OCRv4 rec hits per run:");
            for (int i = 0; i < NPATS; i++)
                if (t.hits[i]) printf(" %s=%llu", t.names[i], (unsigned long long)(t.hits[i] / rec_reps));
            printf("\n");
            free_table(&t);
        }
        ir_ctx_free(ctx);
    } else {
        printf("| PP-OCRv4 rec: not cached (run scripts/fetch_models.sh) |\n");
    }
    printf("\ngenerated 100k hits:");
    {
        ir_ctx_t *nctx = ir_ctx_new();
        table nt;
        build_table(&nt, nctx);
        for (int i = 0; i < NPATS; i++)
            if (hits100k[i]) printf(" %s=%llu", nt.names[i], (unsigned long long)hits100k[i]);
        free_table(&nt);
        ir_ctx_free(nctx);
    }
    printf("\n");
    if (per10k > 0 && per1m > 0)
        printf("scaling: per-binding cost 1M / 10k = %.2f (100k / 10k = %.2f)\n", per1m / per10k, per100k / per10k);
    return 0;
}
