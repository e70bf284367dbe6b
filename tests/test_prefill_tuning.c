/*
 * The prefill family in the tuner and the runtime's dispatch (issue 29),
 * with no GPU:
 *   - plans with `kind: mla_prefill` entries make the keys the docs say
 *     (sq = new tokens, batch = requests, seq_len = context + new tokens
 *     when causal, the chunk when not, lengths = the mask, page size 1);
 *     bad entries are refused naming the file, line and field;
 *   - a prefill sweep on the fake device stores rows under those keys and
 *     derives choices (the fake landscape's best point, not the default);
 *     its progress lines, summary and dry-run table, and `show`, print
 *     prefill keys in prefill's columns (heads, requests, new tokens,
 *     context, keys, mask), apart from decode's table on a mixed DB;
 *     with --inject-fault, the prefill variants it names fail as a GPU
 *     fault leaves them (launch-failed, the worker restarted) and the
 *     sweep goes on; a bad fault spec is refused naming it;
 *     a plan whose spaces have no prefill family is refused naming the kind;
 *   - a bad prefill key in a DB is refused when read;
 *   - `report` on a DB of decode and prefill keys: prefill keys in their
 *     own table and words (requests, new tokens, context, keys, mask,
 *     TFLOPS as mt_prefill_flops counts them), kept out of decode's
 *     table, heat maps and bandwidth chart; lookup --prefill answers in
 *     the same words, says what decode's lookup says (FAR, missing, --json);
 *   - the dry run's estimate for prefill keys: each candidate's launch at
 *     its path's assumed speed (SIMT, mma.sync, MFMA, wgmma) and compile
 *     time, within a factor of 2 of the plan's H100 sweep (165 s);
 *   - dispatch: causal calls take the causal keys' winners, non-causal
 *     ones the non-causal keys', the nearest by requests and new tokens;
 *     with no key for a mask, the family's rule; explain says which;
 *   - through the public API on the stub driver (tests/stub_libcuda.c): a
 *     prefill plan reads the fake sweep's rows and explains the choice.
 */
#define _GNU_SOURCE
#include <math.h>
#include <unistd.h>

#include "check.h"
#include "test_folder.h"
#include "kernels/mla_prefill/mla_prefill.h"
#include "runtime/api/prefill_dispatch.h"
#include "runtime/include/mlatune.h"
#include "tuner/config.h"
#include "tuner/estimate.h"
#include "tuner/heuristic_gain.h"
#include "tuner/prefill_key.h"

static const char *bin;

static int run(const char *args, char *out, size_t out_size) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s 2>&1", dir, bin, args);
    return run_capture(cmd, out, out_size);
}

static void expect_plan_error(const char *text, const char *where, const char *what) {
    write_file("bad.yaml", text);
    char path[600];
    path_of(path, sizeof path, "bad.yaml");
    mt_plan p;
    CHECK_MSG(mt_load_plan(path, &p) != MT_OK, "plan loaded: %s", text);
    CHECK_MSG(strstr(mt_last_error(), path) && strstr(mt_last_error(), where) && strstr(mt_last_error(), what),
              "message '%s' lacks '%s' / '%s'", mt_last_error(), where, what);
}

#define HEAD "name: p\nproblems:\n  - kind: mla_prefill\n"

static void test_plan_keys(void) {
    write_file("good.yaml", HEAD "    heads: [16, 128]\n    tokens: 512\n    requests: [1, 4]\n"
                                 "    context: [0, 1024]\n    q_dtype: [bf16, fp16]\n"
                                 "  - kind: mla_prefill\n    heads: 128\n    tokens: 256\n    requests: 2\n"
                                 "    context: 4096\n    causal: false\n");
    char path[600];
    path_of(path, sizeof path, "good.yaml");
    mt_plan p;
    CHECK_OK(mt_load_plan(path, &p));
    CHECK_MSG(p.n_keys == 2 * 2 * 2 * 2 + 1, "%d keys", p.n_keys);
    int causal_ctx = 0, full = 0;
    for (int i = 0; i < p.n_keys; i++) {
        const mt_problem_key *k = &p.keys[i];
        CHECK(strcmp(k->kind, "mla_prefill") == 0);
        CHECK(k->s.d == 192 && k->s.dl == 128 && k->s.page_size == 1);
        CHECK(k->max_len == k->seq_len);
        if (strcmp(k->lengths, MT_PREFILL_CAUSAL) == 0) {
            CHECK(k->sq == 512);
            CHECK(k->seq_len == 512 || k->seq_len == 512 + 1024);
            causal_ctx += k->seq_len == 1536 && k->batch == 4 && k->n_heads == 128 && k->s.q_dtype == MT_FP16;
            CHECK(mt_prefill_key_context(k) == k->seq_len - 512);
        } else {
            CHECK(strcmp(k->lengths, MT_PREFILL_NON_CAUSAL) == 0);
            full++;
            CHECK(k->sq == 256 && k->batch == 2 && k->seq_len == 4096 && mt_prefill_key_context(k) == 4096);
        }
    }
    CHECK(causal_ctx == 1 && full == 1);
    mt_plan_free(&p);
    /* flops: causal counts half the new tokens' square */
    mt_problem_key k;
    mt_prefill_key_make(&k, 128, 192, 128, MT_BF16, MT_BF16, 1, 8192, 0, 1);
    CHECK(fabs(mt_prefill_flops(&k) - 2.0 * 320 * 128 * 8192.0 * 8192 / 2) < 1);
    mt_prefill_key_make(&k, 1, 192, 128, MT_BF16, MT_BF16, 1, 100, 1000, 1);
    CHECK(fabs(mt_prefill_pairs(100, 1100, 1) - (100.0 * 1100 - 5000)) < 1e-9);
    CHECK(fabs(mt_prefill_pairs(100, 1100, 0) - 110000.0) < 1e-9);

    /* refusals, each naming the field */
    expect_plan_error(HEAD "    heads: 16\n    sq: 4\n    tokens: 8\n    requests: 1\n", ":5:", "sq: not a field of kind "
                      "mla_prefill (use 'tokens')");
    expect_plan_error(HEAD "    heads: 16\n    tokens: 8\n    requests: 1\n    causal: maybe\n", ":7:", "causal: expected");
    expect_plan_error(HEAD "    heads: 16\n    tokens: 0\n    requests: 1\n", ":5:", "tokens");
    expect_plan_error(HEAD "    heads: 16\n    tokens: 8\n", "", "lacks 'requests'");
    expect_plan_error(HEAD "    heads: 16\n    tokens: 8\n    requests: 1\n    causal: false\n", "", "context");
    expect_plan_error(HEAD "    heads: 16\n    tokens: 8\n    requests: 1\n    q_dtype: fp8e4m3\n", ":7:",
                      "not swept yet");
    expect_plan_error(HEAD "    heads: 16\n    tokens: 8\n    requests: 1\n    bogus: 1\n", ":7:", "bogus");
    expect_plan_error("name: p\nproblems:\n  - kind: mla_decoder\n    heads: 16\n    batch: 1\n    seq_len: 1\n",
                      ":3:", "kind: expected 'mla_decode' or 'mla_prefill'");
    expect_plan_error(HEAD "    heads: [16, 32]\n    tokens: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]\n"
                           "    requests: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]\n"
                           "    context: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]\n",
                      "", "problem keys");
}

