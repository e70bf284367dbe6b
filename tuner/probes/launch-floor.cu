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
//   stream ...     the data movement of B=128 x 1024 / 2048 keys (16 / 32
//                  chunks of 73.7 KB per block) with no arithmetic:
//                  contiguous or paged (pages shuffled over 2.4 GB, looked
//                  up per chunk), 1-D bulk copies or the copy engine's
//                  64 x 64 boxes, optionally holding each stage a while
//   clusters of n  how many clusters of n such blocks can be resident at
//                  once (cudaOccupancyMaxActiveClusters): a grid of more
//                  runs in two waves
//   split floor    (`launch-floor split` runs only these and the graph
//                  lines) issue 7's small-batch shapes with the decode's
//                  split structure and no arithmetic: the chunks streamed,
//                  then 16 KB out (no merge), or a 32 KB fp32 partial per
//                  work-group, then also a dependent reduce over them (the
//                  shapes of kernels/mla_decode/reduce.cu's two forms), then the
//                  pair replayed as a CUDA graph
// Build here (nvcc of the CUDA toolkit; the CUDA runtime is linked
// statically): nvcc -O2 -arch=sm_90a -o build/launch-floor tuner/probes/launch-floor.cu
// then on the device: tests/gpu-run.sh build/launch-floor (SKIP_GPU_TESTS=1
// to skip the tests).  Output of 2026-11-22 (H100):
// reports/h100/fast-decode/launch-floor.txt; of `split`, 2026-11-23:
// reports/h100/fast-decode/split-floor.txt.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cstring>

#include "probe_common.cuh"

__global__ void empty_kernel(int *sink) {
    if (sink && threadIdx.x == 1000) *sink = 1;
}

__global__ void empty_smem(int *sink) {
    extern __shared__ int smem[];
    if (threadIdx.x == 1000) smem[0] = 1, *sink = smem[1];
}

