/*
 * launch.c - the host side of a decode call: argument checks, workspace
 * layout, grids, and the launches of mla_schedule, mla_decode and
 * mla_reduce with the params.h struct every kernel of the family takes.
 */
#include <stdio.h>
#include <string.h>

#include "mla_decode.h"
#include "params.h"
#include "schedule.h"

int mt_mla_decode_groups(const mt_variant *v, int compute_units) {
    return v->values[MT_P_GROUPS_PER_CU] * (compute_units > 0 ? compute_units : 1);
}

size_t mt_mla_decode_schedule_bytes(const mt_variant *v, int compute_units) {
    int groups = mt_mla_decode_groups(v, compute_units); /* stretches are at most this many */
    return groups ? mt_schedule_bytes(groups < MT_SCHEDULE_MAX_STRETCHES ? groups : MT_SCHEDULE_MAX_STRETCHES) : 0;
}

mt_schedule_shape mt_mla_decode_schedule_shape(const mt_variant *v, int batch, int n_heads, int sq, int compute_units) {
    return (mt_schedule_shape){.batch = batch, .sq = sq, .n_heads = n_heads, .tile_q = v->values[MT_P_TILE_Q],
                               .granularity = v->values[MT_P_KV_GRANULARITY],
                               .n_groups = mt_mla_decode_groups(v, compute_units),
                               .request_cost = v->values[MT_P_REQUEST_COST],
                               .snap_keys = v->values[MT_P_SNAP_KEYS],
                               .snap_cap = v->values[MT_P_SNAP_CAP]};
}

/* The rows of fp32 partial results a call leaves in the workspace for the
 * reduce (0: none), which holds o_part [rows][Dl] then lse_part [rows]:
 * [B, splits, Sq x N] with splits; length-aware, [slots, tile_q] (two
 * pieces at most per stretch, a slot per piece and tile: schedule.h).  A
 * cluster merge (split_reduce) needs none. */
static size_t partial_rows(const mt_variant *v, int batch, int n_heads, int sq, int compute_units) {
    if (v->values[MT_P_GROUPS_PER_CU]) {
        if (n_heads <= 0 || sq <= 0) return 0;
        mt_schedule_shape sh = mt_mla_decode_schedule_shape(v, batch, n_heads, sq, compute_units);
        return 2 * (size_t)mt_schedule_work_groups(&sh) * (size_t)v->values[MT_P_TILE_Q];
    }
    size_t splits = (size_t)v->values[MT_P_NUM_SPLITS];
    if (splits <= 1 || v->values[MT_P_SPLIT_REDUCE] || batch <= 0 || n_heads <= 0 || sq <= 0) return 0;
    return splits * (size_t)batch * (size_t)sq * (size_t)n_heads;
}

/* Length-aware variants keep the schedule at the workspace's start (a
 * multiple of 256 bytes, so the partials stay aligned). */
size_t mt_mla_decode_workspace_bytes(const mt_variant *v, const mt_problem_static *s, int batch, int n_heads,
                                     int sq, int compute_units) {
    return mt_mla_decode_schedule_bytes(v, compute_units) +
           partial_rows(v, batch, n_heads, sq, compute_units) * ((size_t)s->dl + 1) * sizeof(float);
}

/* What a call and a step's schedule both need: the family's variant, the
 * problem's static facts, heads, Sq and batch in range. */
static mt_status check_call_shape(const mt_variant *v, const mt_problem_static *s, const mt_mla_decode_args *a) {
    if (!v || !s || !a) return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: null argument");
    if (v->family != &mt_family_mla_decode)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: variant of family '%s' given",
                       v->family ? v->family->name : "(none)");
    mt_status st = mt_mla_decode_check_static(s);
    if (st != MT_OK) return st;
    if (a->n_heads < 1 || a->n_heads > 128)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: head count %d outside 1..128", a->n_heads);
    if (a->sq < 1 || a->sq > MT_DECODE_MAX_SQ)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: Sq=%d outside 1..%d", a->sq, MT_DECODE_MAX_SQ);
    if (a->batch < 1 || a->batch > 65535)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: batch %d outside 1..65535", a->batch);
    return MT_OK;
}

