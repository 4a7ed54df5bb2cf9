/* Pass manager: ordering, required passes, opt level, forced passes, config, instruments. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ir/transform/si_builder.h"
#include "ir/transform/transform.h"
#include "tests/test_util.h"

static ir_ctx_t *ctx;
static gr_diag diag;
static void setup(void) {
    ctx = ir_ctx_new();
    gr_diag_clear(&diag);
}
static void teardown(void) { ir_ctx_free(ctx); }

TestSuite(pass_manager, .init = setup, .fini = teardown);

/* A trivial function: fn(x) -> x. */
static ir_func *func_returning(ir_ctx_t *c, ir_var *param, ir_var *ret) {
    ir_seq *body = ir_seq_new(c, 0, NULL, &ret->base, NULL);
    ir_expr_set_sinfo(&body->base, ret->base.sinfo);
    ir_func *f = ir_func_new(c, 1, &param, &body->base, NULL, NULL, NULL);
    ir_expr_set_sinfo(&f->base, ir_func_sinfo(c, f));
    return f;
}

static ir_func *ident_func(const char *pname) {
    ir_var *x = ir_var_new(ctx, pname, ir_sinfo_object(ctx), NULL);
    return func_returning(ctx, x, x);
}

/* Each test pass appends a function named after itself, so the module records the order. */
static gr_status log_pass(const ir_pass *self, ir_pass_ctx_t *pc, const ir_module *mod,
                          ir_module **out, gr_diag *d) {
    (void)pc, (void)d;
    ir_module *m = ir_module_copy(mod);
    char name[64];
    snprintf(name, sizeof(name), "%s_%u", self->name, m->nfuncs);
    ir_module_set_func(m, name, &ident_func("x")->base);
    *out = m;
    return GR_OK;
}

static char order_buf[512];
static const char *order(const ir_module *m) {
    order_buf[0] = 0;
    for (uint32_t i = 0; i < m->nfuncs; i++) {
        if (i) strcat(order_buf, ",");
        char tmp[64];
        snprintf(tmp, sizeof(tmp), "%s", m->gvars[i]->name);
        char *us = strrchr(tmp, '_');
        if (us) *us = 0;
        strcat(order_buf, tmp);
    }
    return order_buf;
}

static const ir_pass PA = {.name = "TA", .kind = IR_PASS_MODULE, .opt_level = 0, .module_fn = log_pass};
static const ir_pass PB = {.name = "TB", .kind = IR_PASS_MODULE, .opt_level = 1, .module_fn = log_pass};
static const ir_pass PHI = {.name = "THigh", .kind = IR_PASS_MODULE, .opt_level = 3, .module_fn = log_pass};
static const ir_pass PREQ = {.name = "TReq", .kind = IR_PASS_MODULE, .opt_level = 4, .module_fn = log_pass};
static const char *const NEEDS_REQ[] = {"TReq", NULL};
static const ir_pass PC = {.name = "TC", .kind = IR_PASS_MODULE, .opt_level = 0, .module_fn = log_pass,
                           .required = NEEDS_REQ};
static const char *const NEEDS_MISSING[] = {"NoSuchPass", NULL};
static const ir_pass PBAD = {.name = "TBad", .kind = IR_PASS_MODULE, .module_fn = log_pass,
                             .required = NEEDS_MISSING};

static ir_module *run_seq(ir_pass_ctx_t *pc, uint32_t n, const ir_pass *const *ps, gr_status want) {
    ir_pass *seq = ir_pass_sequential_new("seq", 0, n, ps);
    ir_module *in = ir_module_new(ctx), *out = NULL;
    gr_status st = ir_pass_run(seq, pc, in, &out, &diag);
    ir_pass_free(seq);
    cr_assert_eq(st, want, "status %s: %s", gr_status_name(st), diag.msg);
    cr_assert_eq(in->nfuncs, 0, "input module modified");
    return out;
}

Test(pass_manager, runs_in_order) {
    const ir_pass *ps[] = {&PA, &PB, &PA};
    ir_module *out = run_seq(NULL, 3, ps, GR_OK);
    cr_assert_str_eq(order(out), "TA,TB,TA");
}

