/*
 * lengths.h - the lengths of a batch's requests, as sweeps, bench and tests
 * describe them: uniform, or a named mix with a seed, or a file of lists.
 *
 * Real decode batches are ragged (every request its own length); a mix
 * makes such a batch reproducibly:
 *   uniform                   every request has the key's seq_len
 *   uniform-random[:LO-HI]    each uniform in [LO, HI] (default 256-8192)
 *   long-tail[:LO-HI:P:LO2-HI2]   P% of the requests (at least one) in
 *                             [LO2, HI2], the rest in [LO, HI] (default
 *                             512-2048:10:16384-32768), placed at random
 *   one-long[:LONG:SHORT]     request 0 has LONG keys, the rest SHORT
 *                             (default 32768:1024)
 *   file:PATH                 one batch per line, lengths separated by
 *                             spaces or commas; a batch of B uses the first
 *                             line with B lengths
 * Any of them may end in @SEED (default 1): the same spec, batch and seed
 * always give the same lengths.  The canonical spelling (mt_lengths_name)
 * is what the database records for a key.
 */
#ifndef MT_LENGTHS_H
#define MT_LENGTHS_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/base/error.h"

typedef enum mt_lengths_kind {
    MT_LENGTHS_UNIFORM,
    MT_LENGTHS_UNIFORM_RANDOM,
    MT_LENGTHS_LONG_TAIL,
    MT_LENGTHS_ONE_LONG,
    MT_LENGTHS_FILE
} mt_lengths_kind;

enum { MT_LENGTHS_MAX = 1 << 24 }; /* keys of one request */

typedef struct mt_lengths_mix {
    mt_lengths_kind kind;
    int lo, hi;        /* uniform-random, long-tail's short part; one-long: SHORT */
    int lo2, hi2;      /* long-tail's long part; one-long: LONG in lo2 */
    int percent;       /* long-tail */
    unsigned seed;
    char path[256];    /* file */
} mt_lengths_mix;

/* Parses a spec; the message names what is wrong in it. */
mt_status mt_lengths_parse(const char *spec, mt_lengths_mix *out);

/* The canonical spelling ("long-tail:512-2048:10:16384-32768@1"; "uniform"). */
void mt_lengths_name(const mt_lengths_mix *m, char *buf, size_t size);

/* The lengths of a batch of `batch` requests; seq_len is the uniform mix's
 * length (ignored by the others). */
mt_status mt_lengths_make(const mt_lengths_mix *m, int batch, int seq_len, int32_t *out);

/* Mean (rounded) and longest of a batch's lengths. */
void mt_lengths_stats(const int32_t *lens, int batch, int *mean, int *longest);

/* The block table of a batch of these lengths on pages of `page` keys, as
 * bench and the sweep's workers lay a KV cache out: each request its own
 * pages, all of them handed out in a shuffled order (*rng, a xorshift
 * state, advances).  *table is [batch][*max_blocks] (unused entries 0),
 * malloc'd; *pages counts the pages, at least 1. */
mt_status mt_lengths_page_table(const int32_t *lens, int batch, int page, uint64_t *rng, int32_t **table,
                                int *max_blocks, size_t *pages);

#endif
