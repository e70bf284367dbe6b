/*
 * db_fixture.h - a test's database written by hand: a measured device and
 * decode measurements of known times (include after check.h).
 */
#ifndef MT_TESTS_DB_FIXTURE_H
#define MT_TESTS_DB_FIXTURE_H

#include "db/db.h"
#include "kernels/mla_decode/mla_decode.h"

/* An sm_90 device of 132 CUs and 80 GiB named "Test GPU", measured with
 * `compiler` (the validators compare it with the runtime's); its id. */
static inline int64_t fixture_device(mt_db *db, const char *compiler) {
    mt_device_info dev = {.compute_units = 132, .total_memory = 80ull << 30};
    snprintf(dev.arch, sizeof dev.arch, "sm_90");
    snprintf(dev.name, sizeof dev.name, "Test GPU");
    int64_t id = 0;
    CHECK_OK(mt_db_put_device(db, &dev, compiler, &id));
    return id;
}

/* One measurement of the decode variant `params` on `device` for the key
 * (heads, batch, seq_len): bf16 q and KV, D 576 / Dl 512, pages of 64, Sq 1,
 * uniform lengths; `ms` its median (ignored unless status is ok). */
static inline void fixture_record(mt_db *db, int64_t device, int heads, int batch, int seq_len, const char *params,
                                  mt_measure_status status, double ms) {
    mt_problem_key k = {.kind = "mla_decode",
                        .s = {.d = 576, .dl = 512, .page_size = 64, .q_dtype = MT_BF16, .kv_dtype = MT_BF16},
                        .n_heads = heads, .sq = 1, .batch = batch, .seq_len = seq_len};
    mt_variant v;
    int64_t p = 0, var = 0;
    CHECK_OK(mt_variant_parse(&mt_family_mla_decode, params, &v));
    CHECK_OK(mt_db_put_problem(db, &k, &p));
    CHECK_OK(mt_db_put_variant(db, &v, &var));
    mt_measurement m = {.problem_id = p, .variant_id = var, .device_id = device, .status = status,
                        .median_ms = ms, .min_ms = ms, .max_ms = ms, .reps = 10,
                        .error = status == MT_MEASURE_OK ? NULL : mt_measure_status_name(status)};
    CHECK_OK(mt_db_record(db, &m));
}

#endif
