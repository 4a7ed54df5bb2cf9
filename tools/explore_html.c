/* The explorer page of graft explore: one self-contained HTML file. The layer graph is laid
 * out here by Graphviz's dot (libgvc, plugins linked in, no config file read) and embedded as
 * SVG (one element per block of layers); the model document goes in as inline JSON; the page's script and style come from
 * tools/explore_page.html, compiled in (build/gen/explore_page.h). Nothing is fetched. A layer
 * folded into another (inspect/inspect.h) and the weights are no nodes: the page shows them in the
 * details of the layer that computes or reads them. */
#include <graphviz/gvc.h>
#include <graphviz/gvplugin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "explore_page.h"
#include "tools/cmd_inspect.h"

extern gvplugin_library_t gvplugin_dot_layout_LTX_library;
extern gvplugin_library_t gvplugin_core_LTX_library;

static lt_symlist_t builtins[] = {
    {"gvplugin_dot_layout_LTX_library", (void *)&gvplugin_dot_layout_LTX_library},
    {"gvplugin_core_LTX_library", (void *)&gvplugin_core_LTX_library},
    {0, 0},
};

/* Region fills (colour-blind friendly, light enough for black text); host ops get their own. */
static const char *const PALETTE[] = {"#9ecae9", "#a1d99b", "#fdd0a2", "#dadaeb", "#c7e9c0", "#fcbba1",
                                      "#bcbddc", "#fdae6b", "#9e9ac8", "#74c476"};
#define NPALETTE (sizeof(PALETTE) / sizeof(PALETTE[0]))
#define HOST_COLOR "#f0f0f0"

static char *s(const char *x) { return (char *)x; }  /* cgraph takes char * it does not change */

/* dot's time grows much faster than the graph (a 2,500-layer chain took ~18 s, 1,000 ~1 s):
 * the layers are laid out in blocks of consecutive layers (model order), one SVG each, stacked
 * on the page. An input from an earlier block is drawn as a small "from" node naming it. */
#define BLOCK 400

static void set_common_attrs(Agraph_t *g) {
    agattr(g, AGRAPH, s("rankdir"), s("TB"));
    agattr(g, AGRAPH, s("nodesep"), s("0.15"));
    agattr(g, AGRAPH, s("ranksep"), s("0.25"));
    agattr(g, AGRAPH, s("bgcolor"), s("transparent"));
    agattr(g, AGNODE, s("shape"), s("box"));
    agattr(g, AGNODE, s("style"), s("filled,rounded"));
    agattr(g, AGNODE, s("fontname"), s("Helvetica"));
    agattr(g, AGNODE, s("fontsize"), s("10"));
    agattr(g, AGNODE, s("fontcolor"), s("#000000"));
    agattr(g, AGNODE, s("height"), s("0.25"));
    agattr(g, AGNODE, s("margin"), s("0.05,0.02"));
    agattr(g, AGNODE, s("fillcolor"), s(HOST_COLOR));
    agattr(g, AGNODE, s("color"), s("#555555"));
    agattr(g, AGNODE, s("penwidth"), s("1"));
    agattr(g, AGNODE, s("id"), s(""));
    agattr(g, AGEDGE, s("arrowsize"), s("0.5"));
    agattr(g, AGEDGE, s("style"), s("solid"));
}

/* Lays out layers [lo, hi) (nodes, filled by region) and their inputs (edges); appends the SVG
 * element to *out. False when dot fails. */
