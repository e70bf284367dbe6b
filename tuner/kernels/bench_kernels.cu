/*
 * bench_kernels.cu - helpers for `mla-tune bench` and the sweep's ceilings:
 * filling device buffers with random values without a host round trip, and
 * the matrix-unit throughput probe.
 */

/* Fills n elements of `dtype` (0 bf16, 1 fp16, 2 fp8 e4m3 OCP, 3 fp8 e4m3
 * fnuz) with values from a per-index hash: 16-bit types uniform in [-1, 1);
 * fp8 any finite code of its encoding. */
extern "C" __global__ void mt_fill_random(unsigned char *p, unsigned long long n, int dtype, unsigned seed) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        unsigned long long h = (i + 1) * 0x9e3779b97f4a7c15ull ^ ((unsigned long long)seed << 32);
        h ^= h >> 31, h *= 0xbf58476d1ce4e5b9ull, h ^= h >> 29;
        if (dtype == 2 || dtype == 3) {
            mt_u8 b = (mt_u8)h;
            if (dtype == 2 ? (b & 0x7f) == 0x7f : b == 0x80) b ^= 1; /* not NaN (OCP 0x7f/0xff, fnuz 0x80) */
            p[i] = b;
        } else {
            float v = (float)(h >> 40) * (1.0f / 8388608.0f) - 1.0f;
            ((mt_u16 *)p)[i] = dtype == 0 ? mt_f32_to_bf16(v) : mt_f32_to_f16(v);
        }
    }
}

/* Evicts the L2 by reading `n` 8-byte words (a buffer a few times the
 * L2): unlike a memset it leaves clean lines behind, so the timed call that
 * follows does not pay for writing the flush's own dirty lines back.  The
 * store happens only if a thread's xor of what it read equals `never` (the
 * caller zeroes the buffer once and passes 1), so nothing is optimised
 * away. */
extern "C" __global__ void mt_l2_evict_read(const mt_u64 *p, unsigned long long n, mt_u64 never, mt_u64 *sink) {
    mt_u64 x = 0;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x)
        x ^= p[i];
    if (x == never) *sink = x;
}

#if MT_CUDA
/* Matrix-unit ceiling: every warp issues `iters` x 8 independent
 * m16n8k16 bf16 products on register operands (no memory traffic), the way
 * the decode kernel's mma path uses the units.  Writes one value per thread
 * so nothing is optimised away.  FLOPs = 2 * 16 * 8 * 16 * 8 * iters per warp. */
extern "C" __global__ void __launch_bounds__(256) mt_mma_peak(float *out, int iters) {
    mt_u32 a[4], b[2];
    for (int i = 0; i < 4; i++) a[i] = 0x3f803f80u ^ (threadIdx.x * 0x00010001u * (i + 1));
    b[0] = 0x3f803f80u ^ threadIdx.x, b[1] = 0x3c003c00u;
    float acc[8][4];
    for (int j = 0; j < 8; j++) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;
    for (int it = 0; it < iters; it++) {
#pragma unroll
        for (int j = 0; j < 8; j++) mt_mma_16816(acc[j], a, b, 0);
    }
    float s = 0.0f;
    for (int j = 0; j < 8; j++) s += acc[j][0] + acc[j][1] + acc[j][2] + acc[j][3];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
#endif

#if defined(MT_HAVE_WGMMA)
/* What both warpgroup probes below time: `iters` batches of 8 products
 * m64n256 (A from registers, B from shared memory at b_desc), up to two
 * batches in flight, then the accumulators' sum written (so nothing is
 * optimised away).  FP8: the k32 e4m3 form, else the k16 bf16 one. */
template <bool FP8>
__device__ __forceinline__ void wgmma_peak_batches(float *out, const mt_u32 *a, mt_u64 b_desc, int iters) {
    float acc[128];
    for (int i = 0; i < 128; i++) acc[i] = 0.0f;
    const int accumulate = 1;
    for (int it = 0; it < iters; it++) {
        mt_wgmma_fence();
#pragma unroll
        for (int k = 0; k < 8; k++) {
            if (FP8) {
                float *d = acc;
                asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %133, 0;\n"
                             "wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3 {" MT_ACC128 "}, "
                             "{%128, %129, %130, %131}, %132, p, 1, 1;\n}\n"
                             : MT_OUT128
                             : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(accumulate));
            } else {
                mt_wgmma_m64n256k16_rs<0>(acc, a, b_desc, accumulate);
            }
        }
        mt_wgmma_commit();
        mt_wgmma_wait<1>();
    }
    mt_wgmma_wait<0>();
    mt_wgmma_pin<128>(acc);
    float s = 0.0f;
    for (int i = 0; i < 128; i++) s += acc[i];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

/* The same for Hopper's warpgroup instructions, the way the mma=2 decode
 * path uses them: two warpgroups per group, each issuing wgmma m64n256k16
 * (A from registers, B from shared memory) in batches of 8 with up to two
 * batches in flight.  FLOPs = 2 * 64 * 256 * 16 * 8 * iters per warpgroup. */
extern "C" __global__ void __launch_bounds__(256, 1) mt_wgmma_peak(float *out, int iters) {
    __shared__ __align__(1024) mt_u16 b_s[16 * 256]; /* k16 x n256, four 64-column blocks */
    for (int i = threadIdx.x; i < 16 * 256; i += blockDim.x) b_s[i] = (mt_u16)(0x3c00u ^ (i & 7));
    mt_fence_proxy_async();
    __syncthreads();
    mt_u32 a[4];
    for (int i = 0; i < 4; i++) a[i] = 0x3f803f80u ^ (threadIdx.x * 0x00010001u * (i + 1));
    wgmma_peak_batches<false>(out, a, mt_wgmma_desc(b_s, 16 * 128, 1024), iters);
}

/* The fp8 form: wgmma m64n256k32 e4m3 (A from registers, B K-major in
 * shared memory: the only layout fp8 takes), as the prefill family's fp8
 * path uses it; the same batches.  FLOPs = 2 * 64 * 256 * 32 * 8 * iters
 * per warpgroup. */
extern "C" __global__ void __launch_bounds__(256, 1) mt_wgmma_fp8_peak(float *out, int iters) {
    /* n256 rows of 64 bytes (the 64-byte swizzle's row; a k32 step reads 32 of them) */
    __shared__ __align__(1024) mt_u8 b_s[256 * 64];
    for (int i = threadIdx.x; i < 256 * 64; i += blockDim.x) b_s[i] = (mt_u8)(0x38u ^ (i & 7));
    mt_fence_proxy_async();
    __syncthreads();
    mt_u32 a[4];
    for (int i = 0; i < 4; i++) a[i] = 0x38383838u ^ (threadIdx.x * 0x01010101u * (i + 1) & 0x07070707u);
    const mt_u64 addr = mt_smem_addr(b_s);
    const mt_u64 b_desc = ((addr & 0x3ffffu) >> 4) | (1ull << 16) | ((mt_u64)(512 >> 4) << 32) | (2ull << 62);
    wgmma_peak_batches<true>(out, a, b_desc, iters);
}
#endif