/* The schedule reads the lengths only: no other tensor is needed (an
 * engine builds it once per step, before it has the layers' tensors). */
mt_status mt_mla_decode_check_schedule_args(const mt_variant *v, const mt_problem_static *s,
                                            const mt_mla_decode_args *a) {
    mt_status st = check_call_shape(v, s, a);
    if (st != MT_OK) return st;
    if (!a->seq_lens || a->seq_lens % 4 != 0)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: sequence lengths pointer 0x%llx is %s",
                       (unsigned long long)a->seq_lens, a->seq_lens ? "not 4-byte aligned" : "null");
    if (!v->values[MT_P_GROUPS_PER_CU]) return MT_OK; /* no schedule to build */
    mt_schedule_shape sh = mt_mla_decode_schedule_shape(v, a->batch, a->n_heads, a->sq, a->compute_units);
    return mt_schedule_check(&sh);
}

mt_status mt_mla_decode_check_args(const mt_variant *v, const mt_problem_static *s, const mt_mla_decode_args *a) {
    mt_status st = check_call_shape(v, s, a);
    if (st != MT_OK) return st;
    if (a->warp_size != 32 && a->warp_size != 64)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: warp width %d (the target's: 32 or 64)", a->warp_size);
    if (a->page_size != s->page_size)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: page size %d not supported by this variant (compiled for %d)",
                       a->page_size, s->page_size);
    if (a->max_blocks < 1)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: block table has %d columns", a->max_blocks);
    if (!(a->scale > 0.0f) || a->scale != a->scale || a->scale > 1e30f)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: softmax scale %g is not a positive finite number",
                       (double)a->scale);
    if (!(a->kv_scale > 0.0f) || a->kv_scale > 1e30f)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: kv scale %g is not a positive finite number",
                       (double)a->kv_scale);
    /* the kernels read and write rows in 16-byte pieces (q, KV, out, the
     * partials in the workspace) and 4-byte words: a misaligned pointer
     * would fault on the GPU, so it is refused here */
    struct { mt_devptr p; const char *name; unsigned align; } ptrs[] = {
        {a->q, "q", 16}, {a->kv, "kv cache", 16}, {a->block_table, "block table", 4},
        {a->seq_lens, "sequence lengths", 4}, {a->out, "out", 16}, {a->lse, "lse", 4}};
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++) {
        if (!ptrs[i].p) return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: %s pointer is null", ptrs[i].name);
        if (ptrs[i].p % ptrs[i].align != 0)
            return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: %s pointer 0x%llx is not %u-byte aligned",
                           ptrs[i].name, (unsigned long long)ptrs[i].p, ptrs[i].align);
    }
    st = mt_mla_decode_check_views(s, a);
    if (st != MT_OK) return st;
    if (v->values[MT_P_GROUPS_PER_CU]) {
        mt_schedule_shape sh = mt_mla_decode_schedule_shape(v, a->batch, a->n_heads, a->sq, a->compute_units);
        mt_status st2 = mt_schedule_check(&sh);
        if (st2 != MT_OK) return st2;
        if (a->schedule % 16 != 0)
            return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: schedule pointer 0x%llx is not 16-byte aligned",
                           (unsigned long long)a->schedule);
    }
    size_t need = mt_mla_decode_workspace_bytes(v, s, a->batch, a->n_heads, a->sq, a->compute_units);
    if (need > 0 && (!a->workspace || a->workspace_bytes < need))
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: workspace of %zu bytes needed, %zu given%s", need,
                       a->workspace_bytes, a->workspace ? "" : " (null pointer)");
    if (need > 0 && a->workspace % 16 != 0)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: workspace pointer 0x%llx is not 16-byte aligned",
                       (unsigned long long)a->workspace);
    return MT_OK;
}

