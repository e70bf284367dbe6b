/*
 * validators.c - a stored choice against the code this process would run
 * (see validators.h for the rule and why the driver is not compared).
 */
#include "validators.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/build.h"
#include "runtime/gpu/backend.h"

void mt_validator_init(mt_validator *v) { memset(v, 0, sizeof *v); }

void mt_validator_set_compiler(mt_validator *v, const char *arch, const char *version) {
    for (int i = 0; i < v->n_compilers; i++)
        if (strcmp(v->compilers[i].arch, arch) == 0) {
            snprintf(v->compilers[i].version, sizeof v->compilers[i].version, "%s", version);
            return;
        }
    if (v->n_compilers == MT_VALIDATOR_COMPILERS) return;  /* more archs than kept: not compared */
    snprintf(v->compilers[v->n_compilers].arch, sizeof v->compilers[0].arch, "%s", arch);
    snprintf(v->compilers[v->n_compilers].version, sizeof v->compilers[0].version, "%s", version);
    v->n_compilers++;
}

int mt_host_compiler_version(const char *arch, char *buf, size_t size) {
    buf[0] = '\0';
    mt_backend *b = NULL;
    if (mt_backend_open_for_arch(arch, &b) != MT_OK || mt_backend_compiler_version(b, buf, size) != MT_OK)
        buf[0] = '\0';
    mt_backend_close(b);
    mt_clear_error();
    return buf[0] != '\0';
}

int mt_validator_learn_compiler(mt_validator *v, const char *arch) {
    for (int i = 0; i < v->n_compilers; i++)
        if (strcmp(v->compilers[i].arch, arch) == 0) return v->compilers[i].version[0] != '\0';
    char version[64];
    int found = mt_host_compiler_version(arch, version, sizeof version);
    mt_validator_set_compiler(v, arch, version);
    return found;
}

static const char *compiler_for(const mt_validator *v, const char *arch) {
    for (int i = 0; i < v->n_compilers; i++)
        if (strcmp(v->compilers[i].arch, arch) == 0) return v->compilers[i].version;
    return "";
}

mt_status mt_validator_source_hash(mt_validator *v, const mt_variant *var, const mt_problem_static *s,
                                   const mt_target *t, char hex[65]) {
    const char *names[MT_MAX_SOURCES];
    int n = var->family->sources(var, s, t->warp_size, names);
    char key[400];
    int len = snprintf(key, sizeof key, "%s/%d/%s", t->arch, t->warp_size, var->family->name);
    for (int i = 0; i < n && len > 0 && (size_t)len < sizeof key; i++)
        len += snprintf(key + len, sizeof key - (size_t)len, ":%s", names[i]);
    int memo_ok = len > 0 && (size_t)len < sizeof key;  /* a key cut short is not remembered */
    for (int i = 0; memo_ok && i < v->n_memo; i++)
        if (strcmp(v->memo[i].key, key) == 0) {
            memcpy(hex, v->memo[i].hash, 65);
            return MT_OK;
        }
    mt_status st = mt_build_source_hash(var, s, t, hex);
    if (st == MT_OK && memo_ok && v->n_memo < MT_VALIDATOR_MEMO) {
        snprintf(v->memo[v->n_memo].key, sizeof v->memo[0].key, "%s", key);
        memcpy(v->memo[v->n_memo].hash, hex, 65);
        v->n_memo++;
    }
    return st;
}

/* The hash of the text `var` compiles from for `s` on `arch` in this build
 * (through the memo). */
static mt_status hash_now(mt_validator *v, const char *arch, const mt_variant *var, const mt_problem_static *s,
                          char now[65]) {
    mt_target t;
    mt_status st = mt_target_for_arch(arch, &t);
    return st == MT_OK ? mt_validator_source_hash(v, var, s, &t, now) : st;
}

mt_validity mt_validator_check(mt_validator *v, const mt_choice *c, char *why, size_t size) {
    char scratch[8];
    if (!why) why = scratch, size = sizeof scratch;
    why[0] = '\0';
    const char *compiler = compiler_for(v, c->arch);
    if (compiler[0] && c->compiler_version[0] && strcmp(compiler, c->compiler_version) != 0) {
        snprintf(why, size, "measured with %s, this build compiles with %s", c->compiler_version, compiler);
        return MT_STALE_COMPILER;
    }
    if (!c->source_hash[0]) {
        snprintf(why, size, "no validators (written before schema 5): trusted");
        return MT_VALIDITY_UNKNOWN;
    }
    const mt_family *f = mt_family_find(c->family);
    mt_variant var;
    char now[65];
    if (!f || mt_variant_parse(f, c->params, &var) != MT_OK || hash_now(v, c->arch, &var, &c->key.s, now) != MT_OK) {
        snprintf(why, size, "its kernel sources cannot be composed here: %s", mt_last_error());
        mt_clear_error();
        return MT_STALE_SOURCES;
    }
    if (strcmp(now, c->source_hash) != 0) {
        snprintf(why, size, "kernel sources changed since it was measured (%.12s, now %.12s)", c->source_hash, now);
        return MT_STALE_SOURCES;
    }
    return MT_VALID;
}

int mt_validator_row_usable(const char *arch, const mt_problem_static *s, const mt_variant *var,
                            const char *source_hash, void *validator) {
    char now[65];
    if (hash_now(validator, arch, var, s, now) != MT_OK) {
        mt_clear_error();
        return 0;
    }
    return strcmp(now, source_hash) == 0;
}

mt_status mt_validator_recompute_choices(mt_db *db) {
    mt_validator *v = malloc(sizeof *v);
    if (!v) return mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
    mt_validator_init(v);
    mt_status st = mt_db_recompute_choices_of(db, mt_validator_row_usable, v);
    free(v);
    return st;
}

int mt_validator_keep(const mt_choice *c, mt_choice_source from, void *validator) {
    mt_validator *v = validator;
    switch (mt_validator_check(v, c, NULL, 0)) {
    case MT_VALID: v->valid++; return 1;
    case MT_VALIDITY_UNKNOWN: v->unknown++; return 1;
    case MT_STALE_SOURCES: v->stale_sources++; break;
    case MT_STALE_COMPILER: v->stale_compiler++; break;
    }
    if (from == MT_FROM_USER_DB) v->stale_user++;
    else v->stale_system++;
    return 0;
}

const char *mt_validity_name(mt_validity s) {
    switch (s) {
    case MT_VALID: return "valid";
    case MT_VALIDITY_UNKNOWN: return "unknown";
    case MT_STALE_SOURCES: return "stale: sources";
    case MT_STALE_COMPILER: return "stale: compiler";
    }
    return "?";
}
