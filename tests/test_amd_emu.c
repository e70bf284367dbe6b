/*
 * The AMD code paths executed on the CPU (label "emu"): the kernel sources'
 * AMD branches, compiled for the host against the HIP emulation
 * (runtime/gpu/emu/hip/hip_runtime.h) by the "hip-cpu" backend, launched through
 * the same code as on a GPU (mt_mla_decode_launch builds the arguments, the
 * JIT compiles and loads), and compared with the double-precision CPU
 * reference.  No GPU, no ROCm.
 *
 * What it proves: the kernels' logic on 64-lane wavefronts with barriers,
 * LDS, shuffles and the MFMA instructions as AMD documents their lane
 * layouts (gfx942: 16x16x16; gfx950 where the kernels use its forms).  What
 * it does not: the GPU compiler's code, timing, occupancy, races between
 * work-groups (they run one after another).
 *
 * Coverage: both targets (gfx942, gfx950), the SIMT (mma=0) and the
 * matrix-core (mma=1) paths, variants drawn from each target's full valid
 * space (so every split count, reduce form, tile and thread count the
 * family allows there, and whatever new variants it gains), every q/KV
 * dtype pair (KV fp8 in both encodings, OCP e4m3 and fnuz: each target
 * reads one of them with its own instruction and the other in software),
 * pages 1/16/64, Sq 1..8 and chunks of 20..41 tokens (the absorbed form of
 * prefill), heads 1..16, ragged lengths with 0 and fewer keys
 * than Sq; on gfx950 the matrix-core units alternate 16- and 32-key chunks
 * (32 keys: P V through 16x16x32).  A variant ("unit") is compiled once and
 * run on CASES_PER_UNIT shapes.  Pass: as test_gpu_mla (out relative error
 * < 1e-2 bf16 / 5e-3 fp16, lse < 1e-3, NaN never).  Before them, the
 * prelude's fp8 conversions (both encodings, scalar and pairs) on all 256
 * codes against a decoding written here from the formats' definitions.
 *
 * The negative controls (each must come out as stated, else the test fails):
 *   - lanes: a matrix-core variant per target compiled with the MFMA model's
 *     A-operand lane mapping permuted (MT_EMU_WRONG_MFMA_LANES) must FAIL the
 *     comparison (else it could not see a wrong layout);
 *   - k32 pairing: one per target with the 16x16x32 model's A read as two
 *     16x16x16 halves (MT_EMU_WRONG_MFMA_K32_PAIRING) must FAIL on gfx950,
 *     whose scores and 32-key P V use that instruction, and PASS on gfx942,
 *     which never issues it;
 *   - encoding: fnuz KV data run by a variant compiled for OCP e4m3 (the
 *     data decoded as the wrong encoding) must FAIL.
 *
 * The length-aware schedule (mla_schedule, on 64-lane wavefronts): per
 * target, a length-aware unit builds SCHEDULE_BATCHES schedules alone
 * (batch 1..300; uniform, ragged, zeros, one long request; drawn costs),
 * each equal to the host's (kernels/mla_decode/schedule.c) word for word.
 *
 * MLA_TUNE_TEST_SEED (default 24), MLA_TUNE_EMU_UNITS (variants per target
 * and path, default 12).
 */
#define _GNU_SOURCE
#include <math.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "decode_variants.h"
#include "fp8_codes.h"
#include "kernels/dtype.h"
#include "kernels/build.h"
#include "kernels/sources.h"
#include "kernels/mla_decode/mla_decode.h"
#include "kernels/mla_decode/mla_reference.h"
#include "kernels/mla_decode/schedule.h"
#include "runtime/base/parallel.h"
#include "runtime/gpu/jit.h"

enum { CASES_PER_UNIT = 5, MAX_UNITS = 256, MAX_CASES = MAX_UNITS * CASES_PER_UNIT, SCHEDULE_BATCHES = 40 };

static uint64_t rng_state;
static uint64_t rnd(void) {
    rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
    return rng_state;
}
static int rnd_int(int lo, int hi) { return lo + (int)(rnd() % (uint64_t)(hi - lo + 1)); }
static double rnd_unit(void) { return (double)(rnd() >> 11) / 9007199254740992.0 * 2.0 - 1.0; }

typedef enum control_kind { NOT_A_CONTROL, CONTROL_LANES, CONTROL_K32, CONTROL_ENCODING } control_kind;

typedef struct unit {
    int arch;                /* index into the targets */
    mt_problem_static s;     /* what the variant is compiled for */
    mt_dtype data_kv;        /* the KV dtype of the data and the reference (s.kv_dtype but in CONTROL_ENCODING) */
    mt_variant v;
    control_kind control;
    const mt_code_object *obj;
    mt_status status;
    char error[600];
} unit;

typedef struct test_case {
    int unit;
    int n_heads, sq, batch, lens[4];
    double scale, kv_scale;
    uint64_t seed;
    /* results */
    int ran, ok, has_nan;
    double e_out, e_lse, seconds;
    char error[400];
} test_case;

