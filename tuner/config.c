/*
 * config.c - loading and validating search spaces and sweep plans (see
 * config.h and configs/README.md).
 */
#define _GNU_SOURCE
#include "config.h"

#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lengths.h"
#include "prefill_key.h"
#include "yaml_tree.h"
#include "kernels/mla_decode/mla_decode.h"

static mt_status space_from_tree(const char *path, yt_node *root, mt_space_config *out);
static mt_status plan_from_tree(const char *path, yt_node *root, mt_plan *p);

mt_status mt_load_space(const char *path, mt_space_config *out) {
    memset(out, 0, sizeof *out);
    yt_node *root = NULL;
    mt_status st = yt_parse_file(path, &root);
    if (st != MT_OK) return st;
    return space_from_tree(path, root, out);
}

mt_status mt_parse_space(const char *name, const char *text, size_t size, mt_space_config *out) {
    memset(out, 0, sizeof *out);
    yt_node *root = NULL;
    mt_status st = yt_parse(name, text, size, &root);
    if (st != MT_OK) return st;
    return space_from_tree(name, root, out);
}

/* Validates a parsed space document and frees it. */
static mt_status space_from_tree(const char *path, yt_node *root, mt_space_config *out) {
    mt_status st;
    static const char *const top_keys[] = {"arch", "families", NULL};
    if ((st = yt_check_keys(path, root, top_keys)) != MT_OK) goto out;
    const yt_node *arch = yt_get(root, "arch"), *families = yt_get(root, "families");
    if (!arch || arch->kind != YT_SCALAR) {
        st = yt_error(path, arch ? arch : root, "'arch' (a name such as sm_90 or gfx942) is required");
        goto out;
    }
    mt_target t;
    if (mt_target_for_arch(arch->scalar, &t) != MT_OK) {
        st = yt_error(path, arch, "%s", mt_last_error());
        goto out;
    }
    snprintf(out->arch, sizeof out->arch, "%s", arch->scalar);
    if (!families || families->kind != YT_MAPPING || families->n_items == 0) {
        st = yt_error(path, families ? families : root, "'families' must map family names to parameter lists");
        goto out;
    }
    for (int i = 0; i + 1 < families->n_items; i += 2) {
        const yt_node *name = families->items[i], *params = families->items[i + 1];
        const mt_family *f = name->kind == YT_SCALAR ? mt_family_find(name->scalar) : NULL;
        if (!f) {
            st = yt_error(path, name, "unknown kernel family '%s'", name->kind == YT_SCALAR ? name->scalar : "?");
            goto out;
        }
        for (int k = 0; k < out->n_spaces; k++)  /* the second was silently ignored */
            if (out->spaces[k].family == f) {
                st = yt_error(path, name, "family '%s' listed twice", f->name);
                goto out;
            }
        if (out->n_spaces == MT_MAX_FAMILIES) {
            st = yt_error(path, name, "too many families");
            goto out;
        }
        const char *known[MT_MAX_PARAMS + 1] = {0};
        for (int p = 0; p < f->n_params; p++) known[p] = f->params[p].name;
        if ((st = yt_check_keys(path, params, known)) != MT_OK) goto out;
        mt_space *sp = &out->spaces[out->n_spaces++];
        mt_space_full(f, sp);  /* a parameter not listed keeps all its values (a later one, its default) */
        for (int p = 0; p < f->n_params; p++) {
            const yt_node *list = yt_get(params, f->params[p].name);
            if (!list) continue;
            int count = 0;
            if ((st = yt_int_list(path, list, f->params[p].name, -1000000, 1000000, sp->values[p], MT_MAX_VALUES,
                                  &count)) != MT_OK)
                goto out;
            sp->n_values[p] = count;
            for (int k = 0; k < count; k++) {
                int allowed = 0;
                for (int a = 0; a < f->params[p].n_values; a++) allowed |= f->params[p].values[a] == sp->values[p][k];
                if (!allowed) {
                    const yt_node *at = list->kind == YT_SEQUENCE ? list->items[k] : list;
                    char values[200] = "";
                    for (int a = 0; a < f->params[p].n_values; a++)
                        snprintf(values + strlen(values), sizeof values - strlen(values), "%s%d", a ? ", " : "",
                                 f->params[p].values[a]);
                    st = yt_error(path, at, "%s=%d is not a value %s supports (allowed: %s)", f->params[p].name,
                                  sp->values[p][k], f->name, values);
                    goto out;
                }
            }
        }
    }
out:
    yt_free(root);
    return st;
}

