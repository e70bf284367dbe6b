/*
 * config.h - the YAML configs: per-architecture search spaces
 * (configs/spaces/ARCH.yaml) and sweep plans (configs/plans/NAME.yaml).
 * Every value is checked on load (against the family's declared parameters
 * for spaces, against the supported ranges for plans); an error names the
 * file, line and column.  The format is documented in configs/README.md.
 */
#ifndef MT_CONFIG_H
#define MT_CONFIG_H

#include "db/db.h"
#include "kernels/variant.h"

enum { MT_MAX_FAMILIES = 4 };

typedef struct mt_space_config {
    char arch[32];
    mt_space spaces[MT_MAX_FAMILIES];
    int n_spaces;
} mt_space_config;

mt_status mt_load_space(const char *path, mt_space_config *out);
/* The same from text in memory (`name` stands for the file in messages). */
mt_status mt_parse_space(const char *name, const char *text, size_t size, mt_space_config *out);

/* A plan's keys at most: a sweep spends minutes per key, and one short
 * entry of long lists once asked for 1.18 million. */
enum { MT_PLAN_MAX_KEYS = 4096, MT_PLAN_MAX_MIXES = 8 };

typedef enum mt_search_strategy { MT_SEARCH_EXHAUSTIVE, MT_SEARCH_RANDOM, MT_SEARCH_HALVING } mt_search_strategy;

typedef struct mt_plan {
    char name[64];
    char path[1024];
    char spaces_dir[1024];   /* where ARCH.yaml spaces are looked up */
    int spaces_explicit;     /* the plan named it (else: next to the plan, then configs/) */
    mt_problem_key *keys;    /* the cartesian product of every problems entry */
    int n_keys;
    int warmup, reps;        /* per variant timing */
    double verify_cpu_macs;  /* shapes whose reference costs more use a trusted variant */
    mt_search_strategy strategy;
    int budget;              /* random: variants per key; halving: first-round size */
    double keep;             /* halving: fraction kept per round */
    unsigned seed;
} mt_plan;

/* `path` is a file, or the name of a shipped plan ("quick": plans/quick.yaml
 * found by mt_config_file) when no such file exists here. */
mt_status mt_load_plan(const char *path, mt_plan *out);
mt_status mt_parse_plan(const char *name, const char *text, size_t size, mt_plan *out);
void mt_plan_free(mt_plan *p);
const char *mt_search_strategy_name(mt_search_strategy s);



/* Finds configs/REL: under $MLA_TUNE_CONFIG_DIR, else PREFIX/share/mla-tune/
 * configs beside the running (installed) program, else the source tree's
 * configs/ (a development build), else the configured install prefix's. */
mt_status mt_config_file(const char *rel, char *buf, size_t size);
#endif