typedef struct target_ctx {
    const char *arch;
    mt_backend *b;
    mt_jit *jit;
    mt_device_info info;
    mt_target target;
} target_ctx;

static target_ctx targets[2] = {{.arch = "gfx942"}, {.arch = "gfx950"}};
static unit units[MAX_UNITS];
static int n_units;
static test_case cases[MAX_CASES];
static int n_cases;

typedef struct variant_list {
    mt_variant *items;
    int n;
} variant_list;

/* Compiles unit i (an mt_parallel_for body). */
static void compile_unit(void *ctx, int i) {
    (void)ctx;
    unit *u = &units[i];
    const char *wrong[] = {u->control == CONTROL_LANES ? "-DMT_EMU_WRONG_MFMA_LANES" : "-DMT_EMU_WRONG_MFMA_K32_PAIRING"};
    const int n_wrong = u->control == CONTROL_LANES || u->control == CONTROL_K32;
    u->status = mt_build_compile_with(targets[u->arch].jit, &u->v, &u->s, &targets[u->arch].target, wrong, n_wrong,
                                      &u->obj, NULL);
    if (u->status != MT_OK) snprintf(u->error, sizeof u->error, "%.599s", mt_last_error());
}

static void fill_storage(uint64_t *state, void *dst, mt_dtype t, size_t n, double kv_scale) {
    uint64_t saved = rng_state;
    rng_state = *state;
    for (size_t i = 0; i < n; i++) mt_host_store(t, dst, i, (float)(rnd_unit() / kv_scale));
    *state = rng_state;
    rng_state = saved;
}

/* Runs one case; fills its results.  Thread-safe: its own buffers, its
 * own random state; modules serialise their own launches. */