/* The estimate (tuner/estimate.c): it assumed 50 TFLOP/s for every prefill
 * candidate, which put the first GPU sweep (reports/h200/prefill-small: 7
 * keys x 20 SIMT and mma.sync variants, 87 s) at 12 s.  Since the space has
 * the wgmma points (37 variants a key) the plan took 165 s on the H100
 * (session 18, reports/h100/session18/final). */
static void test_estimate(void) {
    mt_target sm90, gfx942;
    CHECK_OK(mt_target_for_arch("sm_90", &sm90));
    CHECK_OK(mt_target_for_arch("gfx942", &gfx942));
    mt_variant simt, mma, wgmma, unknown;
    CHECK_OK(mt_variant_parse(&mt_family_mla_prefill, "tile_q=16,kv_tile=32,block_threads=128,mma=0", &simt));
    CHECK_OK(mt_variant_parse(&mt_family_mla_prefill, "tile_q=64,kv_tile=32,block_threads=128,mma=1", &mma));
    wgmma = mma, unknown = mma;
    wgmma.values[MT_PF_MMA] = 2;   /* (the space may not list it yet: the table does) */
    unknown.values[MT_PF_MMA] = 9;
    const mt_prefill_path_speed *s = mt_prefill_path_speed_of(&simt, &sm90), *m = mt_prefill_path_speed_of(&mma, &sm90),
                                *w = mt_prefill_path_speed_of(&wgmma, &sm90);
    CHECK(strcmp(s->path, "SIMT") == 0 && strcmp(m->path, "mma.sync") == 0 && strcmp(w->path, "wgmma") == 0);
    CHECK(strcmp(mt_prefill_path_speed_of(&mma, &gfx942)->path, "MFMA") == 0);
    CHECK(mt_prefill_path_speed_of(&unknown, &sm90) == s); /* a path it does not know: the slowest */
    /* the orders of magnitude the sweep measured, and the issue's */
    CHECK_MSG(s->tflops >= 1 && s->tflops <= 10 && m->tflops > s->tflops && m->tflops <= 30 && w->tflops >= 200 &&
                  w->tflops <= 969, "%g %g %g", s->tflops, m->tflops, w->tflops);
    CHECK(s->compile_seconds > 0 && m->compile_seconds > 0 && w->compile_seconds > 0);
    CHECK(mt_plan_compile_seconds(&simt, &sm90) == s->compile_seconds);
    /* a key's launches go at its candidates' paths: 2 SIMT + 1 wgmma are
     * the mean of their times */
    mt_plan p = {.warmup = 2, .reps = 10, .verify_cpu_macs = 0};
    mt_problem_key k;
    mt_prefill_key_make(&k, 128, 192, 128, MT_BF16, MT_BF16, 1, 8192, 0, 1);
    const mt_variant only_simt[] = {simt, simt, simt}, mixed[] = {simt, wgmma, simt}, only_wgmma[] = {wgmma, wgmma, wgmma};
    double t_simt = mt_plan_key_seconds(&p, &k, &sm90, only_simt, 3, 3),
           t_mixed = mt_plan_key_seconds(&p, &k, &sm90, mixed, 3, 3),
           t_wgmma = mt_plan_key_seconds(&p, &k, &sm90, only_wgmma, 3, 3);
    double launches = 3.0 * (p.warmup + p.reps), flops = mt_prefill_flops(&k);
    CHECK_MSG(fabs((t_simt - t_wgmma) - launches * flops * (1 / s->tflops - 1 / w->tflops) / 1e12) < 1e-6 * t_simt,
              "%g %g", t_simt, t_wgmma);
    CHECK(fabs(t_mixed - (2 * t_simt + t_wgmma) / 3) < 1e-6 * t_simt);
    /* with no candidates given: the slowest path */
    CHECK(fabs(mt_plan_key_seconds(&p, &k, &sm90, NULL, 0, 3) - t_simt) < 1e-9);
    if (!bin) return;
    /* the shipped plan, on the architecture its sweeps ran on */
    char out[65536];
    int rc = run("sweep --config prefill-h100-small --dry-run --arch sm_90", out, sizeof out);
    const char *e = strstr(out, "\nestimate: about ");
    double est = e ? atof(e + strlen("\nestimate: about ")) : 0;
    CHECK_MSG(rc == 0 && est >= 165 / 2.0 && est <= 165 * 2.0, "estimate %g s against 165 measured: %s", est, out);
    CHECK_MSG(strstr(out, "prefill launches timed at an average candidate's assumed speed per path: SIMT") &&
                  strstr(out, "wgmma 350 TFLOP/s") && strstr(out, "s of compiler)"),
              "%s", out);
    /* its plan table in prefill's columns: the causal key over 2048 keys
     * of context and the non-causal one over a 2048-key chunk */
    CHECK_MSG(strstr(out, "\n#    heads requests new tokens context keys   mask       q/kv      variants   jobs\n") &&
                  strstr(out, "\n5    128   4        512        2048    2560   causal     bf16/bf16 ") &&
                  strstr(out, "\n6    128   4        512        2048    2048   non-causal bf16/bf16 ") &&
                  !strstr(out, "heads Sq"),
              "dry-run table: %s", out);
}