Test(pass_manager, opt_level_skips_and_force_on_off) {
    const ir_pass *ps[] = {&PA, &PHI, &PB};
    ir_pass_ctx_t *pc = ir_pass_ctx_new();
    cr_assert_eq(ir_pass_ctx_opt_level(pc), 2);
    cr_assert_str_eq(order(run_seq(pc, 3, ps, GR_OK)), "TA,TB");
    ir_pass_ctx_set_opt_level(pc, 3);
    cr_assert_str_eq(order(run_seq(pc, 3, ps, GR_OK)), "TA,THigh,TB");
    ir_pass_ctx_set_opt_level(pc, 0);
    cr_assert_str_eq(order(run_seq(pc, 3, ps, GR_OK)), "TA");
    ir_pass_ctx_force_on(pc, "THigh");
    cr_assert_str_eq(order(run_seq(pc, 3, ps, GR_OK)), "TA,THigh");
    ir_pass_ctx_force_off(pc, "TA");
    cr_assert_str_eq(order(run_seq(pc, 3, ps, GR_OK)), "THigh");
    /* Off beats on. */
    ir_pass_ctx_force_off(pc, "THigh");
    cr_assert_not(ir_pass_ctx_pass_enabled(pc, &PHI));
    ir_pass_ctx_free(pc);
}

Test(pass_manager, required_runs_first_whatever_its_level) {
    ir_pass_register(&PREQ);
    cr_assert_eq(ir_pass_find("TReq"), &PREQ);
    const ir_pass *ps[] = {&PA, &PC, &PC};
    ir_pass_ctx_t *pc = ir_pass_ctx_new();
    ir_pass_ctx_set_opt_level(pc, 1);  /* TReq (level 4) alone would be skipped */
    cr_assert_str_eq(order(run_seq(pc, 3, ps, GR_OK)), "TA,TReq,TC,TReq,TC");
    const ir_pass *only_req[] = {&PREQ};
    cr_assert_str_eq(order(run_seq(pc, 1, only_req, GR_OK)), "");
    /* A required pass that is disabled is an error naming both. */
    ir_pass_ctx_force_off(pc, "TReq");
    cr_assert_null(run_seq(pc, 3, ps, GR_ERR_INVALID));
    cr_assert(strstr(diag.msg, "TReq") && strstr(diag.msg, "TC"), "%s", diag.msg);
    ir_pass_ctx_free(pc);
}

Test(pass_manager, unknown_required_pass_is_an_error) {
    const ir_pass *ps[] = {&PBAD};
    cr_assert_null(run_seq(NULL, 1, ps, GR_ERR_NOT_FOUND));
    cr_assert(strstr(diag.msg, "NoSuchPass"), "%s", diag.msg);
}

Test(pass_manager, registry_and_names) {
    cr_assert_not_null(ir_pass_find("DeadCodeElimination"));
    cr_assert_not_null(ir_pass_find("FoldBatchNormIntoConv"));
    cr_assert_not_null(ir_pass_find("default"));
    cr_assert_null(ir_pass_find("Nope"));
    ir_pass *seq = NULL;
    cr_assert_eq(ir_pass_sequential_from_names("Normalize, DeadCodeElimination", &seq, &diag), GR_OK);
    cr_assert_eq(seq->npasses, 2);
    cr_assert_str_eq(seq->passes[1]->name, "DeadCodeElimination");
    ir_pass_free(seq);
    cr_assert_eq(ir_pass_sequential_from_names("Normalize,Bogus", &seq, &diag), GR_ERR_NOT_FOUND);
    cr_assert_null(seq);
    cr_assert(strstr(diag.msg, "Bogus") && strstr(diag.msg, "known:"), "%s", diag.msg);
}

