// probe_common.cuh - what the standalone probes (launch-floor.cu,
// pair-stream.cu) share: a CUDA error check; launches timed the way
// `mla-tune bench` times a call (METHOD.md): the L2 flushed by a read
// kernel before each launch, CUDA events around the launch only, warm-up
// launches first, the median (with p10 and p90) of many; and a KV cache of
// shuffled 64-key pages with the decode's tensor map over it.
#pragma once
#include <cuda.h>
#include <cudaTypedefs.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(x)                                                                                  \
    do {                                                                                          \
        cudaError_t e_ = (x);                                                                     \
        if (e_ != cudaSuccess) {                                                                  \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(1);                                                                              \
        }                                                                                         \
    } while (0)

// reads n words (never equal to `never`, so the sink is never written): the
// lines of a buffer 4x the L2 evict whatever the launch before left there
__global__ void evict_read(const unsigned long long *p, size_t n, unsigned long long never,
                           unsigned long long *sink) {
    unsigned long long x = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        x ^= p[i];
    if (x == never) *sink = x;
}

struct Flush {
    unsigned long long *buf, *sink;
    size_t n;
    Flush() : n((256u << 20) / 8) { /* 256 MiB of reads */
        CHECK(cudaMalloc(&buf, n * 8));
        CHECK(cudaMemset(buf, 0, n * 8));
        CHECK(cudaMalloc(&sink, 8));
    }
    void run(cudaStream_t s) { evict_read<<<1024, 256, 0, s>>>(buf, n, 1, sink); }
};

struct Timing {
    double median_us, p10_us, p90_us;
};

// `reps` timed launches of launch() on s, each after a flush, 5 untimed first
template <class F>
static Timing time_launches(Flush &fl, cudaStream_t s, int reps, F launch) {
    std::vector<cudaEvent_t> ev(2 * reps);
    for (auto &e : ev) CHECK(cudaEventCreate(&e));
    for (int i = 0; i < 5; i++) fl.run(s), launch();
    for (int i = 0; i < reps; i++) {
        fl.run(s);
        CHECK(cudaEventRecord(ev[2 * i], s));
        launch();
        CHECK(cudaEventRecord(ev[2 * i + 1], s));
    }
    CHECK(cudaGetLastError());
    CHECK(cudaStreamSynchronize(s));
    std::vector<float> t(reps);
    for (int i = 0; i < reps; i++) CHECK(cudaEventElapsedTime(&t[i], ev[2 * i], ev[2 * i + 1]));
    std::sort(t.begin(), t.end());
    for (auto &e : ev) CHECK(cudaEventDestroy(e));
    return {1e3 * t[reps / 2], 1e3 * t[reps / 10], 1e3 * t[reps * 9 / 10]};
}

// A permutation of 0..n-1 in device memory (a fixed seed): page i of a
// request's keys lies at page perm[i] of the cache, as the bench lays out
// a batch's pages over the whole cache.
static int *shuffled_pages(int n) {
    std::vector<int> perm(n);
    for (int i = 0; i < n; i++) perm[i] = i;
    unsigned long long r = 12345;
    for (int i = n - 1; i > 0; i--) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        std::swap(perm[i], perm[(int)((r >> 33) % (unsigned long long)(i + 1))]);
    }
    int *d;
    CHECK(cudaMalloc(&d, n * sizeof(int)));
    CHECK(cudaMemcpy(d, perm.data(), n * sizeof(int), cudaMemcpyHostToDevice));
    return d;
}

// The warpgroup paths' tensor map over `keys` rows of 576 bf16 at kv: 64 x 64
// boxes, 128-byte swizzle, L2 lines fetched 256 bytes at a time.
static CUtensorMap chunk_map(void *kv, size_t keys) {
    PFN_cuTensorMapEncodeTiled_v12000 encode = nullptr;
    cudaDriverEntryPointQueryResult qr;
    CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", (void **)&encode, 12000, cudaEnableDefault, &qr));
    CUtensorMap map;
    cuuint64_t dims[2] = {576, (cuuint64_t)keys}, strides[1] = {1152};
    cuuint32_t box[2] = {64, 64}, elem[2] = {1, 1};
    if (!encode || encode(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, kv, dims, strides, box, elem,
                          CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                          CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) {
        fprintf(stderr, "cuTensorMapEncodeTiled failed\n");
        exit(1);
    }
    return map;
}