/* Keys of the DB's problems table matching `where`. */
static int problems(const char *db, const char *where) {
    char sql[600];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM problems WHERE %s", where);
    return count(db, sql);
}

/* The public API on the stub driver (tests/stub_libcuda.c: an H100 of 132
 * SMs, launches that do nothing, and an NVRTC that compiles nothing): a
 * plan reads the prefill rows of the fake sweep's DB (recorded with the
 * stub's compiler: the validators hold) and says so. */
static void test_runtime_dispatch(const char *db) {
    mlt_runtime_options o;
    mlt_runtime_options_default(&o);
    o.user_db = db;
    o.cache_dir = "";
    o.log_level = MLT_LOG_QUIET;
    mlt_runtime *rt = NULL;
    mlt_status st = mlt_runtime_create(&o, &rt);
    CHECK_MSG(st == MLT_OK, "runtime on the stub: %s", mlt_last_error());
    if (st != MLT_OK) return;
    mlt_prefill_problem p;
    mlt_prefill_problem_default(&p);
    mlt_prefill_plan *plan = NULL;
    CHECK_MSG(mlt_prefill_plan_create(rt, &p, &plan) == MLT_OK, "%s", mlt_last_error());
    mlt_choice_info c;
    CHECK(mlt_prefill_plan_explain_call(plan, 4, 512, 1, &c) == MLT_OK);
    CHECK_MSG(c.reason == MLT_CHOICE_EXACT_KEY && strcmp(c.source, "user") == 0 &&
                  strcmp(c.variant, "tile_q=64,kv_tile=64,block_threads=128,mma=1") == 0 && c.key_batch == 4 &&
                  c.key_seq_len == 512 && c.key_max_seq_len == 512 && strcmp(c.key_lengths, "causal") == 0 &&
                  c.measured_ms > 0,
              "%d %s %s: %s", (int)c.reason, c.source, c.variant, c.why);
    CHECK(mlt_prefill_plan_explain_call(plan, 4, 512, 0, &c) == MLT_OK);
    CHECK_MSG(c.reason == MLT_CHOICE_EXACT_KEY && c.key_max_seq_len == 2048 &&
                  strstr(c.why, "matching non-causal prefill key (4 requests x 512 new tokens over 2048 keys; "
                                "distance 0.00)"),
              "%s", c.why);
    CHECK(mlt_prefill_plan_explain_call(plan, 2, 512, 1, &c) == MLT_OK);
    CHECK_MSG(c.reason == MLT_CHOICE_NEAREST_KEY && c.key_batch == 1 && c.distance == 1.0 &&
                  strstr(c.why, "nearest causal prefill key (1 requests x 2048 new tokens") == NULL,
              "%d %d %g: %s", (int)c.reason, c.key_batch, c.distance, c.why);
    /* a call runs (the stub launches nothing) through either table */
    mlt_prefill_args a = {.batch = 4, .max_seqlen_q = 512, .causal = 1, .cu_seqlens_q = (const int32_t *)0x1000,
                          .cu_seqlens_k = (const int32_t *)0x2000, .q = (const void *)0x3000,
                          .k = (const void *)0x4000, .v = (const void *)0x5000, .out = (void *)0x6000,
                          .lse = (float *)0x7000};
    CHECK_MSG(mlt_prefill_run(plan, &a, NULL) == MLT_OK, "%s", mlt_last_error());
    a.causal = 0;
    CHECK_MSG(mlt_prefill_run(plan, &a, NULL) == MLT_OK, "%s", mlt_last_error());
    mlt_prefill_plan_destroy(plan);
    /* heads the DB has no key for: the rule */
    p.n_heads = 64;
    CHECK_MSG(mlt_prefill_plan_create(rt, &p, &plan) == MLT_OK, "%s", mlt_last_error());
    CHECK(mlt_prefill_plan_explain(plan, &c) == MLT_OK);
    CHECK_MSG(c.reason == MLT_CHOICE_HEURISTIC && strcmp(c.source, "heuristic") == 0 &&
                  strstr(c.why, "no causal prefill key"), "%s", c.why);
    mlt_prefill_plan_destroy(plan);
    mlt_runtime_destroy(rt);
}