// a launch argument the size of session 8's host-built work list (17424
// bytes) or of a quarter of it: does its size cost launch time?
template <int BYTES>
struct big_arg { int4 w[BYTES / 16]; };
template <int BYTES>
__global__ void empty_big(int *sink, const __grid_constant__ big_arg<BYTES> a) {
    if (threadIdx.x == 1000) *sink = a.w[blockIdx.x].x;
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

// The data movement of a decode call without its arithmetic: each block
// streams n_chunks chunks of 73,728 bytes (64 keys x 576 bf16, as nine 8 KB
// bulk copies like the warpgroup path's nine boxes) through `stages`
// shared-memory stages, after the same three dependent loads; a chunk is
// "used" by every thread reading 16 bytes of it, then held for spin_ns
// (standing in for the chunk's arithmetic) before its stage is refilled;
// at the end each block writes 16 KB (the 16 x 512 bf16 output).
#define STREAM_CHUNK 73728
// page_of: NULL, the block's chunks are contiguous; else chunk c of block b
// is chunk page_of[b * n_chunks + c] of kv (a block table, looked up before
// each copy as the decode kernels do).
// tma: 0, nine 1-D bulk copies per chunk; 1, nine 64 x 64 boxes of the
// tensor map (2-D, 128-byte swizzle: the warpgroup paths' copies); 2, the
// same with the map prefetched at entry (prefetch.tensormap).
__global__ void stream_chunks(const int *seq_len, const int *table, const char *kv, int4 *out, int n_chunks,
                              int stages, int spin_ns, const int *page_of, int tma,
                              const __grid_constant__ CUtensorMap map, int4 *part = nullptr) {
    extern __shared__ __align__(128) char stage_mem[];
    asm volatile("griddepcontrol.launch_dependents;");
    __shared__ __align__(8) unsigned long long bar[4];
    __shared__ int base_off;
    const int tid = threadIdx.x;
    if (tid == 0 && tma == 2) asm volatile("prefetch.tensormap [%0];" ::"l"(&map) : "memory");
    if (tid == 0) {
        for (int s = 0; s < stages; s++)
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"((unsigned)__cvta_generic_to_shared(&bar[s])));
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        int v = seq_len[blockIdx.x * 32];
        v = table[blockIdx.x * 256 + (v & 7)];
        base_off = v & 0x40000000; /* 0 for the data given, but only known after the loads */
    }
    __syncthreads();
    const char *src = kv + (page_of ? 0 : (size_t)blockIdx.x * n_chunks * STREAM_CHUNK) + base_off;
    auto issue = [&](int c) {
        const size_t chunk = page_of ? (size_t)page_of[blockIdx.x * n_chunks + c] : (size_t)c;
        const unsigned b = (unsigned)__cvta_generic_to_shared(&bar[c % stages]);
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(b), "r"(STREAM_CHUNK) : "memory");
        for (int k = 0; k < 9; k++) {
            const unsigned dst = (unsigned)__cvta_generic_to_shared(stage_mem + (c % stages) * STREAM_CHUNK + k * 8192);
            if (tma) {
                asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                             ::"r"(dst), "l"(&map), "r"(k * 64), "r"((int)(chunk * 64) + (base_off != 0)), "r"(b) : "memory");
                continue;
            }
            asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], 8192, [%2];"
                         ::"r"(dst), "l"(src + chunk * STREAM_CHUNK + k * 8192), "r"(b) : "memory");
        }
    };
    if (tid == 0)
        for (int c = 0; c < stages && c < n_chunks; c++) issue(c);
    int4 acc = make_int4(0, 0, 0, 0);
    for (int c = 0; c < n_chunks; c++) {
        const unsigned b = (unsigned)__cvta_generic_to_shared(&bar[c % stages]);
        const unsigned parity = (unsigned)(c / stages) & 1u;
        unsigned done = 0;
        while (!done)
            asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                         : "=r"(done) : "r"(b), "r"(parity) : "memory");
        const int4 x = *(const int4 *)(stage_mem + (c % stages) * STREAM_CHUNK + tid * 16);
        acc.x ^= x.x, acc.y ^= x.y, acc.z ^= x.z, acc.w ^= x.w;
        if (spin_ns > 0) {
            unsigned long long t0, t1;
            asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
            do asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1)); while (t1 - t0 < (unsigned long long)spin_ns);
        }
        __syncthreads();
        if (tid == 0 && c + stages < n_chunks) issue(c + stages);
    }
    if (part) {
        /* a split's partial result: 16 rows x 512 fp32 columns */
        for (int i = tid; i < 2048; i += blockDim.x) part[blockIdx.x * 2048 + i] = acc;
        return;
    }
    for (int i = tid; i < 1024; i += blockDim.x) out[blockIdx.x * 1024 + i] = acc;
}