Test(pass_manager, typed_config) {
    ir_pass_ctx_t *pc = ir_pass_ctx_new();
    cr_assert(ir_pass_ctx_config_bool(pc, "ir.enable_si_builder"), "default on");
    ir_config_value off = {.kind = IR_CONFIG_BOOL, .u.b = false};
    cr_assert_eq(ir_pass_ctx_set_config(pc, "ir.enable_si_builder", off, &diag), GR_OK);
    cr_assert_not(ir_pass_ctx_config_bool(pc, "ir.enable_si_builder"));
    ir_config_value i3 = {.kind = IR_CONFIG_INT, .u.i = 3};
    cr_assert_eq(ir_pass_ctx_set_config(pc, "ir.enable_si_builder", i3, &diag), GR_ERR_INVALID);
    gr_diag_clear(&diag);
    cr_assert_eq(ir_pass_ctx_set_config(pc, "no.such.key", i3, &diag), GR_ERR_NOT_FOUND);
    ir_config_declare("test.iters", (ir_config_value){.kind = IR_CONFIG_INT, .u.i = 7});
    ir_config_declare("test.name", (ir_config_value){.kind = IR_CONFIG_STR, .u.s = "abc"});
    cr_assert_eq(ir_pass_ctx_config_int(pc, "test.iters"), 7);
    cr_assert_eq(ir_pass_ctx_set_config_str(pc, "test.iters=12", &diag), GR_OK);
    cr_assert_eq(ir_pass_ctx_config_int(pc, "test.iters"), 12);
    cr_assert_str_eq(ir_pass_ctx_config_str(pc, "test.name"), "abc");
    cr_assert_eq(ir_pass_ctx_set_config_str(pc, "test.name=xyz", &diag), GR_OK);
    cr_assert_str_eq(ir_pass_ctx_config_str(pc, "test.name"), "xyz");
    cr_assert_eq(ir_pass_ctx_set_config_str(pc, "ir.enable_si_builder=true", &diag), GR_OK);
    cr_assert(ir_pass_ctx_config_bool(pc, "ir.enable_si_builder"));
    gr_diag_clear(&diag);
    cr_assert_eq(ir_pass_ctx_set_config_str(pc, "ir.enable_si_builder=maybe", &diag), GR_ERR_INVALID);
    gr_diag_clear(&diag);
    cr_assert_eq(ir_pass_ctx_set_config_str(pc, "test.iters=x1", &diag), GR_ERR_INVALID);
    gr_diag_clear(&diag);
    cr_assert_eq(ir_pass_ctx_set_config_str(pc, "novalue", &diag), GR_ERR_INVALID);
    ir_pass_ctx_free(pc);
}

/* Records whether the SIBuilder was on while it ran. */
static int si_seen = -1;
static gr_status si_probe(const ir_pass *self, ir_pass_ctx_t *pc, const ir_module *mod,
                          ir_module **out, gr_diag *d) {
    (void)self, (void)d;
    cr_assert_eq(ir_pass_ctx_current(), pc);
    si_seen = ir_si_enabled();
    *out = (ir_module *)mod;
    return GR_OK;
}

Test(pass_manager, si_builder_switch_follows_current_context) {
    static const ir_pass probe = {.name = "Probe", .kind = IR_PASS_MODULE, .module_fn = si_probe};
    ir_module *in = ir_module_new(ctx), *out = NULL;
    ir_pass_ctx_t *pc = ir_pass_ctx_new();
    cr_assert_eq(ir_pass_run(&probe, pc, in, &out, &diag), GR_OK);
    cr_assert_eq(si_seen, 1);
    cr_assert_eq(ir_pass_ctx_set_config_str(pc, "ir.enable_si_builder=false", &diag), GR_OK);
    cr_assert_eq(ir_pass_run(&probe, pc, in, &out, &diag), GR_OK);
    cr_assert_eq(si_seen, 0);
    cr_assert_eq(out, in, "unchanged module is passed through");
    cr_assert_null(ir_pass_ctx_current());
    cr_assert(ir_si_enabled());
    ir_pass_ctx_free(pc);
}

Test(pass_manager, timing_and_snapshots) {
    const ir_pass *ps[] = {&PA, &PB, &PHI};
    ir_pass_ctx_t *pc = ir_pass_ctx_new();
    ir_instrument *t = ir_pass_ctx_add_instrument(pc, ir_instrument_timing_new());
    ir_instrument *s = ir_pass_ctx_add_instrument(pc, ir_instrument_snapshots_new());
    ir_module *out = run_seq(pc, 3, ps, GR_OK);
    cr_assert_eq(ir_instrument_timing_count(t), 2, "leaf passes only, THigh skipped");
    const char *name;
    double secs;
    ir_instrument_timing_get(t, 1, &name, &secs);
    cr_assert_str_eq(name, "TB");
    cr_assert(secs >= 0);
    cr_assert_eq(ir_instrument_snapshot_count(s), 2);
    const ir_module *s0 = ir_instrument_snapshot_get(s, 0, &name);
    cr_assert_str_eq(name, "TA");
    cr_assert_str_eq(order(s0), "TA", "the snapshot is the module as it was after TA");
    cr_assert_eq(ir_instrument_snapshot_get(s, 1, NULL), out);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ir_instrument_timing_print(t, f);
    fclose(f);
    cr_assert(strstr(buf, "TA") && strstr(buf, "total"), "%s", buf);
    free(buf);
    ir_pass_ctx_free(pc);
}