/* The kernels' arguments for call `a` (params.h), views included (views.c);
 * the workspace pointers and the schedule are set by the launch. */
static mt_decode_params kernel_params(const mt_variant *v, const mt_problem_static *s, const mt_mla_decode_args *a) {
    mt_decode_params p;
    memset(&p, 0, sizeof p);
    p.q = a->q, p.kv = a->kv, p.block_table = a->block_table, p.seq_lens = a->seq_lens, p.out = a->out,
    p.lse = a->lse, p.schedule = v->values[MT_P_GROUPS_PER_CU] ? a->schedule : 0;
    p.batch = a->batch, p.n_heads = a->n_heads, p.sq = a->sq, p.max_blocks = a->max_blocks;
    p.rows = a->sq * a->n_heads;
    p.scale = a->scale, p.kv_scale = a->kv_scale;
    if (s) mt_mla_decode_fill_views(s, a, &p); /* mla_schedule (s NULL) reads no tensor view */
    if (v->values[MT_P_GROUPS_PER_CU]) {
        mt_schedule_shape sh = mt_mla_decode_schedule_shape(v, a->batch, a->n_heads, a->sq, a->compute_units);
        p.tiles = mt_schedule_tiles(&sh), p.n_stretches = mt_schedule_stretches(&sh);
        p.sched_cost = sh.request_cost, p.sched_snap = sh.snap_keys;
    }
    return p;
}

mt_status mt_mla_decode_schedule(mt_backend *b, const mt_kernels *k, const mt_variant *v,
                                 const mt_mla_decode_args *a, mt_devptr dst, mt_stream stream) {
    if (!v->values[MT_P_GROUPS_PER_CU])
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: variant has fixed splits; it takes no schedule");
    if (!k || !k->fn[MT_SCHEDULE_FN]) return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: scheduling kernel missing");
    if (!dst || dst % 16 != 0 || !a->seq_lens)
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: schedule needs 16-byte aligned memory and the lengths "
                       "(schedule 0x%llx, lengths 0x%llx)", (unsigned long long)dst, (unsigned long long)a->seq_lens);
    mt_decode_params p = kernel_params(v, NULL, a);
    p.schedule = dst;
    void *args[] = {&p};
    /* a thread per stretch (+1) and per request, up to MT_SCHEDULE_THREADS,
     * in multiples of 64 (a wavefront on AMD): schedule.cu says why */
    int threads = p.n_stretches + 1 > a->batch ? p.n_stretches + 1 : a->batch;
    threads = threads > MT_SCHEDULE_THREADS ? MT_SCHEDULE_THREADS : (threads + 63) / 64 * 64;
    unsigned grid[3] = {1, 1, 1}, block[3] = {(unsigned)threads, 1, 1};
    return mt_backend_launch(b, k->fn[MT_SCHEDULE_FN], grid, block, 0, stream, args);
}

/* The row tiles of a request read the same chunks of keys.  Launched as
 * one cluster they run at the same time on one GPC, so the second read of
 * a chunk finds it in L2.  In tuner/probes/pair-stream.cu (the 64-row
 * path's copies without arithmetic, 128 heads B=32 x 16384) that took the
 * copies from 239-296 us to 208, the one read's DRAM time being 205; the
 * real path, whose products hide part of the copies, gained 0.5-2% (128
 * heads: B=128 x 4096 285.1 -> 283.5 us, ragged B=32 one-long 55.8 -> 54.8,
 * B=128 one-long 133.7 -> 131.7; none slower; reports/PERFLOG.md, session
 * 25).  Only pairs: 66 clusters of two of the 64-row path fit on the H100
 * at once, 30 of four (a 128-group grid would need a second wave). */
