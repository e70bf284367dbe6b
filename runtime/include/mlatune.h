/*
 * mlatune.h - the mla-tune runtime: MLA decode attention that runs, for each
 * call, the kernel variant a tuning database names for this GPU
 * architecture and problem shape.
 *
 *   mlt_runtime_create     load the vendor runtime (CUDA or HIP) and read
 *                          the system and user tuning DBs into memory
 *   mlt_plan_create        describe an MLA decode problem; the plan resolves
 *                          the variants it may dispatch to and compiles them
 *                          (memory cache, disk cache, JIT)
 *   mlt_plan_run           pick the variant for this call's batch and length
 *                          (no SQLite, no allocation) and launch it
 *   mlt_plan_explain       which variant a call would run, and why
 *
 * Errors: every function returns an mlt_status; mlt_last_error() gives the
 * calling thread's message for the last failure, naming what is wrong.
 *
 * Threads: a runtime and its plans may be used from several threads at once
 * (plans are immutable once created; runs share no mutable state).  The
 * calling thread must have the runtime's device current: true for a thread
 * that has used the CUDA runtime (or PyTorch) on that device; otherwise call
 * mlt_runtime_bind_thread first.  Creating and destroying plans is
 * thread-safe too.
 *
 * Backend: the first of HIP, CUDA with a device; MLA_TUNE_BACKEND=cuda, hip
 * or hip-cpu names one (hip-cpu runs the AMD kernels on the CPU under an
 * emulation of the GPU: for tests on hosts without one; slow), and a backend
 * so named that cannot run is an error.
 *
 * Databases (read once, at mlt_runtime_create; their crossover points at
 * the first mlt_prefill_choose_form):
 *   user DB:   options.user_db, else $MLA_TUNE_DB, else
 *              $XDG_DATA_HOME/mla-tune/tuning.db (~/.local/share/...)
 *   system DB: options.system_db, else $MLA_TUNE_SYSTEM_DB, else the first
 *              existing file in $MLA_TUNE_SYSTEM_DB_PATH (colon-separated),
 *              else PREFIX/share/mla-tune/tuning.db
 * Where both name a variant for the same architecture and key, the user DB
 * wins.  Missing default files are fine (the built-in heuristic is used, and
 * the log says so once per plan); a missing file named explicitly, or any
 * damaged one, is an error.
 */
#ifndef MLATUNE_H
#define MLATUNE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 0.2: mlt_decode_args gained the views (q in two parts, strides for q,
 * out and lse) and the device-side kv scale at its end: a program built
 * against 0.1 must be rebuilt (mlt_api_version tells which a library is).
 * 0.3: fp8 prefill: mlt_prefill_problem gained the scales and
 * mlt_prefill_args max_seqlen_k and the workspace, at their ends
 * (mlt_prefill_workspace_size); a prefill caller built against 0.2 must
 * be rebuilt. */
#define MLT_VERSION_MAJOR 0
#define MLT_VERSION_MINOR 3

/* The library's (MLT_VERSION_MAJOR << 16) | MLT_VERSION_MINOR, to compare
 * with the header a program (or a binding) was written against. */
int mlt_api_version(void);

/* The statuses, once: each code and its description (mlt_status_string).
 * The enum's values are fixed (ABI): new codes go at the end. */
#define MLT_STATUS_LIST(X)                                                                         \
    X(MLT_OK, "ok")                                                                                \
    X(MLT_ERR_INVALID_ARGUMENT, "invalid argument") /* a bad argument: nothing was launched */     \
    X(MLT_ERR_NO_BACKEND, "no GPU runtime library") /* no CUDA / HIP runtime library found */      \
    X(MLT_ERR_NO_DEVICE, "no such GPU")             /* the runtime found no (such) GPU */          \
    X(MLT_ERR_COMPILE, "kernel compilation failed") /* a kernel variant failed to compile */       \
    X(MLT_ERR_DATABASE, "tuning database unusable") /* unreadable, damaged or too new */           \
    X(MLT_ERR_OUT_OF_MEMORY, "out of memory")                                                      \
    X(MLT_ERR_LAUNCH, "kernel launch failed")       /* the GPU runtime refused a launch */         \
    X(MLT_ERR_IO, "cache folder unusable")          /* the code-object cache folder */             \
    X(MLT_ERR_INTERNAL, "internal error")

