/*
 * estimate.c - the sweep's time estimate (estimate.h): the model, its
 * assumptions and where they came from.
 */
#include "estimate.h"

#include <stdio.h>
#include <string.h>

#include "key_work.h"
#include "kernels/mla_prefill/mla_prefill.h"
#include "prefill_key.h"

/* Calibrated on the H100 sweeps in reports/h100 (fast-decode: 7838 jobs in
 * 253 s, 32 ms each; quick: 192 in 23 s, 120 ms each, its SIMT candidates
 * being slow): a fixed cost per job (the worker's round trip, input
 * set-up, the output's comparison with the reference), then warmup + reps
 * launches, each behind an L2 flush.  Both kinds. */
#define EST_JOB_FIXED_S 0.02
#define EST_FLUSH_S 0.0002           /* reading 4x a 50 MB L2 */
#define EST_REFERENCE_MACS_PER_S 2e9 /* the CPU reference in double, once per key */

/* decode: an average candidate's bandwidth, well below the winners' ~3000 */
#define EST_DECODE_CANDIDATE_GBPS 800.0
/* decode: about a second of NVRTC per variant */
#define EST_DECODE_COMPILE_S 1.0

/* Prefill: an average candidate's speed per path, and its compile time.
 * ROUGH numbers, to be replaced as each path is measured:
 *   - SIMT and mma.sync: the first prefill sweep on a GPU
 *     (reports/h200/prefill-small: an H200, 7 keys, every SIMT and
 *     mma.sync variant of the sm_90 space): SIMT candidates 0.9-6.5
 *     TFLOP/s, mean 3.4; mma.sync 3.2-18.8, mean 9 (its winner ~19);
 *   - MFMA: never run on AMD hardware: mma.sync's figure until it is;
 *   - wgmma (mma = 2, sm_90): its four points on the H100 (session 18,
 *     reports/h100/session18/v3-bench.txt): 275-574 TFLOP/s on 8192-token
 *     calls, mean ~380; less on short calls (160-530 on prefill-h100-small's
 *     keys): 350.
 * Compile seconds per variant, one CPU thread: the compile-space.sh
 * reports of compile_sm_90_prefill (SIMT 3.4-5.4 s), compile_sm_90_prefill
 * _mma (1.3-1.5 s), compile_gfx942_prefill_mfma (1.9 s) on the 2-core CI
 * host; wgmma 0.9-1.1 s (compile_sm_90_prefill_wgmma's report).
 * Index: the variant's mma value, MFMA standing in for mma.sync on 64-wide
 * wavefronts. */
static const mt_prefill_path_speed prefill_paths[] = {
    {"SIMT", 3.4, 4.5},
    {"mma.sync", 9.0, 1.5},
    {"wgmma", 350.0, 1.0},
};
static const mt_prefill_path_speed prefill_mfma = {"MFMA", 9.0, 2.0};
enum { N_PREFILL_PATHS = sizeof prefill_paths / sizeof prefill_paths[0] };

const mt_prefill_path_speed *mt_prefill_path_speed_of(const mt_variant *v, const mt_target *t) {
    int mma = v->values[MT_PF_MMA];
    if (mma == 1 && t->warp_size == 64) return &prefill_mfma;
    /* a path this table does not know yet: the slowest, so that the
     * estimate errs long rather than promising a short sweep */
    return mma >= 0 && mma < N_PREFILL_PATHS ? &prefill_paths[mma] : &prefill_paths[0];
}

void mt_prefill_speeds_describe(char *buf, size_t size) {
    snprintf(buf, size, "%s %.3g, %s %.3g, %s %.3g, %s %.3g TFLOP/s", prefill_paths[0].path, prefill_paths[0].tflops,
             prefill_paths[1].path, prefill_paths[1].tflops, prefill_mfma.path, prefill_mfma.tflops,
             prefill_paths[2].path, prefill_paths[2].tflops);
}

/* One job's launches: warmup + reps, each behind a flush. */
static double job_seconds(const mt_plan *p, double launch_s) {
    return EST_JOB_FIXED_S + (p->warmup + p->reps) * (launch_s + EST_FLUSH_S);
}

static double decode_key_seconds(const mt_plan *p, const mt_problem_key *k, long jobs) {
    double launch_s = mt_key_bytes(k) / (EST_DECODE_CANDIDATE_GBPS * 1e9);
    double macs = mt_key_flops(k) / 2;
    double reference_s = macs <= p->verify_cpu_macs ? macs / EST_REFERENCE_MACS_PER_S : 0;
    return reference_s + (double)jobs * job_seconds(p, launch_s);
}

/* The worker's reference (worker_prefill.c): the whole call when it costs
 * at most verify_cpu_macs, else 64 sampled rows over the key's keys. */
static double prefill_key_seconds(const mt_plan *p, const mt_problem_key *k, const mt_target *t,
                                  const mt_variant *candidates, int n_candidates, long jobs) {
    double flops = mt_prefill_flops(k), macs = flops / 2;
    double sampled = 64.0 * k->seq_len * (k->s.d + k->s.dl);
    double reference_s = (macs <= p->verify_cpu_macs ? macs : sampled) / EST_REFERENCE_MACS_PER_S;
    /* an average candidate of this key: the mean of its candidates' launches */
    double launch_s = flops / (prefill_paths[0].tflops * 1e12);
    if (n_candidates > 0) {
        double sum = 0;
        for (int c = 0; c < n_candidates; c++) sum += flops / (mt_prefill_path_speed_of(&candidates[c], t)->tflops * 1e12);
        launch_s = sum / n_candidates;
    }
    return reference_s + (double)jobs * job_seconds(p, launch_s);
}

double mt_plan_key_seconds(const mt_plan *p, const mt_problem_key *k, const mt_target *t,
                           const mt_variant *candidates, int n_candidates, long jobs) {
    if (strcmp(k->kind, "mla_prefill") == 0) return prefill_key_seconds(p, k, t, candidates, n_candidates, jobs);
    return decode_key_seconds(p, k, jobs);
}

double mt_plan_compile_seconds(const mt_variant *v, const mt_target *t) {
    if (v->family == &mt_family_mla_prefill) return mt_prefill_path_speed_of(v, t)->compile_seconds;
    return EST_DECODE_COMPILE_S;
}
