/* libFuzzer target: the pattern-file reader (patterns/pattern_text.h), then the table printer
 * on what was read. */
#include <stdlib.h>

#include "patterns/pattern_text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ir_ctx_t *ctx = ir_ctx_new();
    pat_table *t = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    if (pat_table_read(ctx, "fuzz.relax", (const char *)data, size, &t, &d) == GR_OK) {
        free(pat_print_table_str(t, &d));
        pat_table_free(t);
    }
    ir_ctx_free(ctx);
    return 0;
}