static unsigned tile_cluster(const mt_variant *v, const mt_problem_static *s, int warp_size, unsigned tiles) {
    const mt_decode_path path = mt_decode_path_of(v->values, s, warp_size);
    return (path == MT_PATH_WGMMA64 || path == MT_PATH_WGMMA64_FP8) && tiles == 2 ? 2u : 1u;
}

/* decode's launch over `grid`, a request's `tiles` row tiles (the grid's
 * first, fastest dimension) as one cluster where tile_cluster says so */
static mt_status launch_decode(mt_backend *b, const mt_kernels *k, const mt_variant *v, const mt_problem_static *s,
                               int warp_size, unsigned tiles, const unsigned grid[3], const unsigned block[3],
                               size_t shared, mt_stream stream, void **args) {
    const unsigned cluster[3] = {tile_cluster(v, s, warp_size, tiles), 1, 1};
    if (cluster[0] > 1)
        return mt_backend_launch_cluster(b, k->fn[MT_DECODE_FN], grid, block, cluster, shared, stream, args);
    return mt_backend_launch(b, k->fn[MT_DECODE_FN], grid, block, shared, stream, args);
}

/* groups_per_cu > 0: the schedule (given, or built now at the workspace's
 * start), decode over stretches x row tiles work-groups (about compute
 * units x groups_per_cu), and the reduce over the cut requests (a fixed
 * grid: how many were cut is known on the GPU only).  Workspace after the
 * schedule: o_part [slots][tile_q][Dl], then lse_part [slots][tile_q]. */
static mt_status launch_length_aware(mt_backend *b, const mt_kernels *k, const mt_variant *v,
                                     const mt_problem_static *s, const mt_mla_decode_args *a, mt_stream stream,
                                     mt_decode_params *p, void **args, const unsigned block[3], size_t shared) {
    if (!k->fn[MT_REDUCE_FN] || !k->fn[MT_SCHEDULE_FN])
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: kernel function missing");
    mt_status st = MT_OK;
    if (!p->schedule) {
        p->schedule = a->workspace;
        st = mt_mla_decode_schedule(b, k, v, a, p->schedule, stream);
        if (st != MT_OK) return st;
    }
    mt_schedule_shape sh = mt_mla_decode_schedule_shape(v, a->batch, a->n_heads, a->sq, a->compute_units);
    /* work-group g runs tile g % tiles of stretch g / tiles (schedule.h) */
    unsigned grid[3] = {(unsigned)mt_schedule_work_groups(&sh), 1, 1};
    st = launch_decode(b, k, v, s, a->warp_size, (unsigned)mt_schedule_tiles(&sh), grid, block, shared, stream, args);
    if (st != MT_OK) return st;
    /* reduce.cu's length-aware shape: RED_COLS columns per work-group
     * (4 per lane when Dl is a multiple of 4, else 1) in y, and one wave
     * of 3 work-groups per compute unit (its launch bounds) */
    unsigned red_cols = s->dl % 4 == 0 ? 128u : 32u, col_blocks = ((unsigned)s->dl + red_cols - 1) / red_cols;
    unsigned wave = 3u * (unsigned)(a->compute_units > 0 ? a->compute_units : 1);
    unsigned rgrid[3] = {wave > col_blocks ? wave / col_blocks : 1u, col_blocks, 1};
    unsigned rblock[3] = {256, 1, 1};
    return mt_backend_launch_dependent(b, k->fn[MT_REDUCE_FN], rgrid, rblock, 0, stream, args);
}