const char *mt_search_strategy_name(mt_search_strategy s) {
    return s == MT_SEARCH_RANDOM ? "random" : s == MT_SEARCH_HALVING ? "halving" : "exhaustive";
}

void mt_plan_free(mt_plan *p) {
    free(p->keys);
    p->keys = NULL;
    p->n_keys = 0;
}

static mt_status dtype_list(const char *path, const yt_node *n, const char *what, mt_dtype *out, int *count,
                            int allow_fp8) {
    *count = 0;
    const yt_node *one[1] = {n};
    const yt_node *const *items = one;
    int n_items = 1;
    if (n && n->kind == YT_SEQUENCE) items = (const yt_node *const *)n->items, n_items = n->n_items;
    if (!n || n_items == 0 || n_items > MT_DTYPE_COUNT)
        return yt_error(path, n, "%s: expected a dtype or a list of 1 to %d", what, MT_DTYPE_COUNT);
    for (int i = 0; i < n_items; i++) {
        if (items[i]->kind != YT_SCALAR) return yt_error(path, items[i], "%s: expected a dtype name", what);
        mt_dtype t;
        if (mt_dtype_parse(items[i]->scalar, &t) != MT_OK) return yt_error(path, items[i], "%s: %s", what, mt_last_error());
        if (mt_dtype_is_fp8(t) && !allow_fp8) return yt_error(path, items[i], "%s: fp8 is supported for KV only", what);
        for (int j = 0; j < *count; j++)
            if (out[j] == t) return yt_error(path, items[i], "%s: %s listed twice", what, items[i]->scalar);
        out[(*count)++] = t;
    }
    return MT_OK;
}

/* 'lengths': one mix spec or a list of them (tuner/lengths.h); absent,
 * uniform. */
static mt_status length_mixes(const char *path, const yt_node *n, mt_lengths_mix *out, int *count) {
    *count = 0;
    if (!n) {
        memset(&out[0], 0, sizeof out[0]);
        out[0].kind = MT_LENGTHS_UNIFORM;
        *count = 1;
        return MT_OK;
    }
    const yt_node *const *items = &n;
    int n_items = 1;
    if (n->kind == YT_SEQUENCE) items = (const yt_node *const *)n->items, n_items = n->n_items;
    if (n_items == 0 || n_items > MT_PLAN_MAX_MIXES)
        return yt_error(path, n, "lengths: expected a mix or a list of 1 to %d", MT_PLAN_MAX_MIXES);
    for (int i = 0; i < n_items; i++) {
        if (items[i]->kind != YT_SCALAR) return yt_error(path, items[i], "lengths: expected a mix name");
        if (mt_lengths_parse(items[i]->scalar, &out[i]) != MT_OK)
            return yt_error(path, items[i], "%s", mt_last_error());
        for (int j = 0; j < i; j++) {
            char a[96], b[96];
            mt_lengths_name(&out[i], a, sizeof a), mt_lengths_name(&out[j], b, sizeof b);
            if (strcmp(a, b) == 0) return yt_error(path, items[i], "lengths: %s listed twice", a);
        }
    }
    *count = n_items;
    return MT_OK;
}

/* A key's lengths: the mix's name, and the mean and longest of the batch
 * it makes (what dispatch compares calls with). */