typedef enum mlt_status {
#define MLT_STATUS_ENUM(code, text) code,
    MLT_STATUS_LIST(MLT_STATUS_ENUM)
#undef MLT_STATUS_ENUM
} mlt_status;

/* A short constant description of a status ("invalid argument"). */
const char *mlt_status_string(mlt_status s);
/* The calling thread's message for its most recent failure. */
const char *mlt_last_error(void);

typedef enum mlt_log_level { MLT_LOG_QUIET = 0, MLT_LOG_WARN = 1, MLT_LOG_INFO = 2 } mlt_log_level;

typedef struct mlt_runtime_options {
    int device;              /* GPU ordinal (default 0) */
    const char *user_db;     /* NULL: default (see above) */
    const char *system_db;   /* NULL: default */
    const char *cache_dir;   /* NULL: $MLA_TUNE_CACHE_DIR, $XDG_CACHE_HOME/mla-tune, ~/.cache/mla-tune; "" = off */
    mlt_log_level log_level; /* messages go to stderr (default MLT_LOG_WARN) */
} mlt_runtime_options;

typedef struct mlt_runtime mlt_runtime;

void mlt_runtime_options_default(mlt_runtime_options *options);
mlt_status mlt_runtime_create(const mlt_runtime_options *options, mlt_runtime **out);
void mlt_runtime_destroy(mlt_runtime *rt);
/* Makes the runtime's device current on the calling thread. */
mlt_status mlt_runtime_bind_thread(mlt_runtime *rt);
/* "sm_90", "gfx942", ... */
const char *mlt_runtime_arch(const mlt_runtime *rt);

/* Recorded calls (opt-in; off by default).  With recording on, each plan
 * created afterwards counts the calls of mlt_plan_run that no measured key
 * matched exactly (dispatched by the nearest key or the built-in heuristic;
 * calls with MLT_LENGTHS_UNKNOWN are not counted): batch, mean and longest
 * each rounded to the nearest power of two, and how often.  Counting is a
 * relaxed atomic add in a table made with the plan: no lock, allocation or
 * DB access per call.  The counts are added to the user DB (see above;
 * created with its folder when missing) in mlt_plan_destroy, in one
 * transaction; a process that never destroys its plans records nothing,
 * and one that cannot write the user DB says so (log level warn).
 * `mla-tune sweep --recorded` then tunes exactly those shapes.
 * MLA_TUNE_RECORD_CALLS=1 turns it on at mlt_runtime_create; this call
 * turns it on (1) or off (0) for plans created after it. */
mlt_status mlt_runtime_record_calls(mlt_runtime *rt, int on);

/* Device memory helpers, for programs that have no GPU runtime of their
 * own (engines normally pass their framework's allocations instead).  Copies
 * are synchronous. */
mlt_status mlt_device_alloc(mlt_runtime *rt, size_t bytes, void **ptr);
mlt_status mlt_device_free(mlt_runtime *rt, void *ptr);
mlt_status mlt_copy_to_device(mlt_runtime *rt, void *dst, const void *src, size_t bytes);
mlt_status mlt_copy_to_host(mlt_runtime *rt, void *dst, const void *src, size_t bytes);
mlt_status mlt_synchronize(mlt_runtime *rt);

/* KV storage types.  The two fp8 encodings are both e4m3 but not the same
 * numbers: MLT_FP8_E4M3 is OCP e4m3 "fn" (bias 7, 0x7f/0xff NaN, max 448;
 * NVIDIA, gfx950), MLT_FP8_E4M3_FNUZ is e4m3 "fnuz" (bias 8, no negative
 * zero, 0x80 the only NaN, max 240; gfx942, what engines on MI300 store).
 * Values are appended, never renumbered. */
