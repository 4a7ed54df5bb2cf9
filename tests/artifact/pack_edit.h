/* Artifacts with their oneDNN packs edited (tests): as made for another CPU or library. */
#ifndef GRAFT_TESTS_PACK_EDIT_H
#define GRAFT_TESTS_PACK_EDIT_H
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* The artifact buf with every oneDNN pack of its dnnl modules edited by edit (its key, and
 * the layout of a weight stored only prepacked), resealed (heap); *nedited: how many. */
typedef void (*pack_edit)(json_t *pack);
uint8_t *tu_packs_edited(const uint8_t *buf, size_t len, pack_edit edit, size_t *out_len, uint32_t *nedited);
/* "dnnl 2.6.0 <hash> isa 3ff ..." with `what` replaced by `with` */
void tu_pack_key_replace(json_t *pk, const char *what, const char *with);
/* made for ISA bits no CPU reports: the loader lays such weights out for this CPU again */
void tu_pack_other_isa(json_t *pk);
#endif
