/* A ModelProto unpacked with its initializers one at a time, so an import holds about one copy of
 * the weights, not two.
 *
 * protobuf-c's onnx__model_proto__unpack copies every bytes field: while it runs, the file's bytes
 * and the unpacked copy are both resident. Here a small, bounds-checked walker over the protobuf
 * wire format finds ModelProto.graph and, in it, the byte range of each GraphProto.initializer
 * and node (Constant nodes hold tensors too); protobuf-c unpacks a copy of the model without them
 * (small), then each of them on its own, in file order, and after each one the caller may drop
 * the file pages already consumed. Anything
 * the walker does not expect (a truncated varint, a length past the end, a group, a graph field
 * twice) leaves the split to the caller's whole-buffer unpack, so malformed files get the same
 * errors as before. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "frontend/onnx/onnx_impl.h"

/* A varint at *p (below end): false when truncated or longer than 64 bits. */
static bool wire_varint(const uint8_t **p, const uint8_t *end, uint64_t *out) {
    uint64_t v = 0;
    for (unsigned i = 0; i < 10; i++) {
        if (*p >= end) return false;
        uint8_t b = *(*p)++;
        if (i == 9 && b > 1) return false;
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *out = v;
            return true;
        }
    }
    return false;
}

/* One field at *p: its number, and for a length-delimited one the payload's range. False on
 * anything malformed or a group (start/end group: protobuf-c's ONNX messages have none). */
static bool wire_field(const uint8_t **p, const uint8_t *end, uint32_t *num, int *type,
                       const uint8_t **payload, size_t *plen) {
    uint64_t key = 0, n = 0;
    if (!wire_varint(p, end, &key) || key >> 3 == 0 || key >> 3 > 0x1fffffff) return false;
    *num = (uint32_t)(key >> 3);
    *type = (int)(key & 7);
    *payload = NULL;
    *plen = 0;
    size_t left;
    switch (*type) {
    case 0: return wire_varint(p, end, &n);
    case 1: n = 8; break;
    case 5: n = 4; break;
    case 2:
        if (!wire_varint(p, end, &n)) return false;
        *payload = *p;
        *plen = (size_t)n;
        break;
    default: return false;
    }
    left = (size_t)(end - *p);
    if (n > left) return false;
    *p += n;
    return true;
}