typedef enum mlt_dtype { MLT_BF16 = 0, MLT_FP16 = 1, MLT_FP8_E4M3 = 2, MLT_FP8_E4M3_FNUZ = 3 } mlt_dtype;

/* The static facts of an MLA decode problem (docs/DESIGN.md section 2). */
typedef struct mlt_decode_problem {
    int n_heads;            /* 1..128 */
    int sq;                 /* query tokens per request, 1..1024 (causal among them): speculative
                               decoding's few, or a prefill chunk in the absorbed form */
    int d;                  /* q/k head dim: kv_lora_rank + rope dim (576) */
    int dl;                 /* latent (value) dim (512) */
    int page_size;          /* tokens per KV-cache page (1, 16, 64, ...) */
    mlt_dtype q_dtype;      /* q and out: MLT_BF16 or MLT_FP16 */
    mlt_dtype kv_dtype;     /* MLT_BF16, MLT_FP16, MLT_FP8_E4M3 or MLT_FP8_E4M3_FNUZ */
    float softmax_scale;
    float kv_scale;         /* per-tensor dequantisation scale (1 unless fp8) */
    int max_batch;          /* largest batch a run will pass: sizes the workspace */
    /* 1: runs may pass views (mlt_decode_args: q in two parts, strides,
     * the kv scale in device memory); 0: only the contiguous layouts.  The
     * kernels of a plan with views place every row through the call's
     * strides, which costs time (on the H100 +0.3-3.5% from batch 8 up,
     * ragged batches included, 1.2-1.6 us at batch 1: reports/PERFLOG.md
     * session 16): ask for them only when needed. */
    int views;
} mlt_decode_problem;

typedef struct mlt_plan mlt_plan;

mlt_status mlt_plan_create(mlt_runtime *rt, const mlt_decode_problem *problem, mlt_plan **out);
void mlt_plan_destroy(mlt_plan *plan);
/* Bytes of device workspace mlt_plan_run needs for any batch up to
 * max_batch (0 is possible): each variant the plan may run, at the largest
 * batch it runs at. */
size_t mlt_plan_workspace_size(const mlt_plan *plan);

/* One decode call.  All pointers are device pointers; the hints are
 * host-side facts about the lengths (the dispatcher's input: it never reads
 * device memory).  q, kv_cache, out, workspace and schedule must be 16-byte
 * aligned, block_table, seq_lens and lse 4-byte aligned (device allocations
 * always are): the kernels move rows in 16-byte pieces, and a misaligned
 * pointer fails the call (MLT_ERR_INVALID_ARGUMENT), nothing launched.
 *
 * Ragged batches (every request its own length) need nothing special: the
 * length-aware variants cut the work by the lengths in seq_lens on the GPU.
 * The hints pick the variant: seq_len_hint the mean keys per request and
 * max_seq_len_hint the longest (0: as long as the mean, a uniform batch).
 *
 * CUDA / HIP graphs: a captured call replays with the variant chosen at
 * capture, whatever lengths are written into seq_lens before each replay.
 * Capture with seq_len_hint = MLT_LENGTHS_UNKNOWN: the plan then runs the
 * length-aware variant measured best at the nearest batch (or the built-in
 * one), whose schedule is rebuilt on the GPU from seq_lens at every replay,
 * so the replay is right for any lengths and stays balanced.  A call with
 * known hints may run a fixed-split variant, which is right for any lengths
 * but tuned for the hinted ones only. */
#define MLT_LENGTHS_UNKNOWN (-1)

