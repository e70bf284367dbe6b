/*
 * lookup_notes.c - lookup's notes beside the dispatcher's answer
 * (lookup_notes.h).
 */
#include "lookup_notes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"

int mt_lookup_target(const char *cmd, const char *arch, mt_target *t, int *cus, double *memory_gbps) {
    if (arch) {
        if (mt_target_for_arch(arch, t) != MT_OK) {
            mt_cli_error("%s: %s", cmd, mt_last_error());
            return 2;
        }
    } else {
        mt_backend *b = NULL;
        mt_device_info info = {0};
        if (mt_backend_discover(&b) != MT_OK || mt_backend_device_info(b, 0, &info) != MT_OK) {
            mt_cli_error("%s: give --arch (no GPU to ask: %s)", cmd, mt_last_error());
            mt_backend_close(b);
            return 1;
        }
        mt_backend_close(b);
        mt_target_from_device(&info, t);
        if (!*cus) *cus = info.compute_units;
        if (memory_gbps && *memory_gbps <= 0) *memory_gbps = mt_device_memory_gbps(&info);
    }
    if (!*cus) *cus = 132;
    return 0;
}

void mt_lookup_dbs_find(const char *user, const char *system_db, mt_lookup_dbs *out) {
    char user_default[1024], sys_default[1024];
    mt_db_default_paths(user_default, sizeof user_default, sys_default, sizeof sys_default);
    int env_user = 0, env_sys = 0;  /* a path someone set must exist */
    mt_db_env_required(&env_user, &env_sys);
    snprintf(out->user, sizeof out->user, "%s", user ? user : user_default);
    snprintf(out->system, sizeof out->system, "%s", system_db ? system_db : sys_default);
    out->user_required = user != NULL || env_user;
    out->system_required = system_db != NULL || env_sys;
}

mt_status mt_lookup_parse_max_distance(const char *cmd, const char *text, double *out) {
    char *end = NULL;
    double v = strtod(text, &end);
    if (!end || end == text || *end || !(v >= 0) || v > 1000)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "%s: --max-distance wants a number from 0 to 1000, got '%s'", cmd,
                       text);
    *out = v;
    return MT_OK;
}

static const char *field_name(mt_key_field f) {
    static const char *const names[] = {"q/kv dtypes", "D/Dl", "page size", "head count", "Sq", "mask"};
    return names[f];
}

static void field_text(mt_key_field f, const mt_problem_key *k, char *buf, size_t size) {
    switch (f) {
    case MT_FIELD_DTYPES:
        snprintf(buf, size, "%s/%s", mt_dtype_name(k->s.q_dtype), mt_dtype_name(k->s.kv_dtype));
        break;
    case MT_FIELD_DIMS: snprintf(buf, size, "%d/%d", k->s.d, k->s.dl); break;
    case MT_FIELD_PAGE_SIZE: snprintf(buf, size, "%d", k->s.page_size); break;
    case MT_FIELD_HEADS: snprintf(buf, size, "%d", k->n_heads); break;
    case MT_FIELD_SQ: snprintf(buf, size, "%d", k->sq); break;
    case MT_FIELD_MASK: snprintf(buf, size, "%s", k->lengths); break;
    }
}

static int field_equal(mt_key_field f, const mt_problem_key *a, const mt_problem_key *b) {
    switch (f) {
    case MT_FIELD_DTYPES: return a->s.q_dtype == b->s.q_dtype && a->s.kv_dtype == b->s.kv_dtype;
    case MT_FIELD_DIMS: return a->s.d == b->s.d && a->s.dl == b->s.dl;
    case MT_FIELD_PAGE_SIZE: return a->s.page_size == b->s.page_size;
    case MT_FIELD_HEADS: return a->n_heads == b->n_heads;
    case MT_FIELD_SQ: return a->sq == b->sq;
    case MT_FIELD_MASK: return strcmp(a->lengths, b->lengths) == 0;
    }
    return 0;
}

void mt_lookup_missing(const mt_choice *c, int n, const mt_problem_key *k, const mt_key_field *fields, int n_fields,
                       char *buf, size_t size) {
    snprintf(buf, size, "no entry at all for this architecture");
    if (n <= 0) return;
    int *match = malloc(sizeof *match * (size_t)n);
    if (!match) {
        snprintf(buf, size, "(out of host memory to say what is missing)");
        return;
    }
    int of_kind = 0;
    for (int i = 0; i < n; i++) of_kind += match[i] = strcmp(c[i].key.kind, k->kind) == 0;
    if (!of_kind) { /* the fields' "so far: none" would hide why */
        snprintf(buf, size, "missing: no %s entry for this architecture (%d entries of other kinds)", k->kind, n);
        free(match);
        return;
    }
    for (int f = 0; f < n_fields; f++) {
        char have[256] = "";
        int any = 0;
        for (int i = 0; i < n; i++) {
            if (!match[i]) continue;
            char v[64], quoted[70];
            field_text(fields[f], &c[i].key, v, sizeof v);
            match[i] = field_equal(fields[f], &c[i].key, k);
            any |= match[i];
            snprintf(quoted, sizeof quoted, " %s,", v);
            if (!strstr(have, quoted) && strlen(have) + strlen(quoted) < sizeof have) strcat(have, quoted);
        }
        if (any) continue;
        char mine[64];
        field_text(fields[f], k, mine, sizeof mine);
        if (have[0]) have[strlen(have) - 1] = '\0'; /* the last comma */
        snprintf(buf, size, "missing: no entry with %s %s (the entries that match so far have:%s)",
                 field_name(fields[f]), mine, have[0] ? have : " none");
        free(match);
        return;
    }
    free(match);
    snprintf(buf, size, "no entry for this kind of problem");
}
