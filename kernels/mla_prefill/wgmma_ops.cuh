/*
 * wgmma_ops.cuh - the two warpgroup products of the prefill family's
 * wgmma path (wgmma.cu) at the widths it uses, N = 64 or 128 columns (the
 * prelude has the decode family's N = 16, 64, 256 forms; these stay here
 * so that the decode kernels' text, and the hashes the shipped databases
 * validate against, do not change).  Accumulators as the prelude says:
 * N / 2 floats per thread, d[4j .. 4j + 3] the 8-column block j.
 *   pw_wgmma_ss<N>  d (+)= A[64 x 16] B[16 x N]: A and B K-major in shared
 *                   memory (S = Q K^T: q rows and key rows, qk columns)
 *   pw_wgmma_rs<N>  d (+)= A[64 x 16] B[16 x N]: A in registers (P, the
 *                   m16n8k16 A layout per warp), B MN-major in shared
 *                   memory (O += P V: key rows, v columns contiguous)
 * and the path's fixed shape, which wgmma_copy.cuh and wgmma.cu share.
 * fp8 e4m3 (KV_DTYPE 2) takes the k32 forms of wgmma_fp8.cuh instead.
 *
 * Shared tiles are 64-column blocks of rows in the swizzle as wide as a
 * block's row: 128 bytes for 16-bit elements, 64 for fp8 (PW_ROW); a
 * product's k-step reads 32 bytes of each row (PW_KSTEP elements).
 */
#if !defined(MT_HAVE_WGMMA)
#error "mma=2 (wgmma) needs NVIDIA sm_90a"
#endif
#if (TILE_Q != 64 && TILE_Q != 128) || BLOCK_THREADS != 2 * TILE_Q || (KV_TILE != 64 && KV_TILE != 128) || \
    D % 64 != 0 || (DL != 64 && DL != 128) || Q_DTYPE != KV_DTYPE || KV_DTYPE > 2
#error "mma=2 takes tile_q 64 or 128 on 2 x tile_q threads, kv_tile 64 or 128, D % 64 == 0, Dl 64 or 128, one type"
#endif
#ifndef PERSISTENT
#define PERSISTENT 0 /* the variant's persistent (written only when 1: wgmma.cu's two forms) */
#endif
#define PW_FP16 (KV_DTYPE == 1)
#define PW_FP8 (KV_DTYPE == 2)    /* e4m3 q, k, v; out bf16 */
#define PW_EB (PW_FP8 ? 1 : 2)    /* bytes of a q, k or v element */
#define PW_ROW (64 * PW_EB)       /* bytes of a 64-column block's row, the swizzle's width */
#define PW_KSTEP (32 / PW_EB)     /* k of one product step: 32 bytes of a row */
#define PW_Q_BYTES (TILE_Q * D * PW_EB)
#define PW_K_BYTES (KV_TILE * D * PW_EB)
#define PW_V_BYTES (KV_TILE * DL * PW_EB)
#define PW_S (KV_TILE / 2) /* score accumulators per thread */
#define PW_O (DL / 2)      /* output accumulators per thread */
#define PW_P (KV_TILE / PW_KSTEP) /* A fragments (4 registers each) of a tile's P */
#if PW_FP8
typedef mt_u8 pw_elem;
#else
typedef mt_u16 pw_elem;
#endif

#if OUT_STORES == 16
/* out_stores = 16: the tile's rows leave in 16-byte stores.  In the
 * accumulator layout a quad's 4 lanes hold, per row, 2 of each 8-column
 * block's columns, so out went in 4-byte stores, a warp's store reaching
 * 16 bytes of each of 8 rows (half sectors), 32 stores a thread for Dl
 * 128; at a persistent tile's end they filled the load/store queue (13% of
 * the stall samples at 128 heads x 32 x 256, the next tile's setup waiting
 * behind them; PERFLOG session 32).  A 4 x 4 transpose within the quad
 * (4 shuffles) gives each lane 8 whole columns of one block in every 4:
 * a warp's 16-byte store writes 64 contiguous bytes of each of 8 rows.
 * pw_out_wide says whether out's rows allow it (address and strides
 * multiples of 16 bytes: launch.c requires 4), the same for the whole
 * call; where not, the 4-byte stores. */
__device__ __forceinline__ bool pw_out_wide(const mt_prefill_rows &out) {
    return ((out.ptr | (unsigned long long)(out.t_stride | out.h_stride) * 2ull) & 15ull) == 0;
}
/* Lane q of the quad gives v[i] to lane i and gets lane i's v[q] in v[i]:
 * the 2x2 blocks swapped across lanes q ^ 2, then each 2x2 transposed
 * across lanes q ^ 1. */