static bool layout_block(GVC_t *gvc, json_t *doc, size_t lo, size_t hi, size_t block, char **out, size_t *len) {
    json_t *layers = json_object_get(doc, "layers"), *regions = json_object_get(doc, "regions");
    Agraph_t *g = agopen(s("graft"), Agdirected, NULL);
    set_common_attrs(g);
    Agnode_t **nodes = calloc(hi - lo + 1, sizeof(*nodes));
    for (size_t i = lo; i < hi; i++) {
        json_t *l = json_array_get(layers, i);
        if (json_object_get(l, "folded_into")) continue;  /* shown in its host layer's details */
        char id[32];
        snprintf(id, sizeof id, "L%zu", i);
        Agnode_t *n = nodes[i - lo] = agnode(g, id, 1);
        const char *name = json_string_value(json_object_get(l, "name"));
        agsafeset(n, s("label"), s(name ? name : id), s(""));
        agsafeset(n, s("id"), id, s(""));
        const char *region = json_string_value(json_object_get(l, "region"));
        if (region) {
            size_t r;
            json_t *rj;
            json_array_foreach(regions, r, rj) {
                const char *sym = json_string_value(json_object_get(rj, "symbol"));
                if (sym && strcmp(sym, region) == 0) agsafeset(n, s("fillcolor"), s(PALETTE[r % NPALETTE]), s(""));
            }
        } else {
            agsafeset(n, s("color"), s("#c0392b"), s(""));
            agsafeset(n, s("penwidth"), s("2"), s(""));
        }
    }
    for (size_t i = lo; i < hi; i++) {
        size_t k;
        json_t *x;
        json_array_foreach(json_object_get(json_array_get(layers, i), "inputs"), k, x) {
            json_int_t j = json_integer_value(x);
            if (j < 0 || (size_t)j >= json_array_size(layers) || !nodes[i - lo]) continue;
            if (json_object_get(json_array_get(layers, (size_t)j), "folded_into")) continue;
            Agnode_t *src;
            if ((size_t)j >= lo && (size_t)j < hi) {
                src = nodes[j - (json_int_t)lo];
            } else {
                char id[48], label[300];
                snprintf(id, sizeof id, "X%lldb%zu", (long long)j, block);
                snprintf(label, sizeof label, "from %s", json_string_value(json_object_get(json_array_get(layers, (size_t)j), "name")));
                src = agnode(g, id, 1);
                agsafeset(src, s("id"), id, s(""));
                agsafeset(src, s("label"), label, s(""));
                agsafeset(src, s("style"), s("dashed,rounded"), s(""));
                agsafeset(src, s("fontcolor"), s("#58627a"), s(""));
            }
            Agedge_t *e = agedge(g, src, nodes[i - lo], NULL, 1);
            if (agnameof(src)[0] == 'X') agsafeset(e, s("style"), s("dashed"), s(""));
        }
    }
    bool ok = false;
    if (gvLayout(gvc, g, "dot") == 0) {
        char *data = NULL;
        unsigned n = 0;
        if (gvRenderData(gvc, g, "svg", &data, &n) == 0 && data) {
            const char *el = strstr(data, "<svg");
            size_t m = el ? n - (size_t)(el - data) : 0;
            *out = realloc(*out, *len + m + 1);
            memcpy(*out + *len, el, m);
            *len += m;
            (*out)[*len] = 0;
            ok = el != NULL;
        }
        gvFreeRenderData(data);
        gvFreeLayout(gvc, g);
    }
    free(nodes);
    agclose(g);
    return ok;
}

/* Every block's SVG, in order; NULL when dot fails. */
static char *layout_svg(json_t *doc) {
    GVC_t *gvc = gvContextPlugins(builtins, 0);
    size_t nl = json_array_size(json_object_get(doc, "layers")), len = 0;
    char *out = calloc(1, 1);
    bool ok = true;
    for (size_t lo = 0, b = 0; ok && lo < nl; lo += BLOCK, b++) ok = layout_block(gvc, doc, lo, lo + BLOCK < nl ? lo + BLOCK : nl, b, &out, &len);
    gvFreeContext(gvc);
    if (!ok) {
        free(out);
        return NULL;
    }
    return out;
}

bool explore_write_html(json_t *doc, const char *path) {
    json_t *pal = json_array();
    for (size_t i = 0; i < NPALETTE; i++) json_array_append_new(pal, json_string(PALETTE[i]));
    json_object_set_new(doc, "palette", pal);
    json_object_set_new(doc, "host_color", json_string(HOST_COLOR));
    char *svg = layout_svg(doc);
    if (!svg) {
        fprintf(stderr, "error: %s: Graphviz could not lay out the graph\n", path);
        return false;
    }
    /* "</" escaped: the JSON cannot close its <script> element */
    char *data = json_dumps(doc, JSON_COMPACT | JSON_ESCAPE_SLASH);
    const char *page = EXPLORE_PAGE;
    const char *m_svg = strstr(page, "<!--GRAFT_SVG-->"), *m_data = strstr(page, "/*GRAFT_DATA*/");
    FILE *f = fopen(path, "w");
    bool ok = f && data && m_svg && m_data && m_svg < m_data;
    if (ok) {
        fwrite(page, 1, (size_t)(m_svg - page), f);
        fputs(svg, f);
        const char *after_svg = m_svg + strlen("<!--GRAFT_SVG-->");
        fwrite(after_svg, 1, (size_t)(m_data - after_svg), f);
        fputs(data, f);
        fputs(m_data + strlen("/*GRAFT_DATA*/"), f);
    }
    if (f && fclose(f) != 0) ok = false;
    if (!ok) fprintf(stderr, "error: %s: cannot write the page\n", path);
    free(data);
    free(svg);
    return ok;
}
