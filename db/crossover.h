/*
 * crossover.h - the measured crossover between MLA's two prefill forms
 * (issue 29), kept in the tuning database beside the variant choices.
 *
 * A chunk of `sq` new tokens after `context` tokens of one request can run
 * in either form (docs/prefill.md):
 *   MQA (absorbed): q_nope @ W_UK^T (a GEMM per head), attention over the
 *       latent cache itself (mla_decode with Sq = the chunk: D 576 / Dl
 *       512), then out @ W_UV (a GEMM per head);
 *   MHA (decompressed): the context's and chunk's latent rows @ [W_UK | W_UV]
 *       (one GEMM: k_nope and v for every head), then prefill attention
 *       (mla_prefill: qk 192 / v 128, causal over the chunk).
 * `mla-tune crossover` (tuner/cmd_crossover.c) times both end to end on
 * the GPU, GEMMs through the vendor's BLAS, and stores one point per
 * (device, heads, dtypes, sq, context).  The runtime and `mla-tune lookup
 * --crossover` answer "which form" from these points
 * (runtime/api/crossover_pick.h).
 */
#ifndef MT_DB_CROSSOVER_H
#define MT_DB_CROSSOVER_H

#include <stdint.h>

#include "db/db.h"
#include "kernels/dtype.h"

typedef struct mt_crossover_point {
    char arch[32];           /* of the device measured (filled by the loader) */
    int compute_units;       /* ditto */
    char device_name[64];    /* ditto */
    int n_heads;
    mt_dtype q_dtype, kv_dtype;
    int sq;                  /* new tokens of the chunk, >= 1 */
    int context;             /* tokens of context before the chunk, >= 0 */
    double mqa_ms, mha_ms;   /* each form end to end (median of the timed runs) */
    /* each part alone (medians), so the report can say where a form's time goes */
    double mqa_absorb_ms, mqa_attention_ms, mqa_output_ms;
    double mha_decompress_ms, mha_attention_ms;
    char mqa_variant[200];   /* the mla_decode variant the MQA attention ran */
    char mha_variant[200];   /* the mla_prefill variant the MHA attention ran */
    char blas[64];           /* the GEMM library and version, "cuBLASLt 13.1.0" */
    char source[16];         /* not stored: "user" / "system", set by whoever merges two DBs' points */
    char measured_at[32];    /* when it was stored (filled by the loader; put stamps the time itself) */
} mt_crossover_point;

/* Stores p for device_id (mt_db_put_device), replacing any point of the
 * same device, heads, dtypes, sq and context; one transaction (or the
 * caller's, when one is open).  p's arch, compute_units, device_name,
 * source and measured_at are not read: the device is device_id's, the time
 * now.  Values out of range (heads 1..128, q_dtype bf16 or fp16, kv_dtype
 * a known one, sq 1..MT_DECODE_MAX_SQ, context >= 0, any of the seven
 * times not positive and finite, variant or BLAS text not printable or
 * filling its field, a device_id this file does not hold) are refused
 * with MT_ERR_INVALID_ARGUMENT naming the field and value; nothing is
 * written. */
mt_status mt_db_put_crossover(mt_db *db, int64_t device_id, const mt_crossover_point *p);

/* Every point of `arch` (NULL: of every arch), ordered by arch, compute
 * units, heads, dtypes, context, sq.  A device is its arch and compute
 * units (as for choices): where one point was measured under two device
 * rows of the same arch and compute units (another driver or compiler),
 * only the latest measured is returned.  *out is malloc'd (free() it; NULL
 * when *n is 0).  A row whose values are out of range or of the wrong
 * type is refused as MT_ERR_CORRUPT naming the file and the row. */
mt_status mt_db_load_crossover(mt_db *db, const char *arch, mt_crossover_point **out, int *n);

/* The points of `arch` (NULL: all) of the system DB, then the user DB's
 * over them: a user point replaces the system point of the same arch,
 * compute units, heads, dtypes, sq and context.  Each point's source says
 * "user" or "system".  Paths as mt_db_load_overlay's: one that is NULL or
 * names no file is skipped unless required.  Ordered as the loader's;
 * *out malloc'd (NULL when *n is 0). */
mt_status mt_db_load_crossover_overlay(const char *user_path, int user_required, const char *system_path,
                                       int system_required, const char *arch, mt_crossover_point **out, int *n);

/* The same point: arch, compute units, heads, dtypes, sq and context. */
int mt_crossover_same_point(const mt_crossover_point *a, const mt_crossover_point *b);

#endif