static void test_fake_sweep(void) {
    char out[65536];
    write_file("spaces/sm_90.yaml", "arch: sm_90\nfamilies:\n  mla_prefill:\n    tile_q: [16, 64]\n"
                                    "    kv_tile: [32, 64]\n    block_threads: [128]\n    mma: [0, 1]\n");
    write_file("decode-spaces/sm_90.yaml", "arch: sm_90\nfamilies:\n  mla_decode:\n    tile_q: [8]\n");
    write_file("pf.yaml", "name: pf\nspaces: spaces\nproblems:\n  - kind: mla_prefill\n    heads: [16, 128]\n"
                          "    tokens: 512\n    requests: [1, 4]\n  - kind: mla_prefill\n    heads: 128\n"
                          "    tokens: 512\n    requests: 4\n    context: 2048\n    causal: false\n"
                          "timing: {warmup: 1, reps: 5}\n");
    int rc = run("sweep --config pf.yaml --db pf.db --fake-device ''", out, sizeof out);
    CHECK_MSG(rc == 0, "prefill sweep failed (%d): %s", rc, out);
    /* its progress lines in prefill's words, not decode's Sq and L */
    CHECK_MSG(strstr(out, " 128 heads, 4 x 512 new tokens, chunk of 2048, non-causal, bf16/bf16: best ") &&
                  strstr(out, " 16 heads, 1 x 512 new tokens, context 0, causal, bf16/bf16: best ") &&
                  !strstr(out, " Sq="),
              "progress: %s", out);
    /* ... and its summary table in prefill's columns (context: the
     * non-causal key's chunk), TFLOP/s in place of decode's GB/s */
    CHECK_MSG(strstr(out, "\nheads requests new tokens context keys   mask       q/kv       winner ms  TFLOP/s ") &&
                  strstr(out, "\n128   4        512        2048    2048   non-causal bf16/bf16     ") &&
                  strstr(out, "\n16    1        512        0       512    causal     bf16/bf16     ") &&
                  strstr(out, "\nprefill keys: new tokens and keys per request; keys = context + new tokens when "
                              "causal") &&
                  !strstr(out, "heads Sq"),
              "summary: %s", out);
    CHECK(problems("pf.db", "1") == 5);
    CHECK(problems("pf.db", "kind = 'mla_prefill' AND d = 192 AND dl = 128 AND page_size = 1 AND sq = 512") == 5);
    CHECK(problems("pf.db", "lengths = 'causal' AND seq_len = 512 AND max_len = 512") == 4);
    CHECK(problems("pf.db", "lengths = 'non-causal' AND n_heads = 128 AND batch = 4 AND seq_len = 2048") == 1);
    CHECK(problems("pf.db", "lengths = 'causal' AND n_heads = 16 AND batch = 4") == 1);
    /* every point of the 2 x 2 x 1 x 2 space that fits (mma=1 needs
     * tile_q = 16 x warps: 64 on 128 threads; 6 of 8) and the default (in
     * the space here), on each key */
    int ok = count("pf.db", "SELECT count(*) FROM measurements WHERE status = 'ok'");
    CHECK_MSG(ok >= 5 * 5, "%d ok measurements: %s", ok, out);
    CHECK(count("pf.db", "SELECT count(*) FROM measurements WHERE status != 'ok'") == 0);
    char path[600];
    path_of(path, sizeof path, "pf.db");
    mt_db *db = NULL;
    mt_choice *choices = NULL;
    int n = 0;
    CHECK_OK(mt_db_open(path, MT_DB_READ, &db));
    CHECK_OK(mt_db_load_choices(db, "sm_90", &choices, &n));
    CHECK(n == 5);
    for (int i = 0; i < n; i++) {
        CHECK(strcmp(choices[i].family, "mla_prefill") == 0);
        /* the fake landscape's best point */
        CHECK_MSG(strcmp(choices[i].params, "tile_q=64,kv_tile=64,block_threads=128,mma=1") == 0, "%s",
                  choices[i].params);
    }
    free(choices);
    mt_db_close(db);
    /* resume: nothing measured twice */
    rc = run("sweep --config pf.yaml --db pf.db --fake-device ''", out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, " 0 measured"), "resume: %s", out);
    /* lookup --prefill answers as a plan would */
    rc = run("lookup --prefill --arch sm_90 --heads 128 --tokens 2048 --requests 4 --db pf.db", out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "mla_prefill:tile_q=64,kv_tile=64,block_threads=128,mma=1") &&
                  strstr(out, "matching causal prefill key (4 requests x 512 new tokens over 512 keys"),
              "lookup: %d: %s", rc, out);
    rc = run("lookup --prefill --arch sm_90 --heads 128 --tokens 2048 --requests 4 --non-causal --db pf.db", out,
             sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "matching non-causal prefill key (4 requests x 512 new tokens over 2048 keys"),
              "lookup: %d: %s", rc, out);
    rc = run("lookup --prefill --arch sm_90 --heads 64 --tokens 512 --db pf.db", out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "no causal prefill key in the DBs") && strstr(out, "built-in default"),
              "lookup: %d: %s", rc, out);
    rc = run("lookup --prefill --arch sm_90 --tokens 100 --requests 3 --db pf.db", out, sizeof out);
    CHECK_MSG(rc == 2 && strstr(out, "do not split evenly"), "lookup: %d: %s", rc, out);
    /* ... in prefill's words, with what decode's lookup says beside the
     * answer: the measured key (context, mask, time, TFLOP/s), a nearest
     * key too far, what no key matches, --json */
    rc = run("lookup --prefill --arch sm_90 --heads 128 --tokens 2048 --requests 4 --db pf.db", out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "128 heads, 4 requests x 512 new tokens, causal, bf16/bf16 (qk 192, v 128)") &&
                  strstr(out, "key    4 requests x 512 new tokens over 512 keys (context 0), causal: measured ") &&
                  strstr(out, " TFLOP/s") && !strstr(out, "FAR"),
              "lookup: %d: %s", rc, out);
    rc = run("lookup --prefill --arch sm_90 --heads 128 --tokens 65536 --db pf.db", out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "FAR    the nearest measured key (1 requests x 512 new tokens) is at distance "
                                     "7.00, beyond 2.00"),
              "lookup: %d: %s", rc, out);
    rc = run("lookup --prefill --arch sm_90 --heads 128 --tokens 65536 --max-distance 8 --db pf.db", out, sizeof out);
    CHECK_MSG(rc == 0 && !strstr(out, "FAR"), "lookup: %d: %s", rc, out);
    rc = run("lookup --prefill --arch sm_90 --heads 64 --tokens 512 --db pf.db", out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "missing: no entry with head count 64 (the entries that match so far have: 16, "
                                     "128)"),
              "lookup: %d: %s", rc, out);
    rc = run("lookup --prefill --arch sm_90 --heads 128 --tokens 512 --kv-dtype fp16 --db pf.db", out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "missing: no entry with q/kv dtypes bf16/fp16"), "lookup: %d: %s", rc, out);
    rc = run("lookup --prefill --arch sm_90 --heads 128 --tokens 2048 --requests 4 --non-causal --json --db pf.db", out,
             sizeof out);
    CHECK_MSG(rc == 0 && out[0] == '{' &&
                  strstr(out, "\"requests\": 4, \"new_tokens\": 2048, \"new_tokens_per_request\": 512, "
                              "\"causal\": false") &&
                  strstr(out, "\"params\": {\"tile_q\": 64, \"kv_tile\": 64, \"block_threads\": 128, \"mma\": 1}") &&
                  strstr(out, "\"source\": \"exact\"") &&
                  strstr(out, "\"nearest_key\": {\"requests\": 4, \"new_tokens_per_request\": 512, "
                              "\"keys_per_request\": 2048, \"context\": 2048, \"mask\": \"non-causal\", "
                              "\"db\": \"user\""),
              "lookup --json: %d: %s", rc, out);
    rc = run("lookup --prefill --arch sm_90 --heads 64 --tokens 512 --json --db pf.db", out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "\"source\": \"heuristic\"") && strstr(out, "\"nearest_key\": null") &&
                  strstr(out, "\"missing\": \"missing: no entry with head count 64"),
              "lookup --json: %d: %s", rc, out);
    rc = run("lookup --prefill --arch sm_90 --tokens 512 --max-distance far --db pf.db", out, sizeof out);
    CHECK_MSG(rc == 2 && strstr(out, "--max-distance wants a number from 0 to 1000, got 'far'"), "%d: %s", rc, out);
    rc = run("lookup --prefill --arch sm_90 --tokens 512 --d 0 --db pf.db", out, sizeof out);
    CHECK_MSG(rc == 2 && strstr(out, "bad value '0' for --d"), "%d: %s", rc, out);
    /* bench --prefill refuses a head count past 128 wherever it stands in
     * the list (only the last entry was checked), before opening a GPU */
    rc = run("bench --prefill --heads 256,16 --tokens 64", out, sizeof out);
    CHECK_MSG(rc == 2 && strstr(out, "bad value '256,16' for --heads"), "bench --prefill: %d: %s", rc, out);
    rc = run("bench --prefill --heads 16 --tokens 64,0", out, sizeof out);
    CHECK_MSG(rc == 2 && strstr(out, "bad value '64,0' for --tokens"), "bench --prefill: %d: %s", rc, out);
    /* show and lookup read the prefill rows without refusing the DB */
    rc = run("show --db pf.db", out, sizeof out);
    CHECK_MSG(rc == 0 && strstr(out, "mla_prefill:tile_q=64"), "show: %s", out);
    /* ... in prefill's columns, the mask among them, not decode's Sq, page
     * and len */
    CHECK_MSG(strstr(out, "source  arch       heads requests new tokens context keys   mask       q/kv ") &&
                  strstr(out, "\nuser    sm_90      128   4        512        2048    2048   non-causal bf16/bf16 ") &&
                  strstr(out, "\nuser    sm_90      16    1        512        0       512    causal     bf16/bf16 ") &&
                  strstr(out, "\nprefill keys: new tokens and keys per request") && !strstr(out, "heads Sq"),
              "show: %s", out);
    if (getenv("MLA_TUNE_STUB_CUDA")) test_runtime_dispatch(path);
    /* spaces without the prefill family: refused naming the kind */
    write_file("pf-wrong.yaml", "name: pf\nspaces: decode-spaces\nproblems:\n  - kind: mla_prefill\n    heads: 16\n"
                                "    tokens: 64\n    requests: 1\n");
    rc = run("sweep --config pf-wrong.yaml --db w.db --fake-device ''", out, sizeof out);
    CHECK_MSG(rc != 0 && strstr(out, "no space for problem kind 'mla_prefill'"), "%d: %s", rc, out);
    /* a prefill key whose mask is not one: refused when read, naming it */
    mt_db *w = NULL;
    path_of(path, sizeof path, "pf.db");
    CHECK_OK(mt_db_open(path, MT_DB_WRITE, &w));
    CHECK_OK(mt_db_exec(w, "UPDATE problems SET lengths = 'uniform' WHERE lengths = 'non-causal'"));
    mt_db_close(w);
    CHECK_OK(mt_db_open(path, MT_DB_READ, &db));
    mt_status st = mt_db_load_choices(db, "sm_90", &choices, &n);
    CHECK_MSG(st != MT_OK && strstr(mt_last_error(), "mask"), "%s", mt_last_error());
    if (st == MT_OK) free(choices);
    mt_db_close(db);
}

