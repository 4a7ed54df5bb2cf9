/* Artifacts with their oneDNN packs edited (pack_edit.h). */
#include "tests/artifact/pack_edit.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deploy/artifact_impl.h"
#include "graft/graft_artifact.pb-c.h"

uint8_t *tu_packs_edited(const uint8_t *buf, size_t len, pack_edit edit, size_t *out_len, uint32_t *nedited) {
    gr_art_header h;
    cr_assert(gr_art_header_read(buf, len, &h));
    Graft__ArtifactBody *b = graft__artifact_body__unpack(NULL, h.body_len, buf + h.body_off);
    cr_assert_not_null(b);
    uint32_t edited = 0;
    for (size_t i = 0; i < b->n_external; i++) {
        json_t *root = json_loadb((const char *)b->external[i]->blob.data, b->external[i]->blob.len, 0, NULL);
        cr_assert_not_null(root);
        size_t gi, pi;
        json_t *g, *pk;
        json_array_foreach(json_object_get(root, "graphs"), gi, g) json_array_foreach(json_object_get(g, "packs"), pi, pk) {
            edit(pk);
            edited++;
        }
        char *s = json_dumps(root, JSON_COMPACT);
        json_decref(root);
        free(b->external[i]->blob.data);
        b->external[i]->blob.data = (uint8_t *)s;
        b->external[i]->blob.len = strlen(s);
    }
    size_t n = graft__artifact_body__get_packed_size(b);
    uint8_t *p = malloc(n + 1);
    graft__artifact_body__pack(b, p);
    uint8_t *o = gr_art_with_body(buf, len, p, n, out_len);
    free(p);
    graft__artifact_body__free_unpacked(b, NULL);
    cr_assert_not_null(o);
    *nedited = edited;
    return o;
}

void tu_pack_key_replace(json_t *pk, const char *what, const char *with) {
    const char *key = json_string_value(json_object_get(pk, "key"));
    const char *at = strstr(key, what);
    cr_assert_not_null(at, "%s", key);
    char nk[512];
    snprintf(nk, sizeof nk, "%.*s%s%s", (int)(at - key), key, with, at + strlen(what));
    json_object_set_new(pk, "key", json_string(nk));
}

void tu_pack_other_isa(json_t *pk) { tu_pack_key_replace(pk, " isa ", " isa 7e57"); }
