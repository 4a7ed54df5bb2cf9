/* libFuzzer target: the text-format parser (ir/text/parser.h) and the printer (ir/text/printer.h). A module
 * that parses is printed; the print must parse again and print byte-identical (abort naming the
 * first difference otherwise). */
#include <stdlib.h>
#include <string.h>

#include "ir/text/parser.h"
#include "ir/text/printer.h"
#include "fuzz/fuzz_util.h"

/* parses text and returns its print, NULL when it does not parse (diag in *d) */
static char *parse_print(const char *text, size_t len, gr_diag *d) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = NULL;
    char *s = NULL;
    if (ir_parse_module(ctx, "fuzz.relax", text, len, &m, d) == GR_OK) s = ir_print_module_str(m, NULL);
    ir_ctx_free(ctx);
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gr_diag d;
    gr_diag_clear(&d);
    char *p1 = parse_print((const char *)data, size, &d);
    if (!p1) return 0;
    char *p2 = parse_print(p1, strlen(p1), &d);
    fuzz_check_round_trip("fuzz_parse", p1, p2, &d);
    free(p1);
    free(p2);
    return 0;
}