static mt_status key_lengths(const char *path, const yt_node *entry, const mt_lengths_mix *mix, int seq_len,
                             mt_problem_key *k) {
    int32_t *lens = malloc(sizeof *lens * (size_t)k->batch);
    if (!lens) return mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
    mt_status st = mt_lengths_make(mix, k->batch, seq_len, lens);
    if (st == MT_OK) {
        mt_lengths_stats(lens, k->batch, &k->seq_len, &k->max_len);
        mt_lengths_name(mix, k->lengths, sizeof k->lengths);
        if (strlen(k->lengths) + 1 >= sizeof k->lengths)
            st = yt_error(path, entry, "lengths: the mix name '%s' is too long to record (under %zu bytes)",
                          k->lengths, sizeof k->lengths - 1);
    } else {
        st = yt_error(path, entry, "lengths: %s", mt_last_error());
    }
    free(lens);
    return st;
}

static mt_status load_problems(const char *path, const yt_node *list, mt_plan *p) {
    if (!list || list->kind != YT_SEQUENCE || list->n_items == 0)
        return yt_error(path, list, "'problems' must be a non-empty list");
    static const char *const keys[] = {"kind", "heads", "sq", "d", "dl", "page_size", "q_dtype", "kv_dtype", "batch",
                                       "seq_len", "lengths", NULL};
    for (int e = 0; e < list->n_items; e++) {
        const yt_node *m = list->items[e];
        const yt_node *kind = yt_get(m, "kind");
        mt_status st;
        if (kind && kind->kind == YT_SCALAR && strcmp(kind->scalar, "mla_prefill") == 0) {
            if ((st = mt_plan_add_prefill_entry(path, m, p)) != MT_OK) return st;
            continue;
        }
        if ((st = yt_check_keys(path, m, keys)) != MT_OK) return st;
        if (kind && (kind->kind != YT_SCALAR || strcmp(kind->scalar, "mla_decode") != 0))
            return yt_error(path, kind, "kind: expected 'mla_decode' or 'mla_prefill'");
        for (const char *const *req = (const char *const[]){"heads", "batch", NULL}; *req; req++)
            if (!yt_get(m, *req)) return yt_error(path, m, "problem entry lacks '%s'", *req);
        mt_lengths_mix mixes[MT_PLAN_MAX_MIXES];
        int n_mix = 0, n_uniform = 0;
        if ((st = length_mixes(path, yt_get(m, "lengths"), mixes, &n_mix)) != MT_OK) return st;
        for (int i = 0; i < n_mix; i++) n_uniform += mixes[i].kind == MT_LENGTHS_UNIFORM;
        if (n_uniform && !yt_get(m, "seq_len"))
            return yt_error(path, m, "problem entry lacks 'seq_len' (the uniform lengths need it)");
        if (!n_uniform && yt_get(m, "seq_len"))
            return yt_error(path, yt_get(m, "seq_len"), "seq_len: no uniform mix in 'lengths' to use it (the mixes "
                            "make their own lengths)");
        int heads[16], sqs[16], pages[4], batches[16], lens[16], n_heads, n_sq = 1, n_pages = 1, n_batch, n_len;
        long d = 576, dl = 512;
        mt_dtype qt[MT_DTYPE_COUNT] = {MT_BF16}, kvt[MT_DTYPE_COUNT] = {MT_BF16};
        int n_qt = 1, n_kvt = 1;
        sqs[0] = 1;
        pages[0] = 64;
        if ((st = yt_int_list(path, yt_get(m, "heads"), "heads", 1, 128, heads, 16, &n_heads)) != MT_OK) return st;
        if (yt_get(m, "sq") && (st = yt_int_list(path, yt_get(m, "sq"), "sq", 1, MT_DECODE_MAX_SQ, sqs, 16, &n_sq)) != MT_OK) return st;
        if (yt_get(m, "page_size") &&
            (st = yt_int_list(path, yt_get(m, "page_size"), "page_size", 1, 1024, pages, 4, &n_pages)) != MT_OK)
            return st;
        for (int i = 0; i < n_pages; i++)
            if (pages[i] & (pages[i] - 1)) {
                const yt_node *at = yt_get(m, "page_size");
                return yt_error(path, at->kind == YT_SEQUENCE ? at->items[i] : at,
                                "page_size: %d is not a power of two", pages[i]);
            }
        if (yt_get(m, "d") && (st = yt_int(path, yt_get(m, "d"), "d", 1, 1024, &d)) != MT_OK) return st;
        if (yt_get(m, "dl") && (st = yt_int(path, yt_get(m, "dl"), "dl", 1, d, &dl)) != MT_OK) return st;
        if (yt_get(m, "q_dtype") && (st = dtype_list(path, yt_get(m, "q_dtype"), "q_dtype", qt, &n_qt, 0)) != MT_OK)
            return st;
        if (yt_get(m, "kv_dtype") && (st = dtype_list(path, yt_get(m, "kv_dtype"), "kv_dtype", kvt, &n_kvt, 1)) != MT_OK)
            return st;
        if ((st = yt_int_list(path, yt_get(m, "batch"), "batch", 1, 65535, batches, 16, &n_batch)) != MT_OK) return st;
        n_len = 0;
        if (n_uniform &&
            (st = yt_int_list(path, yt_get(m, "seq_len"), "seq_len", 1, 1000000, lens, 16, &n_len)) != MT_OK)
            return st;
        /* a uniform mix makes a key per seq_len, any other one key */
        long long per_mix = n_uniform ? n_len : 0;
        per_mix += n_mix - n_uniform;
        long long add = (long long)n_heads * n_sq * n_pages * n_qt * n_kvt * n_batch * per_mix;
        if (p->n_keys + add > MT_PLAN_MAX_KEYS)  /* one 400-byte entry once made 1.18 million keys */
            return yt_error(path, m, "this entry makes %lld problem keys (heads x sq x page_size x q_dtype x "
                            "kv_dtype x batch x seq_len) after %d from the entries before it; a plan may have at "
                            "most %d: split it", add, p->n_keys, MT_PLAN_MAX_KEYS);
        mt_problem_key *grown = realloc(p->keys, sizeof *grown * (size_t)(p->n_keys + add));
        if (!grown) return mt_fail(MT_ERR_OUT_OF_MEMORY, "out of host memory");
        p->keys = grown;
        for (int a = 0; a < n_qt; a++)
            for (int b = 0; b < n_kvt; b++)
                for (int c = 0; c < n_pages; c++)
                    for (int h = 0; h < n_heads; h++)
                        for (int s = 0; s < n_sq; s++)
                            for (int x = 0; x < n_batch; x++)
                                for (int mi = 0; mi < n_mix; mi++)
                                    for (int y = 0; y < (mixes[mi].kind == MT_LENGTHS_UNIFORM ? n_len : 1); y++) {
                                        mt_problem_key *k = &p->keys[p->n_keys++];
                                        memset(k, 0, sizeof *k);
                                        snprintf(k->kind, sizeof k->kind, "mla_decode");
                                        k->s = (mt_problem_static){.d = (int)d, .dl = (int)dl, .page_size = pages[c],
                                                                  .q_dtype = qt[a], .kv_dtype = kvt[b]};
                                        k->n_heads = heads[h];
                                        k->sq = sqs[s];
                                        k->batch = batches[x];
                                        st = key_lengths(path, m, &mixes[mi], n_len ? lens[y] : 0, k);
                                        if (st != MT_OK) return st;
                                    }
    }
    return MT_OK;
}

