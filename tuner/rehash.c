/*
 * rehash.c - proving measurements unchanged across kernel text edits (see
 * rehash.h).
 */
#include "rehash.h"

#include <stdlib.h>
#include <string.h>

#include "db/restamp.h"
#include "kernels/build.h"
#include "runtime/api/validators.h"
#include "runtime/base/parallel.h"
#include "runtime/base/sha256.h"
#include "runtime/gpu/jit.h"

typedef enum verdict { V_CURRENT, V_SAME_CODE, V_CODE_CHANGED, V_OTHER_TEXT, V_OTHER_COMPILER, V_FAILED } verdict;

typedef struct group_job {
    const mt_stamp_group *g;
    mt_variant variant;
    mt_target target;
    char now[65];        /* today's hash of the variant's text */
    char *old_text;      /* the tree's text (its hash is the rows') */
    verdict v;
    char why[512];
} group_job;

/* One compiler (and JIT, no disk cache) per arch the rows name; NULL past
 * MAX_ARCHS of them. */
typedef struct arch_jit {
    char arch[32];
    char version[64];    /* "" when this host cannot compile for it */
    mt_backend *backend;
    mt_jit *jit;
} arch_jit;

enum { MAX_ARCHS = 16 };

typedef struct rehash_ctx {
    group_job *jobs;
    arch_jit *jits;
    int n_jits;
} rehash_ctx;

static arch_jit *jit_for(rehash_ctx *c, const char *arch) {
    for (int i = 0; i < c->n_jits; i++)
        if (strcmp(c->jits[i].arch, arch) == 0) return &c->jits[i];
    if (c->n_jits == MAX_ARCHS) return NULL;
    arch_jit *a = &c->jits[c->n_jits++];
    memset(a, 0, sizeof *a);
    snprintf(a->arch, sizeof a->arch, "%s", arch);
    if (mt_backend_open_for_arch(arch, &a->backend) != MT_OK ||
        mt_backend_compiler_version(a->backend, a->version, sizeof a->version) != MT_OK ||
        mt_jit_create(a->backend, "", &a->jit) != MT_OK)
        a->version[0] = '\0';
    mt_clear_error();
    return a;
}

static void hash_text(const char *text, char hex[65]) {
    uint8_t digest[32];
    mt_sha256_digest(text, strlen(text), digest);
    mt_sha256_hex(digest, hex);
}

/* What can be settled without compiling: today's text, the tree's, the
 * compiler.  Leaves V_SAME_CODE for the groups to compile. */
static void classify(rehash_ctx *c, mt_validator *val, const char *old_tree, group_job *j) {
    const mt_stamp_group *g = j->g;
    const mt_family *f = mt_family_find(g->family);
    if (!f || mt_variant_parse(f, g->params, &j->variant) != MT_OK || mt_target_for_arch(g->arch, &j->target) != MT_OK ||
        mt_validator_source_hash(val, &j->variant, &g->s, &j->target, j->now) != MT_OK) {
        snprintf(j->why, sizeof j->why, "cannot compose today's text: %s",
                 f ? mt_last_error() : "the kernel family is unknown to this build");
        mt_clear_error();
        j->v = V_FAILED;
        return;
    }
    if (strcmp(j->now, g->source_hash) == 0) {
        j->v = V_CURRENT;
        return;
    }
    const arch_jit *a = jit_for(c, g->arch);
    if (!a || !a->version[0] || strcmp(a->version, g->compiler_version) != 0) {
        snprintf(j->why, sizeof j->why, "measured with %s, this host compiles %s with %s", g->compiler_version,
                 g->arch, a && a->version[0] ? a->version : "nothing");
        j->v = V_OTHER_COMPILER;
        return;
    }
    char old_hash[65];
    if (mt_build_source_in(&j->variant, &g->s, &j->target, old_tree, &j->old_text) != MT_OK) {
        snprintf(j->why, sizeof j->why, "the rows' text is not the tree's (%s)", mt_last_error());
        mt_clear_error();
        j->v = V_OTHER_TEXT;
        return;
    }
    hash_text(j->old_text, old_hash);
    if (strcmp(old_hash, g->source_hash) != 0) {
        snprintf(j->why, sizeof j->why, "measured from %.12s, the tree's text is %.12s", g->source_hash, old_hash);
        free(j->old_text);
        j->old_text = NULL;
        j->v = V_OTHER_TEXT;
        return;
    }
    j->v = V_SAME_CODE; /* until the compilers say otherwise */
}

/* Compiles group i's variant from both texts and compares the code
 * (mt_parallel_for: the JIT is thread-safe). */