/* --inject-fault on prefill jobs (it applied to decode jobs only): every
 * SIMT variant (mma=0: 4 of the 6 measured per key) faults its worker, is
 * recorded as launch-failed, and the sweep goes on with a new worker to
 * the other variants; the winners are the landscape's best still.  Uses
 * test_fake_sweep's plan and spaces. */
static void test_fault_sweep(void) {
    char out[65536];
    int rc = run("sweep --config pf.yaml --db fault.db --fake-device '' --inject-fault mma=0", out, sizeof out);
    CHECK_MSG(rc == 0, "fault sweep failed (%d): %s", rc, out);
    int failed = count("fault.db", "SELECT count(*) FROM measurements m JOIN variants v ON v.id = m.variant_id "
                                   "WHERE m.status = 'launch-failed' AND m.error LIKE 'injected fault: %' "
                                   "AND v.params LIKE '%mma=0'");
    CHECK_MSG(failed == 5 * 4, "%d injected faults recorded: %s", failed, out);
    CHECK(count("fault.db", "SELECT count(*) FROM measurements m JOIN variants v ON v.id = m.variant_id "
                            "WHERE m.status = 'ok' AND v.params LIKE '%mma=1'") == 5 * 2);
    /* the space's 6 and the built-in rule's point (wgmma on sm_90), measured for the gain */
    CHECK_MSG(count("fault.db", "SELECT count(*) FROM measurements") == 5 * 7, "%d measurements",
              count("fault.db", "SELECT count(*) FROM measurements"));
    CHECK(count("fault.db", "SELECT count(*) FROM choices c JOIN variants v ON v.id = c.variant_id "
                            "WHERE v.params = 'tile_q=64,kv_tile=64,block_threads=128,mma=1'") == 5);
    /* bad specs: refused before any worker starts, naming what is wrong */
    rc = run("sweep --config pf.yaml --db f2.db --fake-device '' --inject-fault mma", out, sizeof out);
    CHECK_MSG(rc == 2 && strstr(out, "--inject-fault 'mma': expected PARAM=VALUE"), "%d: %s", rc, out);
    rc = run("sweep --config pf.yaml --db f2.db --fake-device '' --inject-fault mma=one", out, sizeof out);
    CHECK_MSG(rc == 2 && strstr(out, "the value 'one' is not an integer"), "%d: %s", rc, out);
    rc = run("sweep --config pf.yaml --db f2.db --fake-device '' --inject-fault tile=16", out, sizeof out);
    CHECK_MSG(rc == 2 && strstr(out, "no kernel family has a parameter 'tile'"), "%d: %s", rc, out);
}

