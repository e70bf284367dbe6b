/* dumpsrc VARIANT VIEWS: the composed source of a decode variant for sm_90, defines first */
#include <stdio.h>
#include <stdlib.h>
#include "kernels/build.h"
#include "kernels/family.h"
int main(int argc, char **argv) {
    const mt_family *f = mt_family_find("mla_decode");
    mt_variant v; mt_target t; char *text = NULL;
    mt_problem_static s = {.d = 576, .dl = 512, .page_size = 64, .q_dtype = MT_BF16, .kv_dtype = MT_BF16, .views = atoi(argv[2])};
    if (mt_variant_parse(f, argv[1], &v) != MT_OK || mt_target_for_arch("sm_90", &t) != MT_OK) return 1;
    char storage[40][48]; const char *defs[40];
    int n = mt_variant_defines(&v, &s, storage, defs, 40);
    for (int i = 0; i < n; i++) { char *eq = strchr(defs[i], '='); if (eq) { *eq = ' '; } printf("#define %s\n", defs[i]); }
    if (mt_build_source(&v, &t, &text) != MT_OK) return 2;
    fputs(text, stdout);
    return 0;
}
