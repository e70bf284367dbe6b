/*
 * bench_kernels.cu - helpers for `mla-tune bench` and the sweep's ceilings:
 * filling device buffers with random values without a host round trip, and
 * the matrix-unit throughput probe.
 */

/* Fills n elements of `dtype` (0 bf16, 1 fp16, 2 fp8 e4m3) with values from
 * a per-index hash: 16-bit types uniform in [-1, 1); fp8 any finite code. */
extern "C" __global__ void mt_fill_random(unsigned char *p, unsigned long long n, int dtype, unsigned seed) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        unsigned long long h = (i + 1) * 0x9e3779b97f4a7c15ull ^ ((unsigned long long)seed << 32);
        h ^= h >> 31, h *= 0xbf58476d1ce4e5b9ull, h ^= h >> 29;
        if (dtype == 2) {
            mt_u8 b = (mt_u8)h;
            if ((b & 0x7f) == 0x7f) b ^= 1; /* not NaN */
            p[i] = b;
        } else {
            float v = (float)(h >> 40) * (1.0f / 8388608.0f) - 1.0f;
            ((mt_u16 *)p)[i] = dtype == 0 ? mt_f32_to_bf16(v) : mt_f32_to_f16(v);
        }
    }
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