/* report on decode and prefill keys together (they shared decode's
 * columns: Sq = new tokens, "keys", GB/s, heat maps by split count) */
static void test_report(void) {
    char out[65536], path[600];
    write_file("dec.yaml", "name: dec\nspaces: decode-spaces\nproblems:\n  - {heads: 16, batch: [1, 8], seq_len: 1024}\n"
                           "timing: {warmup: 1, reps: 5}\n");
    int rc = run("sweep --config pf.yaml --db mix.db --fake-device ''", out, sizeof out);
    CHECK_MSG(rc == 0, "%s", out);
    rc = run("sweep --config dec.yaml --db mix.db --fake-device ''", out, sizeof out);
    CHECK_MSG(rc == 0, "%s", out);
    /* show: decode's table, then prefill's; each kind's rows in its own */
    rc = run("show --db mix.db", out, sizeof out);
    const char *dec_head = strstr(out, "heads Sq  page"), *pf_head = strstr(out, "heads requests new tokens");
    CHECK_MSG(rc == 0 && dec_head && pf_head && dec_head < pf_head && strstr(out, "mla_decode:") < pf_head &&
                  !strstr(pf_head, "mla_decode:") && strstr(out, "mla_prefill:") > pf_head,
              "show: %s", out);
    path_of(path, sizeof path, "mix.db");
    mt_db *db = NULL;
    mt_choice *c = NULL;
    int n = 0, chunk = -1;
    CHECK_OK(mt_db_open(path, MT_DB_READ, &db));
    CHECK_OK(mt_db_load_choices(db, "sm_90", &c, &n));
    mt_db_close(db);
    CHECK_MSG(n == 7, "%d choices", n);
    for (int i = 0; i < n; i++)
        if (strcmp(c[i].key.lengths, MT_PREFILL_NON_CAUSAL) == 0) chunk = i;
    CHECK(chunk >= 0);
    char cmd[200];
    snprintf(cmd, sizeof cmd, "report --db mix.db -o rep --key %d", chunk);
    rc = run(cmd, out, sizeof out);
    CHECK_MSG(rc == 0, "report: %s", out);
    path_of(path, sizeof path, "rep/report.md");
    FILE *f = fopen(path, "r");
    static char md[1 << 18];
    size_t len = f ? fread(md, 1, sizeof md - 1, f) : 0;
    md[len] = '\0';
    if (f) fclose(f);
    const char *decode = strstr(md, "## Winner per problem key"), *prefill = strstr(md, "## Prefill winners per problem key");
    CHECK_MSG(decode && prefill && prefill > decode, "no prefill table: %s", md);
    if (!decode || !prefill) {
        free(c);
        return;
    }
    CHECK(strstr(prefill, "| # | arch | heads | requests | new tokens | context | keys | mask | q/kv | D/Dl | winner ms "
                          "| TFLOPS | % matrix | GB/s |"));
    int decode_rows = 0;
    for (int i = 0; i < n; i++) {
        char row[300];
        if (strcmp(c[i].key.kind, "mla_prefill") == 0) {
            snprintf(row, sizeof row, "| %d | sm\\_90 | %d | %d | %d | %d | %d | %s | bf16/bf16 | 192/128 | %.4f | %.2f |",
                     i, c[i].key.n_heads, c[i].key.batch, c[i].key.sq, mt_prefill_key_context(&c[i].key),
                     c[i].key.seq_len, c[i].key.lengths, c[i].median_ms,
                     mt_prefill_flops(&c[i].key) / (c[i].median_ms * 1e-3) / 1e12);
            const char *at = strstr(md, row);
            CHECK_MSG(at && at > prefill, "no prefill row '%s' in its table", row);
        } else {
            snprintf(row, sizeof row, "| %d | sm_90 | 16 | 1 | 64 | bf16/bf16 | %d | 1024 |", i, c[i].key.batch);
            const char *at = strstr(md, row);
            CHECK_MSG(at && at < prefill, "no decode row '%s' in its table", row);
            decode_rows++;
        }
    }
    CHECK(decode_rows == 2);
    /* decode's table, heat maps (split counts of page-64 groups) and
     * bandwidth bars carry no prefill key */
    char decode_part[8192];
    snprintf(decode_part, sizeof decode_part, "%.*s", (int)(prefill - decode), decode);
    CHECK_MSG(!strstr(decode_part, "| 512 |") && !strstr(decode_part, "causal"), "%s", decode_part);
    CHECK(!strstr(md, "-p1-") && strstr(md, "Decode keys only: prefill has no split count."));
    CHECK(strstr(md, "## Prefill: achieved TFLOPS against the matrix ceiling") && strstr(md, "(prefill-tflops.svg)"));
    CHECK(strstr(md, "Prefill keys are not mapped here"));
    /* the --key plots in prefill's words */
    CHECK_MSG(strstr(md, "Key: sm_90, 128 heads, 4 x 512 new tokens, chunk of 2048, non-causal, bf16/bf16."), "%s", md);
    free(c);
    /* prefill keys alone (test_fault_sweep's DB): no empty decode sections */
    rc = run("report --db fault.db -o rep-prefill", out, sizeof out);
    CHECK_MSG(rc == 0, "report: %s", out);
    path_of(path, sizeof path, "rep-prefill/report.md");
    f = fopen(path, "r");
    len = f ? fread(md, 1, sizeof md - 1, f) : 0;
    md[len] = '\0';
    if (f) fclose(f);
    CHECK_MSG(strstr(md, "## Prefill winners per problem key") && !strstr(md, "## Heat maps") &&
                  !strstr(md, "## Achieved bandwidth") && !strstr(md, "## Lookup distance"),
              "%s", md);
}

