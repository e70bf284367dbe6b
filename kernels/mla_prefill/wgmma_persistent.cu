/*
 * wgmma_persistent.cu - the warpgroup path's persistent form (persistent =
 * 1), after wgmma.cu, whose helpers it uses: the same products, softmax and
 * copies, but a grid of as many work-groups as the SMs hold at once
 * (launch.c), work-group c taking tiles c, c + G, c + 2G, ... of wgmma.cu's
 * order (request by request, each request's heaviest tiles first), the
 * tiles past a request's new tokens left out.
 *
 * Why: in the grid form a work-group pays, per tile, with the matrix units
 * idle, for q's copy and its first key tile's latency before the first
 * product and for the last P V and the stores after it; with 8 requests of
 * 1024 tokens a causal tile has 4.5 key tiles on average, and that was a
 * third of the call (128 heads: 375 TFLOP/s against 556 for one request
 * of 8192, PERFLOG session 29).  Here a work-group's key tiles over all its
 * tiles are one stream, g counting them, and each warpgroup copies its 64
 * rows of the next tile's q once its last products of this tile have
 * retired (its own rows, so no barrier with the other warpgroup): the next
 * tile's first keys and q arrive while this tile's last P V and stores run.
 *
 * The producer is a warpgroup of its own, past the consumers' BLOCK_THREADS
 * (launch.c launches BLOCK_THREADS + MT_PREFILL_PRODUCER_THREADS): one of its warps walks the same
 * tiles and issues every key tile's K and V in stream order, each as soon
 * as the consumers have released its stage, so it runs up to two key tiles
 * ahead and never waits with them.  Session 29's producer was warp 0 of
 * the consumers, issuing K_(g+1) and V_g at the top of step g: its waits
 * for a free stage held its warpgroup, and issuing V a step sooner that way
 * made calls 7-15% slower, where the warpgroup of its own made them 6-14%
 * faster (PERFLOG session 32).  Registers move to the consumers
 * (setmaxnreg, FlashAttention-3's split): the launch gives every thread
 * 65536 / (BLOCK_THREADS + 128), the producer gives back all but 40, the
 * consumers take 232 (the two-warpgroup form: 128 x 40 + 256 x 232 = 64512
 * of 65536).
 *
 * ptxas serialises every wgmma of the kernel ("program dependence on
 * compiler-inserted WG.AR in divergent path", 1.45x slower) when a branch
 * it cannot prove warp-uniform holds a loop (session 29's cursor that
 * sought the next tile with keys; the producer's role test before it went
 * through a shuffle) or the q copies run while a product is in flight:
 * hence the shuffled role and the q copies after the last step's P V wait.
 *
 * The grid (launch.c) is an upper bound on the tiles; a work-group with
 * none returns.  The grid form's code, and the rows the shipped databases
 * measured from it, stay as they were: this file is part of persistent
 * variants only (family.c), and wgmma.cu's kernel is compiled only without
 * it.
 */
#if !PERSISTENT
#error "wgmma_persistent.cu is compiled into persistent variants only"
#endif

/* The persistent form numbers only the tiles that have rows: request b's
 * ceil(new tokens / TILE_Q) x heads tiles, in wgmma.cu's order, after the
 * tiles of the requests before it.  A walk is a place in that numbering
 * (request b, whose tiles are numbered from base, per of them); the tile
 * numbers a work-group visits only grow, so its walks only move forward
 * (one read of cu_q per request passed). */
struct pw_walk {
    int b, base, per;
};
__device__ __forceinline__ int pw_request_tiles(const mt_prefill_params &p, int b) {
    const int *cu_q = (const int *)p.cu_q;
    return (cu_q[b + 1] - cu_q[b] + TILE_Q - 1) / TILE_Q * p.n_heads;
}
__device__ __forceinline__ pw_walk pw_walk_start(const mt_prefill_params &p) {
    return pw_walk{0, 0, pw_request_tiles(p, 0)};
}
/* Moves w to tile i's request; false when i is past the batch's tiles. */
__device__ __forceinline__ bool pw_walk_to(const mt_prefill_params &p, pw_walk &w, int i) {
    while (w.b < p.batch && i >= w.base + w.per) {
        w.base += w.per;
        if (++w.b < p.batch) w.per = pw_request_tiles(p, w.b);
    }
    return w.b < p.batch;
}
/* Tile i, w at its request. */
__device__ __forceinline__ pf_tile pw_walk_tile(const mt_prefill_params &p, const pw_walk &w, int i) {
    return pw_tile_in_request(p, i - w.base, w.per / p.n_heads, p.n_heads, w.b);
}

