/* Where the tests find cached models: KEY from the environment, else from
 * build/third_party/models.env (written by scripts/fetch_models.sh). */
#ifndef GRAFT_TESTS_MODELS_ENV_H
#define GRAFT_TESTS_MODELS_ENV_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A malloc'd path (the caller frees it), or NULL when KEY is not cached. */
static inline char *model_path(const char *key) {
    const char *v = getenv(key);
    if (v && *v) return strdup(v);
    FILE *f = fopen("build/third_party/models.env", "r");
    if (!f) return NULL;
    char line[4096], *out = NULL;
    size_t kl = strlen(key);
    while (!out && fgets(line, sizeof line, f))
        if (strncmp(line, key, kl) == 0 && line[kl] == '=') {
            line[strcspn(line, "\n")] = '\0';
            out = strdup(line + kl + 1);
        }
    fclose(f);
    return out;
}

#endif