static void run_case(test_case *tc) {
    const unit *u = &units[tc->unit];
    target_ctx *t = &targets[u->arch];
    mt_backend *b = t->b;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    tc->ran = 1;
    if (u->status != MT_OK) {
        snprintf(tc->error, sizeof tc->error, "compile failed: %.380s", u->error);
        return;
    }
    /* the variant's kernels, by the names the family gives them */
    mt_kernels fns;
    if (mt_build_load(t->jit, u->obj, &u->v, &u->s, &t->target, &fns) != MT_OK) {
        snprintf(tc->error, sizeof tc->error, "%.390s", mt_last_error());
        return;
    }
    uint64_t state = tc->seed;
    const mt_problem_static *s = &u->s;
    const int page = s->page_size, rows = tc->sq * tc->n_heads;
    int max_blocks = 1, total_pages = 0;
    for (int r = 0; r < tc->batch; r++) {
        int nb = (tc->lens[r] + page - 1) / page;
        if (nb > max_blocks) max_blocks = nb;
        total_pages += nb;
    }
    if (total_pages == 0) total_pages = 1;
    /* pages handed out in reverse order, so the block table matters */
    int32_t *table = calloc((size_t)tc->batch * max_blocks, sizeof(int32_t));
    int next_page = total_pages;
    for (int r = 0; r < tc->batch; r++)
        for (int k = 0; k < (tc->lens[r] + page - 1) / page; k++) table[(size_t)r * max_blocks + k] = --next_page;
    size_t q_elems = (size_t)tc->batch * rows * s->d, kv_elems = (size_t)total_pages * page * s->d;
    size_t out_elems = (size_t)tc->batch * rows * s->dl, lse_elems = (size_t)tc->batch * rows;
    size_t kv_bytes = kv_elems * mt_dtype_size(s->kv_dtype);
    void *q = malloc(q_elems * 2), *kv = malloc(kv_bytes);
    fill_storage(&state, q, s->q_dtype, q_elems, 1.0);
    fill_storage(&state, kv, u->data_kv, kv_elems, tc->kv_scale);
    mt_devptr dq, dkv, dtable, dlens, dout, dlse, dws = 0;
    size_t ws = mt_mla_decode_workspace_bytes(&u->v, s, tc->batch, tc->n_heads, tc->sq, t->info.compute_units);
    mt_backend_mem_alloc(b, q_elems * 2, &dq);
    mt_backend_mem_alloc(b, kv_bytes, &dkv);
    mt_backend_mem_alloc(b, sizeof(int32_t) * (size_t)tc->batch * max_blocks, &dtable);
    mt_backend_mem_alloc(b, sizeof(int32_t) * (size_t)tc->batch, &dlens);
    mt_backend_mem_alloc(b, out_elems * 2, &dout);
    mt_backend_mem_alloc(b, lse_elems * 4, &dlse);
    if (ws) mt_backend_mem_alloc(b, ws, &dws);
    mt_backend_copy_to_device(b, dq, q, q_elems * 2, NULL);
    mt_backend_copy_to_device(b, dkv, kv, kv_bytes, NULL);
    mt_backend_copy_to_device(b, dtable, table, sizeof(int32_t) * (size_t)tc->batch * max_blocks, NULL);
    mt_backend_copy_to_device(b, dlens, tc->lens, sizeof(int32_t) * (size_t)tc->batch, NULL);
    /* poison: 0xffff is NaN in bf16 and fp16, 0xffffffff in fp32 */
    mt_backend_mem_set(b, dout, 0xff, out_elems * 2, NULL);
    mt_backend_mem_set(b, dlse, 0xff, lse_elems * 4, NULL);
    if (ws) mt_backend_mem_set(b, dws, 0xff, ws, NULL);
    mt_mla_decode_args a = {.batch = tc->batch, .n_heads = tc->n_heads, .sq = tc->sq, .max_blocks = max_blocks,
                            .page_size = page, .warp_size = t->info.warp_size, .scale = (float)tc->scale,
                            .kv_scale = (float)tc->kv_scale, .q = dq, .kv = dkv, .block_table = dtable,
                            .seq_lens = dlens, .out = dout, .lse = dlse, .workspace = dws, .workspace_bytes = ws,
                            .compute_units = t->info.compute_units};
    mt_status st = mt_mla_decode_launch(b, &fns, &u->v, s, &a, NULL);
    if (st != MT_OK) {
        snprintf(tc->error, sizeof tc->error, "launch: %.390s", mt_last_error());
    } else {
        uint16_t *out16 = malloc(out_elems * 2);
        float *lse32 = malloc(lse_elems * 4);
        mt_backend_copy_to_host(b, out16, dout, out_elems * 2, NULL);
        mt_backend_copy_to_host(b, lse32, dlse, lse_elems * 4, NULL);
        double *got = malloc(sizeof(double) * out_elems), *ref = malloc(sizeof(double) * out_elems);
        double *got_lse = malloc(sizeof(double) * lse_elems), *ref_lse = malloc(sizeof(double) * lse_elems);
        for (size_t k = 0; k < out_elems; k++) tc->has_nan |= isnan(got[k] = mt_host_load(s->q_dtype, out16, k));
        for (size_t k = 0; k < lse_elems; k++) tc->has_nan |= isnan(got_lse[k] = lse32[k]);
        mt_mla_host_problem hp = {.s = *s, .batch = tc->batch, .n_heads = tc->n_heads, .sq = tc->sq,
                                  .max_blocks = max_blocks, .scale = (float)tc->scale, .kv_scale = (float)tc->kv_scale,
                                  .q = q, .kv = kv, .block_table = table, .seq_lens = tc->lens};
        /* matrix units multiply in one type: fp16 q with bf16 KV is rounded
         * to bf16 (README "Numerics"), so the reference takes it rounded */
        uint16_t *q_rounded = NULL;
        if (u->v.values[MT_P_MMA] > 0 && s->q_dtype == MT_FP16 && s->kv_dtype == MT_BF16) {
            q_rounded = malloc(q_elems * 2);
            for (size_t k = 0; k < q_elems; k++)
                q_rounded[k] = mt_host_f32_to_bf16(mt_host_f16_to_f32(((const uint16_t *)q)[k]));
            hp.q = q_rounded;
            hp.s.q_dtype = MT_BF16;
        }
        hp.s.kv_dtype = u->data_kv; /* the data's own encoding, also for CONTROL_ENCODING */
        mt_mla_reference(&hp, ref, ref_lse, 1);
        free(q_rounded);
        tc->e_out = mt_relative_error(got, ref, (long)out_elems);
        tc->e_lse = mt_relative_error(got_lse, ref_lse, (long)lse_elems);
        double tol = s->q_dtype == MT_BF16 ? 1e-2 : 5e-3;
        tc->ok = !tc->has_nan && tc->e_out < tol && tc->e_lse < 1e-3;
        free(got), free(ref), free(got_lse), free(ref_lse), free(out16), free(lse32);
    }
    free(q), free(kv), free(table);
    mt_backend_mem_free(b, dq), mt_backend_mem_free(b, dkv), mt_backend_mem_free(b, dtable);
    mt_backend_mem_free(b, dlens), mt_backend_mem_free(b, dout), mt_backend_mem_free(b, dlse);
    if (ws) mt_backend_mem_free(b, dws);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    tc->seconds = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
}

/* Runs case i (an mt_parallel_for body). */
static void run_case_at(void *ctx, int i) {
    (void)ctx;
    run_case(&cases[i]);
}

/* The harness's own semantics, on small kernels: shuffles and ballots
 * across 64 lanes, a barrier between waves, and the failures it must
 * report (lanes of a wave at different collectives; a write past the
 * launch's LDS). */