// The reduce's data movement after stream_chunks(part): rows x 512 fp32
// columns from each of `splits` partials (the partial of split s of row r
// at part + (s * rows + r) * 512), merged with equal weights into bf16-size
// outputs.  Grid (rows, 8): a block of 8 warps takes 64 columns of a row,
// warp w the splits w, w + 8, ... with all of its loads in flight, as
// kernels/mla_decode/reduce.cu does (without the lse arithmetic).
// Launched as a programmatic dependent of stream_chunks.
template <int SPLITS>
__global__ void reduce_partials(const float *part, int rows, unsigned short *out) {
    __shared__ float acc_s[8][64];
    asm volatile("griddepcontrol.wait;" ::: "memory");
    const int row = blockIdx.x, col0 = blockIdx.y * 64, lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    constexpr int PER_WARP = (SPLITS + 7) / 8;
    float x[PER_WARP][2];
#pragma unroll
    for (int i = 0; i < PER_WARP; i++)
#pragma unroll
        for (int c = 0; c < 2; c++)
            x[i][c] = w + 8 * i < SPLITS ? part[((size_t)(w + 8 * i) * rows + row) * 512 + col0 + 32 * c + lane] : 0.0f;
    float a0 = 0.0f, a1 = 0.0f;
#pragma unroll
    for (int i = 0; i < PER_WARP; i++) a0 += x[i][0], a1 += x[i][1];
    acc_s[w][lane] = a0, acc_s[w][32 + lane] = a1;
    __syncthreads();
    if (threadIdx.x < 64) {
        float a = 0.0f;
        for (int k = 0; k < 8; k++) a += acc_s[k][threadIdx.x];
        out[(size_t)row * 512 + col0 + threadIdx.x] = (unsigned short)(__float_as_uint(a) >> 16);
    }
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

template <class F>
static void time_it(const char *name, Flush &fl, cudaStream_t s, F launch) {
    const Timing t = time_launches(fl, s, 200, launch);
    printf("%-40s median %6.2f us  p10 %6.2f  p90 %6.2f\n", name, t.median_us, t.p10_us, t.p90_us);
}

// The few-splits reduce's shape (reduce.cu, NUM_SPLITS < 8): 32 lanes
// per row, 4 float4 columns of every split per lane, 4 rows per work-group.
template <int SPLITS>
__global__ void reduce_rows(const float *part, int rows, unsigned short *out) {
    asm volatile("griddepcontrol.wait;" ::: "memory");
    const int lane = threadIdx.x & 31, row = blockIdx.x * 4 + (threadIdx.x >> 5);
    if (row >= rows) return;
    float4 x[SPLITS][4];
#pragma unroll
    for (int sp = 0; sp < SPLITS; sp++)
#pragma unroll
        for (int j = 0; j < 4; j++) x[sp][j] = *(const float4 *)(part + ((size_t)sp * rows + row) * 512 + 4 * (32 * j + lane));
#pragma unroll
    for (int j = 0; j < 4; j++) {
        float4 a = x[0][j];
#pragma unroll
        for (int sp = 1; sp < SPLITS; sp++) a.x += x[sp][j].x, a.y += x[sp][j].y, a.z += x[sp][j].z, a.w += x[sp][j].w;
        *(uint2 *)(out + (size_t)row * 512 + 4 * (32 * j + lane)) =
            make_uint2(__float_as_uint(a.x) >> 16 | (__float_as_uint(a.y) & 0xffff0000u),
                       __float_as_uint(a.z) >> 16 | (__float_as_uint(a.w) & 0xffff0000u));
    }
}

// The same as time_it, with the launch(es) captured once into a CUDA graph
// and the graph launched between the events (as an engine that runs its
// decode step as a graph sees the call).
template <class F>
static void time_graph(const char *name, Flush &fl, cudaStream_t s, F launch) {
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    launch();
    CHECK(cudaStreamEndCapture(s, &g));
    CHECK(cudaGraphInstantiate(&ge, g, 0));
    time_it(name, fl, s, [&] { CHECK(cudaGraphLaunch(ge, s)); });
    CHECK(cudaGraphExecDestroy(ge));
    CHECK(cudaGraphDestroy(g));
}

// Launches kernel k as a programmatic dependent of the kernel before it on
// stream s (it may start before that one ends; griddepcontrol.wait inside
// it waits for that one's results).
template <class... Params, class... Args>
static void launch_dependent(cudaStream_t s, dim3 grid, dim3 block, void (*k)(Params...), Args... args) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid, cfg.blockDim = block, cfg.stream = s;
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = &attr, cfg.numAttrs = 1;
    CHECK(cudaLaunchKernelEx(&cfg, k, args...));
}