/* Two entries that make the same key would measure it twice. */
static mt_status reject_duplicate_keys(const char *path, const yt_node *list, const mt_plan *p) {
    for (int i = 1; i < p->n_keys; i++)
        for (int j = 0; j < i; j++) {
            const mt_problem_key *a = &p->keys[i], *b = &p->keys[j];
            if (memcmp(a, b, sizeof *a) != 0) continue;
            return yt_error(path, list, "problem key heads=%d sq=%d page_size=%d %s/%s batch=%d seq_len=%d (%s) is listed "
                            "by more than one entry", a->n_heads, a->sq, a->s.page_size, mt_dtype_name(a->s.q_dtype),
                            mt_dtype_name(a->s.kv_dtype), a->batch, a->seq_len, a->lengths);
        }
    return MT_OK;
}

static void plan_defaults(const char *path, mt_plan *p) {
    memset(p, 0, sizeof *p);
    snprintf(p->path, sizeof p->path, "%s", path);
    p->warmup = 3;
    p->reps = 20;
    p->verify_cpu_macs = 2e9;
    p->strategy = MT_SEARCH_EXHAUSTIVE;
    p->budget = 32;
    p->keep = 0.25;
    p->seed = 1;
    /* spaces default to ../spaces next to the plan's folder */
    char *copy = strdup(path);
    snprintf(p->spaces_dir, sizeof p->spaces_dir, "%s/../spaces", dirname(copy));
    free(copy);
}

