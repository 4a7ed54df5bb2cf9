/* Backend options (byoc/backend.h): assignments are checked against the backend's own table
 * (unknown backend / option, missing '=', a value of the wrong type or not among the allowed
 * ones are errors naming the option), read back with their defaults, and the registry finds a
 * backend by the kind of its runtime modules (what the artifact loader uses). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "byoc/byoc.h"

static const byoc_backend *dnnl(void) {
    const byoc_backend *b = byoc_backend_find("dnnl");
    cr_assert_not_null(b);
    return b;
}

Test(backend_options, defaults_and_set_values) {
    const byoc_backend *b = dnnl();
    cr_expect_eq(byoc_option_int(NULL, b, "small_kb"), 256);
    cr_expect(byoc_option_bool(NULL, b, "bind"));
    cr_expect_str_eq(byoc_option_str(NULL, b, "deconv_tag"), "nhwc");
    byoc_options *o = byoc_options_new();
    gr_diag d;
    gr_diag_clear(&d);
    cr_assert_eq(byoc_options_set(o, "dnnl.threads=3", &d), GR_OK, "%s", d.msg);
    cr_assert_eq(byoc_options_set(o, "dnnl.bind=false", &d), GR_OK, "%s", d.msg);
    cr_assert_eq(byoc_options_set(o, "dnnl.disable=nn.conv2d,composites", &d), GR_OK, "%s", d.msg);
    cr_assert_eq(byoc_options_set(o, "dnnl.deconv_tag=any", &d), GR_OK, "%s", d.msg);
    cr_assert_eq(byoc_options_set(o, "dnnl.threads=2", &d), GR_OK, "%s", d.msg); /* the later one wins */
    cr_expect_eq(byoc_option_int(o, b, "threads"), 2);
    cr_expect(byoc_option_given(o, b, "threads"));
    cr_expect_not(byoc_option_bool(o, b, "bind"));
    cr_expect_str_eq(byoc_option_str(o, b, "disable"), "nn.conv2d,composites");
    cr_expect_str_eq(byoc_option_str(o, b, "deconv_tag"), "any");
    cr_expect_not(byoc_option_given(o, b, "debug"));
    cr_expect_not(byoc_option_bool(o, b, "debug"));
    cr_expect_eq(byoc_option_int(o, b, "small_kb"), 256);
    byoc_options_free(o);
}

/* each bad assignment fails with GR_ERR_INVALID and a message holding `want` */
Test(backend_options, errors_name_the_option) {
    static const struct { const char *assignment, *want; } BAD[] = {
        {"dnnl.thread=2", "no option 'thread'"},
        {"dnnl.thread=2", "threads"},                  /* lists the options it has */
        {"dnnx.threads=2", "no backend 'dnnx'"},
        {"json.threads=2", "backend json has no option 'threads'"},
        {"dnnl.threads", "BACKEND.NAME=VALUE"},
        {"threads=2", "BACKEND.NAME=VALUE"},
        {"dnnl.threads=two", "'dnnl.threads': 'two' is not a non-negative integer"},
        {"dnnl.threads=-1", "not a non-negative integer"},
        {"dnnl.threads=", "not a non-negative integer"},
        {"dnnl.debug=yes", "'dnnl.debug': 'yes' is not 1 or 0"},
        {"dnnl.deconv_tag=nchwc", "'dnnl.deconv_tag': 'nchwc' is not one of nhwc|nchw|any"},
    };
    byoc_options *o = byoc_options_new();
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        gr_diag d;
        gr_diag_clear(&d);
        cr_expect_eq(byoc_options_set(o, BAD[i].assignment, &d), GR_ERR_INVALID, "%s", BAD[i].assignment);
        cr_expect(strstr(d.msg, BAD[i].want), "%s: '%s' not in: %s", BAD[i].assignment, BAD[i].want, d.msg);
    }
    /* nothing was set by the failures */
    cr_expect_not(byoc_option_given(o, dnnl(), "threads"));
    byoc_options_free(o);
}

/* Every built-in backend's table is well formed: its defaults are values it would accept. */
Test(backend_options, defaults_parse_as_their_type) {
    for (uint32_t i = 0; i < byoc_backend_count(); i++) {
        const byoc_backend *b = byoc_backend_at(i);
        for (uint32_t k = 0; k < b->noptions; k++) {
            const byoc_option *opt = &b->options[k];
            cr_expect(opt->name && opt->dflt && opt->help && *opt->help, "%s option %u", b->name, k);
            char a[256];
            snprintf(a, sizeof a, "%s.%s=%s", b->name, opt->name, opt->dflt);
            byoc_options *o = byoc_options_new();
            gr_diag d;
            gr_diag_clear(&d);
            cr_expect_eq(byoc_options_set(o, a, &d), GR_OK, "%s: %s", a, d.msg);
            byoc_options_free(o);
        }
    }
}

Test(backend_options, registry_finds_loaders_by_kind) {
    cr_expect_eq(byoc_backend_for_kind("dnnl_json"), byoc_backend_find("dnnl"));
    cr_expect_eq(byoc_backend_for_kind("json"), byoc_backend_find("json"));
    cr_expect_null(byoc_backend_for_kind("tensorrt"));
    cr_expect_null(byoc_backend_for_kind(NULL));
}