int main(int argc, char **argv) {
    const bool split_only = argc > 1 && !strcmp(argv[1], "split");
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    Flush fl;
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

    /* the decode -> reduce pair with nothing in either */
    auto pdl_pair = [&] {
        pdl_first<<<128, 256, smem, s>>>(sink);
        launch_dependent(s, dim3(128), dim3(256), pdl_second, sink);
    };
    if (!split_only) {
    time_it("empty-1", fl, s, [&] { empty_kernel<<<1, 32, 0, s>>>(sink); });
    time_it("empty-128-smem", fl, s, [&] { empty_smem<<<128, 256, smem, s>>>(sink); });
    {
        static big_arg<17424> a17;
        static big_arg<4352> a4;
        memset(&a17, 0, sizeof a17), memset(&a4, 0, sizeof a4);
        time_it("empty-128-arg-17424B", fl, s, [&] { empty_big<17424><<<128, 256, 0, s>>>(sink, a17); });
        time_it("empty-128-arg-4352B", fl, s, [&] { empty_big<4352><<<128, 256, 0, s>>>(sink, a4); });
        time_it("empty-128", fl, s, [&] { empty_kernel<<<128, 256, 0, s>>>(sink); });
    }
    for (int n = 0; n <= 3; n++) {
        char name[32];
        snprintf(name, sizeof name, "chain-%d", n);
        time_it(name, fl, s, [&] { chain<<<128, 256, smem, s>>>(seq_len, table, kv, sink, n); });
    }
    time_it("pdl-pair", fl, s, pdl_pair);
    time_it("plain-pair", fl, s, [&] {
        empty_smem<<<128, 256, smem, s>>>(sink);
        empty_kernel<<<128, 256, 0, s>>>(sink);
    });
    }
    /* the data movement of B=128 (one work-group per SM) at 16 and 32 chunks each */
    char *stream_kv;
    int4 *stream_out;
    CHECK(cudaMalloc(&stream_kv, (size_t)128 * 32 * STREAM_CHUNK));
    CHECK(cudaMemset(stream_kv, 5, (size_t)128 * 32 * STREAM_CHUNK));
    CHECK(cudaMalloc(&stream_out, 128 * 1024 * sizeof(int4)));
    CHECK(cudaFuncSetAttribute(stream_chunks, cudaFuncAttributeMaxDynamicSharedMemorySize, 3 * STREAM_CHUNK));
    /* the same chunks as pages shuffled over a 2.4 GB cache (as the bench
     * lays out B=128 x 16384 keys), looked up per chunk */
    const int n_pages = 128 * 256;
    char *paged_kv;
    int *page_of;
    CHECK(cudaMalloc(&paged_kv, (size_t)n_pages * STREAM_CHUNK));
    CHECK(cudaMemset(paged_kv, 6, (size_t)n_pages * STREAM_CHUNK));
    page_of = shuffled_pages(n_pages);
    static const int stream_cases[][4] = {{16, 2, 0, 0}, {32, 2, 0, 0}, {16, 3, 0, 0}, {32, 3, 0, 0}, {1, 2, 0, 0},
                                          {16, 2, 1500, 0}, {32, 2, 1500, 0}, {16, 2, 2500, 0}, {32, 2, 2500, 0},
                                          {1, 2, 0, 1}, {16, 2, 0, 1}, {32, 2, 0, 1}, {16, 3, 0, 1}, {32, 3, 0, 1},
                                          {16, 2, 1500, 1}, {32, 2, 1500, 1}};
    for (auto &c : stream_cases) {
        if (split_only) break;
        char name[64];
        snprintf(name, sizeof name, "stream %2d chunks %d stages %4d ns%s", c[0], c[1], c[2], c[3] ? " paged" : "");
        time_it(name, fl, s, [&] {
            stream_chunks<<<128, 256, c[1] * STREAM_CHUNK, s>>>(seq_len, table, c[3] ? paged_kv : stream_kv,
                                                                 stream_out, c[0], c[1], c[2], c[3] ? page_of : nullptr,
                                                                 0, CUtensorMap{});
        });
    }
    /* the paged cases again with the copy engine's 2-D boxes (the decode
     * kernels' copies), without and with the map prefetched */
    const CUtensorMap map = chunk_map(paged_kv, (size_t)n_pages * 64);
    static const int tma_cases[][3] = {{1, 1, 2}, {16, 1, 2}, {32, 1, 2}, {1, 2, 2}, {16, 2, 2}, {32, 2, 2}};
    for (auto &c : tma_cases) {
        if (split_only) break;
        char name[64];
        snprintf(name, sizeof name, "stream %2d chunks %d stages paged tma%s", c[0], c[2], c[1] == 2 ? "+prefetch" : "");
        time_it(name, fl, s, [&] {
            stream_chunks<<<128, 256, c[2] * STREAM_CHUNK, s>>>(seq_len, table, paged_kv, stream_out, c[0], c[2], 0,
                                                                 page_of, c[1], map);
        });
    }
    /* The floors of the three small-batch shapes of issue 7 with the
     * decode's split structure and no arithmetic: 128 work-groups stream
     * their chunks (paged, the copy engine's boxes, 2 stages), each writes
     * a 32 KB fp32 partial, and a dependent reduce merges them (B=1 x 16384:
     * 128 splits of 2 chunks; B=8 x 16384: 16 splits of 16 chunks; B=32 x
     * 4096: 4 splits of 16 chunks); then the same captured as a graph. */
    {
        float *part;
        unsigned short *red_out;
        CHECK(cudaMalloc(&part, (size_t)128 * 32768));
        CHECK(cudaMalloc(&red_out, (size_t)512 * 512 * 2));
        CHECK(cudaFuncSetAttribute(stream_chunks, cudaFuncAttributeMaxDynamicSharedMemorySize, 3 * STREAM_CHUNK));
        struct shape { const char *name; int blocks, chunks, splits; };
        static const shape shapes[] = {{"B=1 x 16384", 128, 2, 128}, {"B=1 x 16384 (64 splits)", 64, 4, 64},
                                       {"B=8 x 16384", 128, 16, 16}, {"B=32 x 4096", 128, 16, 4}};
        for (const shape &sh : shapes) {
            const int rows = sh.blocks * 16 / sh.splits; /* 16 rows per work-group */
            auto decode_only = [&] {
                stream_chunks<<<sh.blocks, 256, 2 * STREAM_CHUNK, s>>>(seq_len, table, paged_kv, stream_out, sh.chunks,
                                                                        2, 0, page_of, 1, map, (int4 *)part);
            };
            auto with_reduce = [&] {
                decode_only();
                const float *p = part;
                const dim3 wide(rows, 8), threads(256);
                if (sh.splits == 128) launch_dependent(s, wide, threads, reduce_partials<128>, p, rows, red_out);
                else if (sh.splits == 64) launch_dependent(s, wide, threads, reduce_partials<64>, p, rows, red_out);
                else if (sh.splits == 16) launch_dependent(s, wide, threads, reduce_partials<16>, p, rows, red_out);
                else /* 4 splits: the few-splits shape (session 12) */
                    launch_dependent(s, dim3((rows + 3) / 4), dim3(128), reduce_rows<4>, p, rows, red_out);
            };
            char name[80];
            snprintf(name, sizeof name, "split floor %s: stream, 16 KB out", sh.name);
            time_it(name, fl, s, [&] {
                stream_chunks<<<sh.blocks, 256, 2 * STREAM_CHUNK, s>>>(seq_len, table, paged_kv, stream_out, sh.chunks,
                                                                        2, 0, page_of, 1, map);
            });
            snprintf(name, sizeof name, "split floor %s: stream + partials", sh.name);
            time_it(name, fl, s, decode_only);
            snprintf(name, sizeof name, "split floor %s: + reduce", sh.name);
            time_it(name, fl, s, with_reduce);
            snprintf(name, sizeof name, "split floor %s: + reduce, graph", sh.name);
            time_graph(name, fl, s, with_reduce);
        }
        time_graph("empty-128-smem, graph", fl, s, [&] { empty_smem<<<128, 256, smem, s>>>(sink); });
        time_graph("pdl-pair, graph", fl, s, pdl_pair);
        CHECK(cudaFree(part));
        CHECK(cudaFree(red_out));
    }
    if (split_only) {
        printf("ok\n");
        return 0;
    }
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