typedef struct mlt_decode_args {
    int batch;                   /* 1..max_batch */
    int seq_len_hint;            /* mean keys per request, >= 0, or MLT_LENGTHS_UNKNOWN */
    int max_blocks_per_seq;      /* block-table columns */
    const void *q;               /* [batch, sq, n_heads, d] q_dtype */
    const void *kv_cache;        /* [num_pages, page_size, d] kv_dtype */
    const int32_t *block_table;  /* [batch, max_blocks_per_seq] */
    const int32_t *seq_lens;     /* [batch]: keys of each request, new tokens included */
    void *out;                   /* [batch, sq, n_heads, dl] q_dtype */
    float *lse;                  /* [batch, sq, n_heads] natural-log LSE */
    void *workspace;             /* mlt_plan_workspace_size() bytes */
    size_t workspace_size;
    int max_seq_len_hint;        /* the longest request's keys, or 0 (= seq_len_hint) */
    const void *schedule;        /* NULL, or memory mlt_plan_schedule filled for this step (see there) */

    /* Views (all zero / NULL: the contiguous layouts above).  Strides are in
     * elements, per request, token and head, as torch's .stride() gives
     * them for [batch, sq, n_heads, width]; all three 0 means contiguous.
     * Rules (a call breaking one fails naming the tensor and the rule,
     * nothing launched): no negative stride; q, q_pe and out strides are
     * multiples of 8 elements (rows move in 16-byte pieces); out and lse
     * rows may not overlap. */
    const void *q_pe;            /* non-NULL: q holds the first dl columns ([.., dl], vLLM's ql_nope) and
                                    q_pe the last d - dl ([.., d - dl], q_pe), 16-byte aligned; dl % 8 == 0 */
    int64_t q_strides[3];
    int64_t q_pe_strides[3];
    int64_t out_strides[3];
    int64_t lse_strides[3];      /* FlashMLA's lse [batch, n_heads, sq]: {n_heads * sq, 1, sq} */
    /* non-NULL: the KV dequantisation scale (kv_scale: applied to every KV
     * dtype, 1 unless fp8 in practice) is read from this float in device
     * memory at run time (vLLM's layer._k_scale), instead of the plan's; a
     * captured graph follows its changes */
    const float *kv_scale_device;
} mlt_decode_args;

/* stream: a CUstream / hipStream_t, or NULL for the default stream. */
mlt_status mlt_plan_run(mlt_plan *plan, const mlt_decode_args *args, void *stream);

/* Per step, once for all layers.  A length-aware variant builds its work
 * schedule from seq_lens on the GPU (a small kernel, a few microseconds);
 * mlt_plan_run does it in every call unless args->schedule names one built
 * for the step.  Engines that call decode once per layer with the same
 * lengths (61 layers in DeepSeek-V3) build it once:
 *     mlt_plan_schedule(plan, &args, sched_mem, stream);   -- per step
 *     args.schedule = sched_mem;
 *     for each layer: mlt_plan_run(plan, &args_of_layer, stream);
 * sched_mem: mlt_plan_schedule_size() bytes of device memory, 16-byte
 * aligned, owned by the caller.  mlt_plan_schedule reads batch, the hints
 * and seq_lens of args only (the other tensors may be NULL: it is built
 * before the layers' tensors are known).  The runs must pass the same batch and hints
 * as the mlt_plan_schedule call (so they dispatch to the same variant) and
 * the same seq_lens contents.  When the call dispatches to a variant with
 * fixed splits, mlt_plan_schedule launches nothing and the runs ignore
 * args->schedule.  Both are graph-safe: capture them together. */
size_t mlt_plan_schedule_size(const mlt_plan *plan);
mlt_status mlt_plan_schedule(mlt_plan *plan, const mlt_decode_args *args, void *schedule, void *stream);

typedef enum mlt_choice_reason {
    MLT_CHOICE_EXACT_KEY,    /* the DB measured this batch and length */
    MLT_CHOICE_NEAREST_KEY,  /* the nearest measured key (log-distance on batch and length) */
    MLT_CHOICE_HEURISTIC     /* no entry for this arch and problem: built-in rule */
} mlt_choice_reason;