/* A tile with more keys than the call said (fp8's max_k, which sized
 * v^T): NaN rows, never a silent cut (wgmma.cu's kernel does the same). */
__device__ __forceinline__ bool pw_keys_past_vt(const mt_prefill_params &p, const pf_tile &t) {
    return PW_FP8 && t.n_k > p.vt_keys;
}
__device__ __forceinline__ void pw_store_nan(const mt_prefill_params &p, const pf_tile &t) {
    for (int i = threadIdx.x; i < t.rows * (DL + 1); i += BLOCK_THREADS) {
        const int r = i / (DL + 1), c = i - r * (DL + 1);
        if (c < DL) pf_row<mt_u16>(p.out, t.q_first + t.q0 + r, t.head)[c] = 0x7fc0;
        else *pf_row<float>(p.lse, t.q_first + t.q0 + r, t.head) = __int_as_float(0x7fc00000);
    }
}

/* Key tiles the tile streams: none when it sees no key, or has more than
 * fp8's v^T holds (its rows are NaN, pw_store_nan). */
__device__ __forceinline__ int pw_stream_tiles(const mt_prefill_params &p, const pf_tile &t) {
    return pw_keys_past_vt(p, t) ? 0 : (t.key_end + KV_TILE - 1) / KV_TILE;
}

/* The tile's rows r0 and r1 of this thread: a row's sum from its quad,
 * then out = O / l, lse = m + log l (wgmma.cu's kernel does the same
 * inline: as a call, its code changed, and with it the rows the shipped
 * databases measured). */
__device__ __forceinline__ void pw_store_rows(const mt_prefill_params &p, const pf_tile &t, const float (&o)[PW_O],
                                              int r0, int r1, int quad, float m0, float m1, float l0, float l1) {
    l0 += mt_shfl_xor(l0, 1), l1 += mt_shfl_xor(l1, 1);
    l0 += mt_shfl_xor(l0, 2), l1 += mt_shfl_xor(l1, 2);
    /* v_scale: fp8 v's dequantisation, 1 otherwise */
    const float inv0 = l0 > 0.0f ? p.v_scale / l0 : 0.0f, inv1 = l1 > 0.0f ? p.v_scale / l1 : 0.0f;
    const bool in0 = r0 < t.rows, in1 = r1 < t.rows;
    mt_u16 *out0 = pf_row<mt_u16>(p.out, t.q_first + t.q0 + (in0 ? r0 : 0), t.head);
    mt_u16 *out1 = pf_row<mt_u16>(p.out, t.q_first + t.q0 + (in1 ? r1 : 0), t.head);
#if OUT_STORES == 16
    if (pw_out_wide(p.out)) pw_store_out_wide(o, out0, out1, in0, in1, inv0, inv1, quad);
    else
#endif
#pragma unroll
    for (int j = 0; j < PW_O / 4; j++) {
        const int col = j * 8 + quad * 2;
        if (in0) *(mt_u32 *)(out0 + col) = pf_pack16(o[4 * j] * inv0, o[4 * j + 1] * inv0);
        if (in1) *(mt_u32 *)(out1 + col) = pf_pack16(o[4 * j + 2] * inv1, o[4 * j + 3] * inv1);
    }
    if (quad == 0) {
        const float lse0 = l0 > 0.0f ? (m0 + mt_log2f(l0)) * PF_LN2 : MT_NEG_INF;
        const float lse1 = l1 > 0.0f ? (m1 + mt_log2f(l1)) * PF_LN2 : MT_NEG_INF;
        if (in0) *pf_row<float>(p.lse, t.q_first + t.q0 + r0, t.head) = lse0;
        if (in1) *pf_row<float>(p.lse, t.q_first + t.q0 + r1, t.head) = lse1;
    }
}