static void compare_one(void *ctx, int i) {
    rehash_ctx *c = ctx;
    group_job *j = &c->jobs[i];
    if (j->v != V_SAME_CODE) return;
    mt_jit *jit = NULL;
    for (int k = 0; k < c->n_jits; k++)
        if (strcmp(c->jits[k].arch, j->g->arch) == 0) jit = c->jits[k].jit;
    char *now_text = NULL;
    const mt_code_object *old_obj = NULL, *now_obj = NULL;
    mt_status st = mt_build_compile_text(jit, &j->variant, &j->g->s, &j->target, j->old_text, NULL, 0, &old_obj, NULL);
    if (st == MT_OK) st = mt_build_source(&j->variant, &j->g->s, &j->target, &now_text);
    if (st == MT_OK) st = mt_build_compile_text(jit, &j->variant, &j->g->s, &j->target, now_text, NULL, 0, &now_obj, NULL);
    free(now_text);
    if (st != MT_OK) {
        /* a failure message is per thread: copied here, before the next job */
        snprintf(j->why, sizeof j->why, "compile failed: %.400s", mt_last_error());
        mt_clear_error();
        j->v = V_FAILED;
    } else if (old_obj->size != now_obj->size || memcmp(old_obj->code, now_obj->code, old_obj->size) != 0) {
        snprintf(j->why, sizeof j->why, "the code differs (%zu -> %zu bytes)", old_obj->size, now_obj->size);
        j->v = V_CODE_CHANGED;
    }
}

static const char *verdict_name(verdict v) {
    static const char *const names[] = {"current", "same code", "code changed", "other text", "other compiler",
                                        "failed"};
    return names[v];
}

mt_status mt_rehash(const char *db_path, const char *old_tree, int threads, int dry_run, int verbose, FILE *log,
                    mt_rehash_report *r) {
    memset(r, 0, sizeof *r);
    /* read-only while proving: a file with nothing to move is not touched
     * (opening for writing would migrate an older schema in place) */
    mt_db *db = NULL;
    mt_status st = mt_db_open(db_path, MT_DB_READ, &db);
    if (st != MT_OK) return st;
    mt_stamp_group *groups = NULL;
    int n = 0;
    st = mt_db_stamp_groups(db, &groups, &n, &r->skipped_rows);
    mt_db_close(db);
    if (st != MT_OK) return st;
    rehash_ctx c = {.jobs = calloc((size_t)n + 1, sizeof *c.jobs), .jits = calloc(MAX_ARCHS, sizeof *c.jits)};
    mt_validator *val = malloc(sizeof *val);
    char (*new_hash)[65] = calloc((size_t)n + 1, sizeof *new_hash);
    if (!c.jobs || !c.jits || !val || !new_hash) {
        st = mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
        goto out;
    }
    mt_validator_init(val);
    for (int i = 0; i < n; i++) {
        c.jobs[i].g = &groups[i];
        classify(&c, val, old_tree, &c.jobs[i]);
    }
    mt_parallel_for(n, threads > 0 ? threads : 1, compare_one, &c);
    r->groups = n;
    for (int i = 0; i < n; i++) {
        group_job *j = &c.jobs[i];
        switch (j->v) {
        case V_CURRENT: r->current++; break;
        case V_SAME_CODE:
            r->restamped++, r->rows_restamped += j->g->rows;
            memcpy(new_hash[i], j->now, 65);
            break;
        case V_CODE_CHANGED: r->code_changed++; break;
        case V_OTHER_TEXT: r->other_text++; break;
        case V_OTHER_COMPILER: r->other_compiler++; break;
        case V_FAILED: r->failed++; break;
        }
        if (log && (verbose || j->v == V_CODE_CHANGED || j->v == V_FAILED))
            fprintf(log, "%-14s %s %s page %d %s/%s: %s (%d rows)%s%s\n", verdict_name(j->v), j->g->arch,
                    j->g->family, j->g->s.page_size, mt_dtype_name(j->g->s.q_dtype), mt_dtype_name(j->g->s.kv_dtype),
                    j->g->params, j->g->rows, j->why[0] ? ": " : "", j->why);
    }
    if (!dry_run && r->restamped > 0) {
        int rows = 0;
        st = mt_db_open(db_path, MT_DB_WRITE, &db);
        if (st == MT_OK) st = mt_db_restamp(db, groups, (const char(*)[65])new_hash, n, &rows);
        if (st == MT_OK) r->rows_restamped = rows;
        if (st == MT_OK) st = mt_validator_recompute_choices(db);
        if (db) mt_db_close(db);
    }
out:
    for (int i = 0; c.jobs && i < n; i++) free(c.jobs[i].old_text);
    for (int i = 0; c.jits && i < c.n_jits; i++) {
        mt_jit_destroy(c.jits[i].jit);
        mt_backend_close(c.jits[i].backend);
    }
    free(c.jobs);
    free(c.jits);
    free(val);
    free(new_hash);
    free(groups);
    return st;
}