typedef struct mlt_choice_info {
    mlt_choice_reason reason;
    char family[40];
    char variant[200];       /* "tile_q=16,kv_granularity=64,...": what runs (a nearest key's winner with its
                                splits rescaled to this batch: why says so) */
    int key_batch, key_seq_len;  /* the key used (exact/nearest): batch, mean keys */
    double distance;         /* |log2(batch/kb)| + |log2(mean/km)| + |log2(max/mean) - log2(kmax/km)| */
    double measured_ms;      /* the key's measured median (of its winner), 0 for heuristic */
    char source[16];         /* "user", "system" or "heuristic" */
    int key_max_seq_len;     /* the key's longest request */
    char key_lengths[48];    /* how the key's lengths were made: "uniform", "long-tail", ... */
    int length_aware;        /* the variant cuts the work by the lengths on the GPU */
    char why[160];           /* one line: what decided */
} mlt_choice_info;

/* Which variant mlt_plan_run would run for these hints, and why.  Checks
 * batch (1..max_batch) and the hints as mlt_plan_run does, and refuses what
 * it would refuse: MLT_ERR_INVALID_ARGUMENT, mlt_last_error() naming it. */
mlt_status mlt_plan_explain(const mlt_plan *plan, int batch, int seq_len_hint, int max_seq_len_hint,
                            mlt_choice_info *out);

/* ---- MLA prefill (docs/prefill.md) ---------------------------------------
 * Attention in the compute-friendly (MHA) form engines run for prefill:
 * the latent cache decompressed per head, so k and v have as many heads as
 * q; qk head dim qk_nope_dim + qk_rope_dim (DeepSeek: 128 + 64), v head dim
 * v_dim (128); varlen over requests; out plus the natural-log LSE.
 *
 * Request b's new tokens are rows cu_seqlens_q[b] .. cu_seqlens_q[b + 1]
 * of q, out and lse; its keys rows cu_seqlens_k[b] .. cu_seqlens_k[b + 1]
 * of k, k_pe and v.  With causal = 1 the keys are the request's context
 * (the first keys - new tokens of them: every new token sees all of it)
 * followed by its new tokens (token i sees new tokens 0..i), as
 * FlashAttention's varlen causal call aligns them; causal = 0: every token
 * sees every key.  A new token with no visible key (causal, fewer keys than
 * new tokens) gets out = 0 and lse = -inf.
 *
 * Chunked context: one call over a chunk of context (causal = 0, the chunk
 * as keys), one over the new tokens (causal = 1, themselves as keys), then
 * mlt_prefill_merge joins the two (out, lse) states; or one call with
 * context + new tokens as keys (causal = 1).  Both give the same result.
 *
 * Dispatch: by the tuning databases' prefill keys (`mla-tune sweep` of a
 * plan with `kind: mla_prefill` entries, docs/prefill.md), per call by its
 * mask, requests and max_seqlen_q (the keys per request are on the GPU
 * only: of the keys with those requests and new tokens, the one with the
 * least context is nearest); with no key for the mask, the family's
 * built-in default.
 *
 * dtypes: bf16 or fp16; or fp8: q, k, k_pe and v all MLT_FP8_E4M3 (OCP
 * e4m3) with per-tensor dequantisation scales (q_scale, k_scale, v_scale:
 * the value is the stored one times its scale), out in bf16.  fp8 runs on
 * the Hopper matrix units only (sm_90) and needs a workspace per call
 * (mlt_prefill_workspace_size: v is transposed there) and max_seqlen_k. */
typedef struct mlt_prefill_problem {
    int n_heads;            /* 1..128 (q, k and v alike) */
    int qk_nope_dim;        /* q/k columns without rope (128) */
    int qk_rope_dim;        /* q/k rope columns (64); nope + rope <= 512 */
    int v_dim;              /* v and out columns (128), <= 512 */
    mlt_dtype q_dtype;      /* q (and out, but bf16 for fp8 q): MLT_BF16, MLT_FP16 or MLT_FP8_E4M3 */
    mlt_dtype kv_dtype;     /* k, k_pe and v: the same as q_dtype */
    float softmax_scale;
    float q_scale, k_scale, v_scale; /* fp8's per-tensor scales (positive); 16-bit types: 1 or 0 (unused) */
} mlt_prefill_problem;

/* DeepSeek's shape: 128 heads, 128 + 64 / 128, bf16, scale 1/sqrt(192),
 * scales 1. */
void mlt_prefill_problem_default(mlt_prefill_problem *problem);