mt_status mt_load_plan(const char *path, mt_plan *p) {
    /* a bare name ("quick") that is not a file here names a shipped plan,
     * so that an installed tool needs no path into share/ */
    char shipped[2048];
    if (!strchr(path, '/') && access(path, F_OK) != 0) {
        char rel[300];
        snprintf(rel, sizeof rel, "plans/%s%s", path, strstr(path, ".yaml") ? "" : ".yaml");
        if (mt_config_file(rel, shipped, sizeof shipped) == MT_OK) path = shipped;
    }
    plan_defaults(path, p);
    yt_node *root = NULL;
    mt_status st = yt_parse_file(path, &root);
    if (st != MT_OK) return st;
    return plan_from_tree(path, root, p);
}

mt_status mt_parse_plan(const char *name, const char *text, size_t size, mt_plan *p) {
    plan_defaults(name, p);
    yt_node *root = NULL;
    mt_status st = yt_parse(name, text, size, &root);
    if (st != MT_OK) return st;
    return plan_from_tree(name, root, p);
}

/* Validates a parsed plan document and frees it. */
static mt_status plan_from_tree(const char *path, yt_node *root, mt_plan *p) {
    char *copy;
    mt_status st;
    static const char *const keys[] = {"name", "spaces", "problems", "timing", "search", NULL};
    if ((st = yt_check_keys(path, root, keys)) != MT_OK) goto out;
    const yt_node *name = yt_get(root, "name");
    if (!name || name->kind != YT_SCALAR || !name->scalar[0] || strlen(name->scalar) >= sizeof p->name) {
        st = yt_error(path, name ? name : root, "'name' (a short plan name) is required");
        goto out;
    }
    snprintf(p->name, sizeof p->name, "%s", name->scalar);
    const yt_node *spaces = yt_get(root, "spaces");
    p->spaces_explicit = spaces != NULL;
    if (spaces) {
        if (spaces->kind != YT_SCALAR) {
            st = yt_error(path, spaces, "spaces: expected a folder path");
            goto out;
        }
        if (spaces->scalar[0] == '/') {
            snprintf(p->spaces_dir, sizeof p->spaces_dir, "%s", spaces->scalar);
        } else {
            copy = strdup(path);
            snprintf(p->spaces_dir, sizeof p->spaces_dir, "%s/%s", dirname(copy), spaces->scalar);
            free(copy);
        }
    }
    if ((st = load_problems(path, yt_get(root, "problems"), p)) != MT_OK) goto out;
    if ((st = reject_duplicate_keys(path, yt_get(root, "problems"), p)) != MT_OK) goto out;
    const yt_node *timing = yt_get(root, "timing");
    if (timing) {
        static const char *const tkeys[] = {"warmup", "reps", "verify_cpu_macs", NULL};
        long v;
        if ((st = yt_check_keys(path, timing, tkeys)) != MT_OK) goto out;
        if (yt_get(timing, "warmup")) {
            if ((st = yt_int(path, yt_get(timing, "warmup"), "warmup", 0, 1000, &v)) != MT_OK) goto out;
            p->warmup = (int)v;
        }
        if (yt_get(timing, "reps")) {
            if ((st = yt_int(path, yt_get(timing, "reps"), "reps", 3, 100000, &v)) != MT_OK) goto out;
            p->reps = (int)v;
        }
        if (yt_get(timing, "verify_cpu_macs")) {
            if ((st = yt_int(path, yt_get(timing, "verify_cpu_macs"), "verify_cpu_macs", 0, 1000000000000L, &v)) != MT_OK)
                goto out;
            p->verify_cpu_macs = (double)v;
        }
    }
    const yt_node *search = yt_get(root, "search");
    if (search) {
        static const char *const skeys[] = {"strategy", "budget", "keep_percent", "seed", NULL};
        long v;
        if ((st = yt_check_keys(path, search, skeys)) != MT_OK) goto out;
        const yt_node *s = yt_get(search, "strategy");
        if (s) {
            if (s->kind == YT_SCALAR && strcmp(s->scalar, "exhaustive") == 0) p->strategy = MT_SEARCH_EXHAUSTIVE;
            else if (s->kind == YT_SCALAR && strcmp(s->scalar, "random") == 0) p->strategy = MT_SEARCH_RANDOM;
            else if (s->kind == YT_SCALAR && strcmp(s->scalar, "halving") == 0) p->strategy = MT_SEARCH_HALVING;
            else {
                st = yt_error(path, s, "strategy: expected exhaustive, random or halving");
                goto out;
            }
        }
        if (yt_get(search, "budget")) {
            if ((st = yt_int(path, yt_get(search, "budget"), "budget", 1, 100000, &v)) != MT_OK) goto out;
            p->budget = (int)v;
        }
        if (yt_get(search, "keep_percent")) {
            if ((st = yt_int(path, yt_get(search, "keep_percent"), "keep_percent", 1, 99, &v)) != MT_OK) goto out;
            p->keep = v / 100.0;
        }
        if (yt_get(search, "seed")) {
            if ((st = yt_int(path, yt_get(search, "seed"), "seed", 0, 4294967295L, &v)) != MT_OK) goto out;
            p->seed = (unsigned)v;
        }
    }
out:
    yt_free(root);
    if (st != MT_OK) mt_plan_free(p);
    return st;
}