__device__ __forceinline__ void pw_quad_transpose(mt_u32 (&v)[4], int quad) {
    const bool hi = quad & 2, odd = quad & 1;
    mt_u32 a = hi ? v[0] : v[2], b = hi ? v[1] : v[3];
    a = mt_shfl_xor32(a, 2), b = mt_shfl_xor32(b, 2);
    if (hi) v[0] = a, v[1] = b;
    else v[2] = a, v[3] = b;
    a = odd ? v[0] : v[1], b = odd ? v[2] : v[3];
    a = mt_shfl_xor32(a, 1), b = mt_shfl_xor32(b, 1);
    if (odd) v[0] = a, v[2] = b;
    else v[1] = a, v[3] = b;
}
/* This thread's rows r0 / r1 of O times inv0 / inv1 into out0 / out1
 * (in0 / in1: the row exists), 16 bytes a store: blocks 4g .. 4g + 3
 * transposed, lane q storing block 4g + q. */
__device__ __forceinline__ void pw_store_out_wide(const float (&o)[PW_O], mt_u16 *out0, mt_u16 *out1, bool in0,
                                                  bool in1, float inv0, float inv1, int quad) {
#pragma unroll
    for (int g = 0; g < PW_O / 16; g++) {
        mt_u32 a[4], b[4];
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int j = 4 * g + i; /* o[4j], o[4j + 1]: row r0; o[4j + 2], o[4j + 3]: row r1 */
            a[i] = pf_pack16(o[4 * j] * inv0, o[4 * j + 1] * inv0);
            b[i] = pf_pack16(o[4 * j + 2] * inv1, o[4 * j + 3] * inv1);
        }
        pw_quad_transpose(a, quad);
        pw_quad_transpose(b, quad);
        const int col = (4 * g + quad) * 8;
        if (in0) *(uint4 *)(out0 + col) = make_uint4(a[0], a[1], a[2], a[3]);
        if (in1) *(uint4 *)(out1 + col) = make_uint4(b[0], b[1], b[2], b[3]);
    }
}
#endif

/* A K-major operand's descriptor (q, k; fp8's v^T): rows of PW_ROW bytes
 * in groups of 8 (the swizzle's period: 8 x PW_ROW bytes apart). */
__device__ __forceinline__ mt_u64 pw_desc(const void *smem) {
#if PW_FP8
    const mt_u64 addr = mt_smem_addr(smem);
    return ((addr & 0x3ffffu) >> 4) | (1ull << 16) | ((mt_u64)(512 >> 4) << 32) | (2ull << 62); /* 64-byte swizzle */
#else
    return mt_wgmma_desc(smem, 16, 1024);
#endif
}
#define PW_OUT64 MT_OUT32(0), MT_OUT32(32)
#define PW_ACC64 \
    MT_ACC32 ", %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
             "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"

#define PW_SS_N128(TY)                                                                                   \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"                                         \
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " {" PW_ACC64 "}, %64, %65, p, 1, 1, 0, 0;\n}\n" \
                 : PW_OUT64                                                                              \
                 : "l"(a_desc), "l"(b_desc), "r"(accumulate))
#define PW_RS_N128(TY)                                                                                   \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"                                         \
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " {" PW_ACC64 "}, "             \
                 "{%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"                                           \
                 : PW_OUT64                                                                              \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(accumulate))
#define PW_RS_N64(TY)                                                                                    \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"                                         \
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " {" MT_ACC32 "}, "              \
                 "{%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"                                           \
                 : MT_OUT32(0)                                                                           \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(accumulate))

template <int N, int FP16>
__device__ __forceinline__ void pw_wgmma_ss(float *d, mt_u64 a_desc, mt_u64 b_desc, int accumulate) {
    static_assert(N == 64 || N == 128, "S = Q K^T takes 64 or 128 keys");
    if (N == 64) {
        mt_wgmma_m64n64k16_ss<FP16>(d, a_desc, b_desc, accumulate);
    } else {
        if (FP16) PW_SS_N128("f16");
        else PW_SS_N128("bf16");
    }
}

template <int N, int FP16>
__device__ __forceinline__ void pw_wgmma_rs(float *d, const mt_u32 *a, mt_u64 b_desc, int accumulate) {
    static_assert(N == 64 || N == 128, "O += P V takes 64 or 128 v columns");
    if (N == 64) {
        if (FP16) PW_RS_N64("f16");
        else PW_RS_N64("bf16");
    } else {
        if (FP16) PW_RS_N128("f16");
        else PW_RS_N128("bf16");
    }
}
