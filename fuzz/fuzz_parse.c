/* libFuzzer target: the text-format parser (ir/text/parser.h), then the printer on what parsed. */
#include <stdlib.h>

#include "ir/text/parser.h"
#include "ir/text/printer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    if (ir_parse_module(ctx, "fuzz.relax", (const char *)data, size, &m, &d) == GR_OK)
        free(ir_print_module_str(m, NULL));
    ir_ctx_free(ctx);
    return 0;
}
