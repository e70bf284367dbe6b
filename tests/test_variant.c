/*
 * Variant descriptions: parsing and formatting, validation of values and
 * constraints (with messages naming what is wrong), space enumeration and
 * pruning, and host-side rejection of bad launch arguments before anything
 * reaches the GPU (a counting backend proves no launch happened).
 */
#include "check.h"
#include "kernels/build.h"
#include "kernels/mla_decode/mla_decode.h"
#include "kernels/mla_decode/params.h"
#include "kernels/mla_decode/schedule.h"

/* the launches counted, and what the last of each kind was given */
static int launches, last_grid[3], schedule_launches, schedule_threads, schedule_cost, schedule_snap;
static size_t last_shared;
static mt_devptr last_sched, schedule_dst;
/* the kernel table the length-aware launches are given below: decode,
 * reduce, schedule (MT_DECODE_FN, MT_REDUCE_FN, MT_SCHEDULE_FN) */
#define FAKE_SCHEDULE_FN ((mt_function)3)
static mt_status counting_launch(mt_backend *b, mt_function f, const unsigned g[3], const unsigned bl[3], size_t sh,
                                 mt_stream s, void **args) {
    (void)b, (void)s;
    const mt_decode_params *p = args ? args[0] : NULL; /* every kernel of the family takes params.h's struct */
    if (f == FAKE_SCHEDULE_FN) { /* mla_schedule: one group, writing where p->schedule points */
        schedule_launches++;
        schedule_dst = p ? p->schedule : 0;
        schedule_threads = (int)(g[0] * g[1] * g[2] == 1 ? bl[0] * bl[1] * bl[2] : 0);
        schedule_cost = p ? p->sched_cost : -1, schedule_snap = p ? p->sched_snap : -1;
        return MT_OK;
    }
    launches++;
    for (int i = 0; i < 3; i++) last_grid[i] = (int)g[i];
    last_shared = sh;
    /* a decode launch (the one with shared memory): the schedule is 0
     * unless the variant is length-aware */
    last_sched = sh > 0 && p ? p->schedule : 0;
    return MT_OK;
}
static int dependent_launches, last_reduce_grid[3], last_reduce_threads;
static mt_devptr last_reduce_sched;
static mt_status counting_launch_dependent(mt_backend *b, mt_function f, const unsigned g[3], const unsigned bl[3],
                                           size_t sh, mt_stream s, void **args) {
    (void)b, (void)f, (void)sh, (void)s;
    dependent_launches++;
    for (int i = 0; i < 3; i++) last_reduce_grid[i] = (int)g[i];
    last_reduce_threads = (int)(bl[0] * bl[1] * bl[2]);
    /* the length-aware reduce reads the schedule; the grid reduce gets 0 */
    last_reduce_sched = args ? ((const mt_decode_params *)args[0])->schedule : 0;
    return MT_OK;
}
static const mt_backend_iface counting_iface = {.launch = counting_launch};
static mt_backend counting_backend = {.name = "counting", .iface = &counting_iface, .has_driver = 1};
/* a backend with programmatic dependent launch */
static const mt_backend_iface overlapping_iface = {.launch = counting_launch,
                                                   .launch_dependent = counting_launch_dependent};
static mt_backend overlapping_backend = {.name = "overlapping", .iface = &overlapping_iface, .has_driver = 1};

/* a backend with cluster launches (and tensor maps, which mma=2 encodes) */
static int cluster_launches;
static unsigned cluster_seen[3], cluster_grid[3];
static mt_status counting_launch_cluster(mt_backend *b, mt_function f, const unsigned g[3], const unsigned bl[3],
                                         const unsigned cl[3], size_t sh, mt_stream s, void **args) {
    (void)b, (void)f, (void)bl, (void)sh, (void)s, (void)args;
    cluster_launches++;
    memcpy(cluster_seen, cl, sizeof cluster_seen), memcpy(cluster_grid, g, sizeof cluster_grid);
    return MT_OK;
}
static mt_status fake_tensor_map(mt_backend *b, mt_devptr base, unsigned eb, uint64_t c, uint64_t r, uint64_t rb,
                                 unsigned bc, unsigned br, void *out) {
    (void)b, (void)base, (void)eb, (void)c, (void)r, (void)rb, (void)bc, (void)br;
    memset(out, 0, MT_TENSOR_MAP_BYTES);
    return MT_OK;
}
static const mt_backend_iface cluster_iface = {.launch = counting_launch, .launch_dependent = counting_launch_dependent,
                                               .launch_cluster = counting_launch_cluster,
                                               .tensor_map_2d = fake_tensor_map};
static mt_backend cluster_backend = {.name = "clusters", .iface = &cluster_iface, .has_driver = 1};
static const mt_backend_iface no_cluster_iface = {.launch = counting_launch, .tensor_map_2d = fake_tensor_map};
static mt_backend no_cluster_backend = {.name = "no-clusters", .iface = &no_cluster_iface, .has_driver = 1};

static int count_visits(const mt_variant *v, void *user) {
    (void)v;
    (*(int *)user)++;
    return 0;
}

