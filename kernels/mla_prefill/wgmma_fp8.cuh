/*
 * wgmma_fp8.cuh - the prefill wgmma path (wgmma.cu) on fp8 e4m3 q, k and v
 * (KV_DTYPE 2): the matrix units' k32 products at twice the 16-bit rate.
 *
 * What fp8 changes (the loop, the stages and the softmax are wgmma.cu's):
 *  - q and k tiles are 64-byte rows (64 columns) in the 64-byte swizzle;
 *    S = Q K^T steps 32 columns at a time;
 *  - wgmma takes an fp8 B operand K-major only, and v's rows are keys (v's
 *    columns contiguous: MN-major for P V).  So mla_prefill_vt (below),
 *    launched before the attention kernel, writes v transposed into the
 *    workspace: vt[b][h][c][key], keys contiguous, each request's keys from
 *    0 and padded with zeros to vt_keys (a multiple of the kv tile: a
 *    tile's box never leaves its row);
 *  - P's A fragment (m64n*k32: a thread holds 4 consecutive keys of its
 *    rows in a register, keys 16 apart in the next) is not the layout of
 *    the scores' accumulators (2 consecutive keys per 8-key block).
 *    Rather than shuffling P, vt stores each 32-key group's keys in the
 *    order P's registers hold them: position L = 16 h + 4 q + i of a group
 *    (h the half, q the lane in its quad, i the byte) holds key
 *    16 h + 2 q + (i < 2 ? i : 6 + i) (pw8_key_of), which is where the
 *    accumulators of 8-key blocks 2h and 2h + 1 put lane q's pairs;
 *  - P is quantised to e4m3 (values in [0, 1]; the row sums stay fp32),
 *    and out is O * v_scale / l in bf16.
 */
#if PW_FP8

/* The key whose v column vt holds at position L of a 32-key group. */
__device__ __forceinline__ int pw8_key_of(int L) {
    const int h = L >> 4, q = (L >> 2) & 3, i = L & 3;
    return 16 * h + 2 * q + (i < 2 ? i : 6 + i);
}

/* Two floats -> two e4m3 in 16 bits (lo in the low byte), nearest, saturated. */
__device__ __forceinline__ mt_u32 pw8_pack2(float lo, float hi) {
    unsigned short r;
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
    return r;
}

/* The k32 e4m3 products (no transpose flags: fp8 operands are K-major). */
#define PW8_SS_N64                                                                                          \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"                                               \
                 "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3 {" MT_ACC32 "}, %32, %33, p, 1, 1;\n}\n" \
                 : MT_OUT32(0)                                                                              \
                 : "l"(a_desc), "l"(b_desc), "r"(accumulate))
#define PW8_SS_N128                                                                                         \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"                                               \
                 "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 {" PW_ACC64 "}, %64, %65, p, 1, 1;\n}\n" \
                 : PW_OUT64                                                                                 \
                 : "l"(a_desc), "l"(b_desc), "r"(accumulate))
#define PW8_RS_N64                                                                                          \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"                                               \
                 "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3 {" MT_ACC32 "}, "                        \
                 "{%32, %33, %34, %35}, %36, p, 1, 1;\n}\n"                                                    \
                 : MT_OUT32(0)                                                                              \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(accumulate))
#define PW8_RS_N128                                                                                         \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"                                               \
                 "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 {" PW_ACC64 "}, "                       \
                 "{%64, %65, %66, %67}, %68, p, 1, 1;\n}\n"                                                    \
                 : PW_OUT64                                                                                 \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(accumulate))

/* d (+)= A[64 x 32] B[32 x N], both K-major in shared memory. */
template <int N>
__device__ __forceinline__ void pw8_wgmma_ss(float *d, mt_u64 a_desc, mt_u64 b_desc, int accumulate) {
    static_assert(N == 64 || N == 128, "S = Q K^T takes 64 or 128 keys");
    if (N == 64) PW8_SS_N64;
    else PW8_SS_N128;
}

/* d (+)= A[64 x 32] B[32 x N]: A (P) in registers, B (v^T) K-major in shared memory. */
template <int N>
__device__ __forceinline__ void pw8_wgmma_rs(float *d, const mt_u32 *a, mt_u64 b_desc, int accumulate) {
    static_assert(N == 64 || N == 128, "O += P V takes 64 or 128 v columns");
    if (N == 64) PW8_RS_N64;
    else PW8_RS_N128;
}

#endif /* PW_FP8 */

/* mla_prefill_vt: v (rows of (token, head), DL e4m3 columns) -> vt, one
 * work-group of VT_THREADS per (64 keys, head, request): the 64 rows into
 * shared memory, then each thread writes 16-byte pieces of vt's rows in
 * pw8_key_of's order, zeros past the request's keys (up to vt_keys). */
#define VT_THREADS 256
extern "C" __global__ void __launch_bounds__(VT_THREADS)
mla_prefill_vt(const mt_prefill_params p) {
#if PW_FP8
    __shared__ __align__(16) mt_u8 rows[64][DL];
    const int head = (int)blockIdx.y, b = (int)blockIdx.z, k0 = (int)blockIdx.x * 64;
    const int *cu_k = (const int *)p.cu_k;
    const int k_first = cu_k[b], n_k = min(cu_k[b + 1] - k_first, p.vt_keys);
    for (int i = threadIdx.x; i < 64 * DL / 16; i += VT_THREADS) {
        const int r = i / (DL / 16), piece = i - r * (DL / 16);
        uint4 x = make_uint4(0, 0, 0, 0);
        if (k0 + r < n_k) x = *(const uint4 *)(pf_row<const mt_u8>(p.v, k_first + k0 + r, head) + piece * 16);
        *(uint4 *)&rows[r][piece * 16] = x;
    }
    __syncthreads();
    mt_u8 *vt = (mt_u8 *)p.vt + ((long long)b * p.n_heads + head) * DL * (long long)p.vt_keys + k0;
    for (int i = threadIdx.x; i < DL * 4; i += VT_THREADS) { /* (column c, 16 keys g) */
        const int c = i >> 2, g = i & 3;
        mt_u32 w[4];
#pragma unroll
        for (int e = 0; e < 4; e++) {
            mt_u32 v = 0;
#pragma unroll
            for (int byte = 0; byte < 4; byte++) {
                const int L = 16 * g + 4 * e + byte;
                v |= (mt_u32)rows[(L & ~31) + pw8_key_of(L & 31)][c] << (8 * byte);
            }
            w[e] = v;
        }
        *(uint4 *)(vt + (long long)c * p.vt_keys + 16 * g) = make_uint4(w[0], w[1], w[2], w[3]);
    }
#else
    (void)p; /* 16-bit v is read as it is: never launched (launch.c), present in every mma=2 build */
#endif
}