static mt_choice prefill_choice(int heads, int requests, int tokens, int context, int causal, const char *params,
                                double ms) {
    mt_choice c;
    memset(&c, 0, sizeof c);
    snprintf(c.arch, sizeof c.arch, "sm_90");
    c.compute_units = 132;
    mt_prefill_key_make(&c.key, heads, 192, 128, MT_BF16, MT_BF16, requests, tokens, context, causal);
    snprintf(c.family, sizeof c.family, "mla_prefill");
    snprintf(c.params, sizeof c.params, "%s", params);
    c.median_ms = ms;
    return c;
}

static void test_dispatch(void) {
    mt_target t;
    CHECK_OK(mt_target_for_arch("sm_90", &t));
    const char *a = "tile_q=64,kv_tile=64,block_threads=128,mma=1", *b = "tile_q=32,kv_tile=32,block_threads=64,mma=1",
               *c = "tile_q=32,kv_tile=64,block_threads=128,mma=0", *x = "tile_q=8,kv_tile=16,block_threads=64,mma=0";
    mt_choice choices[] = {
        prefill_choice(128, 1, 8192, 2048, 1, c, 0.5), /* causal, 1 x 8192 after 2048: more context than the next */
        prefill_choice(128, 1, 8192, 0, 1, a, 1.0),    /* causal, 1 x 8192 */
        prefill_choice(128, 8, 1024, 0, 1, b, 2.0),    /* causal, 8 x 1024 */
        prefill_choice(128, 8, 1024, 4096, 1, x, 3.0), /* causal, 8 x 1024 after 4096: the one before stands for it */
        prefill_choice(128, 8, 1024, 4096, 0, c, 4.0), /* non-causal chunk */
        prefill_choice(16, 1, 8192, 0, 1, x, 5.0),     /* other heads: not this plan's */
    };
    mt_choice_source from[] = {MT_FROM_USER_DB, MT_FROM_USER_DB, MT_FROM_USER_DB, MT_FROM_USER_DB,
                               MT_FROM_SYSTEM_DB, MT_FROM_USER_DB};
    /* a decode choice beside them: ignored by a prefill plan */
    mt_choice all[7];
    memcpy(all, choices, sizeof choices);
    all[6] = choices[1];
    snprintf(all[6].key.kind, sizeof all[6].key.kind, "mla_decode");
    mt_choice_source all_from[7];
    memcpy(all_from, from, sizeof from);
    all_from[6] = MT_FROM_USER_DB;
    mt_problem_key shape = {.kind = "mla_prefill", .s = {.d = 192, .dl = 128, .page_size = 1}, .n_heads = 128, .sq = 1};
    mt_prefill_dispatch d;
    CHECK_OK(mt_prefill_dispatch_build(all, all_from, 7, &shape, &t, 132, &d));
    mt_dispatch_result r;
    char name[200], why[300];
#define PICK(batch, q, causal)                                                                  \
    (mt_prefill_dispatch_lookup(&d, batch, q, causal, &r),                                      \
     mt_variant_format(&d.table[causal].variants[r.variant], name, sizeof name),                \
     mt_prefill_dispatch_explain(&d, causal, &r, why, sizeof why), name)
    CHECK(strcmp(PICK(1, 8192, 1), a) == 0 && r.exact);
    CHECK_MSG(strstr(why, "matching causal prefill key (1 requests x 8192 new tokens over 8192 keys") &&
              strstr(why, "user DB"), "%s", why);
    CHECK(strcmp(PICK(8, 1024, 1), b) == 0 && r.exact);
    CHECK(strcmp(PICK(8, 900, 1), b) == 0 && !r.exact);
    CHECK_MSG(strstr(why, "nearest causal prefill key (8 requests x 1024 new tokens"), "%s", why);
    CHECK(strcmp(PICK(2, 8192, 1), a) == 0 && !r.exact);
    CHECK(strcmp(PICK(8, 1024, 0), c) == 0 && r.exact);
    CHECK_MSG(strstr(why, "matching non-causal prefill key (8 requests x 1024 new tokens over 4096 keys; "
                          "distance 0.00)") && strstr(why, "system DB"), "%s", why);
    mt_prefill_dispatch_free(&d);
    /* no non-causal key: the rule for those calls, the DB for causal ones */
    CHECK_OK(mt_prefill_dispatch_build(choices, from, 4, &shape, &t, 132, &d));
    CHECK(strcmp(PICK(8, 1024, 1), b) == 0);
    /* the rule's variants on sm_90 (heuristic.c): the wgmma point measured
     * fastest, in its persistent form up to 1024 new tokens per request,
     * out stored 16 bytes at a time */
    const char *rule_name = "tile_q=128,kv_tile=128,block_threads=256,mma=2,out_stores=16";
    CHECK_MSG(strcmp(PICK(8, 1024, 0), "tile_q=128,kv_tile=128,block_threads=256,mma=2,persistent=1,out_stores=16") ==
                  0 && !r.entry, "%s", name);
    CHECK_MSG(strstr(why, "no non-causal prefill key in the DBs") && strstr(why, "built-in") &&
                  strstr(why, "the persistent form"), "%s", why);
    CHECK_MSG(strcmp(PICK(2, 8192, 0), rule_name) == 0 && !r.entry, "%s", name);
    CHECK_MSG(strstr(why, "the grid form: > 1024 new tokens per request"), "%s", why);
    /* the sweep and `show` time as the rule's choice what this dispatcher
     * runs: by new tokens per request, a chunk's context unknown (a key's
     * seq_len counts its keys: 512 new tokens over 4096 of context were
     * timed as the grid form's, session 32) */
    const char *chunk_pick = PICK(4, 512, 0);
    CHECK_MSG(!r.entry && strstr(chunk_pick, "persistent=1"), "%s", chunk_pick);
    mt_problem_key chunk;
    mt_prefill_key_make(&chunk, 128, 192, 128, MT_BF16, MT_BF16, 4, 512, 4096, 0);
    mt_variant untuned;
    char untuned_name[200];
    CHECK_OK(mt_untuned_variant(&mt_family_mla_prefill, &chunk, &t, 132, &untuned));
    mt_variant_format(&untuned, untuned_name, sizeof untuned_name);
    CHECK_MSG(strcmp(untuned_name, chunk_pick) == 0, "the sweep's rule %s, the dispatcher's %s", untuned_name,
              chunk_pick);
    mt_prefill_dispatch_free(&d);
    /* a DB choice that does not fit the target fails the build, naming it */
    mt_choice bad = prefill_choice(128, 1, 64, 0, 1, "tile_q=16,kv_tile=64,block_threads=64,mma=1", 1.0);
    CHECK(mt_prefill_dispatch_build(&bad, NULL, 1, &shape, &t, 132, &d) != MT_OK);
    CHECK_MSG(strstr(mt_last_error(), "not usable"), "%s", mt_last_error());
#undef PICK
}

int main(void) {
    bin = getenv("MLA_TUNE_BIN");
    snprintf(dir, sizeof dir, "/tmp/mla-tune-test-prefill-tuning-XXXXXX");
    if (!mkdtemp(dir)) return 1;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/spaces' '%s/decode-spaces'", dir, dir);
    CHECK(system(cmd) == 0);
    const char *stub = getenv("MLA_TUNE_STUB_CUDA");
    if (stub) {
        /* the runtime on the stub driver and NVRTC; the fake sweep (a
         * child) records the stub's compiler, so its rows are valid there */
        setenv("MLA_TUNE_CUDA_DRIVER", stub, 1);
        setenv("MLA_TUNE_NVRTC", stub, 1);
        setenv("MLA_TUNE_HIP_RUNTIME", "/nonexistent/libamdhip64.so", 1);
        unsetenv("MLA_TUNE_DB");
        unsetenv("MLA_TUNE_SYSTEM_DB");
    }
    test_plan_keys();
    test_dispatch();
    test_estimate();
    if (bin) test_fake_sweep(), test_fault_sweep(), test_report();
    else printf("MLA_TUNE_BIN not set: the fake sweep skipped\n");
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return check_summary("test_prefill_tuning");
}
