/*
 * crossover_points DB - writes crossover points (db/crossover.h) into DB
 * (created when missing) through mt_db_put_crossover, as `mla-tune
 * crossover` will: the CLI tests' fixtures for lookup --crossover, show,
 * export / merge and report.  One point per line of standard input:
 *     ARCH CUS HEADS Q_DTYPE KV_DTYPE SQ CONTEXT MQA_MS MHA_MS
 * each part time a fixed share of its form's (absorb 0.25, attention 0.5,
 * output 0.25 of MQA; decompression 0.4, attention 0.6 of MHA).  Exit 1
 * naming the line when a value is refused.
 */
#include <stdio.h>
#include <string.h>

#include "db/crossover.h"
#include "db/db.h"

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: crossover_points DB < points\n");
        return 2;
    }
    mt_db *db = NULL;
    if (mt_db_open(argv[1], MT_DB_WRITE, &db) != MT_OK) {
        fprintf(stderr, "crossover_points: %s\n", mt_last_error());
        return 1;
    }
    char line[512], arch[32], qd[16], kvd[16];
    int cus, heads, sq, context, rc = 0;
    double mqa, mha;
    for (int at = 1; rc == 0 && fgets(line, sizeof line, stdin); at++) {
        if (line[0] == '#' || line[0] == '\n') continue;
        if (sscanf(line, "%31s %d %d %15s %15s %d %d %lf %lf", arch, &cus, &heads, qd, kvd, &sq, &context, &mqa,
                   &mha) != 9) {
            fprintf(stderr, "crossover_points: line %d: want ARCH CUS HEADS Q KV SQ CONTEXT MQA_MS MHA_MS\n", at);
            rc = 1;
            break;
        }
        mt_device_info dev = {.compute_units = cus, .total_memory = 80ull << 30};
        snprintf(dev.arch, sizeof dev.arch, "%s", arch);
        snprintf(dev.name, sizeof dev.name, "Fixture GPU");
        snprintf(dev.driver_version, sizeof dev.driver_version, "13.0");
        mt_crossover_point p = {.n_heads = heads, .sq = sq, .context = context, .mqa_ms = mqa, .mha_ms = mha,
                                .mqa_absorb_ms = mqa * 0.25, .mqa_attention_ms = mqa * 0.5, .mqa_output_ms = mqa * 0.25,
                                .mha_decompress_ms = mha * 0.4, .mha_attention_ms = mha * 0.6};
        snprintf(p.mqa_variant, sizeof p.mqa_variant, "tile_q=64,num_splits=1");
        snprintf(p.mha_variant, sizeof p.mha_variant, "mma=2,tile_q=128");
        snprintf(p.blas, sizeof p.blas, "fixture BLAS 1.0");
        int64_t id = 0;
        if (mt_dtype_parse(qd, &p.q_dtype) != MT_OK || mt_dtype_parse(kvd, &p.kv_dtype) != MT_OK ||
            mt_db_put_device(db, &dev, "nvrtc-13.0", &id) != MT_OK || mt_db_put_crossover(db, id, &p) != MT_OK) {
            fprintf(stderr, "crossover_points: line %d: %s\n", at, mt_last_error());
            rc = 1;
        }
    }
    mt_db_close(db);
    return rc;
}