/* An instrument that vetoes one pass and fails after another. */
static bool veto_tb(ir_instrument *ins, const ir_pass *p, const ir_module *m) {
    (void)ins, (void)m;
    return strcmp(p->name, "TB") != 0;
}
static gr_status fail_after_high(ir_instrument *ins, const ir_pass *p, const ir_module *m, gr_diag *d) {
    (void)ins, (void)m;
    if (strcmp(p->name, "THigh") == 0) return gr_diag_set(d, GR_ERR_INVALID, "instrument says no");
    return GR_OK;
}

Test(pass_manager, custom_instrument_should_run_and_after_error) {
    static ir_instrument ins = {.name = "veto", .should_run = veto_tb, .after = fail_after_high};
    const ir_pass *ps[] = {&PA, &PB, &PA};
    ir_pass_ctx_t *pc = ir_pass_ctx_new();
    ir_pass_ctx_add_instrument(pc, &ins);  /* no destroy: static */
    cr_assert_str_eq(order(run_seq(pc, 3, ps, GR_OK)), "TA,TA");
    const ir_pass *ps2[] = {&PA, &PHI, &PA};
    ir_pass_ctx_set_opt_level(pc, 3);
    cr_assert_null(run_seq(pc, 3, ps2, GR_ERR_INVALID));
    cr_assert(strstr(diag.msg, "instrument says no"), "%s", diag.msg);
    ir_pass_ctx_free(pc);
}

Test(pass_manager, dump_ir_writes_numbered_files) {
    char dir[] = "/tmp/graft_dumpXXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char sub[300];
    snprintf(sub, sizeof(sub), "%s/ir", dir);
    const ir_pass *ps[] = {&PA, &PB};
    ir_pass_ctx_t *pc = ir_pass_ctx_new();
    ir_pass_ctx_add_instrument(pc, ir_instrument_dump_ir_new(sub, false));
    run_seq(pc, 2, ps, GR_OK);
    ir_pass_ctx_free(pc);
    char p0[400], p1[400];
    snprintf(p0, sizeof(p0), "%s/00_TA.relax", sub);
    snprintf(p1, sizeof(p1), "%s/01_TB.relax", sub);
    struct stat st;
    cr_assert_eq(stat(p0, &st), 0, "%s missing", p0);
    cr_assert_eq(stat(p1, &st), 0, "%s missing", p1);
    cr_assert(st.st_size > 0);
    char *text = tu_read_file(p1, NULL);
    cr_assert(text && *text, "%s", p1);
    cr_assert(strstr(text, "TB_1"), "the dump after TB shows TB's function:\n%s", text);
    free(text);
    unlink(p0);
    unlink(p1);
    rmdir(sub);
    rmdir(dir);
}

/* Function pass: renames nothing, but records which functions it saw. */
static char seen_funcs[256];
static gr_status fn_probe(const ir_pass *self, ir_pass_ctx_t *pc, const ir_module *mod, const char *name,
                          ir_func *func, ir_func **out, gr_diag *d) {
    (void)self, (void)pc, (void)mod, (void)d;
    strcat(seen_funcs, name);
    strcat(seen_funcs, ";");
    *out = strcmp(name, "f1") == 0 ? ident_func("y") : func;
    return GR_OK;
}

Test(pass_manager, function_pass_skips_external_functions) {
    static const ir_pass fp = {.name = "FnProbe", .kind = IR_PASS_FUNCTION, .func_fn = fn_probe};
    ir_module *m = ir_module_new(ctx);
    ir_module_set_func(m, "f0", &ident_func("x")->base);
    ir_module_set_func(m, "f1", &ident_func("x")->base);
    ir_func *ext = ident_func("x");
    ir_attr cg = ir_attr_str(ctx, "dnnl");
    const char *key = "Codegen";
    ir_module_set_func(m, "ext", &ir_func_with_attrs(ctx, ext, ir_attrs_new(ctx, 1, &key, &cg))->base);
    ir_module *out = NULL;
    seen_funcs[0] = 0;
    cr_assert_eq(ir_pass_run(&fp, NULL, m, &out, &diag), GR_OK, "%s", diag.msg);
    cr_assert_str_eq(seen_funcs, "f0;f1;");
    cr_assert_neq(out, m);
    cr_assert_eq(out->funcs[0], m->funcs[0], "unchanged functions are shared");
    cr_assert_neq(out->funcs[1], m->funcs[1]);
    cr_assert_str_eq(IR_AS(out->funcs[1], ir_func)->params[0]->name, "y");
    cr_assert_str_eq(IR_AS(m->funcs[1], ir_func)->params[0]->name, "x", "input untouched");
}

