/*
 * validate.c - the checks every stored row passes before anything uses it.
 *
 * One set of checks for every way a row leaves a file: loading choices
 * (show, lookup, the runtime), deriving choices, and copying measurements
 * (export, import, merge).  Before, only loading checked, so import copied
 * a row such as tile_q=999 into the user DB, after which the whole user DB
 * failed to load: a file that cannot be read must not be able to spread.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "db_internal.h"
#include "kernels/mla_decode/mla_decode.h"
#include "kernels/mla_prefill/mla_prefill.h"

int db_text_fits(const char *text, size_t size) {
    size_t n = strnlen(text, size);
    if (n + 1 >= size) return 0;
    for (size_t i = 0; i < n; i++)
        if (text[i] < 0x20 || text[i] > 0x7e) return 0;
    return 1;
}

/* A key's length-mix name: shown and compared as text. */
static int lengths_text_ok(const char *text) { return db_text_fits(text, sizeof ((mt_problem_key *)0)->lengths); }

/* A prefill key's checks (kernels/mla_prefill/mla_prefill.h says what its
 * fields mean): NULL when it passes. */
static const char *prefill_key_problem(const mt_problem_key *key) {
    const char *what = NULL;
    if (key->n_heads < 1 || key->n_heads > 128 || key->sq < 1 || key->sq > MT_PREFILL_MAX_TOKENS || key->batch < 1 ||
        key->batch > 65535 || key->seq_len < 1 || key->seq_len > MT_PREFILL_MAX_TOKENS || key->s.d < 1 ||
        key->s.d > 512 || key->s.dl < 1 || key->s.dl > 512 || key->s.page_size != 1)
        what = "key", mt_fail(MT_ERR_CORRUPT, "a prefill value out of range (heads 1..128, new tokens and keys "
                                              "1..%d, requests 1..65535, D and Dl 1..512, page size 1)",
                              MT_PREFILL_MAX_TOKENS);
    else if (key->max_len != 0 && key->max_len != key->seq_len)
        what = "key", mt_fail(MT_ERR_CORRUPT, "a prefill key's longest request (%d keys) differs from its keys (%d)",
                              key->max_len, key->seq_len);
    else if (strcmp(key->lengths, MT_PREFILL_CAUSAL) != 0 && strcmp(key->lengths, MT_PREFILL_NON_CAUSAL) != 0)
        what = "lengths", mt_fail(MT_ERR_CORRUPT, "a prefill key's mask must be '%s' or '%s'", MT_PREFILL_CAUSAL,
                                  MT_PREFILL_NON_CAUSAL);
    return what;
}

/* The key's own checks: NULL when it passes, else what is wrong (the
 * message is set). */
static const char *key_problem(const mt_problem_key *key) {
    const char *what = NULL;
    if (strcmp(key->kind, "mla_prefill") == 0)
        what = prefill_key_problem(key);
    else if (strcmp(key->kind, "mla_decode") != 0)
        what = "kind", mt_fail(MT_ERR_CORRUPT, "unknown problem kind '%s'", key->kind);
    else if (key->n_heads < 1 || key->n_heads > 128 || key->sq < 1 || key->sq > MT_DECODE_MAX_SQ || key->batch < 1 ||
             key->seq_len < 0 || key->s.d < 1 || key->s.d > 1024 || key->s.dl < 1 || key->s.dl > key->s.d)
        what = "key", mt_fail(MT_ERR_CORRUPT, "a value out of range (heads 1..128, Sq 1..1024, batch >= 1, "
                                              "seq_len >= 0, 1 <= Dl <= D <= 1024; D=%d Dl=%d)", key->s.d, key->s.dl);
    else if (key->max_len != 0 && key->max_len < key->seq_len)
        what = "key", mt_fail(MT_ERR_CORRUPT, "the longest request (%d keys) is shorter than the mean (%d)",
                              key->max_len, key->seq_len);
    else if (!lengths_text_ok(key->lengths))
        what = "lengths", mt_fail(MT_ERR_CORRUPT, "the length mix is not a printable name of under 48 bytes");
    return what;
}

mt_status db_check_key(const mt_db *db, const char *arch, const mt_problem_key *key) {
    mt_target t;
    const char *what = key_problem(key);
    if (!what && mt_target_for_arch(arch, &t) != MT_OK) what = "arch";
    if (!what) return MT_OK;
    return mt_fail(MT_ERR_CORRUPT, "%s: invalid row for %s N=%d Sq=%d page=%d batch=%d seq_len=%d (%s): %s", db->path,
                   arch, key->n_heads, key->sq, key->s.page_size, key->batch, key->seq_len, what, mt_last_error());
}

mt_status db_check_row(const mt_db *db, const char *arch, const mt_problem_key *key, const char *family,
                       const char *params, mt_variant *v) {
    const mt_family *f = mt_family_find(family);
    mt_target t;
    const char *what = key_problem(key);
    if (!what && !f) what = "family", mt_fail(MT_ERR_CORRUPT, "unknown kernel family '%s'", family);
    if (!what && mt_target_for_arch(arch, &t) != MT_OK) what = "arch";
    if (!what && (mt_variant_parse(f, params, v) != MT_OK || mt_variant_validate(v, &key->s, &t) != MT_OK))
        what = "variant";
    if (!what) return MT_OK;
    return mt_fail(MT_ERR_CORRUPT, "%s: invalid row for %s N=%d Sq=%d page=%d batch=%d seq_len=%d, %s:%s (%s): %s",
                   db->path, arch, key->n_heads, key->sq, key->s.page_size, key->batch, key->seq_len, family, params,
                   what, mt_last_error());
}

int db_time_usable(sqlite3_stmt *s, int col) {
    int type = sqlite3_column_type(s, col);
    if (type != SQLITE_FLOAT && type != SQLITE_INTEGER) return 0;  /* NULL, text, blob */
    double t = sqlite3_column_double(s, col);
    return isfinite(t) && t > 0;
}

int db_spread_usable(sqlite3_stmt *s, int col) {
    int type = sqlite3_column_type(s, col);
    if (type == SQLITE_NULL) return 1;  /* not measured (schema 1) */
    if (type != SQLITE_FLOAT && type != SQLITE_INTEGER) return 0;
    double t = sqlite3_column_double(s, col);
    return isfinite(t) && t >= 0;
}

int db_source_hash_ok(const char *hash) {
    size_t n = strlen(hash);
    if (n == 0) return 1;
    if (n != 64) return 0;
    for (size_t i = 0; i < n; i++)
        if (!((hash[i] >= '0' && hash[i] <= '9') || (hash[i] >= 'a' && hash[i] <= 'f'))) return 0;
    return 1;
}