static size_t varint_size(uint64_t v) {
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static uint8_t *varint_put(uint8_t *o, uint64_t v) {
    while (v >= 0x80) {
        *o++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *o++ = (uint8_t)v;
    return o;
}

/* The GraphProto fields unpacked one message at a time: the initializers, and the nodes (a
 * Constant node carries its tensor, and some exporters put every weight there). */
static const struct {
    const char *field;
    const ProtobufCMessageDescriptor *desc;
    size_t arr, count; /* offsets in Onnx__GraphProto */
} SPLIT[ONNX_WIRE_KINDS] = {
    {"node", &onnx__node_proto__descriptor, offsetof(Onnx__GraphProto, node),
     offsetof(Onnx__GraphProto, n_node)},
    {"initializer", &onnx__tensor_proto__descriptor, offsetof(Onnx__GraphProto, initializer),
     offsetof(Onnx__GraphProto, n_initializer)},
};

static uint32_t field_id(const ProtobufCMessageDescriptor *d, const char *name) {
    const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field_by_name(d, name);
    return f ? f->id : 0;
}

void onnx_wire_layout_free(onnx_wire_layout *lay) {
    free(lay->parts);
    memset(lay, 0, sizeof(*lay));
}

bool onnx_wire_split(const uint8_t *buf, size_t len, onnx_wire_layout *lay) {
    memset(lay, 0, sizeof(*lay));
    uint32_t graph_id = field_id(&onnx__model_proto__descriptor, "graph"), ids[ONNX_WIRE_KINDS];
    if (!graph_id) return false;
    for (int k = 0; k < ONNX_WIRE_KINDS; k++)
        if (!(ids[k] = field_id(&onnx__graph_proto__descriptor, SPLIT[k].field))) return false;
    const uint8_t *p = buf, *end = buf + len, *graph = NULL;
    size_t glen = 0;
    while (p < end) {
        const uint8_t *field = p, *pl;
        size_t n;
        uint32_t num;
        int type;
        if (!wire_field(&p, end, &num, &type, &pl, &n)) return false;
        if (num != graph_id) continue;
        /* a second graph field would be merged into the first: leave that to protobuf-c */
        if (type != 2 || graph) return false;
        graph = pl;
        glen = n;
        lay->graph_field = (size_t)(field - buf);
        lay->graph_off = (size_t)(pl - buf);
        lay->graph_len = n;
    }
    if (!graph) return false;
    size_t cap = 0;
    p = graph;
    end = graph + glen;
    while (p < end) {
        const uint8_t *field = p, *pl;
        size_t n;
        uint32_t num;
        int type, kind = -1;
        if (!wire_field(&p, end, &num, &type, &pl, &n)) goto bad;
        for (int k = 0; k < ONNX_WIRE_KINDS; k++)
            if (num == ids[k]) kind = k;
        if (kind < 0) continue;
        if (type != 2) goto bad;
        if (lay->nparts == cap) {
            cap = cap ? cap * 2 : 256;
            lay->parts = gr_xrealloc(lay->parts, cap * sizeof(*lay->parts));
        }
        lay->parts[lay->nparts++] = (onnx_wire_part){kind, (size_t)(field - buf), (size_t)(pl - buf), n};
        lay->count[kind]++;
        lay->split_bytes += (size_t)(p - field);
    }
    return true;
bad:
    onnx_wire_layout_free(lay);
    return false;
}

/* The model's bytes without the split graph fields (the graph's length re-encoded, everything
 * else verbatim); heap, its size in *out_len. */
static uint8_t *strip(const uint8_t *buf, size_t len, const onnx_wire_layout *lay, size_t *out_len) {
    size_t glen = lay->graph_len - lay->split_bytes;
    size_t head = lay->graph_field, tail = len - (lay->graph_off + lay->graph_len);
    /* the graph field's key: from the field's start up to its length varint */
    size_t klen = 0;
    while (buf[lay->graph_field + klen] & 0x80) klen++;
    klen++;
    uint8_t *out = gr_xmalloc(head + klen + varint_size(glen) + glen + tail), *o = out;
    memcpy(o, buf, head + klen);
    o = varint_put(o + head + klen, glen);
    const uint8_t *g = buf + lay->graph_off, *gend = g + lay->graph_len;
    for (size_t i = 0; i < lay->nparts; i++) {
        const uint8_t *fstart = buf + lay->parts[i].field;
        memcpy(o, g, (size_t)(fstart - g));
        o += fstart - g;
        g = buf + lay->parts[i].off + lay->parts[i].len;
    }
    memcpy(o, g, (size_t)(gend - g));
    o += gend - g;
    memcpy(o, gend, tail);
    o += tail;
    *out_len = (size_t)(o - out);
    return out;
}

/* protobuf-c's allocations of the split parts: a large one (an initializer's raw_data) 64-byte
 * aligned, as a tensor's data, so the importer takes it instead of copying it again
 * (onnx_tensor_take_proto). No transparent huge pages: with the kernel's default defrag
 * (madvise) a hinted fault may compact memory on the spot, which made R3D-18's graft build
 * take 0.21-0.44 s (system time) against a steady 0.24-0.25 s on 4 KiB pages. All come from
 * the malloc family: free_unpacked's free() fits. */
static void *part_alloc(void *u, size_t n) {
    (void)u;
    if (n < 4096) return malloc(n);
    void *p = aligned_alloc(64, (n + 63) / 64 * 64);
#ifdef MADV_POPULATE_WRITE
    /* its pages faulted in by one call rather than one exception each as the bytes are copied
     * in (the kernel's page allocation stays; a VM's exception costs most: R3D-18's 133 MB
     * copy took 78 -> 62 ms of CPU); the bytes will be written at once anyway. A kernel
     * before 5.14 refuses the advice: then they fault as before. */
    size_t page = (size_t)sysconf(_SC_PAGESIZE), lo = ((uintptr_t)p + page - 1) / page * page, hi = ((uintptr_t)p + n) / page * page;
    if (p && hi > lo + 16 * page) madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE);
#endif
    return p;
}
static void part_free(void *u, void *p) {
    (void)u;
    free(p);
}
static ProtobufCAllocator PART_ALLOC = {part_alloc, part_free, NULL};

Onnx__ModelProto *onnx_wire_unpack_model(const uint8_t *buf, size_t len, onnx_wire_release release,
                                         void *arg) {
    onnx_wire_layout lay;
    if (!onnx_wire_split(buf, len, &lay)) return NULL;
    size_t slen = 0;
    uint8_t *s = strip(buf, len, &lay, &slen);
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, slen, s);
    free(s);
    if (!m || !m->graph) goto fail;
    Onnx__GraphProto *g = m->graph;
    for (int k = 0; k < ONNX_WIRE_KINDS; k++) {
        if (*(size_t *)((char *)g + SPLIT[k].count)) goto fail;
        if (!lay.count[k]) continue;
        /* protobuf-c's default allocator is malloc: free_unpacked frees these arrays and each
         * message in them as if it had unpacked them itself */
        void **arr = calloc(lay.count[k], sizeof(*arr));
        if (!arr) goto fail;
        *(void ***)((char *)g + SPLIT[k].arr) = arr;
    }
    for (size_t i = 0; i < lay.nparts; i++) {
        const onnx_wire_part *pt = &lay.parts[i];
        ProtobufCMessage *msg = protobuf_c_message_unpack(SPLIT[pt->kind].desc, &PART_ALLOC, pt->len, buf + pt->off);
        if (!msg) goto fail;
        size_t *count = (size_t *)((char *)g + SPLIT[pt->kind].count);
        (*(void ***)((char *)g + SPLIT[pt->kind].arr))[(*count)++] = msg;
        if (release) release(arg, pt->off + pt->len);
    }
    onnx_wire_layout_free(&lay);
    return m;
fail:
    if (m) onnx__model_proto__free_unpacked(m, NULL);
    onnx_wire_layout_free(&lay);
    return NULL;
}
