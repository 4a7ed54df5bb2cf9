/* libFuzzer target: the ONNX importer (frontend/onnx) over a serialized ModelProto, then the
 * printer on the imported module. */
#include <stdlib.h>

#include "frontend/onnx/onnx_import.h"
#include "ir/text/printer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ir_ctx_t *ctx = ir_ctx_new();
    ir_module *m = NULL;
    gr_diag d;
    gr_diag_clear(&d);
    if (onnx_import_buffer(ctx, "fuzz.onnx", data, size, NULL, &m, &d) == GR_OK)
        free(ir_print_module_str(m, NULL));
    ir_ctx_free(ctx);
    return 0;
}