static const char *const self_check_source =
    "#include <hip/hip_runtime.h>\n"
    "extern \"C\" __global__ void shuffles(int *out) {\n"
    "    extern __shared__ int lds[];\n"
    "    const int t = threadIdx.x, lane = t % 64;\n"
    "    int v = __shfl_xor(t, 5);\n"                        /* lane ^ 5 within the wave */
    "    int s = t;\n"
    "    for (int m = 32; m > 0; m >>= 1) s += __shfl_xor(s, m);\n" /* the wave's sum */
    "    int h = __shfl_xor(t, 16, 32);\n"                   /* within halves */
    "    unsigned long long b = __ballot(lane % 3 == 0);\n"
    "    lds[t] = t;\n"
    "    __syncthreads();\n"
    "    int other = lds[blockDim.x - 1 - t];\n"             /* written by another wave */
    "    out[5 * t] = v, out[5 * t + 1] = s, out[5 * t + 2] = h, out[5 * t + 3] = (int)__popcll(b), out[5 * t + 4] = other;\n"
    "}\n"
    "extern \"C\" __global__ void diverged(int *out) {\n"
    "    int v = threadIdx.x;\n"
    "    if (threadIdx.x % 2) v = __shfl_xor(v, 1);\n"
    "    out[threadIdx.x] = v;\n"
    "}\n"
    "extern \"C\" __global__ void lds_overflow(int *out) {\n"
    "    extern __shared__ int lds[];\n"
    "    lds[threadIdx.x + 1] = 1;\n"                         /* one int past blockDim.x ints */
    "    out[threadIdx.x] = 0;\n"
    "}\n";

static void self_check(target_ctx *t) {
    mt_jit_request req = {.source = self_check_source, .source_name = "self_check.cu", .arch = t->arch};
    const mt_code_object *obj = NULL;
    CHECK_OK(mt_jit_compile(t->jit, &req, &obj, NULL));
    if (!obj) return;
    mt_function shuffles = NULL, diverged = NULL, overflow = NULL;
    CHECK_OK(mt_jit_function(t->jit, obj, "shuffles", &shuffles));
    CHECK_OK(mt_jit_function(t->jit, obj, "diverged", &diverged));
    CHECK_OK(mt_jit_function(t->jit, obj, "lds_overflow", &overflow));
    enum { N = 128 };
    mt_devptr d = 0;
    CHECK_OK(mt_backend_mem_alloc(t->b, 5 * N * sizeof(int), &d));
    void *args[] = {&d};
    unsigned grid[3] = {1, 1, 1}, block[3] = {N, 1, 1};
    CHECK_OK(mt_backend_launch(t->b, shuffles, grid, block, N * sizeof(int), NULL, args));
    int out[5 * N];
    CHECK_OK(mt_backend_copy_to_host(t->b, out, d, sizeof out, NULL));
    int bad = 0;
    for (int i = 0; i < N; i++) {
        int wave_sum = 0;
        for (int l = 0; l < 64; l++) wave_sum += i / 64 * 64 + l;
        bad += out[5 * i] != (i ^ 5) || out[5 * i + 1] != wave_sum || out[5 * i + 2] != (i ^ 16) ||
               out[5 * i + 3] != 22 || out[5 * i + 4] != N - 1 - i;
    }
    CHECK_MSG(bad == 0, "%s: %d threads got wrong shuffle / ballot / LDS results", t->arch, bad);
    mt_status st = mt_backend_launch(t->b, diverged, grid, block, 0, NULL, args);
    CHECK_MSG(st != MT_OK && strstr(mt_last_error(), "diverged"), "%s: divergent shuffle not reported: %s", t->arch,
              st == MT_OK ? "launch succeeded" : mt_last_error());
    st = mt_backend_launch(t->b, overflow, grid, block, N * sizeof(int), NULL, args);
    CHECK_MSG(st != MT_OK && strstr(mt_last_error(), "past the"), "%s: LDS overflow not reported: %s", t->arch,
              st == MT_OK ? "launch succeeded" : mt_last_error());
    printf("harness self-check on %s: shuffles, ballot, barrier and LDS right; divergence and LDS overflow reported\n",
           t->arch);
    mt_backend_mem_free(t->b, d);
}

/* The prelude's fp8 conversions on this target (tests/fp8_codes.h): on
 * gfx942 the fnuz pairs, on gfx950 the OCP ones, go through the modelled
 * v_cvt_pk_f32_fp8, the rest through software. */
static void fp8_conversion_check(target_ctx *t) {
    int bad[2];
    CHECK_OK(fp8_codes_check(t->b, t->jit, t->arch, bad));
    CHECK_MSG(bad[0] == 0 && bad[1] == 0, "%s: fp8 conversions wrong for %d OCP and %d fnuz codes", t->arch, bad[0],
              bad[1]);
    if (bad[0] == 0 && bad[1] == 0)
        printf("harness self-check on %s: the prelude's fp8 conversions (scalar, and pairs with the %s ones through "
               "the modelled v_cvt_pk_f32_fp8) exact for all 256 codes of fp8e4m3 and fp8e4m3fnuz\n",
               t->arch, strcmp(t->arch, "gfx950") == 0 ? "OCP" : "fnuz");
}

