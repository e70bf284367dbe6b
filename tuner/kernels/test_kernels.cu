/*
 * test_kernels.cu - small kernels that exercise the backend and the JIT in
 * tests; not part of any variant space.
 *
 *   mt_test_axpy        y[i] = a * x[i] + y[i], with a shared-memory hop and
 *                       a warp shuffle so that both paths are exercised
 *   mt_test_oob_write   writes far past the end of its buffer: a
 *                       deliberately faulting kernel for the sweep's
 *                       isolation tests
 */
#ifndef TEST_BLOCK
#define TEST_BLOCK 256
#endif

extern "C" __global__ void __launch_bounds__(TEST_BLOCK)
mt_test_axpy(float a, const float *x, float *y, int n) {
    __shared__ float staged[TEST_BLOCK];
    int i = blockIdx.x * TEST_BLOCK + threadIdx.x;
    staged[threadIdx.x] = i < n ? x[i] : 0.0f;
    __syncthreads();
    /* swap neighbours twice: a no-op that needs the shuffle to be right */
    float v = mt_shfl_xor(mt_shfl_xor(staged[threadIdx.x], 1), 1);
    if (i < n) y[i] = a * v + y[i];
}

extern "C" __global__ void mt_test_oob_write(float *y, long long offset) {
    y[offset + threadIdx.x] = 1.0f;
}
