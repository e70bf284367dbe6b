// launch-floor.cu - what a small-batch decode call cannot go below on this
// GPU, measured the way `mla-tune bench` measures a call: L2 flushed by a
// read kernel, then events around the launch(es), median of many.
//
// Standalone (CUDA runtime API, not the runtime library): it times kernels
// that do only the fixed parts of a decode call, so the bench's figures can
// be split into what the kernels do and what any kernel pays.
//   empty-1        one block of 32 threads that does nothing
//   empty-128-smem 128 blocks x 256 threads asking 172 KB of shared memory
//                  (the warpgroup paths' launch shape)
//   ... +carveout  the same with the flush kernel also set to the largest
//                  shared-memory carveout (no L1/shared reconfiguration
//                  between the two kernels)
//   chain-N        128 blocks x 256 threads, 172 KB: thread 0 does N
//                  dependent loads (seq_len -> block table -> KV) of cold
//                  lines, then block-wide use of the value
//   pdl-pair       empty-128-smem followed by an empty dependent kernel
//                  launched with programmatic stream serialization (the
//                  decode -> reduce pair)
//   clusters of n  how many clusters of n such blocks can be resident at
//                  once (cudaOccupancyMaxActiveClusters): a grid of more
//                  runs in two waves
// Build here (nvcc of the CUDA toolkit; the CUDA runtime is linked
// statically): nvcc -O2 -arch=sm_90a -o build/launch-floor tuner/probes/launch-floor.cu
// then on the device: tests/gpu-run.sh build/launch-floor (SKIP_GPU_TESTS=1
// to skip the tests).  Output of 2026-11-22 (H100):
// reports/h100/fast-decode/launch-floor.txt.
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

__global__ void evict_read(const unsigned long long *p, size_t n, unsigned long long never,
                           unsigned long long *sink) {
    unsigned long long x = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        x ^= p[i];
    if (x == never) *sink = x;
}

__global__ void empty_kernel(int *sink) {
    if (sink && threadIdx.x == 1000) *sink = 1;
}

__global__ void empty_smem(int *sink) {
    extern __shared__ int smem[];
    if (threadIdx.x == 1000) smem[0] = 1, *sink = smem[1];
}

// N dependent loads: seq_len[b] -> table[b * 256 + len % 7] -> kv[page * 4096 + tid]
__global__ void chain(const int *seq_len, const int *table, const int *kv, int *out, int n) {
    extern __shared__ int smem[];
    int v = blockIdx.x;
    if (threadIdx.x == 0) {
        if (n >= 1) v = seq_len[blockIdx.x * 32];
        if (n >= 2) v = table[blockIdx.x * 256 + (v & 7)];
        if (n >= 3) v = kv[(size_t)(v & 1023) * 4096];
        smem[0] = v;
    }
    __syncthreads();
    if (smem[0] == -12345) out[blockIdx.x] = smem[0];
}

__global__ void pdl_first(int *sink) {
    extern __shared__ int smem[];
    asm volatile("griddepcontrol.launch_dependents;");
    if (threadIdx.x == 1000) smem[0] = 1, *sink = smem[1];
}

__global__ void pdl_second(int *sink) {
    asm volatile("griddepcontrol.wait;" ::: "memory");
    if (threadIdx.x == 1000) *sink = 2;
}

struct Flush {
    unsigned long long *buf, *sink;
    size_t n;
    void run(cudaStream_t s) { evict_read<<<1024, 256, 0, s>>>(buf, n, 1, sink); }
};

template <class F>
static void time_it(const char *name, Flush &fl, cudaStream_t s, F launch) {
    const int reps = 200;
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
    printf("%-28s median %6.2f us  p10 %6.2f  p90 %6.2f\n", name, 1e3 * t[reps / 2], 1e3 * t[reps / 10],
           1e3 * t[reps * 9 / 10]);
    for (auto &e : ev) CHECK(cudaEventDestroy(e));
}

int main() {
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    Flush fl;
    fl.n = (256u << 20) / 8;
    CHECK(cudaMalloc(&fl.buf, fl.n * 8));
    CHECK(cudaMemset(fl.buf, 0, fl.n * 8));
    CHECK(cudaMalloc(&fl.sink, 8));
    int *sink, *seq_len, *table, *kv;
    CHECK(cudaMalloc(&sink, 4096));
    CHECK(cudaMalloc(&seq_len, 128 * 32 * 4));
    CHECK(cudaMalloc(&table, 128 * 256 * 4));
    CHECK(cudaMalloc(&kv, (size_t)1024 * 4096 * 4));
    CHECK(cudaMemset(seq_len, 1, 128 * 32 * 4));
    CHECK(cudaMemset(table, 2, 128 * 256 * 4));
    CHECK(cudaMemset(kv, 3, (size_t)1024 * 4096 * 4));
    const int smem = 172 * 1024;
    CHECK(cudaFuncSetAttribute(empty_smem, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    CHECK(cudaFuncSetAttribute(chain, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    CHECK(cudaFuncSetAttribute(pdl_first, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));

    time_it("empty-1", fl, s, [&] { empty_kernel<<<1, 32, 0, s>>>(sink); });
    time_it("empty-128-smem", fl, s, [&] { empty_smem<<<128, 256, smem, s>>>(sink); });
    for (int n = 0; n <= 3; n++) {
        char name[32];
        snprintf(name, sizeof name, "chain-%d", n);
        time_it(name, fl, s, [&] { chain<<<128, 256, smem, s>>>(seq_len, table, kv, sink, n); });
    }
    time_it("pdl-pair", fl, s, [&] {
        pdl_first<<<128, 256, smem, s>>>(sink);
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = dim3(128), cfg.blockDim = dim3(256), cfg.stream = s;
        cudaLaunchAttribute attr;
        attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr.val.programmaticStreamSerializationAllowed = 1;
        cfg.attrs = &attr, cfg.numAttrs = 1;
        CHECK(cudaLaunchKernelEx(&cfg, pdl_second, sink));
    });
    time_it("plain-pair", fl, s, [&] {
        empty_smem<<<128, 256, smem, s>>>(sink);
        empty_kernel<<<128, 256, 0, s>>>(sink);
    });
    CHECK(cudaFuncSetAttribute(evict_read, cudaFuncAttributePreferredSharedMemoryCarveout, 100));
    time_it("empty-128-smem +carveout", fl, s, [&] { empty_smem<<<128, 256, smem, s>>>(sink); });
    time_it("chain-3 +carveout", fl, s, [&] { chain<<<128, 256, smem, s>>>(seq_len, table, kv, sink, 3); });
    time_it("empty-1 +carveout", fl, s, [&] { empty_kernel<<<1, 32, 0, s>>>(sink); });
    /* how many clusters of n blocks of the warpgroup paths' shape (256
     * threads, 172 KB: one per SM) can be resident at once */
    for (int n = 2; n <= 16; n *= 2) {
        CHECK(cudaFuncSetAttribute(empty_smem, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = dim3(n * 8), cfg.blockDim = dim3(256), cfg.dynamicSmemBytes = smem;
        cudaLaunchAttribute attr;
        attr.id = cudaLaunchAttributeClusterDimension;
        attr.val.clusterDim.x = n, attr.val.clusterDim.y = 1, attr.val.clusterDim.z = 1;
        cfg.attrs = &attr, cfg.numAttrs = 1;
        int clusters = 0;
        CHECK(cudaOccupancyMaxActiveClusters(&clusters, empty_smem, &cfg));
        printf("clusters of %2d x (256 threads, 172 KB): %d resident (%d blocks)\n", n, clusters, clusters * n);
    }
    printf("ok\n");
    return 0;
}
