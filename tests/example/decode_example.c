/*
 * decode_example.c - MLA decode through the mla-tune runtime, as an engine
 * would call it, using only the installed header and library.
 *
 *   decode_example [--db FILE] [--cache-dir DIR] [--heads N] [--batch B] [--seq-len L]
 *
 * Creates a runtime and a plan three times: first with whatever the cache
 * folder holds (cold when it is empty: the variants are compiled, and the
 * CUDA context is created); second, a new runtime while the first still
 * exists, as in an engine that already holds its GPU context (warm: code
 * objects from the disk cache, nothing from the first runtime's memory
 * cache); third, after destroying both, so the context is created again.
 * Prints the start-up times, which variant the plan runs and why,
 * runs one decode on random bf16 data, checks it against a double-precision
 * reference computed here, and times the call.  Exit 0 when the result is
 * right.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mlatune.h>

#define CHECK(call)                                                                              \
    do {                                                                                         \
        mlt_status st_ = (call);                                                                 \
        if (st_ != MLT_OK) {                                                                     \
            fprintf(stderr, "%s failed: %s: %s\n", #call, mlt_status_string(st_), mlt_last_error()); \
            exit(1);                                                                             \
        }                                                                                        \
    } while (0)

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static uint16_t to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static double from_bf16(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint64_t rng = 88172645463325252ull;
static float uniform(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((rng >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f;
}

int main(int argc, char **argv) {
    const char *db = NULL, *cache = NULL;
    int heads = 16, batch = 8, len = 4096;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--db")) db = argv[i + 1];
        else if (!strcmp(argv[i], "--cache-dir")) cache = argv[i + 1];
        else if (!strcmp(argv[i], "--heads")) heads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--batch")) batch = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--seq-len")) len = atoi(argv[i + 1]);
    }
    const int D = 576, DL = 512, PAGE = 64;
    mlt_runtime_options o;
    mlt_runtime_options_default(&o);
    o.user_db = db;
    o.cache_dir = cache;
    o.log_level = MLT_LOG_INFO;
    mlt_decode_problem p = {.n_heads = heads, .sq = 1, .d = D, .dl = DL, .page_size = PAGE, .q_dtype = MLT_BF16,
                            .kv_dtype = MLT_BF16, .softmax_scale = 1.0f / sqrtf((float)D), .kv_scale = 1.0f,
                            .max_batch = batch};
    mlt_runtime *rt = NULL, *held = NULL;
    mlt_plan *plan = NULL, *held_plan = NULL;
    double t0 = now_ms();
    CHECK(mlt_runtime_create(&o, &held));
    CHECK(mlt_plan_create(held, &p, &held_plan));
    double cold = now_ms() - t0;
    t0 = now_ms();
    CHECK(mlt_runtime_create(&o, &rt));
    CHECK(mlt_plan_create(rt, &p, &plan));
    double warm = now_ms() - t0;
    mlt_plan_destroy(plan), mlt_runtime_destroy(rt);
    mlt_plan_destroy(held_plan), mlt_runtime_destroy(held);
    t0 = now_ms();
    CHECK(mlt_runtime_create(&o, &rt));
    CHECK(mlt_plan_create(rt, &p, &plan));
    double fresh_context = now_ms() - t0;
    printf("start-up (runtime + plan): first %.1f ms; warm, GPU context held: %.1f ms (disk cache); "
           "again with a new GPU context: %.1f ms\n", cold, warm, fresh_context);
    mlt_choice_info why;
    CHECK(mlt_plan_explain(plan, batch, len, 0, &why));
    printf("%s: runs %s:%s (%s)\n", mlt_runtime_arch(rt), why.family, why.variant, why.why);

    int blocks = (len + PAGE - 1) / PAGE, rows = heads;
    size_t q_n = (size_t)batch * rows * D, kv_n = (size_t)batch * blocks * PAGE * D, out_n = (size_t)batch * rows * DL;
    uint16_t *q = malloc(q_n * 2), *kv = malloc(kv_n * 2), *out = malloc(out_n * 2);
    int32_t *table = malloc(sizeof(int32_t) * (size_t)batch * blocks), *lens = malloc(sizeof(int32_t) * (size_t)batch);
    float *lse = malloc(sizeof(float) * (size_t)batch * rows);
    for (size_t i = 0; i < q_n; i++) q[i] = to_bf16(uniform());
    for (size_t i = 0; i < kv_n; i++) kv[i] = to_bf16(uniform());
    for (int b = 0; b < batch; b++) {
        lens[b] = len - (b * len) / (4 * batch);  /* ragged: len down to 3/4 len */
        for (int k = 0; k < blocks; k++) table[b * blocks + k] = (batch - 1 - b) * blocks + k;
    }
    void *dq, *dkv, *dtable, *dlens, *dout, *dlse, *dws = NULL;
    CHECK(mlt_device_alloc(rt, q_n * 2, &dq));
    CHECK(mlt_device_alloc(rt, kv_n * 2, &dkv));
    CHECK(mlt_device_alloc(rt, sizeof(int32_t) * (size_t)batch * blocks, &dtable));
    CHECK(mlt_device_alloc(rt, sizeof(int32_t) * (size_t)batch, &dlens));
    CHECK(mlt_device_alloc(rt, out_n * 2, &dout));
    CHECK(mlt_device_alloc(rt, sizeof(float) * (size_t)batch * rows, &dlse));
    size_t ws = mlt_plan_workspace_size(plan);
    if (ws) CHECK(mlt_device_alloc(rt, ws, &dws));
    CHECK(mlt_copy_to_device(rt, dq, q, q_n * 2));
    CHECK(mlt_copy_to_device(rt, dkv, kv, kv_n * 2));
    CHECK(mlt_copy_to_device(rt, dtable, table, sizeof(int32_t) * (size_t)batch * blocks));
    CHECK(mlt_copy_to_device(rt, dlens, lens, sizeof(int32_t) * (size_t)batch));
    mlt_decode_args a = {.batch = batch, .seq_len_hint = len, .max_blocks_per_seq = blocks, .q = dq, .kv_cache = dkv,
                         .block_table = dtable, .seq_lens = dlens, .out = dout, .lse = dlse,
                         .workspace = dws, .workspace_size = ws, .max_seq_len_hint = lens[0]};
    CHECK(mlt_plan_run(plan, &a, NULL));
    CHECK(mlt_synchronize(rt));
    CHECK(mlt_copy_to_host(rt, out, dout, out_n * 2));
    CHECK(mlt_copy_to_host(rt, lse, dlse, sizeof(float) * (size_t)batch * rows));

    /* reference: plain two-pass softmax in double */
    double diff = 0, norm = 0, scale = 1.0 / sqrt((double)D);
    double *s = malloc(sizeof(double) * (size_t)len), *ref = malloc(sizeof(double) * DL);
    for (int b = 0; b < batch; b++)
        for (int h = 0; h < rows; h++) {
            const uint16_t *qr = q + ((size_t)b * rows + h) * D;
            double m = -INFINITY, sum = 0;
            for (int j = 0; j < lens[b]; j++) {
                const uint16_t *k = kv + ((size_t)table[b * blocks + j / PAGE] * PAGE + j % PAGE) * D;
                double dot = 0;
                for (int d = 0; d < D; d++) dot += from_bf16(qr[d]) * from_bf16(k[d]);
                s[j] = dot * scale;
                if (s[j] > m) m = s[j];
            }
            memset(ref, 0, sizeof(double) * DL);
            for (int j = 0; j < lens[b]; j++) sum += (s[j] = exp(s[j] - m));
            for (int j = 0; j < lens[b]; j++) {
                const uint16_t *k = kv + ((size_t)table[b * blocks + j / PAGE] * PAGE + j % PAGE) * D;
                for (int d = 0; d < DL; d++) ref[d] += s[j] / sum * from_bf16(k[d]);
            }
            for (int d = 0; d < DL; d++) {
                double g = from_bf16(out[((size_t)b * rows + h) * DL + d]);
                diff += (g - ref[d]) * (g - ref[d]);
                norm += ref[d] * ref[d];
            }
            double lse_ref = m + log(sum), lse_got = lse[b * rows + h];
            if (!(fabs(lse_got - lse_ref) < 1e-3 * (1 + fabs(lse_ref)))) diff = INFINITY;
        }
    double err = sqrt(diff / norm);
    /* time: 200 calls back to back */
    t0 = now_ms();
    for (int i = 0; i < 200; i++) CHECK(mlt_plan_run(plan, &a, NULL));
    CHECK(mlt_synchronize(rt));
    double per_call = (now_ms() - t0) / 200;
    printf("decode N=%d batch=%d len<=%d: relative error %.2e (%s), %.1f us per call\n", heads, batch, len, err,
           err < 1e-2 ? "ok" : "WRONG", per_call * 1e3);
    mlt_device_free(rt, dq), mlt_device_free(rt, dkv), mlt_device_free(rt, dtable), mlt_device_free(rt, dlens);
    mlt_device_free(rt, dout), mlt_device_free(rt, dlse), mlt_device_free(rt, dws);
    mlt_plan_destroy(plan);
    mlt_runtime_destroy(rt);
    free(q), free(kv), free(out), free(table), free(lens), free(lse), free(s), free(ref);
    return err < 1e-2 ? 0 : 1;
}