int main(void) {
    const mt_family *f = &mt_family_mla_decode;
    const mt_kernels one = {{(mt_function)1, NULL, NULL}}, two = {{(mt_function)1, (mt_function)1, NULL}};
    CHECK(mt_family_find("mla_decode_simt") == f);
    CHECK(mt_family_find("nope") == NULL);
    mt_problem_static s = {.d = 576, .dl = 512, .page_size = 64, .q_dtype = MT_BF16, .kv_dtype = MT_BF16};
    mt_target sm90, gfx942;
    CHECK_OK(mt_target_for_arch("sm_90", &sm90));
    CHECK_OK(mt_target_for_arch("gfx942", &gfx942));
    CHECK_STATUS(mt_target_for_arch("gfx1", &sm90), MT_ERR_INVALID_ARGUMENT);
    CHECK(strstr(mt_last_error(), "unknown architecture 'gfx1'") != NULL);

    /* format and parse round-trip */
    mt_variant v, w;
    mt_variant_default(f, &v);
    char text[256];
    mt_variant_format(&v, text, sizeof text);
    CHECK(strcmp(text, "tile_q=16,kv_granularity=16,num_splits=4,block_threads=256,kv_chunk=32,mma=0,kv_stages=2,split_reduce=0,groups_per_cu=0") == 0);
    CHECK_OK(mt_variant_parse(f, text, &w));
    CHECK(memcmp(v.values, w.values, sizeof v.values) == 0);
    /* the schedule's costs are written only when not at their defaults, so
     * a variant's text (a database's row) is what it was before they
     * existed; a tuned pair comes back from its text; the grid (no
     * schedule) takes the defaults only */
    {
        const char *la = "tile_q=16,kv_granularity=64,num_splits=1,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,"
                         "split_reduce=0,groups_per_cu=1";
        mt_variant a, b;
        CHECK_OK(mt_variant_parse(f, la, &a));
        CHECK(a.values[MT_P_REQUEST_COST] == MT_SCHEDULE_OVERHEAD && a.values[MT_P_SNAP_KEYS] == MT_SCHEDULE_SNAP_KEYS);
        mt_variant_format(&a, text, sizeof text);
        CHECK_MSG(strcmp(text, la) == 0, "%s", text);
        a.values[MT_P_REQUEST_COST] = 256, a.values[MT_P_SNAP_KEYS] = 512;
        mt_variant_format(&a, text, sizeof text);
        CHECK_MSG(strstr(text, "groups_per_cu=1,request_cost=256,snap_keys=512") != NULL, "%s", text);
        CHECK_MSG(strstr(text, "snap_cap") == NULL, "the default cap is written: %s", text); /* rows stay one per variant */
        CHECK_OK(mt_variant_parse(f, text, &b));
        CHECK(memcmp(a.values, b.values, sizeof a.values) == 0);
        mt_variant half = a;
        half.values[MT_P_SNAP_CAP] = 2;
        mt_variant_format(&half, text, sizeof text);
        CHECK_MSG(strstr(text, ",snap_cap=2") != NULL, "%s", text);
        CHECK_OK(mt_variant_parse(f, text, &b));
        CHECK(memcmp(half.values, b.values, sizeof half.values) == 0);
        mt_problem_static s16 = {.d = 576, .dl = 512, .page_size = 64, .q_dtype = MT_BF16, .kv_dtype = MT_BF16};
        CHECK_OK(mt_variant_validate(&a, &s16, &sm90));
        a.values[MT_P_GROUPS_PER_CU] = 0, a.values[MT_P_KV_GRANULARITY] = 16;
        CHECK_STATUS(mt_variant_validate(&a, &s16, &sm90), MT_ERR_INVALID_ARGUMENT);
        CHECK_MSG(strstr(mt_last_error(), "request_cost=256, snap_keys=512 and snap_cap=4 shape the length-aware "
                                          "schedule") != NULL, "%s", mt_last_error());
        /* snap_cap likewise: a grid variant takes the default only */
        mt_variant g = a;
        g.values[MT_P_REQUEST_COST] = MT_SCHEDULE_OVERHEAD, g.values[MT_P_SNAP_KEYS] = MT_SCHEDULE_SNAP_KEYS;
        g.values[MT_P_SNAP_CAP] = 2;
        CHECK_STATUS(mt_variant_validate(&g, &s16, &sm90), MT_ERR_INVALID_ARGUMENT);
        CHECK_MSG(strstr(mt_last_error(), "snap_cap=2") != NULL, "%s", mt_last_error());
        a.values[MT_P_REQUEST_COST] = 100; /* not a value the family allows */
        a.values[MT_P_GROUPS_PER_CU] = 1, a.values[MT_P_KV_GRANULARITY] = 64;
        CHECK_STATUS(mt_variant_validate(&a, &s16, &sm90), MT_ERR_INVALID_ARGUMENT);
    }
    /* wg_schedule (issue 28): written only when 1, so older texts stay;
     * valid on the 64-row mma=2 path on sm_90 with D >= Dl + 64 only; its
     * own source file and shared-memory layout */
    {
        const char *g = "tile_q=64,kv_granularity=16,num_splits=2,block_threads=256,kv_chunk=64,mma=2,kv_stages=2,"
                        "split_reduce=1,groups_per_cu=0";
        mt_variant a, b;
        CHECK_OK(mt_variant_parse(f, g, &a));
        CHECK(a.values[MT_P_WG_SCHEDULE] == 0);
        mt_problem_static s64 = {.d = 576, .dl = 512, .page_size = 64, .q_dtype = MT_BF16, .kv_dtype = MT_BF16};
        CHECK_OK(mt_variant_validate(&a, &s64, &sm90));
        size_t plain = mt_mla_decode_shared_bytes(a.values, &s64, 32);
        a.values[MT_P_WG_SCHEDULE] = 1;
        mt_variant_format(&a, text, sizeof text);
        CHECK_MSG(strstr(text, "groups_per_cu=0,wg_schedule=1") != NULL, "%s", text);
        CHECK_OK(mt_variant_parse(f, text, &b));
        CHECK(memcmp(a.values, b.values, sizeof a.values) == 0);
        CHECK_OK(mt_variant_validate(&a, &s64, &sm90));
        size_t seesaw = mt_mla_decode_shared_bytes(a.values, &s64, 32);
        CHECK_MSG(seesaw < plain && seesaw <= sm90.shared_max, "%zu vs %zu", seesaw, plain);
        const char *names[MT_MAX_SOURCES];
        int n_src = f->sources(&a, &s64, 32, names), found = 0;
        for (int i = 0; i < n_src; i++) found += strcmp(names[i], "mla_decode/wgmma64_seesaw.cu") == 0;
        CHECK(found == 1);
        mt_problem_static nope = s64;
        nope.d = 512;
        CHECK_STATUS(mt_variant_validate(&a, &nope, &sm90), MT_ERR_INVALID_ARGUMENT);
        CHECK_MSG(strstr(mt_last_error(), "needs D >= Dl + 64") != NULL, "%s", mt_last_error());
        a.values[MT_P_TILE_Q] = 16, a.values[MT_P_NUM_SPLITS] = 1, a.values[MT_P_SPLIT_REDUCE] = 0;
        CHECK_STATUS(mt_variant_validate(&a, &s64, &sm90), MT_ERR_INVALID_ARGUMENT);
        CHECK_MSG(strstr(mt_last_error(), "wg_schedule=1 (overlapped warpgroups)") != NULL, "%s", mt_last_error());
    }
    CHECK_STATUS(mt_variant_parse(f, "tile_q=16", &w), MT_ERR_INVALID_ARGUMENT);
    CHECK(strstr(mt_last_error(), "'kv_granularity' missing") != NULL);
    CHECK_STATUS(mt_variant_parse(f, "tile_q=16,tile_q=8,kv_granularity=16,num_splits=4,block_threads=256,kv_chunk=32", &w),
                 MT_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(mt_variant_parse(f, "tile_q=x,kv_granularity=16,num_splits=4,block_threads=256,kv_chunk=32", &w),
                 MT_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(mt_variant_parse(f, "warp_specialise=1", &w), MT_ERR_INVALID_ARGUMENT);
    CHECK(strstr(mt_last_error(), "no parameter 'warp_specialise'") != NULL);
    /* a row written before "mma" existed still reads, as mma=0 */
    CHECK_OK(mt_variant_parse(f, "tile_q=16,kv_granularity=16,num_splits=4,block_threads=256,kv_chunk=32", &w));
    CHECK(w.values[MT_P_MMA] == 0);
    /* mma=1: NVIDIA only, fixed tile shape */
    w = v;
    w.values[MT_P_MMA] = 1;
    CHECK_OK(mt_variant_validate(&w, &s, &sm90)); /* 8 warps on 32 keys: 4 d-slices x 2 key groups */
    w.values[MT_P_TILE_Q] = 32, w.values[MT_P_BLOCK_THREADS] = 128;
    CHECK_OK(mt_variant_validate(&w, &s, &sm90)); /* Q slice 72 + scores 32 + output 128: the limit, 232 */
    w.values[MT_P_KV_CHUNK] = 64;                 /* scores 64 */
    CHECK_STATUS(mt_variant_validate(&w, &s, &sm90), MT_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(mt_last_error(), "264 registers") && strstr(mt_last_error(), "would spill"), "%s",
              mt_last_error());
    w.values[MT_P_TILE_Q] = 16, w.values[MT_P_KV_CHUNK] = 32;
    w.values[MT_P_BLOCK_THREADS] = 128, w.values[MT_P_KV_CHUNK] = 64;
    w.values[MT_P_KV_STAGES] = 3; /* 3 x 64 keys x 1168 bytes: over 227 KiB */
    CHECK_STATUS(mt_variant_validate(&w, &s, &sm90), MT_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(mt_last_error(), "shared memory") != NULL, "%s", mt_last_error());
    w.values[MT_P_KV_STAGES] = 2;
    CHECK_OK(mt_variant_validate(&w, &s, &sm90));
    /* mma=1 on gfx942 (MFMA): 16-key chunks, 2 or 4 waves, tile_q 16/32 */
    CHECK_STATUS(mt_variant_validate(&w, &s, &gfx942), MT_ERR_INVALID_ARGUMENT); /* 64-key chunks */
    CHECK_MSG(strstr(mt_last_error(), "MFMA") && strstr(mt_last_error(), "kv_chunk 16"), "%s", mt_last_error());
    w.values[MT_P_KV_CHUNK] = 16;
    CHECK_OK(mt_variant_validate(&w, &s, &gfx942));
    CHECK_STATUS(mt_variant_validate(&w, &s, &sm90), MT_ERR_INVALID_ARGUMENT); /* NVIDIA takes 32/64 */
    /* LDS of the AMD layout: scores 4 x 2 waves x 16 x 24, two KV buffers of
     * 16 x 584 x 2 bytes, P 16 x 24 x 2, row values 8 x 16, the q factor */
    CHECK(mt_mla_decode_shared_bytes(w.values, &s, 64) == 4 * 2 * 16 * 24 + 2 * 2 * 16 * 584 + 2 * 16 * 24 + 8 * 16 + 4);
    CHECK(mt_mla_decode_shared_bytes(w.values, &s, 64) != mt_mla_decode_shared_bytes(w.values, &s, 32));
    w.values[MT_P_KV_STAGES] = 3;
    CHECK_STATUS(mt_variant_validate(&w, &s, &gfx942), MT_ERR_INVALID_ARGUMENT); /* two buffers, no stages */
    w.values[MT_P_KV_STAGES] = 2, w.values[MT_P_TILE_Q] = 64;
    CHECK_STATUS(mt_variant_validate(&w, &s, &gfx942), MT_ERR_INVALID_ARGUMENT);
    w.values[MT_P_TILE_Q] = 32;
    CHECK_OK(mt_variant_validate(&w, &s, &gfx942)); /* Q 72 + scores 8 + output 128 + next chunk 36: 244 */
    mt_problem_static wide = s;
    wide.dl = 1024, wide.d = 1024;
    CHECK_STATUS(mt_variant_validate(&w, &wide, &gfx942), MT_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(mt_last_error(), "registers per lane") != NULL, "%s", mt_last_error());
    wide = s, wide.d = 584; /* 36.5 k-steps: not a multiple of 16 x waves */
    w.values[MT_P_TILE_Q] = 16;
    CHECK_STATUS(mt_variant_validate(&w, &wide, &gfx942), MT_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(mt_last_error(), "multiples of 32") != NULL, "%s", mt_last_error());
    {
        /* 32-key chunks (gfx950's P V on 16x16x32): two buffers of 32 x 584
         * x 2 bytes are past gfx942's 64 KiB of LDS, within gfx950's 160 */
        mt_target gfx950;
        CHECK_OK(mt_target_for_arch("gfx950", &gfx950));
        w.values[MT_P_KV_CHUNK] = 32;
        CHECK(mt_mla_decode_shared_bytes(w.values, &s, 64) == 4 * 2 * 16 * 40 + 2 * 2 * 32 * 584 + 2 * 16 * 40 + 8 * 16 + 4);
        CHECK_STATUS(mt_variant_validate(&w, &s, &gfx942), MT_ERR_INVALID_ARGUMENT);
        CHECK_MSG(strstr(mt_last_error(), "LDS") && strstr(mt_last_error(), "gfx942"), "%s", mt_last_error());
        CHECK_OK(mt_variant_validate(&w, &s, &gfx950));
        w.values[MT_P_KV_CHUNK] = 64;
        CHECK_STATUS(mt_variant_validate(&w, &s, &gfx950), MT_ERR_INVALID_ARGUMENT);
        CHECK_MSG(strstr(mt_last_error(), "kv_chunk 16/32") != NULL, "%s", mt_last_error());
        w.values[MT_P_KV_CHUNK] = 16;
    }

    /* mma=2 (wgmma): Hopper only, one shape, q and KV of one 16-bit type */
    mt_target sm80, sm90a;
    CHECK_OK(mt_target_for_arch("sm_80", &sm80));
    CHECK_OK(mt_target_for_arch("sm_90a", &sm90a));
    CHECK_OK(mt_variant_parse(f, "tile_q=64,kv_granularity=16,num_splits=8,block_threads=256,kv_chunk=64,mma=2,kv_stages=2", &w));
    CHECK_OK(mt_variant_validate(&w, &s, &sm90));
    CHECK_OK(mt_variant_validate(&w, &s, &sm90a));
    /* 1024 alignment bytes, Q and two stages of 64 x 576 x 2, P 64 x 64 x 2, alpha and limits of 64 rows,
     * two mbarriers */
    CHECK(mt_mla_decode_shared_bytes(w.values, &s, 32) == 1024 + 3 * 73728 + 8192 + 512 + 16);
    mt_problem_static small_pages = s;
    small_pages.page_size = 8;
    CHECK_OK(mt_variant_validate(&w, &small_pages, &sm90)); /* the plain 64-row path gathers such pages' rows */
    mt_variant overlapped = w; /* the other mma=2 forms copy whole pages of 16+ keys */
    overlapped.values[MT_P_WG_SCHEDULE] = 1;
    CHECK_OK(mt_variant_validate(&overlapped, &s, &sm90));
    CHECK_STATUS(mt_variant_validate(&overlapped, &small_pages, &sm90), MT_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(mt_last_error(), "at least 16 keys") != NULL, "%s", mt_last_error());
    small_pages.kv_dtype = MT_FP8_E4M3;
    CHECK_STATUS(mt_variant_validate(&w, &small_pages, &sm90), MT_ERR_INVALID_ARGUMENT);
    small_pages.kv_dtype = s.kv_dtype;
    small_pages.page_size = 16;
    CHECK_OK(mt_variant_validate(&w, &small_pages, &sm90));
    CHECK_STATUS(mt_variant_validate(&w, &s, &sm80), MT_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(mt_last_error(), "Hopper") && strstr(mt_last_error(), "sm_80"), "%s", mt_last_error());
    CHECK_STATUS(mt_variant_validate(&w, &s, &gfx942), MT_ERR_INVALID_ARGUMENT);
    mt_problem_static mixed = s;
    mixed.q_dtype = MT_FP16; /* 16-bit KV: q of the same type */
    CHECK_STATUS(mt_variant_validate(&w, &mixed, &sm90), MT_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(mt_last_error(), "one type") != NULL, "%s", mt_last_error());
    mixed = s, mixed.kv_dtype = MT_FP8_E4M3; /* fp8 KV: the 64-row shape too, with q of either type */
    CHECK_OK(mt_variant_validate(&w, &mixed, &sm90));
    mixed.q_dtype = MT_FP16;
    CHECK_OK(mt_variant_validate(&w, &mixed, &sm90));
    mt_variant w48 = w;
    w48.values[MT_P_TILE_Q] = 8;
    CHECK_STATUS(mt_variant_validate(&w48, &mixed, &sm90), MT_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(mt_last_error(), "fp8e4m3 KV takes tile_q 16, 32 or 64") != NULL, "%s", mt_last_error());
    {
        /* the second fp8 encoding's name and size */
        mt_dtype parsed = MT_BF16;
        CHECK_OK(mt_dtype_parse("fp8e4m3fnuz", &parsed));
        CHECK(parsed == MT_FP8_E4M3_FNUZ && mt_dtype_size(parsed) == 1 && mt_dtype_is_fp8(parsed));
        CHECK(strcmp(mt_dtype_name(MT_FP8_E4M3_FNUZ), "fp8e4m3fnuz") == 0 && strcmp(mt_dtype_name(MT_FP8_E4M3), "fp8e4m3") == 0);
    }
    {
        mt_variant t8;
        CHECK_OK(mt_variant_parse(f, "tile_q=16,kv_granularity=16,num_splits=2,block_threads=256,kv_chunk=64,mma=2,kv_stages=4",
                                  &t8));
        CHECK_OK(mt_variant_validate(&t8, &mixed, &sm90));
        /* 1024 alignment, Q^T 16 x 576 x 2, four stages of 64 x 576 bytes, P^T 2 x 16 x 64 x 2, the exchange
         * (256 floats), limits (16), q maxima (8), four mbarriers */
        CHECK(mt_mla_decode_shared_bytes(t8.values, &mixed, 32) == 1024 + 18432 + 147456 + 4096 + 1024 + 64 + 32 + 32);
        /* fnuz KV too (its bytes through the prelude's software conversion), in the same bytes */
        mt_problem_static fnuz = mixed;
        fnuz.kv_dtype = MT_FP8_E4M3_FNUZ;
        CHECK_OK(mt_variant_validate(&t8, &fnuz, &sm90));
        CHECK(mt_mla_decode_shared_bytes(t8.values, &fnuz, 32) == mt_mla_decode_shared_bytes(t8.values, &mixed, 32));
        mt_problem_static fp16_q = mixed;
        fp16_q.q_dtype = MT_FP16; /* q of either 16-bit type goes to fp16 */
        CHECK_OK(mt_variant_validate(&t8, &fp16_q, &sm90));
        CHECK_STATUS(mt_variant_validate(&t8, &s, &sm90), MT_ERR_INVALID_ARGUMENT); /* bf16 KV: 2 stages */
        CHECK_MSG(strstr(mt_last_error(), "bf16 KV takes tile_q 64 or 16") != NULL, "%s", mt_last_error());
        CHECK_STATUS(mt_variant_validate(&t8, &mixed, &sm80), MT_ERR_INVALID_ARGUMENT);
        mt_variant x = t8;
        x.values[MT_P_KV_STAGES] = 2;
        CHECK_STATUS(mt_variant_validate(&x, &mixed, &sm90), MT_ERR_INVALID_ARGUMENT);
        mt_problem_static fp8_small = mixed;
        fp8_small.page_size = 8;
        CHECK_STATUS(mt_variant_validate(&t8, &fp8_small, &sm90), MT_ERR_INVALID_ARGUMENT);
        /* the transposed tile with 16-bit KV: two stages (one per warpgroup), q of the KV's type */
        mt_variant t16 = t8;
        t16.values[MT_P_KV_STAGES] = 2;
        CHECK_OK(mt_variant_validate(&t16, &s, &sm90));
        /* 1024 alignment, Q^T 16 x 576 x 2, two stages of 64 x 576 x 2, P^T, exchange, limits, q maxima,
         * two mbarriers */
        CHECK(mt_mla_decode_shared_bytes(t16.values, &s, 32) == 1024 + 18432 + 147456 + 4096 + 1024 + 64 + 32 + 16);
        mt_problem_static f16 = s;
        f16.q_dtype = MT_FP16, f16.kv_dtype = MT_FP16;
        CHECK_OK(mt_variant_validate(&t16, &f16, &sm90));
        f16.q_dtype = MT_BF16; /* no q conversion on this path */
        CHECK_STATUS(mt_variant_validate(&t16, &f16, &sm90), MT_ERR_INVALID_ARGUMENT);
        CHECK_MSG(strstr(mt_last_error(), "one type") != NULL, "%s", mt_last_error());
        CHECK_STATUS(mt_variant_validate(&t8, &s, &sm90), MT_ERR_INVALID_ARGUMENT); /* 4 stages: fp8 only */
        CHECK_MSG(strstr(mt_last_error(), "kv_stages 2") != NULL, "%s", mt_last_error());
        t16.values[MT_P_SPLIT_REDUCE] = 1; /* the cluster merge is the 64-row path's */
        CHECK_STATUS(mt_variant_validate(&t16, &s, &sm90), MT_ERR_INVALID_ARGUMENT);
        CHECK_STATUS(mt_variant_validate(&t16, &s, &sm80), MT_ERR_INVALID_ARGUMENT);
    }
    mixed = s, mixed.q_dtype = MT_FP16, mixed.kv_dtype = MT_FP16;
    CHECK_OK(mt_variant_validate(&w, &mixed, &sm90));
    mixed = s, mixed.dl = 256;
    CHECK_STATUS(mt_variant_validate(&w, &mixed, &sm90), MT_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(mt_last_error(), "Dl == 512") != NULL, "%s", mt_last_error());
    mixed = s, mixed.d = 608; /* not whole 64-column swizzle blocks */
    CHECK_STATUS(mt_variant_validate(&w, &mixed, &sm90), MT_ERR_INVALID_ARGUMENT);
    mixed = s, mixed.d = 640; /* three tiles of 64 x 640 x 2 bytes: over 227 KiB */
    CHECK_STATUS(mt_variant_validate(&w, &mixed, &sm90), MT_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(mt_last_error(), "shared memory") != NULL, "%s", mt_last_error());
    static const int other_shape[][2] = {{MT_P_TILE_Q, 32}, {MT_P_BLOCK_THREADS, 128}, {MT_P_KV_CHUNK, 32}, {MT_P_KV_STAGES, 3}};
    for (int i = 0; i < 4; i++) {
        mt_variant x = w;
        x.values[other_shape[i][0]] = other_shape[i][1];
        CHECK_STATUS(mt_variant_validate(&x, &s, &sm90), MT_ERR_INVALID_ARGUMENT);
        CHECK_MSG(strstr(mt_last_error(), "mma=2 with bf16 KV takes") != NULL, "%s", mt_last_error());
    }

    /* split_reduce=1: the 64-row mma=2 path with 2..16 splits, nothing else */
    {
        mt_variant c = w;
        c.values[MT_P_SPLIT_REDUCE] = 1;
        CHECK_OK(mt_variant_validate(&c, &s, &sm90));
        for (int ns = 2; ns <= 16; ns *= 2) {
            c.values[MT_P_NUM_SPLITS] = ns;
            CHECK_OK(mt_variant_validate(&c, &s, &sm90));
        }
        static const int bad_splits[] = {1, 32, 128};
        for (int i = 0; i < 3; i++) {
            c.values[MT_P_NUM_SPLITS] = bad_splits[i];
            CHECK_STATUS(mt_variant_validate(&c, &s, &sm90), MT_ERR_INVALID_ARGUMENT);
            CHECK_MSG(strstr(mt_last_error(), "2..16 splits") != NULL, "%s", mt_last_error());
        }
        c.values[MT_P_NUM_SPLITS] = 8;
        mt_problem_static narrow = s;
        narrow.d = 512; /* 64 rows of 520 floats do not fit in two stages of 64 x 512 x 2 bytes */
        CHECK_STATUS(mt_variant_validate(&c, &narrow, &sm90), MT_ERR_INVALID_ARGUMENT);
        CHECK_MSG(strstr(mt_last_error(), "too large") != NULL, "%s", mt_last_error());
        mt_variant m1 = v; /* mma=0 and mma=1 have no cluster merge */
        m1.values[MT_P_SPLIT_REDUCE] = 1;
        CHECK_STATUS(mt_variant_validate(&m1, &s, &sm90), MT_ERR_INVALID_ARGUMENT);
        CHECK_MSG(strstr(mt_last_error(), "64-row mma=2 paths only") != NULL, "%s", mt_last_error());
        m1.values[MT_P_MMA] = 1;
        CHECK_STATUS(mt_variant_validate(&m1, &s, &sm90), MT_ERR_INVALID_ARGUMENT);
        mt_problem_static fp8 = s;
        fp8.kv_dtype = MT_FP8_E4M3;
        CHECK_OK(mt_variant_parse(f, "tile_q=16,kv_granularity=16,num_splits=2,block_threads=256,kv_chunk=64,mma=2,"
                                     "kv_stages=4,split_reduce=1", &m1));
        CHECK_STATUS(mt_variant_validate(&m1, &fp8, &sm90), MT_ERR_INVALID_ARGUMENT);
        CHECK_STATUS(mt_variant_validate(&c, &s, &gfx942), MT_ERR_INVALID_ARGUMENT);
        /* no workspace: the splits merge in shared memory */
        CHECK(mt_mla_decode_workspace_bytes(&c, &s, 8, 16, 1, 132) == 0);
        CHECK(mt_mla_decode_workspace_bytes(&w, &s, 8, 16, 1, 132) == (size_t)8 * 8 * 16 * 513 * 4);
        /* one cluster launch, the splits of a row tile in one cluster; no reduce */
        mt_mla_decode_args ca = {.batch = 3, .n_heads = 16, .sq = 1, .max_blocks = 4, .page_size = 64, .warp_size = 32,
                                 .scale = 0.04f, .kv_scale = 1.0f, .q = 0x1000, .kv = 0x2000, .block_table = 0x3000,
                                 .seq_lens = 0x4000, .out = 0x5000, .lse = 0x6000};
        launches = dependent_launches = 0;
        CHECK_OK(mt_mla_decode_launch(&cluster_backend, &(mt_kernels){{(mt_function)1, NULL, NULL}}, &c, &s, &ca, NULL));
        CHECK_MSG(cluster_launches == 1 && launches == 0 && dependent_launches == 0, "%d cluster launches",
                  cluster_launches);
        CHECK(cluster_seen[0] == 1 && cluster_seen[1] == 8 && cluster_seen[2] == 1);
        CHECK(cluster_grid[0] == 1 && cluster_grid[1] == 8 && cluster_grid[2] == 3);
        /* split_reduce=0 on the same backend: decode, then the reduce */
        CHECK_OK(mt_mla_decode_launch(&cluster_backend, &two, &w, &s, &(mt_mla_decode_args){
            .batch = 3, .n_heads = 16, .sq = 1, .max_blocks = 4, .page_size = 64, .warp_size = 32, .scale = 0.04f,
            .kv_scale = 1.0f, .q = 0x1000, .kv = 0x2000, .block_table = 0x3000, .seq_lens = 0x4000, .out = 0x5000,
            .lse = 0x6000, .workspace = 0x7000, .workspace_bytes = 1 << 20}, NULL));
        CHECK(cluster_launches == 1 && launches == 1 && dependent_launches == 1);
        /* 128 heads: a request's two 64-row tiles go out as one cluster (they
         * read the same keys: launch.c tile_cluster), the splits as before */
        mt_mla_decode_args wide_grid = ca;
        wide_grid.n_heads = 128, wide_grid.workspace = 0x7000, wide_grid.workspace_bytes = 1 << 24;
        CHECK_OK(mt_mla_decode_launch(&cluster_backend, &two, &w, &s, &wide_grid, NULL));
        CHECK_MSG(cluster_launches == 2 && launches == 1 && dependent_launches == 2, "%d cluster launches",
                  cluster_launches);
        CHECK(cluster_seen[0] == 2 && cluster_seen[1] == 1 && cluster_seen[2] == 1);
        CHECK(cluster_grid[0] == 2 && cluster_grid[1] == 8 && cluster_grid[2] == 3);
        /* three tiles (64 heads x Sq 3) or one (64 heads x Sq 1): no cluster */
        wide_grid.n_heads = 64, wide_grid.sq = 3;
        CHECK_OK(mt_mla_decode_launch(&cluster_backend, &two, &w, &s, &wide_grid, NULL));
        wide_grid.sq = 1;
        CHECK_OK(mt_mla_decode_launch(&cluster_backend, &two, &w, &s, &wide_grid, NULL));
        CHECK_MSG(cluster_launches == 2 && launches == 3, "%d cluster launches, %d launches", cluster_launches,
                  launches);
        /* 16 heads x Sq 8 is two tiles too */
        wide_grid.n_heads = 16, wide_grid.sq = 8;
        CHECK_OK(mt_mla_decode_launch(&cluster_backend, &two, &w, &s, &wide_grid, NULL));
        CHECK(cluster_launches == 3 && cluster_seen[0] == 2 && cluster_grid[0] == 2);
        const int clusters_so_far = cluster_launches; /* none more below: refused launches */
        /* a backend without clusters says so; nothing runs in their place */
        launches = dependent_launches = 0;
        CHECK_STATUS(mt_mla_decode_launch(&no_cluster_backend, &(mt_kernels){{(mt_function)1, NULL, NULL}}, &c, &s, &ca, NULL),
                     MT_ERR_UNSUPPORTED);
        CHECK_MSG(strstr(mt_last_error(), "launch_cluster") != NULL, "%s", mt_last_error());
        CHECK(launches == 0);
        /* the grid must be whole clusters */
        const unsigned g[3] = {1, 6, 1}, bl[3] = {256, 1, 1}, cl[3] = {1, 4, 1};
        CHECK_STATUS(mt_backend_launch_cluster(&cluster_backend, (mt_function)1, g, bl, cl, 0, NULL, NULL),
                     MT_ERR_INVALID_ARGUMENT);
        CHECK(strstr(mt_last_error(), "not a multiple of the cluster's") != NULL);
        CHECK(cluster_launches == clusters_so_far);
        launches = dependent_launches = 0;
    }

    /* groups_per_cu > 0: the length-aware form, on every path */
    {
        mt_variant pv;
        CHECK_OK(mt_variant_parse(f, "tile_q=16,kv_granularity=64,num_splits=1,block_threads=256,kv_chunk=64,mma=2,"
                                     "kv_stages=2,split_reduce=0,groups_per_cu=1", &pv));
        CHECK_OK(mt_variant_validate(&pv, &s, &sm90));
        mt_problem_static fp8 = s;
        fp8.kv_dtype = MT_FP8_E4M3;
        mt_variant p8 = pv;
        p8.values[MT_P_KV_STAGES] = 4;
        CHECK_OK(mt_variant_validate(&p8, &fp8, &sm90));
        /* the transposed path's merge buffer (16 x 512 floats) and the next
         * item's q rows (16 x d, 16-bit): more shared memory than the grid form */
        mt_variant grid_form = pv;
        grid_form.values[MT_P_GROUPS_PER_CU] = 0, grid_form.values[MT_P_KV_GRANULARITY] = 16;
        CHECK(mt_mla_decode_shared_bytes(pv.values, &s, 32) ==
              mt_mla_decode_shared_bytes(grid_form.values, &s, 32) + 16 * 512 * 4 + 16 * (size_t)s.d * 2);
        CHECK(mt_mla_decode_shared_bytes(pv.values, &s, 32) <= 227 * 1024);
        /* the 64-row path, mma.sync, SIMT take it too; on AMD the SIMT and MFMA paths */
        mt_variant x = pv;
        x.values[MT_P_TILE_Q] = 64;
        CHECK_OK(mt_variant_validate(&x, &s, &sm90));
        x = pv, x.values[MT_P_MMA] = 1, x.values[MT_P_KV_CHUNK] = 32, x.values[MT_P_BLOCK_THREADS] = 128;
        CHECK_OK(mt_variant_validate(&x, &s, &sm90));
        x.values[MT_P_KV_GRANULARITY] = 32; /* finer than the chunk: fine off the warpgroup paths */
        CHECK_OK(mt_variant_validate(&x, &s, &sm90));
        x = pv, x.values[MT_P_MMA] = 0, x.values[MT_P_TILE_Q] = 4, x.values[MT_P_KV_CHUNK] = 16;
        CHECK_OK(mt_variant_validate(&x, &s, &gfx942));
        /* the schedule splits: fixed splits and the cluster merge are refused */
        static const int other[][2] = {{MT_P_NUM_SPLITS, 4}, {MT_P_SPLIT_REDUCE, 1}};
        for (int i = 0; i < 2; i++) {
            x = pv;
            x.values[other[i][0]] = other[i][1];
            CHECK_STATUS(mt_variant_validate(&x, &s, &sm90), MT_ERR_INVALID_ARGUMENT);
            CHECK_MSG(strstr(mt_last_error(), "length-aware") || strstr(mt_last_error(), "split_reduce"), "%s",
                      mt_last_error());
        }
        x = pv;
        x.values[MT_P_KV_GRANULARITY] = 32;
        CHECK_STATUS(mt_variant_validate(&x, &s, &sm90), MT_ERR_INVALID_ARGUMENT);
        CHECK_MSG(strstr(mt_last_error(), "16 or 64 keys") != NULL, "%s", mt_last_error());
        CHECK_STATUS(mt_variant_validate(&pv, &s, &gfx942), MT_ERR_INVALID_ARGUMENT);
        /* workspace: the schedule, then two slots of 16 rows per group */
        const size_t slots = (size_t)2 * 132 * 16 * 513 * 4;
        CHECK(mt_mla_decode_schedule_bytes(&pv, 132) == mt_schedule_bytes(132));
        CHECK(mt_schedule_bytes(132) % 256 == 0 && mt_schedule_bytes(132) >= 16 * (2 + 2 * 132));
        CHECK(mt_mla_decode_workspace_bytes(&pv, &s, 1, 16, 1, 132) == mt_schedule_bytes(132) + slots);
        CHECK(mt_mla_decode_workspace_bytes(&pv, &s, 4096, 16, 1, 132) == mt_schedule_bytes(132) + slots);
        x = pv;
        x.values[MT_P_GROUPS_PER_CU] = 2;
        CHECK(mt_mla_decode_workspace_bytes(&x, &s, 1, 16, 1, 132) == mt_schedule_bytes(264) + 2 * slots);
        CHECK(mt_mla_decode_schedule_bytes(&grid_form, 132) == 0);

        const mt_kernels three = {{(mt_function)1, (mt_function)2, (mt_function)3}};
        mt_mla_decode_args pa = {.batch = 3, .n_heads = 16, .sq = 1, .max_blocks = 256, .page_size = 64,
                                 .warp_size = 32, .scale = 0.04f, .kv_scale = 1.0f, .q = 0x1000, .kv = 0x2000,
                                 .block_table = 0x3000, .seq_lens = 0x4000, .out = 0x5000, .lse = 0x6000,
                                 .workspace = 0x10000, .workspace_bytes = 1 << 24, .compute_units = 132};
        /* one call: the schedule into the workspace's start, decode over
         * 132 groups reading it, the reduce (fixed grid) reading it too */
        launches = dependent_launches = schedule_launches = 0;
        CHECK_OK(mt_mla_decode_launch(&cluster_backend, &three, &pv, &s, &pa, NULL));
        CHECK_MSG(schedule_launches == 1 && schedule_dst == 0x10000, "%d schedule launches into 0x%llx",
                  schedule_launches, (unsigned long long)schedule_dst);
        CHECK_MSG(launches == 1 && last_grid[0] == 132 && last_grid[1] == 1 && last_sched == 0x10000,
                  "%d launches, grid %d, schedule 0x%llx", launches, last_grid[0], (unsigned long long)last_sched);
        CHECK(last_shared == mt_mla_decode_shared_bytes(pv.values, &s, 32));
        /* the schedule's work-group: a thread per stretch (132) and one more,
         * in multiples of 64 */
        CHECK_MSG(schedule_threads == 192, "schedule: %d threads", schedule_threads);
        /* the reduce: one wave of 3 work-groups per compute unit (reduce.cu's
         * launch bounds), 128 columns each (RED_COLS): 396 = 99 x 4 */
        CHECK_MSG(dependent_launches == 1 && last_reduce_grid[0] == 99 && last_reduce_grid[1] == 4 &&
                      last_reduce_sched == 0x10000, "reduce: %d launches, grid %d x %d", dependent_launches,
                  last_reduce_grid[0], last_reduce_grid[1]);
        /* a batch past the stretches: a thread per request, up to 1024 */
        mt_mla_decode_args big = pa;
        big.batch = 300;
        CHECK_OK(mt_mla_decode_launch(&cluster_backend, &three, &pv, &s, &big, NULL));
        CHECK_MSG(schedule_threads == 320, "schedule: %d threads for 300 requests", schedule_threads);
        big.batch = 5000;
        CHECK_OK(mt_mla_decode_launch(&cluster_backend, &three, &pv, &s, &big, NULL));
        CHECK_MSG(schedule_threads == MT_SCHEDULE_THREADS, "schedule: %d threads for 5000 requests", schedule_threads);
        /* the schedule's costs are the variant's, passed at run time */
        CHECK_MSG(schedule_cost == MT_SCHEDULE_OVERHEAD && schedule_snap == MT_SCHEDULE_SNAP_KEYS,
                  "schedule costs %d / %d", schedule_cost, schedule_snap);
        mt_variant tuned = pv;
        tuned.values[MT_P_REQUEST_COST] = 1024, tuned.values[MT_P_SNAP_KEYS] = 512;
        CHECK_OK(mt_variant_validate(&tuned, &s, &sm90));
        CHECK_OK(mt_mla_decode_launch(&cluster_backend, &three, &tuned, &s, &pa, NULL));
        CHECK_MSG(schedule_cost == 1024 && schedule_snap == 512, "schedule costs %d / %d", schedule_cost,
                  schedule_snap);
        launches = dependent_launches = schedule_launches = 0;
        CHECK_OK(mt_mla_decode_launch(&cluster_backend, &three, &pv, &s, &pa, NULL));
        /* a schedule built for the step: no schedule launch, decode and reduce read it */
        mt_mla_decode_args pb = pa;
        pb.schedule = 0x900000;
        CHECK_OK(mt_mla_decode_launch(&cluster_backend, &three, &pv, &s, &pb, NULL));
        CHECK(schedule_launches == 1 && launches == 2 && last_sched == 0x900000 && last_reduce_sched == 0x900000);
        CHECK_OK(mt_mla_decode_schedule(&cluster_backend, &three, &pv, &pb, 0x900000, NULL));
        CHECK(schedule_launches == 2 && schedule_dst == 0x900000);
        /* the step's schedule through the family (what mlt_plan_schedule
         * calls) reads only the lengths: no other tensor, no block table,
         * no scales; without the lengths it is refused, naming them */
        {
            const int before = schedule_launches; /* the counts below this block go on from here */
            mt_mla_decode_args lens_only = {.batch = 3, .n_heads = 16, .sq = 1, .seq_lens = 0x4000,
                                            .compute_units = 132};
            CHECK_OK(mt_family_mla_decode.schedule(&cluster_backend, &three, &pv, &s, &lens_only, 0x900000, NULL));
            CHECK(schedule_launches == before + 1 && schedule_dst == 0x900000);
            lens_only.seq_lens = 0;
            CHECK_STATUS(mt_family_mla_decode.schedule(&cluster_backend, &three, &pv, &s, &lens_only, 0x900000, NULL),
                         MT_ERR_INVALID_ARGUMENT);
            CHECK_MSG(strstr(mt_last_error(), "sequence lengths pointer 0x0 is null") != NULL, "%s", mt_last_error());
            lens_only.seq_lens = 0x4002;
            CHECK_STATUS(mt_family_mla_decode.schedule(&cluster_backend, &three, &pv, &s, &lens_only, 0x900000, NULL),
                         MT_ERR_INVALID_ARGUMENT);
            lens_only.seq_lens = 0x4000, lens_only.n_heads = 0;
            CHECK_STATUS(mt_family_mla_decode.schedule(&cluster_backend, &three, &pv, &s, &lens_only, 0x900000, NULL),
                         MT_ERR_INVALID_ARGUMENT);
            CHECK(schedule_launches == before + 1);
            schedule_launches = before;
        }
        /* refused, nothing launched: a misaligned schedule, no scheduling
         * kernel, a grid variant asked for a schedule */
        pb.schedule = 0x900008;
        CHECK_STATUS(mt_mla_decode_launch(&cluster_backend, &three, &pv, &s, &pb, NULL), MT_ERR_INVALID_ARGUMENT);
        CHECK_MSG(strstr(mt_last_error(), "schedule pointer") != NULL, "%s", mt_last_error());
        CHECK_STATUS(mt_mla_decode_launch(&cluster_backend, &(mt_kernels){{(mt_function)1, (mt_function)2, NULL}},
                                          &pv, &s, &pa, NULL), MT_ERR_INVALID_ARGUMENT);
        /* 128 heads in 64-row tiles: a stretch per pair of work-groups,
         * the same 132 in the grid */
        mt_mla_decode_args wide = pa;
        wide.n_heads = 128, wide.workspace_bytes = (size_t)1 << 26;
        x = pv, x.values[MT_P_TILE_Q] = 64;
        const int clusters_before = cluster_launches;
        CHECK_OK(mt_mla_decode_launch(&cluster_backend, &three, &x, &s, &wide, NULL));
        /* each stretch's two tiles (work-groups 2k, 2k + 1) as one cluster */
        CHECK_MSG(schedule_launches == 3 && launches == 2 && cluster_launches == clusters_before + 1 &&
                      cluster_grid[0] == 132 && cluster_seen[0] == 2 && cluster_seen[1] == 1,
                  "%d launches, %d cluster launches of %u over %u", launches, cluster_launches - clusters_before,
                  cluster_seen[0], cluster_grid[0]);
        CHECK_STATUS(mt_mla_decode_schedule(&cluster_backend, &three, &grid_form, &pa, 0x900000, NULL),
                     MT_ERR_INVALID_ARGUMENT);
        CHECK(schedule_launches == 3 && launches == 2);
        launches = dependent_launches = schedule_launches = 0;
    }

    /* validation: allowed values, then constraints */
    CHECK_OK(mt_variant_validate(&v, &s, &sm90));
    w = v;
    w.values[MT_P_TILE_Q] = 12;
    CHECK_STATUS(mt_variant_validate(&w, &s, &sm90), MT_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(mt_last_error(), "tile_q=12 is not an allowed value") != NULL, "%s", mt_last_error());
    w = v;
    w.values[MT_P_TILE_Q] = 32;
    w.values[MT_P_KV_CHUNK] = 64;
    CHECK_OK(mt_variant_validate(&w, &s, &sm90));               /* 227 KiB on sm_90 */
    CHECK_STATUS(mt_variant_validate(&w, &s, &gfx942), MT_ERR_INVALID_ARGUMENT); /* 64 KiB LDS */
    CHECK_MSG(strstr(mt_last_error(), "shared memory") && strstr(mt_last_error(), "gfx942"), "%s", mt_last_error());
    w = v;
    w.values[MT_P_TILE_Q] = 64;
    w.values[MT_P_BLOCK_THREADS] = 128;
    CHECK_STATUS(mt_variant_validate(&w, &s, &sm90), MT_ERR_INVALID_ARGUMENT);
    CHECK(strstr(mt_last_error(), "would spill") != NULL);
    mt_problem_static bad = s;
    bad.q_dtype = MT_FP8_E4M3;
    CHECK_STATUS(mt_variant_validate(&v, &bad, &sm90), MT_ERR_INVALID_ARGUMENT);
    bad = s;
    bad.page_size = 48;
    CHECK_STATUS(mt_variant_validate(&v, &bad, &sm90), MT_ERR_INVALID_ARGUMENT);

    /* enumeration visits exactly the valid points */
    mt_space sp;
    mt_space_full(f, &sp);
    int visited = 0, pruned = 0, total = 1;
    for (int i = 0; i < f->n_params; i++) total *= sp.n_values[i];
    int n = mt_space_enumerate(&sp, &s, &gfx942, count_visits, &visited, &pruned);
    CHECK(n == visited && n + pruned == total && pruned > 0 && n > 0);
    /* the same points as a list, in the same order */
    mt_variant *listed = NULL;
    int n_listed = 0, pruned_listed = 0;
    CHECK_OK(mt_space_list(&sp, &s, &gfx942, &listed, &n_listed, &pruned_listed));
    CHECK(n_listed == n && pruned_listed == pruned && listed);
    int all_valid = 1;
    for (int i = 0; listed && i < n_listed; i++) all_valid &= mt_variant_validate(&listed[i], &s, &gfx942) == MT_OK;
    CHECK(all_valid);
    free(listed);
    sp.n_values[MT_P_TILE_Q] = 1;
    sp.values[MT_P_TILE_Q][0] = 16;
    visited = 0;
    n = mt_space_enumerate(&sp, &s, &sm90, count_visits, &visited, NULL);
    /* tile_q=16 fits every other combination on sm_90 (64 accumulators at
     * 128 threads is the limit, 189 KB of shared memory at kv_chunk=64) */
    /* (splits, granularity): splits=1 takes granularity 16 only: 1 + 7 x 5.
     * mma=0: kv_stages 2 only, every (threads, chunk): 9.  mma=1: (128, 32)
     * and (256, 32) with 2/3/4 stages, (128, 64) and (256, 64) with 2 stages
     * (3 stages of 64 keys exceed 227 KiB): 8.  mma=2: the transposed tile,
     * 256 threads, 64-key chunks, 2 stages: 1.  split_reduce=1 never (the
     * 64-row path only).  groups_per_cu 1 and 2 (length-aware): one
     * split, any granularity on mma=0/1 (2 x 5 x 17), 16 or 64 on the
     * transposed mma=2 tile (2 x 2); the schedule's costs at their
     * defaults (mt_space_full keeps a later parameter at its default)... */
    CHECK_MSG(n == (1 + 7 * 5) * (9 + 8 + 1) + 2 * 5 * 17 + 4 && visited == n, "visited %d", n);
    /* ...and listed, every length-aware point with each request_cost (6)
     * and snap_keys (5), the grid with their defaults only */
    for (int p = MT_P_REQUEST_COST; p <= MT_P_SNAP_KEYS; p++) {
        sp.n_values[p] = f->params[p].n_values;
        memcpy(sp.values[p], f->params[p].values, sizeof(int) * (size_t)f->params[p].n_values);
    }
    visited = 0;
    n = mt_space_enumerate(&sp, &s, &sm90, count_visits, &visited, NULL);
    CHECK_MSG(n == (1 + 7 * 5) * (9 + 8 + 1) + (2 * 5 * 17 + 4) * 30 && visited == n, "visited %d", n);

    /* launch arguments: each bad one is named, and nothing is launched */
    mt_mla_decode_args a = {.batch = 2, .n_heads = 16, .sq = 1, .max_blocks = 4, .page_size = 64, .warp_size = 32, .scale = 0.04f,
                            .kv_scale = 1.0f, .q = 0x1000, .kv = 0x2000, .block_table = 0x3000, .seq_lens = 0x4000,
                            .out = 0x5000, .lse = 0x6000, .workspace = 0x7000};
    a.workspace_bytes = mt_mla_decode_workspace_bytes(&v, &s, 2, 16, 1, 132);
    CHECK(a.workspace_bytes == (size_t)4 * 2 * 16 * 513 * 4);
    CHECK_OK(mt_mla_decode_check_args(&v, &s, &a));
    mt_mla_decode_args bad_a = a;
    bad_a.n_heads = 0;
    CHECK_STATUS(mt_mla_decode_launch(&counting_backend, &two, &v, &s, &bad_a, NULL),
                 MT_ERR_INVALID_ARGUMENT);
    CHECK(strstr(mt_last_error(), "head count 0") != NULL);
    bad_a = a, bad_a.n_heads = 129;
    CHECK_STATUS(mt_mla_decode_check_args(&v, &s, &bad_a), MT_ERR_INVALID_ARGUMENT);
    bad_a = a, bad_a.page_size = 16;
    CHECK_STATUS(mt_mla_decode_launch(&counting_backend, &two, &v, &s, &bad_a, NULL),
                 MT_ERR_INVALID_ARGUMENT);
    CHECK(strstr(mt_last_error(), "page size 16 not supported") != NULL);
    bad_a = a, bad_a.kv = 0;
    CHECK_STATUS(mt_mla_decode_launch(&counting_backend, &two, &v, &s, &bad_a, NULL),
                 MT_ERR_INVALID_ARGUMENT);
    CHECK(strstr(mt_last_error(), "kv cache pointer is null") != NULL);
    /* misaligned pointers would fault in the kernels' 16-byte and 4-byte
     * accesses: refused, naming the pointer */
    bad_a = a, bad_a.q = 0x1008;
    CHECK_STATUS(mt_mla_decode_check_args(&v, &s, &bad_a), MT_ERR_INVALID_ARGUMENT);
    CHECK(strstr(mt_last_error(), "q pointer 0x1008 is not 16-byte aligned") != NULL);
    bad_a = a, bad_a.out = 0x5004;
    CHECK_STATUS(mt_mla_decode_check_args(&v, &s, &bad_a), MT_ERR_INVALID_ARGUMENT);
    CHECK(strstr(mt_last_error(), "out pointer") != NULL);
    bad_a = a, bad_a.seq_lens = 0x4002;
    CHECK_STATUS(mt_mla_decode_check_args(&v, &s, &bad_a), MT_ERR_INVALID_ARGUMENT);
    CHECK(strstr(mt_last_error(), "sequence lengths pointer 0x4002 is not 4-byte aligned") != NULL);
    bad_a = a, bad_a.workspace = 0x7004;
    CHECK_STATUS(mt_mla_decode_check_args(&v, &s, &bad_a), MT_ERR_INVALID_ARGUMENT);
    CHECK(strstr(mt_last_error(), "workspace pointer 0x7004 is not 16-byte aligned") != NULL);
    bad_a = a, bad_a.workspace_bytes = 10;
    CHECK_STATUS(mt_mla_decode_check_args(&v, &s, &bad_a), MT_ERR_INVALID_ARGUMENT);
    CHECK(strstr(mt_last_error(), "workspace") != NULL);
    bad_a = a, bad_a.warp_size = 0; /* the layout depends on it: no default */
    CHECK_STATUS(mt_mla_decode_check_args(&v, &s, &bad_a), MT_ERR_INVALID_ARGUMENT);
    CHECK(strstr(mt_last_error(), "warp width 0") != NULL);
    bad_a = a, bad_a.sq = MT_DECODE_MAX_SQ + 1;
    CHECK_STATUS(mt_mla_decode_check_args(&v, &s, &bad_a), MT_ERR_INVALID_ARGUMENT);
    bad_a = a, bad_a.scale = -1.0f;
    CHECK_STATUS(mt_mla_decode_check_args(&v, &s, &bad_a), MT_ERR_INVALID_ARGUMENT);
    CHECK(launches == 0);
    /* and a good call launches decode and reduce (the default splits in 4) */
    CHECK_OK(mt_mla_decode_launch(&counting_backend, &two, &v, &s, &a, NULL));
    CHECK(launches == 2);
    /* where the backend can overlap them, the reduce is the dependent launch
     * (it waits for decode inside the kernel); without splits there is none */
    launches = 0;
    CHECK_OK(mt_mla_decode_launch(&overlapping_backend, &two, &v, &s, &a, NULL));
    CHECK_MSG(launches == 1 && dependent_launches == 1, "%d launches, %d dependent", launches, dependent_launches);
    /* its shape is the kernel's (mla_reduce in reduce.cu): with 4
     * splits, 4 rows of 32 threads per work-group over (16 rows, 2
     * requests); with 16, 8 x 32 threads per 64 columns of a row */
    CHECK_MSG(last_reduce_grid[0] == 4 && last_reduce_grid[1] == 2 && last_reduce_grid[2] == 1 &&
                  last_reduce_threads == 128, "reduce grid %d x %d x %d, %d threads", last_reduce_grid[0],
              last_reduce_grid[1], last_reduce_grid[2], last_reduce_threads);
    {
        const int launches_before = launches, dependent_before = dependent_launches;
        mt_variant v16 = v;
        v16.values[MT_P_NUM_SPLITS] = 16;
        mt_mla_decode_args a16 = a;
        a16.workspace_bytes = mt_mla_decode_workspace_bytes(&v16, &s, 2, 16, 1, 132);
        CHECK_OK(mt_mla_decode_launch(&overlapping_backend, &two, &v16, &s, &a16, NULL));
        CHECK_MSG(last_reduce_grid[0] == 16 && last_reduce_grid[1] == 2 && last_reduce_grid[2] == 8 &&
                      last_reduce_threads == 256, "reduce grid %d x %d x %d, %d threads", last_reduce_grid[0],
                  last_reduce_grid[1], last_reduce_grid[2], last_reduce_threads);
        launches = launches_before, dependent_launches = dependent_before; /* the counts the checks below go on from */
    }
    w = v;
    w.values[MT_P_NUM_SPLITS] = 1;
    CHECK_OK(mt_mla_decode_launch(&overlapping_backend, &one, &w, &s, &a, NULL));
    CHECK(launches == 2 && dependent_launches == 1);
    /* the dependent launch checks its arguments like any other */
    const unsigned zero[3] = {0, 1, 1}, single[3] = {1, 1, 1};
    CHECK_STATUS(mt_backend_launch_dependent(&overlapping_backend, (mt_function)1, zero, single, 0, NULL, NULL),
                 MT_ERR_INVALID_ARGUMENT);
    CHECK(dependent_launches == 1);
    {
        /* issue 23: a variant compiles its path's file and what it uses,
         * nothing else, so the JIT key (the text's hash) of an sm_90 SIMT
         * build never changes when the MFMA path is edited */
        mt_variant sv, mv;
        mt_variant_default(f, &sv);
        sv.values[MT_P_NUM_SPLITS] = 1;
        CHECK(mt_decode_path_of(sv.values, &s, 32) == MT_PATH_SIMT);
        char *text = NULL;
        CHECK_OK(mt_build_source(&sv, &s, &sm90, &text));
        CHECK(strstr(text, "#line 1 \"mla_decode/simt.cu\"") && strstr(text, "#line 1 \"mla_decode/params.h\""));
        CHECK(!strstr(text, "#line 1 \"mla_decode/mfma.cu\"") && !strstr(text, "#line 1 \"mla_decode/wgmma") &&
              !strstr(text, "#line 1 \"mla_decode/reduce.cu\"") &&
              !strstr(text, "#line 1 \"mla_decode/schedule.cu\""));
        free(text);
        mv = sv, mv.values[MT_P_MMA] = 1, mv.values[MT_P_NUM_SPLITS] = 4;
        CHECK(mt_decode_path_of(mv.values, &s, 64) == MT_PATH_MFMA &&
              mt_decode_path_of(mv.values, &s, 32) == MT_PATH_MMA_SYNC);
        CHECK_OK(mt_build_source(&mv, &s, &gfx942, &text));
        CHECK(strstr(text, "#line 1 \"mla_decode/mfma.cu\"") && strstr(text, "#line 1 \"mla_decode/reduce.cu\"") &&
              !strstr(text, "#line 1 \"mla_decode/mma_sync.cu\"") && !strstr(text, "#line 1 \"mla_decode/simt.cu\""));
        free(text);
        mv.values[MT_P_NUM_SPLITS] = 1, mv.values[MT_P_GROUPS_PER_CU] = 1;
        CHECK_OK(mt_build_source(&mv, &s, &sm90, &text));
        const char *sched = strstr(text, "#line 1 \"mla_decode/schedule.cu\"");
        const char *red = strstr(text, "#line 1 \"mla_decode/reduce.cu\"");
        /* the reduce uses the schedule's helpers: it comes after */
        CHECK(strstr(text, "#line 1 \"mla_decode/mma_sync.cu\"") && sched && red && sched < red);
        free(text);
        /* the 64-row warpgroup variant: the KV type picks its file (fp8
         * converts each chunk once, wgmma64_fp8.cu), so the 16-bit text,
         * and the hashes the shipped databases hold, stay as they were */
        mt_variant wv = sv;
        wv.values[MT_P_MMA] = 2, wv.values[MT_P_TILE_Q] = 64, wv.values[MT_P_BLOCK_THREADS] = 256;
        wv.values[MT_P_KV_CHUNK] = 64, wv.values[MT_P_KV_STAGES] = 2;
        mt_problem_static s8 = s;
        s8.kv_dtype = MT_FP8_E4M3;
        CHECK_OK(mt_variant_validate(&wv, &s, &sm90));
        CHECK_OK(mt_variant_validate(&wv, &s8, &sm90));
        CHECK(mt_decode_path_of(wv.values, &s, 32) == MT_PATH_WGMMA64 &&
              mt_decode_path_of(wv.values, &s8, 32) == MT_PATH_WGMMA64_FP8);
        char hash16[65], hash8[65];
        CHECK_OK(mt_build_source(&wv, &s8, &sm90, &text));
        CHECK(strstr(text, "#line 1 \"mla_decode/wgmma64_fp8.cu\"") && !strstr(text, "#line 1 \"mla_decode/wgmma64.cu\""));
        /* both 64-row paths share their epilogue (wgmma64_epilogue.cuh) */
        CHECK(strstr(text, "#line 1 \"mla_decode/wgmma64_epilogue.cuh\""));
        free(text);
        CHECK_OK(mt_build_source(&wv, &s, &sm90, &text));
        CHECK(strstr(text, "#line 1 \"mla_decode/wgmma64.cu\"") && !strstr(text, "#line 1 \"mla_decode/wgmma64_fp8.cu\""));
        CHECK(strstr(text, "#line 1 \"mla_decode/wgmma64_epilogue.cuh\""));
        free(text);
        CHECK_OK(mt_build_source_hash(&wv, &s, &sm90, hash16));
        CHECK_OK(mt_build_source_hash(&wv, &s8, &sm90, hash8));
        CHECK(strcmp(hash16, hash8) != 0);
        /* its sizes: 2 raw stages, within the H100's shared memory */
        CHECK(mt_mla_decode_shared_bytes(wv.values, &s8, 32) <= sm90.shared_max);
        wv.values[MT_P_KV_STAGES] = 4;
        CHECK_STATUS(mt_variant_validate(&wv, &s8, &sm90), MT_ERR_INVALID_ARGUMENT);
        CHECK(strstr(mt_last_error(), "kv_stages 4 (tile_q 16, 32) or 2 (tile_q 64)"));
        wv.values[MT_P_KV_STAGES] = 2, wv.values[MT_P_WG_SCHEDULE] = 1;
        CHECK_STATUS(mt_variant_validate(&wv, &s8, &sm90), MT_ERR_INVALID_ARGUMENT);
        CHECK(strstr(mt_last_error(), "16-bit KV only"));
        mt_clear_error();
    }
    {
        /* issue 27: the views' rules, each refused naming the tensor and
         * the rule; the kernels' form of a call without views is the
         * contiguous layout, and q's rope part follows its first Dl columns */
        mt_variant gv;
        mt_variant_default(f, &gv);
        gv.values[MT_P_NUM_SPLITS] = 1;
        mt_problem_static plain = s;
        s.views = 1; /* the views' rules apply to kernels built for views */
        mt_mla_decode_args va = {.batch = 2, .n_heads = 16, .sq = 2, .max_blocks = 4, .page_size = 64,
                                 .warp_size = 32, .scale = 0.04f, .kv_scale = 1.0f, .q = 0x1000, .kv = 0x2000,
                                 .block_table = 0x3000, .seq_lens = 0x4000, .out = 0x5000, .lse = 0x6000,
                                 .compute_units = 132};
        CHECK_OK(mt_mla_decode_check_args(&gv, &s, &va));
        mt_decode_params vp;
        memset(&vp, 0, sizeof vp);
        mt_mla_decode_fill_views(&s, &va, &vp);
        /* contiguous rows are evenly spaced: marked t = -1 (no division on the GPU) */
        CHECK(vp.q_str.b == 2 * 16 * 576 && vp.q_str.t == -1 && vp.q_str.n == 576);
        CHECK(vp.q_pe == 0x1000 + 512 * 2 && vp.q_pe_str.n == 576 && vp.out_str.n == 512 && vp.lse_str.b == 32);
        /* vLLM's pair: ql_nope [B, N, 512] and q_pe [B, N, 64], Sq = 1 */
        mt_mla_decode_args pair = va;
        pair.sq = 1, pair.q_pe = 0x8000;
        pair.q_strides[0] = 16 * 512, pair.q_strides[1] = 16 * 512, pair.q_strides[2] = 512;
        pair.q_pe_strides[0] = 16 * 64, pair.q_pe_strides[1] = 16 * 64, pair.q_pe_strides[2] = 64;
        CHECK_OK(mt_mla_decode_check_args(&gv, &s, &pair));
        mt_mla_decode_fill_views(&s, &pair, &vp);
        CHECK(vp.q_pe == 0x8000 && vp.q_str.n == 512 && vp.q_pe_str.b == 16 * 64);
        /* FlashMLA's lse [B, N, Sq] and out rows padded to 520 */
        mt_mla_decode_args lay = va;
        lay.lse_strides[0] = 32, lay.lse_strides[1] = 1, lay.lse_strides[2] = 2;
        lay.out_strides[0] = 32 * 520, lay.out_strides[1] = 16 * 520, lay.out_strides[2] = 520;
        CHECK_OK(mt_mla_decode_check_args(&gv, &s, &lay));
        mt_mla_decode_fill_views(&s, &lay, &vp);
        CHECK(vp.out_str.t == -1 && vp.out_str.n == 520);                        /* padded rows: still even */
        CHECK(vp.lse_str.b == 32 && vp.lse_str.t == 1 && vp.lse_str.n == 2);    /* head-major: the general form */
        struct { const char *what; mt_mla_decode_args a; const char *says; } bad[] = {
            {"negative", va, "out stride per head is -512"},
            {"unaligned", va, "q stride per head is 580 elements, not a multiple of 8"},
            {"overlap", va, "out strides (16384, 512, 256 per request, token, head) make rows overlap"},
            {"lse overlap", va, "lse strides (32, 1, 1 per request, token, head) make rows overlap"},
            {"pe unaligned", pair, "q_pe pointer 0x8008 is not 16-byte aligned"},
            {"pe strides alone", va, "q_pe strides given without q_pe"},
            {"scale", va, "kv scale pointer 0x7002 is not 4-byte aligned"},
        };
        bad[0].a.out_strides[0] = 16384, bad[0].a.out_strides[1] = 512, bad[0].a.out_strides[2] = -512;
        bad[1].a.q_strides[0] = 2 * 16 * 580, bad[1].a.q_strides[1] = 16 * 580, bad[1].a.q_strides[2] = 580;
        bad[2].a.out_strides[0] = 16384, bad[2].a.out_strides[1] = 512, bad[2].a.out_strides[2] = 256;
        bad[3].a.lse_strides[0] = 32, bad[3].a.lse_strides[1] = 1, bad[3].a.lse_strides[2] = 1;
        bad[4].a.q_pe = 0x8008;
        bad[5].a.q_pe_strides[2] = 64;
        bad[6].a.kv_scale_ptr = 0x7002;
        for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
            CHECK_STATUS(mt_mla_decode_check_args(&gv, &s, &bad[k].a), MT_ERR_INVALID_ARGUMENT);
            CHECK_MSG(strstr(mt_last_error(), bad[k].says) != NULL, "%s: %s", bad[k].what, mt_last_error());
        }
        /* a dimension of one index may carry any stride (torch reports
         * anything there): Sq = 1 with a negative token stride is fine */
        mt_mla_decode_args one_token = pair;
        one_token.q_strides[1] = -7, one_token.q_pe_strides[1] = 3;
        CHECK_OK(mt_mla_decode_check_args(&gv, &s, &one_token));
        /* q in two parts needs a rope part and Dl on a 16-byte boundary */
        mt_problem_static no_rope = s;
        no_rope.d = 512;
        CHECK_STATUS(mt_mla_decode_check_args(&gv, &no_rope, &pair), MT_ERR_INVALID_ARGUMENT);
        CHECK_MSG(strstr(mt_last_error(), "q in two parts needs D > Dl") != NULL, "%s", mt_last_error());
        /* kernels built for contiguous tensors refuse views, and say how to get them */
        CHECK_OK(mt_mla_decode_check_args(&gv, &plain, &va));
        CHECK_STATUS(mt_mla_decode_check_args(&gv, &plain, &pair), MT_ERR_INVALID_ARGUMENT);
        CHECK_MSG(strstr(mt_last_error(), "create the plan with views = 1") != NULL, "%s", mt_last_error());
        mt_mla_decode_args scale_only = va;
        scale_only.kv_scale_ptr = 0x7000;
        CHECK_STATUS(mt_mla_decode_check_args(&gv, &plain, &scale_only), MT_ERR_INVALID_ARGUMENT);
        s = plain;
    }
    return check_summary("test_variant");
}