typedef struct mlt_prefill_plan mlt_prefill_plan;

/* Compiles (or loads) everything the plan may run: the prefill kernel and
 * the merge. */
mlt_status mlt_prefill_plan_create(mlt_runtime *rt, const mlt_prefill_problem *problem, mlt_prefill_plan **out);
void mlt_prefill_plan_destroy(mlt_prefill_plan *plan);

/* One prefill call.  All pointers are device pointers, aligned to their
 * elements; cu_seqlens_* are int32 [batch + 1], non-decreasing from 0.
 * Strides are in elements, per token and per head (torch's .stride() of
 * [tokens, heads, width] tensors); {0, 0} means contiguous.  No
 * workspace, no allocation. */
typedef struct mlt_prefill_args {
    int batch;                      /* requests, 1..65535 */
    int max_seqlen_q;               /* the most new tokens of any request (>= 1): the grid covers this
                                       many, so a request with more would be left partly unwritten */
    int causal;                     /* 0 or 1 (above) */
    const int32_t *cu_seqlens_q;
    const int32_t *cu_seqlens_k;
    const void *q;                  /* [total_q, n_heads, nope + rope] q_dtype */
    const void *k;                  /* [total_k, n_heads, nope + rope], or [.., nope] when k_pe is given */
    const void *k_pe;               /* NULL, or [total_k, rope]: the rope part of k, one row for all heads
                                       (vLLM's k_pe, without expanding it to the heads) */
    const void *v;                  /* [total_k, n_heads, v_dim] kv_dtype */
    void *out;                      /* [total_q, n_heads, v_dim] q_dtype */
    float *lse;                     /* [total_q, n_heads]; head-major [n_heads, total_q] is strides {1, total_q} */
    int64_t q_strides[2], k_strides[2], v_strides[2], out_strides[2], lse_strides[2];
    int64_t k_pe_strides[2];        /* {0, 0}: [total_k, rope] shared by the heads; a head stride of 0 shares a row */
    /* fp8 only (0 / NULL otherwise): */
    int max_seqlen_k;               /* the most keys of any request (>= 1); a request with more gets NaN out */
    void *workspace;                /* mlt_prefill_workspace_size(plan, batch, max_seqlen_k) bytes, 16-byte aligned */
    size_t workspace_size;
} mlt_prefill_args;

/* Bytes of device workspace an mlt_prefill_run of `batch` requests of at
 * most max_seqlen_k keys needs: 0 for 16-bit types; for fp8, v transposed
 * (batch x heads x v_dim x max_seqlen_k rounded up to 128). */
size_t mlt_prefill_workspace_size(const mlt_prefill_plan *plan, int batch, int max_seqlen_k);

/* stream: a CUstream / hipStream_t, or NULL for the default stream. */
mlt_status mlt_prefill_run(mlt_prefill_plan *plan, const mlt_prefill_args *args, void *stream);

/* The merge of two attention states of the same tokens and heads (say a
 * context chunk's and the new tokens'), as if their keys were one set:
 *   out = (e^(lse_a - m) out_a + e^(lse_b - m) out_b) / (e^(lse_a - m) + e^(lse_b - m)),
 *   lse = m + log(e^(lse_a - m) + e^(lse_b - m)),  m = max(lse_a, lse_b).
 * An lse of -inf (or +inf, as FlashAttention 2 writes for an empty row)
 * is an empty state: the other is taken as it is; two empty states give
 * out = 0, lse = -inf.  out may be out_a or out_b (each element is read
 * before it is written); lse may not be lse_a or lse_b (every column of a
 * row reads them), and such a call fails. */
typedef struct mlt_prefill_merge_args {
    int tokens;                     /* rows of each head (0: nothing to do) */
    const void *out_a;              /* [tokens, n_heads, v_dim] q_dtype */
    const float *lse_a;             /* [tokens, n_heads] */
    const void *out_b;
    const float *lse_b;
    void *out;
    float *lse;
    int64_t out_a_strides[2], lse_a_strides[2], out_b_strides[2], lse_b_strides[2], out_strides[2],
        lse_strides[2];             /* per token, per head; {0, 0}: contiguous */
} mlt_prefill_merge_args;

