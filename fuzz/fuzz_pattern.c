/* libFuzzer target: the pattern-file reader (patterns/pattern_text.h) and the table printer. A
 * table that reads is printed; the print must read again and print byte-identical (abort naming
 * the first difference otherwise). */
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz_util.h"
#include "patterns/pattern_text.h"

/* reads text and returns the table's print, NULL when it does not read (diag in *d) */
static char *read_print(const char *text, size_t len, gr_diag *d) {
    ir_ctx_t *ctx = ir_ctx_new();
    pat_table *t = NULL;
    char *s = NULL;
    if (pat_table_read(ctx, "fuzz.relax", text, len, &t, d) == GR_OK) {
        s = pat_print_table_str(t, d);
        pat_table_free(t);
    }
    ir_ctx_free(ctx);
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gr_diag d;
    gr_diag_clear(&d);
    char *p1 = read_print((const char *)data, size, &d);
    if (!p1) return 0;
    char *p2 = read_print(p1, strlen(p1), &d);
    fuzz_check_round_trip("fuzz_pattern", p1, p2, &d);
    free(p1);
    free(p2);
    return 0;
}