static int blocks_seen;
static gr_status block_probe(const ir_pass *self, ir_pass_ctx_t *pc, const ir_module *mod,
                             const ir_block *blk, const ir_block **out, gr_diag *d) {
    (void)self, (void)pc, (void)d;
    cr_assert(blk->dataflow);
    blocks_seen++;
    /* Drop every binding after the first (the test's bindings are unused). */
    *out = blk->n > 1 ? ir_block_new(mod->ctx, true, 1, blk->bindings) : blk;
    return GR_OK;
}

Test(pass_manager, dataflow_block_pass_visits_each_block) {
    static const ir_pass bp = {.name = "BlockProbe", .kind = IR_PASS_DATAFLOW, .block_fn = block_probe};
    ir_var *x = ir_var_new(ctx, "x", ir_sinfo_object(ctx), NULL);
    ir_binding bs[2];
    bs[0] = (ir_binding){ir_var_new(ctx, "a", ir_sinfo_object(ctx), NULL), &x->base, NULL};
    bs[1] = (ir_binding){ir_dfvar_new(ctx, "b", ir_sinfo_object(ctx), NULL), &x->base, NULL};
    const ir_block *blocks[3] = {ir_block_new(ctx, true, 2, bs), ir_block_new(ctx, false, 1, bs),
                                 ir_block_new(ctx, true, 1, bs)};
    ir_seq *seq = ir_seq_new(ctx, 3, blocks, &x->base, NULL);
    ir_func *f = ir_func_new(ctx, 1, &x, &seq->base, NULL, NULL, NULL);
    ir_module *m = ir_module_new(ctx), *out = NULL;
    ir_module_set_func(m, "main", &f->base);
    blocks_seen = 0;
    cr_assert_eq(ir_pass_run(&bp, NULL, m, &out, &diag), GR_OK, "%s", diag.msg);
    cr_assert_eq(blocks_seen, 2);
    ir_seq *ns = IR_AS(IR_AS(out->funcs[0], ir_func)->body, ir_seq);
    cr_assert_eq(ns->blocks[0]->n, 1);
    cr_assert_eq(ns->blocks[1], blocks[1]);
    cr_assert_eq(seq->blocks[0]->n, 2, "input untouched");
}

/* A broken pass: main returns a var that nothing defines. */
static gr_status break_ir(const ir_pass *self, ir_pass_ctx_t *pc, const ir_module *mod, ir_module **out,
                          gr_diag *d) {
    (void)self, (void)pc, (void)d;
    ir_module *m = ir_module_copy(mod);
    ir_var *x = ir_var_new(mod->ctx, "x", ir_sinfo_object(mod->ctx), NULL);
    ir_var *ghost = ir_var_new(mod->ctx, "ghost", ir_sinfo_object(mod->ctx), NULL);
    ir_module_set_func(m, "main", &func_returning(mod->ctx, x, ghost)->base);
    *out = m;
    return GR_OK;
}

Test(pass_manager, wellformed_instrument_names_the_pass) {
    static const ir_pass bad = {.name = "BreakIR", .kind = IR_PASS_MODULE, .module_fn = break_ir};
    const ir_pass *ps[] = {&PA, &bad, &PB};
    ir_pass_ctx_t *pc = ir_pass_ctx_new();
    ir_pass_ctx_add_instrument(pc, ir_instrument_wellformed_new());
    cr_assert_null(run_seq(pc, 3, ps, GR_ERR_WELLFORMED));
    cr_assert(strstr(diag.msg, "BreakIR"), "%s", diag.msg);
    ir_pass_ctx_free(pc);
    /* Without the instrument the same pipeline runs to the end. */
    gr_diag_clear(&diag);
    cr_assert_not_null(run_seq(NULL, 3, ps, GR_OK));
}
