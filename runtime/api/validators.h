/*
 * validators.h - whether a stored choice was measured for the code this
 * runtime would run (issue 25; the anchors: PyTorch TunableOp's validators,
 * MIOpen's versioned user DBs).
 *
 * A measurement records what made it: the hex SHA-256 of the kernel text
 * its variant compiled from (mt_build_source_hash) and, through its device
 * row, the compiler and driver versions; a choice carries its pick's.  A
 * choice is
 *   - valid: its variant compiles from the same text now, with the same
 *     compiler;
 *   - stale: either differs, so its timing says nothing about the code that
 *     would run: the runtime ignores it (and says so once), `mla-tune show
 *     --stale` lists it;
 *   - unknown: written before schema 5 (no source hash): trusted, so the
 *     shipped and older DBs keep working, and noted (runtime log at the
 *     info level, `show` marks it).
 * The driver version is recorded but not compared: the driver runs the
 * code object the compiler made (cubin, code object v5), it does not make
 * it, and a driver update would otherwise discard every shipped result.
 */
#ifndef MT_VALIDATORS_H
#define MT_VALIDATORS_H

#include <stddef.h>

#include "db/db.h"
#include "kernels/family.h"

typedef enum mt_validity { MT_VALID, MT_VALIDITY_UNKNOWN, MT_STALE_SOURCES, MT_STALE_COMPILER } mt_validity;

enum { MT_VALIDATOR_MEMO = 64, MT_VALIDATOR_COMPILERS = 8 };

typedef struct mt_validator {
    /* the compiler this process would build with, per arch ("" or absent:
     * not checked, e.g. `show` on a host without that vendor's compiler) */
    struct { char arch[32]; char version[64]; } compilers[MT_VALIDATOR_COMPILERS];
    int n_compilers;
    /* the source hash of each (arch, family, source list) seen: most
     * choices share a handful of file lists, so each is composed and hashed
     * once */
    struct { char key[400]; char hash[65]; } memo[MT_VALIDATOR_MEMO];
    int n_memo;
    int valid, unknown, stale_sources, stale_compiler;  /* what mt_validator_keep saw */
    int stale_user, stale_system;                       /* ... of the stale, from which DB */
} mt_validator;

void mt_validator_init(mt_validator *v);
/* The compiler version ("nvrtc-13.0") builds for `arch` use here. */
void mt_validator_set_compiler(mt_validator *v, const char *arch, const char *version);

/* The version ("nvrtc-13.0") of the compiler this host would build `arch`
 * with, when it has one: 1, else 0 and "" (no NVRTC / hiprtc / clang). */
int mt_host_compiler_version(const char *arch, char *buf, size_t size);
/* mt_validator_set_compiler with this host's compiler for `arch`, asked
 * once per arch ("": not compared); 0 when the host has none. */
int mt_validator_learn_compiler(mt_validator *v, const char *arch);

/* How `c` stands against the code this process would run; `why` (may be
 * NULL) gets one line saying what differs. */
mt_validity mt_validator_check(mt_validator *v, const mt_choice *c, char *why, size_t size);

/* mt_build_source_hash through the validator's memo: one composition and
 * hash per (arch, family, file list), whatever the parameter values (the
 * sweep records one per measurement).  Not thread-safe: one validator per
 * thread, or a lock around it. */
mt_status mt_validator_source_hash(mt_validator *v, const mt_variant *var, const mt_problem_static *s,
                                   const mt_target *t, char hex[65]);

/* An mt_row_usable_fn (db.h): a measurement of `var` for `s` on `arch`
 * counts when it was measured from the text the variant compiles from now
 * (the source hash alone: the compiler of the host that derives the choices,
 * an install or a merge, need not be the one that will run them).  A
 * variant whose sources cannot be composed here does not count. */
int mt_validator_row_usable(const char *arch, const mt_problem_static *s, const mt_variant *var,
                            const char *source_hash, void *validator);

/* mt_db_recompute_choices_of(db, mt_validator_row_usable, a fresh
 * validator): what the sweep and the DB commands (export, import, merge)
 * derive their choices with. */
mt_status mt_validator_recompute_choices(mt_db *db);

/* An mt_choice_keep_fn (db.h): keeps valid and unknown choices, drops the
 * stale ones, and counts each kind in the validator (ctx). */
int mt_validator_keep(const mt_choice *c, mt_choice_source from, void *validator);

const char *mt_validity_name(mt_validity s);   /* "valid", "unknown", "stale: sources", "stale: compiler" */

#endif