mlt_status mlt_prefill_merge(mlt_prefill_plan *plan, const mlt_prefill_merge_args *args, void *stream);

/* Which variant mlt_prefill_run runs for a call of `batch` requests, at
 * most `max_seqlen_q` new tokens each, causal or not, and why: an exact
 * key (the same requests and new tokens; of several, the least context),
 * the nearest key, or the built-in rule (MLT_CHOICE_HEURISTIC).  For a key, key_batch is its
 * requests, key_seq_len its new tokens per request, key_max_seq_len its
 * keys per request, key_lengths its mask ("causal", "non-causal"). */
mlt_status mlt_prefill_plan_explain_call(const mlt_prefill_plan *plan, int batch, int max_seqlen_q, int causal,
                                         mlt_choice_info *out);
/* The same for one causal request of one new token. */
mlt_status mlt_prefill_plan_explain(const mlt_prefill_plan *plan, mlt_choice_info *out);

/* ---- which form for a chunk of prefill (MQA or MHA) ----------------------
 * A request's chunk of sq new tokens after `context` tokens runs either
 * absorbed (MQA: q_nope @ W_UK^T, attention over the latent cache with
 * mlt_plan_run at Sq = the chunk, then out @ W_UV) or decompressed (MHA:
 * the latent rows @ [W_UK | W_UV], then mlt_prefill_run).  Which is faster
 * depends on sq, the context, the heads and the GPU: `mla-tune crossover`
 * measures both end to end and stores the points in the tuning DB; this
 * answers from them (runtime/api/crossover_pick.h: the nearest measured
 * device, heads and context, both forms' times interpolated in sq).  With
 * nothing measured for this GPU's architecture and the dtypes it answers
 * by the flop count and says so (measured = 0, source "rule").
 * docs/prefill.md, "The crossover". */
typedef enum mlt_prefill_form { MLT_FORM_MQA = 0, MLT_FORM_MHA = 1 } mlt_prefill_form;

typedef struct mlt_form_info {
    mlt_prefill_form form;     /* the faster form at (sq, context); MHA on a tie */
    int measured;              /* 1: from measured points; 0: the flop rule */
    char source[16];           /* "user", "system" (the DB the points came from; "user+system" when the two
                                  interpolated between came from both) or "rule" */
    int key_compute_units;     /* the measured device's compute units used (0 by the rule) */
    int key_n_heads;           /* the measured head count used (0 by the rule) */
    int key_context;           /* the measured context used (0 by the rule) */
    int lo_sq, hi_sq;          /* the measured Sq around sq (equal when sq is one of them or outside them) */
    double mqa_ms, mha_ms;     /* both forms' times at sq (interpolated); 0 by the rule */
    int boundary_sq;           /* at key_context (by the rule: at context): the smallest Sq at which MHA is
                                  picked; 0 when MQA is at every Sq up to 1024 */
    char why[256];             /* one line: which points, how near, or the rule */
} mlt_form_info;

/* Which form a chunk of sq (1..1024) new tokens after `context` (>= 0)
 * tokens of one request should take, with n_heads (1..128) heads, q in
 * q_dtype (MLT_BF16 or MLT_FP16) and the latent cache in kv_dtype, on the
 * runtime's GPU (its architecture and compute units).  The points are read
 * from the runtime's user and system DBs at the first call (the user DB's
 * point replaces the system DB's for the same device, heads, dtypes, sq
 * and context) and kept; calls may come from several threads at once.  A
 * bad argument is MLT_ERR_INVALID_ARGUMENT naming it; a damaged DB,
 * MLT_ERR_DATABASE (and the next call reads again). */
mlt_status mlt_prefill_choose_form(mlt_runtime *rt, int n_heads, mlt_dtype q_dtype, mlt_dtype kv_dtype, int sq,
                                   int context, mlt_form_info *out);

#ifdef __cplusplus
}
#endif
#endif