/* The producer's first warp: the work-group's tiles walked as the
 * consumers walk them, every key tile's K then V issued into stage g % 2
 * once every consumer warp has released the key tile two before
 * (pw_produce). */
__device__ __forceinline__ void pw_producer(const mt_prefill_params &p, const pw_maps &maps, pw_walk walk, int tile,
                                            unsigned char *k_st, unsigned char *v_st, mt_u64 *full_k,
                                            mt_u64 *full_v, mt_u64 *empty_k, mt_u64 *empty_v) {
    int g = 0;
    for (bool more = true; more;) {
        const pf_tile t = pw_walk_tile(p, walk, tile);
        tile += (int)gridDim.x;
        more = pw_walk_to(p, walk, tile);
        const int n_tiles = pw_stream_tiles(p, t);
        for (int j = 0; j < n_tiles; j++, g++) {
            pw_produce<false>(p, t, maps, j, g, k_st, full_k, empty_k);
            pw_produce<true>(p, t, maps, j, g, v_st, full_v, empty_v);
        }
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK_THREADS + MT_PREFILL_PRODUCER_THREADS, 1)
mla_prefill(const mt_prefill_params p, const __grid_constant__ mt_tensor_map k_map,
            const __grid_constant__ mt_tensor_map k_pe_map, const __grid_constant__ mt_tensor_map v_map) {
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    /* the swizzle pattern repeats every 1024 bytes of the shared address */
    unsigned char *q_s = smem_raw + ((1024u - (mt_smem_addr(smem_raw) & 1023u)) & 1023u);
    unsigned char *k_st = q_s + PW_Q_BYTES;      /* 2 stages of K_BYTES */
    unsigned char *v_st = k_st + 2 * PW_K_BYTES; /* 2 stages of V_BYTES */
    mt_u64 *bars = (mt_u64 *)(v_st + 2 * PW_V_BYTES);
    mt_u64 *full_k = bars, *full_v = bars + 2, *empty_k = bars + 4, *empty_v = bars + 6;
    const int tid = threadIdx.x, wg = tid >> 7, lane = tid & 31, quad = lane & 3;
    /* the warpgroup past the consumers issues the key tiles' copies (the
     * role read through a shuffle, so that ptxas sees it uniform in each
     * warp: a per-thread test serialised the wgmma, see above) */
    const bool producer = __shfl_sync(0xffffffffu, tid / 128, 0) == BLOCK_THREADS / 128;
    static_assert(MT_PREFILL_PRODUCER_THREADS == 128, "the producer is one warpgroup (setmaxnreg's unit)");
    const int r0 = wg * 64 + ((tid >> 5) & 3) * 16 + (lane >> 2), r1 = r0 + 8; /* this thread's rows in the tile */
    const pw_maps maps = {&k_map, &k_pe_map, &v_map};

    pw_walk walk = pw_walk_start(p);
    int tile = (int)blockIdx.x;
    if (!pw_walk_to(p, walk, tile)) return; /* the whole work-group: the launch's grid is an upper bound */
    if (tid == 0) {
        for (int i = 0; i < 4; i++) mt_mbar_init(&bars[i], 1);                  /* the producer's arrival */
        for (int i = 4; i < 8; i++) mt_mbar_init(&bars[i], BLOCK_THREADS / 32); /* every consumer warp's */
        mt_mbar_init_fence();
    }
    __syncthreads();
    if (producer) { /* its registers to the consumers; its first warp issues */
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
        if (tid < BLOCK_THREADS + 32) pw_producer(p, maps, walk, tile, k_st, v_st, full_k, full_v, empty_k, empty_v);
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
    pw_load_q_rows_of(p, pw_walk_tile(p, walk, tile), q_s, wg);
    mt_cp_async_commit();

    const float s_scale = p.scale * PF_LOG2E; /* scores in the log2 domain */
    const mt_u64 q_desc = pw_desc(q_s + wg * 64 * PW_ROW);
    int g = 0; /* the stream's key tiles consumed */
    float o[PW_O];
    mt_u32 pf[PW_P][4]; /* P of the previous key tile, the A operand of its P V */
    for (bool more = true; more;) {
        const pf_tile t = pw_walk_tile(p, walk, tile);
        pw_walk at_next = walk;
        const int next = tile + (int)gridDim.x;
        more = pw_walk_to(p, at_next, next);
        const int n_tiles = pw_stream_tiles(p, t);
        const int lim0 = pf_row_limit(p, t, t.q0 + r0), lim1 = pf_row_limit(p, t, t.q0 + r1);
        float m0 = MT_NEG_INF, m1 = MT_NEG_INF, l0 = 0.0f, l1 = 0.0f;
#pragma unroll
        for (int i = 0; i < PW_O; i++) o[i] = 0.0f;
        mt_cp_async_wait<0>();
        mt_fence_proxy_async();
        mt_bar_sync(1 + wg, 128); /* this warpgroup's q rows are in */

        /* Step g (key tile j of this tile): S_g = Q K_g, then P_(g-1)
         * V_(g-1) when j > 0, the softmax of S_g while the matrix units
         * multiply it; each stage released by each warp once the product
         * reading it has retired, as in wgmma.cu. */
        for (int j = 0; j < n_tiles; j++, g++) {
            const int st = g & 1, pst = (g - 1) & 1;
            mt_mbar_wait(&full_k[st], (unsigned)(g >> 1) & 1u);
            float s[PW_S];
            mt_wgmma_fence();
            pw_issue_scores(s, q_desc, k_st + st * PW_K_BYTES);
            mt_wgmma_commit();
            if (j > 0) {
                mt_mbar_wait(&full_v[pst], (unsigned)((g - 1) >> 1) & 1u);
                pw_issue_pv(o, pf, v_st + pst * PW_V_BYTES);
                mt_wgmma_commit();
                mt_wgmma_wait<1>(); /* S_g */
            } else {
                mt_wgmma_wait<0>();
            }
            mt_wgmma_pin<PW_S>(s);
            if (lane == 0) pw_mbar_arrive(&empty_k[st]); /* this warp is done with K_g */
            mt_u32 pn[PW_P][4];
            float a0, a1;
            pw_softmax(s, pn, j * KV_TILE, lim0, lim1, s_scale, m0, m1, l0, l1, a0, a1);
            mt_wgmma_wait<0>(); /* P_(g-1) V_(g-1) */
            mt_wgmma_pin<PW_O>(o);
            if (j > 0 && lane == 0) pw_mbar_arrive(&empty_v[pst]);
            if (j == n_tiles - 1 && more) {
                /* the warpgroup's last read of its q rows has retired, and
                 * no product is in flight: the next tile's rows come while
                 * this one ends */
                mt_bar_sync(1 + wg, 128);
                pw_load_q_rows_of(p, pw_walk_tile(p, at_next, next), q_s, wg);
                mt_cp_async_commit();
            }
            pw_rescale(o, a0, a1);
            pw_next_p(pf, pn, p.zero);
        }
        if (n_tiles > 0) { /* the last key tile's P V, then its stage is free */
            const int st = (g - 1) & 1;
            mt_mbar_wait(&full_v[st], (unsigned)((g - 1) >> 1) & 1u);
            mt_wgmma_fence();
            pw_issue_pv(o, pf, v_st + st * PW_V_BYTES);
            mt_wgmma_commit();
            mt_wgmma_wait<0>();
            mt_wgmma_pin<PW_O>(o);
            mt_wgmma_pin_a<4 * PW_P>(&pf[0][0]);
            if (lane == 0) pw_mbar_arrive(&empty_v[st]);
        } else if (more) { /* no product read q: the next rows may come now */
            pw_load_q_rows_of(p, pw_walk_tile(p, at_next, next), q_s, wg);
            mt_cp_async_commit();
        }
        if (pw_keys_past_vt(p, t)) {
            pw_store_nan(p, t);
        } else {
            pw_store_rows(p, t, o, r0, r1, quad, m0, m1, l0, l1);
        }
        tile = next, walk = at_next;
    }
}