#ifndef MT_BINDIR_TO_DATADIR
#define MT_BINDIR_TO_DATADIR "../share"
#endif

/* PREFIX/share/mla-tune/configs of the installation the running program
 * belongs to, wherever that tree was moved; "" when the program is not
 * installed (a build tree has no share/ beside it). */
static void installed_config_dir(char *out, size_t size) {
    out[0] = '\0';
    char exe[1024];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash) return;
    *slash = '\0';
    char dir[1200];
    snprintf(dir, sizeof dir, "%s/%s/mla-tune/configs", exe, MT_BINDIR_TO_DATADIR);
    char *real = access(dir, R_OK | X_OK) == 0 ? realpath(dir, NULL) : NULL;
    if (real) snprintf(out, size, "%s", real);
    free(real);
}

mt_status mt_config_file(const char *rel, char *buf, size_t size) {
    /* the installed tree comes before the source tree: an installed tool
     * reads its own configs even while the tree it was built from exists */
    char installed[1200];
    installed_config_dir(installed, sizeof installed);
    const char *dirs[4] = {getenv("MLA_TUNE_CONFIG_DIR"), installed, MT_SOURCE_CONFIG_DIR, MT_INSTALL_CONFIG_DIR};
    char tried[2500] = "";
    for (int i = 0; i < 4; i++) {
        if (!dirs[i] || !dirs[i][0]) continue;
        snprintf(buf, size, "%s/%s", dirs[i], rel);
        if (access(buf, R_OK) == 0) return MT_OK;  /* (fopen would block on a FIFO) */
        snprintf(tried + strlen(tried), sizeof tried - strlen(tried), "%s%s", tried[0] ? ", " : "", buf);
    }
    return mt_fail(MT_ERR_NOT_FOUND, "no config %s (looked at %s; set MLA_TUNE_CONFIG_DIR)", rel, tried);
}

