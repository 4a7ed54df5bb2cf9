/* The explorer page of graft explore: one self-contained HTML file. The layer graph is laid
 * out here by Graphviz's dot (libgvc, plugins linked in, no config file read) and embedded as
 * SVG; the model document goes in as inline JSON; the page's script and style come from
 * tools/explore_page.html, compiled in (build/gen/explore_page.h). Nothing is fetched. */
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

/* Lays out the layers (nodes, filled by region) and their inputs (edges); SVG text or NULL. */
static char *layout_svg(json_t *doc, unsigned *len) {
    GVC_t *gvc = gvContextPlugins(builtins, 0);
    Agraph_t *g = agopen(s("graft"), Agdirected, NULL);
    agattr(g, AGRAPH, s("rankdir"), s("TB"));
    agattr(g, AGRAPH, s("nodesep"), s("0.15"));
    agattr(g, AGRAPH, s("ranksep"), s("0.25"));
    agattr(g, AGRAPH, s("bgcolor"), s("transparent"));
    size_t nl = json_array_size(json_object_get(doc, "layers"));
    /* big graphs: straight edges and fewer crossing-reduction passes keep dot's time near
     * linear (a model of 10k layers is mostly a chain) */
    if (nl > 2000) {
        agattr(g, AGRAPH, s("splines"), s("line"));
        agattr(g, AGRAPH, s("mclimit"), s("0.05"));
        agattr(g, AGRAPH, s("nslimit"), s("2"));
        agattr(g, AGRAPH, s("nslimit1"), s("2"));
        agattr(g, AGRAPH, s("remincross"), s("false"));
    }
    agattr(g, AGNODE, s("shape"), s("box"));
    agattr(g, AGNODE, s("style"), s("filled,rounded"));
    agattr(g, AGNODE, s("fontname"), s("Helvetica"));
    agattr(g, AGNODE, s("fontsize"), s("10"));
    agattr(g, AGNODE, s("height"), s("0.25"));
    agattr(g, AGNODE, s("margin"), s("0.05,0.02"));
    agattr(g, AGNODE, s("fillcolor"), s(HOST_COLOR));
    agattr(g, AGNODE, s("color"), s("#555555"));
    agattr(g, AGNODE, s("penwidth"), s("1"));
    agattr(g, AGNODE, s("id"), s(""));
    agattr(g, AGNODE, s("tooltip"), s(""));
    agattr(g, AGEDGE, s("arrowsize"), s("0.5"));
    json_t *regions = json_object_get(doc, "regions");
    Agnode_t **nodes = calloc(nl + 1, sizeof(*nodes));
    for (size_t i = 0; i < nl; i++) {
        json_t *l = json_array_get(json_object_get(doc, "layers"), i);
        char id[32], tip[512];
        snprintf(id, sizeof id, "L%zu", i);
        nodes[i] = agnode(g, id, 1);
        const char *name = json_string_value(json_object_get(l, "name"));
        agsafeset(nodes[i], s("label"), s(name ? name : id), s(""));
        agsafeset(nodes[i], s("id"), id, s(""));
        const char *region = json_string_value(json_object_get(l, "region"));
        snprintf(tip, sizeof tip, "%s: %s (%s)", name ? name : id, json_string_value(json_object_get(l, "op")),
                 region ? region : "host");
        agsafeset(nodes[i], s("tooltip"), tip, s(""));
        if (region) {
            size_t r;
            json_t *rj;
            json_array_foreach(regions, r, rj) {
                const char *sym = json_string_value(json_object_get(rj, "symbol"));
                if (sym && strcmp(sym, region) == 0) agsafeset(nodes[i], s("fillcolor"), s(PALETTE[r % NPALETTE]), s(""));
            }
        } else {
            agsafeset(nodes[i], s("color"), s("#c0392b"), s(""));
            agsafeset(nodes[i], s("penwidth"), s("2"), s(""));
        }
    }
    for (size_t i = 0; i < nl; i++) {
        json_t *ins = json_object_get(json_array_get(json_object_get(doc, "layers"), i), "inputs");
        size_t k;
        json_t *x;
        json_array_foreach(ins, k, x) {
            json_int_t j = json_integer_value(x);
            if (j >= 0 && (size_t)j < nl) agedge(g, nodes[j], nodes[i], NULL, 1);
        }
    }
    char *out = NULL;
    if (gvLayout(gvc, g, "dot") == 0) {
        char *data = NULL;
        if (gvRenderData(gvc, g, "svg", &data, len) == 0 && data) {
            out = malloc(*len + 1);
            memcpy(out, data, *len);
            out[*len] = 0;
        }
        gvFreeRenderData(data);
        gvFreeLayout(gvc, g);
    }
    free(nodes);
    agclose(g);
    gvFreeContext(gvc);
    return out;
}

/* The SVG without its XML prologue and DOCTYPE (an inline <svg> element). */
static const char *svg_element(const char *svg) {
    const char *p = strstr(svg, "<svg");
    return p ? p : svg;
}

bool explore_write_html(json_t *doc, const char *path) {
    json_t *pal = json_array();
    for (size_t i = 0; i < NPALETTE; i++) json_array_append_new(pal, json_string(PALETTE[i]));
    json_object_set_new(doc, "palette", pal);
    json_object_set_new(doc, "host_color", json_string(HOST_COLOR));
    unsigned svglen = 0;
    char *svg = layout_svg(doc, &svglen);
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
        fputs(svg_element(svg), f);
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
