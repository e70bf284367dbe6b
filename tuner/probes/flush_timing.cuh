// flush_timing.cuh - what the standalone probes (launch-floor.cu,
// pair-stream.cu) share: a CUDA error check, and launches timed the way
// `mla-tune bench` times a call (METHOD.md): the L2 flushed by a read
// kernel before each launch, CUDA events around the launch only, warm-up
// launches first, the median (with p10 and p90) of many.
#pragma once
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
