/*
 * stale.c - `mla-tune show --stale` (see stale.h).  Reads both DBs as the
 * runtime does and judges every choice of each with the runtime's own check
 * (mt_validator_check), against the compiler this host would build with
 * for its arch: where no such compiler is found (no NVRTC here), the
 * compiler is not compared and the listing says so.
 */
#define _GNU_SOURCE
#include "stale.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "json.h"
#include "runtime/api/validators.h"

typedef struct judged {
    mt_choice choice;
    mt_choice_source from;
    mt_validity validity;
    char why[200];
} judged;

typedef struct stale_scan {
    mt_validator validator;
    char unchecked[8][32];   /* archs with no compiler here */
    int n_unchecked;
    judged *list;
    int n, cap;
} stale_scan;

/* The compiler this host would use for `arch`, asked once per arch; an
 * arch with none here is listed as not compared. */
static void learn_compiler(stale_scan *s, const char *arch) {
    for (int i = 0; i < s->validator.n_compilers; i++)
        if (strcmp(s->validator.compilers[i].arch, arch) == 0) return;
    if (!mt_validator_learn_compiler(&s->validator, arch) && s->n_unchecked < 8)
        snprintf(s->unchecked[s->n_unchecked++], sizeof s->unchecked[0], "%s", arch);
}

/* An mt_choice_keep_fn that keeps everything and remembers each verdict. */
static int judge(const mt_choice *c, mt_choice_source from, void *ctx) {
    stale_scan *s = ctx;
    learn_compiler(s, c->arch);
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 64;
        judged *grown = realloc(s->list, sizeof *grown * (size_t)cap);
        if (!grown) return 1;  /* not listed; the count below says how many were judged */
        s->list = grown, s->cap = cap;
    }
    judged *j = &s->list[s->n++];
    j->choice = *c;
    j->from = from;
    j->validity = mt_validator_check(&s->validator, c, j->why, sizeof j->why);
    return 1;
}

static void print_json(const stale_scan *s, int counts[4]) {
    printf("{\"stale\": [");
    int first = 1;
    for (int i = 0; i < s->n; i++) {
        const judged *j = &s->list[i];
        const mt_choice *c = &j->choice;
        if (j->validity != MT_STALE_SOURCES && j->validity != MT_STALE_COMPILER) continue;
        printf("%s{\"db\": \"%s\", \"arch\": ", first ? "" : ", ", j->from == MT_FROM_USER_DB ? "user" : "system");
        first = 0;
        mt_json_string(stdout, c->arch);
        printf(", \"compute_units\": %d, \"device\": ", c->compute_units);
        mt_json_string(stdout, c->device_name);
        printf(", \"heads\": %d, \"sq\": %d, \"page_size\": %d, \"q_dtype\": \"%s\", \"kv_dtype\": \"%s\", "
               "\"batch\": %d, \"seq_len\": %d, \"max_len\": %d, \"lengths\": ",
               c->key.n_heads, c->key.sq, c->key.s.page_size, mt_dtype_name(c->key.s.q_dtype),
               mt_dtype_name(c->key.s.kv_dtype), c->key.batch, c->key.seq_len, c->key.max_len);
        mt_json_string(stdout, c->key.lengths);
        printf(", \"family\": ");
        mt_json_string(stdout, c->family);
        printf(", \"params\": ");
        mt_json_params(stdout, c->params);
        printf(", \"validity\": \"%s\"", mt_validity_name(j->validity));
        const char *names[] = {"why", "source_hash", "compiler_version", "driver_version"};
        const char *values[] = {j->why, c->source_hash, c->compiler_version, c->driver_version};
        for (int k = 0; k < 4; k++) {
            printf(", \"%s\": ", names[k]);
            mt_json_string(stdout, values[k]);
        }
        printf("}");
    }
    printf("], \"valid\": %d, \"unknown\": %d, \"stale_sources\": %d, \"stale_compiler\": %d, "
           "\"compiler_unchecked\": [", counts[MT_VALID], counts[MT_VALIDITY_UNKNOWN], counts[MT_STALE_SOURCES],
           counts[MT_STALE_COMPILER]);
    for (int i = 0; i < s->n_unchecked; i++) {
        printf("%s", i ? ", " : "");
        mt_json_string(stdout, s->unchecked[i]);
    }
    printf("]}\n");
}

static void print_text(const stale_scan *s, int counts[4]) {
    int stale = counts[MT_STALE_SOURCES] + counts[MT_STALE_COMPILER];
    if (stale) printf("%-6s %-7s %4s %4s %3s %5s %6s %8s %8s  %s\n", "db", "arch", "CUs", "N", "Sq", "page", "batch",
                      "seq_len", "max_len", "variant: why the runtime ignores it");
    for (int i = 0; i < s->n; i++) {
        const judged *j = &s->list[i];
        const mt_choice *c = &j->choice;
        if (j->validity != MT_STALE_SOURCES && j->validity != MT_STALE_COMPILER) continue;
        printf("%-6s %-7s %4d %4d %3d %5d %6d %8d %8d  %s:%s\n%56s%s\n", j->from == MT_FROM_USER_DB ? "user" : "system",
               c->arch, c->compute_units, c->key.n_heads, c->key.sq, c->key.s.page_size, c->key.batch, c->key.seq_len,
               c->key.max_len, c->family, c->params, "", j->why);
    }
    printf("%d stale (%d: kernel sources changed, %d: another compiler), %d valid, %d without validators "
           "(written before schema 5: trusted)\n", stale, counts[MT_STALE_SOURCES], counts[MT_STALE_COMPILER],
           counts[MT_VALID], counts[MT_VALIDITY_UNKNOWN]);
    for (int i = 0; i < s->n_unchecked; i++)
        printf("compiler not compared for %s: no compiler for it on this host\n", s->unchecked[i]);
    if (stale) printf("a sweep of these keys on this build replaces them (mla-tune sweep --db ...)\n");
}

int mt_show_stale(const char *user_path, int user_required, const char *system_path, int system_required,
                  const char *arch, int json) {
    stale_scan *s = calloc(1, sizeof *s);
    if (!s) {
        mt_cli_error("show --stale: out of host memory");
        return 1;
    }
    mt_validator_init(&s->validator);
    mt_choice *c = NULL;
    mt_choice_source *src = NULL;
    int n = 0;
    if (mt_db_load_overlay_kept(user_path, user_required, system_path, system_required, arch, judge, s, &c, &src,
                                &n) != MT_OK) {
        mt_cli_error("show --stale: %s", mt_last_error());
        free(s->list);
        free(s);
        return 1;
    }
    int counts[4] = {0};
    for (int i = 0; i < s->n; i++) counts[s->list[i].validity]++;
    if (json) print_json(s, counts);
    else print_text(s, counts);
    free(c);
    free(src);
    free(s->list);
    free(s);
    return 0;
}