mt_status mt_mla_decode_launch(mt_backend *b, const mt_kernels *k, const mt_variant *v,
                               const mt_problem_static *s, const mt_mla_decode_args *a, mt_stream stream) {
    mt_status st = mt_mla_decode_check_args(v, s, a);
    if (st != MT_OK) return st;
    int splits = v->values[MT_P_NUM_SPLITS], in_cluster = v->values[MT_P_SPLIT_REDUCE];
    if (!k || !k->fn[MT_DECODE_FN] || (splits > 1 && !in_cluster && !k->fn[MT_REDUCE_FN]))
        return mt_fail(MT_ERR_INVALID_ARGUMENT, "mla_decode: kernel function missing");
    int rows = a->sq * a->n_heads;
    int tile_q = v->values[MT_P_TILE_Q];
    int length_aware = v->values[MT_P_GROUPS_PER_CU] != 0;
    /* the workspace: the schedule (length-aware), o_part, then lse_part (partial_rows) */
    size_t part_rows = partial_rows(v, a->batch, a->n_heads, a->sq, a->compute_units);
    mt_decode_params p = kernel_params(v, s, a);
    p.o_part = part_rows ? a->workspace + mt_mla_decode_schedule_bytes(v, a->compute_units) : 0;
    p.lse_part = part_rows ? p.o_part + part_rows * (size_t)s->dl * sizeof(float) : 0;
    /* mma=2 also takes the KV cache's tensor map (its copy engine reads
     * 64-column boxes of a page, or of 64 keys of one); the cache's length
     * is not an argument, so the map spans 2^31 rows: only rows the block
     * table names are ever asked for */
    _Alignas(64) unsigned char kv_map[MT_TENSOR_MAP_BYTES];
    /* every kernel takes the struct; kv_map is read by the mma=2 paths
     * only (a launch passes a kernel only the arguments it declares) */
    void *args[] = {&p, kv_map};
    memset(kv_map, 0, sizeof kv_map);
    if (v->values[MT_P_MMA] == 2 && s->page_size >= 16) { /* smaller pages: the lanes gather the rows */
        unsigned box_rows = s->page_size < 64 ? (unsigned)s->page_size : 64u;
        unsigned elem = (unsigned)mt_dtype_size(s->kv_dtype); /* 64 columns: 64- or 128-byte box rows */
        st = mt_backend_tensor_map_2d(b, a->kv, elem, (uint64_t)s->d, 1ull << 31, (uint64_t)s->d * elem, 64, box_rows,
                                      kv_map);
        if (st != MT_OK) return st;
    }
    unsigned block[3] = {(unsigned)v->values[MT_P_BLOCK_THREADS], 1, 1};
    size_t shared = mt_mla_decode_shared_bytes(v->values, s, a->warp_size);
    if (length_aware)
        return launch_length_aware(b, k, v, s, a, stream, &p, args, block, shared);
    unsigned grid[3] = {(unsigned)((rows + tile_q - 1) / tile_q), (unsigned)splits, (unsigned)a->batch};
    if (in_cluster) {
        /* the splits of a row tile are one cluster; they merge among
         * themselves (cluster_merge in wgmma_common.cuh) */
        unsigned cluster[3] = {1, (unsigned)splits, 1};
        return mt_backend_launch_cluster(b, k->fn[MT_DECODE_FN], grid, block, cluster, shared, stream, args);
    }
    st = launch_decode(b, k, v, s, a->warp_size, grid[0], grid, block, shared, stream, args);
    if (st != MT_OK || splits == 1) return st;
    /* the reduce's shape in reduce.cu: with 2 or 4 splits, REDUCE_ROWS
     * (4) rows of 32 threads each; with 8 or more, REDUCE_GROUPS (8) x 32
     * threads per 64 columns (REDUCE_COLS) of a row */
    unsigned rgrid[3] = {(unsigned)rows, (unsigned)a->batch, (unsigned)((s->dl + 63) / 64)};
    unsigned rblock[3] = {256, 1, 1};
    if (splits < 8) rgrid[0] = (unsigned)((rows + 3) / 4), rgrid[2] = 1, rblock[0] = 128;
    /* the reduce may be scheduled while decode's last work-groups run; it
     * waits for their results in the kernel (mt_grid_dependency_wait) */
    return mt_backend_launch_dependent(b, k->fn[MT_REDUCE_FN], rgrid, rblock, 0, stream, args);
}