static const char *vname_of(const unit *u) {
    static char name[256];
    mt_variant_format(&u->v, name, sizeof name);
    return name;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* threads = CPUs (at most 16), both for compiling and running */
static int worker_threads(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 16 ? 16 : (int)n;
}

/* mla_schedule alone on the emulated target (file comment): the schedules
 * of SCHEDULE_BATCHES drawn batches against the host's.  Returns how many
 * matched. */
static int schedule_check(target_ctx *t, const unit *u, int *even_form) {
    mt_kernels fns;
    mt_status st = mt_build_load(t->jit, u->obj, &u->v, &u->s, &t->target, &fns);
    CHECK_MSG(st == MT_OK, "%s: loading the length-aware unit: %s", t->arch, mt_last_error());
    if (st != MT_OK) return 0;
    enum { MAX_BATCH = 300 };
    int32_t lens[MAX_BATCH];
    mt_devptr dlens = 0, dsched = 0;
    const size_t sched_bytes = mt_mla_decode_schedule_bytes(&u->v, 1023);
    CHECK_OK(mt_backend_mem_alloc(t->b, sizeof lens, &dlens));
    CHECK_OK(mt_backend_mem_alloc(t->b, sched_bytes, &dsched));
    int matched = 0;
    for (int i = 0; i < SCHEDULE_BATCHES; i++) {
        mt_variant v = u->v;
        decode_draw_schedule_costs(&v, rnd());
        v.values[MT_P_SNAP_CAP] = u->v.values[MT_P_SNAP_CAP]; /* compiled into the unit's code object */
        /* heads = tile_q: one row tile, so the most stretches (a thread each) */
        const int batch = i < 4 ? 1 + i : rnd_int(1, MAX_BATCH), mix = i % 4;
        const int n_heads = i % 3 ? v.values[MT_P_TILE_Q] : 128;
        for (int r = 0; r < batch; r++)
            lens[r] = mix == 0 ? 4096                                      /* uniform */
                      : mix == 1 ? rnd_int(0, 9) == 0 ? 0 : rnd_int(1, 8192) /* ragged, some empty */
                      : mix == 2 ? (r == batch / 2 ? 32768 : 1024)           /* one long */
                                 : rnd_int(0, 200);                          /* short: shares below a page */
        /* the schedule alone: any compute-unit count (the emulated device has 4), up to the most stretches */
        static const int cus[] = {132, 304, 4, 1023};
        const int cu = cus[i % 4];
        mt_mla_decode_args a = {.batch = batch, .n_heads = n_heads, .sq = 1, .seq_lens = dlens, .compute_units = cu};
        mt_schedule_shape sh = mt_mla_decode_schedule_shape(&v, batch, n_heads, 1, cu);
        const int stretches = mt_schedule_stretches(&sh);
        const size_t entry_bytes = mt_schedule_entry_bytes(stretches);
        int32_t *want = malloc(entry_bytes), *got = malloc(entry_bytes);
        CHECK_OK(mt_schedule_build(&sh, lens, want));
        *even_form += mt_schedule_even_granules(&sh, lens) > 0; /* the draw must reach both forms (schedule.h) */
        CHECK_OK(mt_backend_copy_to_device(t->b, dlens, lens, sizeof(int32_t) * (size_t)batch, NULL));
        CHECK_OK(mt_backend_mem_set(t->b, dsched, 0xff, sched_bytes, NULL));
        CHECK_OK(mt_mla_decode_schedule(t->b, &fns, &v, &a, dsched, NULL));
        CHECK_OK(mt_backend_copy_to_host(t->b, got, dsched, entry_bytes, NULL));
        const size_t words = 4 * (size_t)(2 + stretches + want[1]);
        int first_diff = -1;
        for (size_t w = 0; w < words && first_diff < 0; w++)
            if (got[w] != want[w]) first_diff = (int)w;
        CHECK_MSG(first_diff < 0, "%s schedule %d (batch %d, mix %d, %d stretches, %d cut): word %d GPU %d, host %d",
                  t->arch, i, batch, mix, stretches, want[1], first_diff, first_diff >= 0 ? got[first_diff] : 0,
                  first_diff >= 0 ? want[first_diff] : 0);
        matched += first_diff < 0;
        free(want), free(got);
    }
    mt_backend_mem_free(t->b, dlens), mt_backend_mem_free(t->b, dsched);
    return matched;
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *seed_env = getenv("MLA_TUNE_TEST_SEED"), *units_env = getenv("MLA_TUNE_EMU_UNITS");
    uint64_t seed = seed_env ? strtoull(seed_env, NULL, 0) : 24;
    int per_path = units_env ? atoi(units_env) : 12;
    if (per_path < 1 || 4 * per_path + 8 > MAX_UNITS) /* + a length-aware unit and 3 controls per target */ per_path = 12;
    rng_state = seed * 2654435761u + 1;

    for (int ti = 0; ti < 2; ti++) {
        target_ctx *t = &targets[ti];
        setenv("MLA_TUNE_EMU_ARCH", t->arch, 1);
        mt_status st = mt_backend_open("hip-cpu", &t->b);
        /* no skip: CI installs clang (tests/setup-deps.sh); a missing one fails */
        CHECK_MSG(st == MT_OK, "hip-cpu backend: %s", mt_last_error());
        if (st != MT_OK) return check_summary("test_amd_emu");
        CHECK_OK(mt_backend_device_info(t->b, 0, &t->info));
        mt_target_from_device(&t->info, &t->target);
        CHECK_OK(mt_jit_create(t->b, NULL, &t->jit));
    }
    char version[128];
    mt_backend_compiler_version(targets[0].b, version, sizeof version);
    printf("seed %llu; AMD kernels on the CPU: %s, %s, compiled by %s\n", (unsigned long long)seed,
           targets[0].info.name, targets[1].info.name, version);

    /* units: per target and path, per_path variants drawn from the full
     * valid space of a (page, dtypes) key that cycles over all of them; the
     * gfx950 matrix-core units alternate 16- and 32-key chunks */
    static const int pages[] = {1, 16, 64}, heads[] = {1, 3, 8, 16};
    static const mt_dtype q_types[] = {MT_BF16, MT_FP16},
                          kv_types[] = {MT_BF16, MT_FP16, MT_FP8_E4M3, MT_FP8_E4M3_FNUZ};
    enum { N_KV = sizeof kv_types / sizeof kv_types[0], N_DT = 2 * N_KV };
    for (int ti = 0; ti < 2; ti++)
        for (int path = 0; path < 2; path++)
            for (int k = 0; k < per_path; k++) {
                int dt = (k + k / N_DT) % N_DT;
                mt_problem_static s = {.d = 576, .dl = 512, .page_size = pages[(k + path) % 3],
                                      .q_dtype = q_types[dt / N_KV], .kv_dtype = kv_types[dt % N_KV]};
                const int want_chunk = ti == 1 && path == 1 ? (k % 2 ? 32 : 16) : 0;
                variant_list vl = {0};
                mt_space sp;
                mt_space_full(&mt_family_mla_decode, &sp);
                    CHECK_OK(mt_space_list(&sp, &s, &targets[ti].target, &vl.items, &vl.n, NULL));
                int n_path = 0;
                for (int i = 0; i < vl.n; i++)
                    n_path += vl.items[i].values[MT_P_MMA] == path &&
                              (!want_chunk || vl.items[i].values[MT_P_KV_CHUNK] == want_chunk);
                CHECK_MSG(n_path > 0, "%s has no mma=%d variant for page %d (kv chunk %d)", targets[ti].arch, path,
                          s.page_size, want_chunk);
                if (n_path > 0) {
                    int pick = (int)(rnd() % (uint64_t)n_path);
                    unit *u = &units[n_units++];
                    for (int i = 0; i < vl.n; i++)
                        if (vl.items[i].values[MT_P_MMA] == path &&
                            (!want_chunk || vl.items[i].values[MT_P_KV_CHUNK] == want_chunk) && pick-- == 0)
                            u->v = vl.items[i];
                    if (u->v.values[MT_P_GROUPS_PER_CU] > 0) decode_draw_schedule_costs(&u->v, rnd());
                    u->arch = ti, u->s = s, u->data_kv = s.kv_dtype;
                }
                free(vl.items);
            }
    /* a length-aware unit per target (its cases, and the schedule check) */
    for (int ti = 0; ti < 2; ti++) {
        mt_problem_static s = {.d = 576, .dl = 512, .page_size = 64, .q_dtype = MT_BF16, .kv_dtype = MT_BF16};
        variant_list vl = {0};
        mt_space sp;
        mt_space_full(&mt_family_mla_decode, &sp);
        CHECK_OK(mt_space_list(&sp, &s, &targets[ti].target, &vl.items, &vl.n, NULL));
        int n_aware = 0;
        for (int i = 0; i < vl.n; i++) n_aware += vl.items[i].values[MT_P_GROUPS_PER_CU] > 0;
        CHECK_MSG(n_aware > 0, "%s has no length-aware variant", targets[ti].arch);
        for (int i = 0, pick = n_aware ? (int)(rnd() % (uint64_t)n_aware) : -1; i < vl.n; i++)
            if (vl.items[i].values[MT_P_GROUPS_PER_CU] > 0 && pick-- == 0) {
                unit *u = &units[n_units++];
                u->v = vl.items[i], u->arch = ti, u->s = s, u->data_kv = s.kv_dtype;
                decode_draw_schedule_costs(&u->v, rnd());
                u->v.values[MT_P_SNAP_CAP] = ti % 2 ? 2 : 4; /* both caps compiled: one target each */
            }
        free(vl.items);
    }
    /* the negative controls (file comment), each a copy of the last
     * matrix-core unit of its target that fits it */
    const int n_plain = n_units;
    for (int ti = 0; ti < 2; ti++)
        for (control_kind kind = CONTROL_LANES; kind <= CONTROL_ENCODING; kind++) {
            int control = -1;
            for (int i = 0; i < n_plain; i++)
                if (units[i].arch == ti && units[i].v.values[MT_P_MMA] == 1 &&
                    (kind != CONTROL_K32 || ti == 0 || units[i].v.values[MT_P_KV_CHUNK] == 32) &&
                    (kind != CONTROL_ENCODING || units[i].s.kv_dtype == MT_FP8_E4M3_FNUZ))
                    control = i;
            CHECK_MSG(control >= 0, "%s: no matrix-core unit for negative control %d", targets[ti].arch, (int)kind);
            if (control < 0) continue;
            unit *u = &units[n_units++];
            *u = units[control];
            u->control = kind;
            if (kind == CONTROL_ENCODING) u->s.kv_dtype = MT_FP8_E4M3; /* fnuz data, compiled to read OCP */
        }
    for (int i = 0; i < n_units; i++)
        for (int c = 0; c < (units[i].control ? 1 : CASES_PER_UNIT); c++) {
            test_case *tc = &cases[n_cases++];
            tc->unit = i;
            tc->n_heads = heads[(i + c) % 4];
            tc->sq = 1 + (i * CASES_PER_UNIT + c) % 8;
            tc->batch = rnd_int(1, 3);
            static const int lmax_by_case[CASES_PER_UNIT] = {40, 160, 400, 12, 700};
            int lmax = lmax_by_case[c];
            if (c == CASES_PER_UNIT - 1 && i % 4 == 3 && !units[i].control) {
                /* a prefill chunk in the absorbed form: 20..41 tokens, causal
                 * among them, a tile's rows spanning several tokens (few
                 * heads: the emulation's time goes with rows x keys) */
                tc->sq = 20 + 7 * (i / 4 % 4);
                if (tc->n_heads > 3) tc->n_heads = 3;
            }
            for (int r = 0; r < tc->batch; r++) {
                int kind = rnd_int(0, 7);
                tc->lens[r] = kind == 0 ? 0 : kind == 1 && tc->sq > 1 ? rnd_int(1, tc->sq - 1) : rnd_int(1, lmax);
            }
            if (units[i].control) tc->lens[0] = 200, tc->n_heads = 16;
            tc->scale = (rnd() & 1 ? 3.0 : 1.0) / sqrt(576.0);
            tc->kv_scale = mt_host_unit_kv_scale(units[i].data_kv);
            tc->seed = rnd() | 1;
        }

    for (int ti = 0; ti < 2; ti++) self_check(&targets[ti]);
    for (int ti = 0; ti < 2; ti++) fp8_conversion_check(&targets[ti]);

    double t0 = now();
    mt_parallel_for(n_units, worker_threads(), compile_unit, NULL);
    double t1 = now();
    mt_jit_stats js0 = mt_jit_get_stats(targets[0].jit), js1 = mt_jit_get_stats(targets[1].jit);
    printf("%d variants compiled for the host in %.1f s (%ld compiled, %ld from the disk cache)\n", n_units, t1 - t0,
           js0.compiles + js1.compiles, js0.disk_hits + js1.disk_hits);
    mt_parallel_for(n_cases, worker_threads(), run_case_at, NULL);
    double t2 = now();
    for (int ti = 0; ti < 2; ti++)
        for (int i = 0; i < n_units; i++)
            if (units[i].arch == ti && !units[i].control && units[i].v.values[MT_P_GROUPS_PER_CU] > 0 &&
                units[i].status == MT_OK) {
                int even = 0, matched = schedule_check(&targets[ti], &units[i], &even);
                printf("%s: %d/%d length-aware schedules built by mla_schedule equal the host's (%d in the even "
                       "form)\n", targets[ti].arch, matched, SCHEDULE_BATCHES, even);
                CHECK_MSG(even > 0 && even < SCHEDULE_BATCHES, "%s: %d of %d schedules in the even form: both forms "
                          "must be drawn", targets[ti].arch, even, SCHEDULE_BATCHES);
                break;
            }

    int passed = 0, counted = 0, by[2][2] = {{0}}, by_splits = 0, by_pages[3] = {0}, by_kv[N_KV] = {0}, by_sq[9] = {0};
    int by_kv_target_path[2][2][2] = {{{0}}}, pv_k32 = 0;
    double worst_out = 0, worst_lse = 0;
    for (int i = 0; i < n_cases; i++) {
        test_case *tc = &cases[i];
        const unit *u = &units[tc->unit];
        char vname[256];
        mt_variant_format(&u->v, vname, sizeof vname);
        char lens_text[48];
        snprintf(lens_text, sizeof lens_text, "%d", tc->lens[0]);
        for (int r = 1; r < tc->batch; r++)
            snprintf(lens_text + strlen(lens_text), sizeof lens_text - strlen(lens_text), ",%d", tc->lens[r]);
        printf("case %3d %s %s N=%2d Sq=%d page=%2d L=%-12s q=%s kv=%-11s %s  err %.2e lse %.2e %.2fs%s%s%s\n", i,
               u->control ? "CONTROL" : tc->ok ? "ok  " : "FAIL", targets[u->arch].arch, tc->n_heads, tc->sq,
               u->s.page_size, lens_text, mt_dtype_name(u->s.q_dtype), mt_dtype_name(u->data_kv), vname, tc->e_out,
               tc->e_lse, tc->seconds, tc->has_nan ? " NaN" : "", tc->error[0] ? " " : "", tc->error);
        if (u->control) continue;
        counted++;
        CHECK_MSG(tc->ok, "case %d failed (seed %llu)", i, (unsigned long long)seed);
        if (!tc->ok) continue;
        passed++;
        by[u->arch][u->v.values[MT_P_MMA]]++;
        by_splits += u->v.values[MT_P_NUM_SPLITS] > 1;
        by_pages[u->s.page_size == 1 ? 0 : u->s.page_size == 16 ? 1 : 2]++;
        by_kv[u->s.kv_dtype]++;
        if (mt_dtype_is_fp8(u->s.kv_dtype))
            by_kv_target_path[u->s.kv_dtype == MT_FP8_E4M3_FNUZ][u->arch][u->v.values[MT_P_MMA]]++;
        pv_k32 += u->arch == 1 && u->v.values[MT_P_MMA] == 1 && u->v.values[MT_P_KV_CHUNK] >= 32;
        by_sq[tc->sq <= 8 ? tc->sq : 0]++; /* 0: the chunks */
        if (tc->e_out > worst_out) worst_out = tc->e_out;
        if (tc->e_lse > worst_lse) worst_lse = tc->e_lse;
    }
    printf("\n%d/%d emulated AMD cases passed in %.1f s (gfx942: %d SIMT, %d MFMA; gfx950: %d SIMT, %d MFMA, %d of "
           "them with 32-key chunks (P V on 16x16x32); %d with splits and the reduce; pages 1/16/64: %d/%d/%d; KV "
           "bf16/fp16/fp8e4m3/fp8e4m3fnuz: %d/%d/%d/%d; Sq 1..8: %d %d %d %d %d %d %d %d, chunks of 20..41: %d); worst "
           "error out %.2e, lse %.2e\n",
           passed, counted, t2 - t1, by[0][0], by[0][1], by[1][0], by[1][1], pv_k32, by_splits, by_pages[0],
           by_pages[1], by_pages[2], by_kv[0], by_kv[1], by_kv[2], by_kv[3], by_sq[1], by_sq[2], by_sq[3], by_sq[4],
           by_sq[5], by_sq[6], by_sq[7], by_sq[8], by_sq[0], worst_out, worst_lse);
    printf("fp8 KV cases passed (SIMT/MFMA): fp8e4m3 gfx942 %d/%d, gfx950 %d/%d; fp8e4m3fnuz gfx942 %d/%d, gfx950 "
           "%d/%d\n", by_kv_target_path[0][0][0], by_kv_target_path[0][0][1], by_kv_target_path[0][1][0],
           by_kv_target_path[0][1][1], by_kv_target_path[1][0][0], by_kv_target_path[1][0][1],
           by_kv_target_path[1][1][0], by_kv_target_path[1][1][1]);
    for (int e = 0; e < 2; e++)
        for (int ti = 0; ti < 2; ti++)
            for (int path = 0; path < 2; path++)
                CHECK_MSG(by_kv_target_path[e][ti][path] > 0, "no passed %s case on %s mma=%d",
                          e ? "fp8e4m3fnuz" : "fp8e4m3", targets[ti].arch, path);
    CHECK_MSG(pv_k32 > 0, "no gfx950 case ran P V on 16x16x32 (32-key chunks)");
    for (int i = 0; i < n_cases; i++) {
        const test_case *tc = &cases[i];
        const unit *u = &units[tc->unit];
        if (!u->control) continue;
        /* the k32 control passes on gfx942, which never issues 16x16x32 */
        const int must_fail = !(u->control == CONTROL_K32 && u->arch == 0);
        static const char *const what[] = {
            "", "MFMA A-operand lanes permuted in the model", "16x16x32 A read as two 16x16x16 halves in the model",
            "fp8e4m3fnuz data read by a variant compiled for fp8e4m3"};
        const char *verdict = tc->ok == !must_fail ? (must_fail ? "fails, as it must" : "passes, as it must (no 16x16x32 on gfx942)")
                              : must_fail ? "PASSED: the comparison cannot see it"
                                          : "FAILED: the wrong 16x16x32 model changed a gfx942 result";
        printf("negative control on %s (%s; %s): out error %.2e, lse error %.2e -> %s\n", targets[u->arch].arch,
               what[u->control], vname_of(u), tc->e_out, tc->e_lse, verdict);
        CHECK_MSG(tc->ran && tc->ok == !must_fail && !tc->error[0], "negative control %d on %s: %s %s",
                  (int)u->control, targets[u->arch].arch, verdict, tc->error);
    }
    for (int ti = 0; ti < 2; ti++) {
        mt_jit_destroy(targets[ti].jit);
        mt_backend_close(targets[ti].b);
    }
    return check_summary("test_amd_emu");
}
