// pair-stream.cu - what the 128-head decode's data movement costs on its own
// (issue 28).  At 128 heads a request's 128 query rows are two 64-row tiles,
// each a work-group of the 64-row warpgroup path, and each reads every chunk
// of the request's keys: the keys cross L2 twice.  Nsight Compute put that
// path's L2 throughput at 91% (PERFLOG session 17); this probe asks whether
// that, and not the arithmetic, is what holds B=32 x 16384 at ~272 us.
//
// Every work-group streams its chunks (64 keys x 576 bf16 = 73,728 bytes,
// nine 64 x 64 boxes of the copy engine, 128-byte swizzle, pages of 64 keys
// shuffled over the cache as the bench lays them out) through two stages of
// shared memory next to 72 KB standing for Q (216 KB: one work-group per SM,
// as on the real path), "uses" each chunk (every thread reads 16 bytes) and
// holds it spin_ns (standing for the chunk's arithmetic) before the stage is
// refilled.  The grid is the decode's: 32 requests x 2 splits x 2 row tiles
// = 128 work-groups of 128 chunks each.  Modes (the table in main):
//   shared       the two tiles of a request read the same chunks (today)
//   +evict_first the same, copies with an L2 evict_first policy (FlashMLA's
//                cache hint)
//   distinct     every work-group reads keys of its own (twice the DRAM bytes,
//                no L2 sharing): what the pair costs without reuse
//   single       one tile per request, its chunks halved between two
//                work-groups (as 4 splits): the bytes once, on as many SMs
//   producer warp  warp 7 issues the copies, each as soon as every consumer
//                warp has released the stage (an "empty" mbarrier per stage),
//                instead of thread 0 after a work-group barrier
//   3 stages     three 73.7 KB stages and no room for Q (what more bytes in
//                flight would give)
//   one release  (producer form) the consumer warps meet at a barrier and
//                one thread releases the stage, instead of each warp
//   clusters of 2  the two tiles launched as one cluster (same GPC, started
//                together), copies as before
//   multicast    the two tiles as a cluster of two; each issues half of every
//                chunk's boxes with .multicast::cluster into both work-groups'
//                stages; a stage is refilled once both have used it (each
//                user arrives on the empty barrier of its own work-group and
//                of the peer); "one issuer": rank 0 copies all nine boxes
// Timing as mla-tune bench: the L2 flushed by a read kernel, events around the
// launch, median of 50.
//
// Output of 2026-11-25 (H100), each with the table of its day:
// reports/h100/session25/run1-pair-stream.txt (the first form: copies by
// thread 0 only), run2-, run3- and run7-pair-stream.txt.
//
// Build here (CUDA toolkit; runtime linked statically):
//   nvcc -O2 -gencode arch=compute_90a,code=sm_90a -o build/pair-stream tuner/probes/pair-stream.cu
// run on the device: build/pair-stream
#include <cuda.h>
#include <cudaTypedefs.h>
#include "probe_common.cuh"

#define CHUNK 73728 /* 64 keys x 576 bf16 */
#define Q_BYTES 73728
#define MAX_STAGES 3

enum { SHARED, DISTINCT, SINGLE };            /* which keys a work-group reads */
enum { HINT_NONE, HINT_EVICT_FIRST, HINT_EVICT_LAST };

/* one line of the table: how the chunks move */
struct Mode {
    const char *name;
    int pattern;  /* SHARED, DISTINCT, SINGLE */
    int stages;   /* 2 (beside Q's 72 KB, as the real path) or 3 (no room for Q) */
    int mc;       /* the two tiles as a cluster, each chunk multicast into both */
    int producer; /* a warp of its own issues the copies (else thread 0 after a barrier) */
    int hint;     /* an L2 policy on the copies */
    int cluster;  /* launched as clusters of two even without multicast (where the pair runs) */
    int coarse;   /* producer form: the consumer warps meet at a barrier and one thread releases the stage */
    int issuers;  /* multicast: 2, each work-group copies half of a chunk's boxes; 1, rank 0 copies all */
};

static int smem_bytes(const Mode &m) { return m.stages * CHUNK + (m.stages == 2 ? Q_BYTES : 0) + 1024; }

__device__ __forceinline__ unsigned smem_addr(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void wait_parity(unsigned bar, unsigned parity) {
    unsigned done = 0;
    while (!done)
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done) : "r"(bar), "r"(parity) : "memory");
}

__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

__device__ __forceinline__ void hold(int spin_ns) {
    if (spin_ns <= 0) return;
    unsigned long long t0, t1;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1)); while (t1 - t0 < (unsigned long long)spin_ns);
}

#define CONSUMER_WARPS 7 /* with a producer warp: warps 0-6 use the chunks, warp 7 copies */

// chunk c of a work-group: page_of[first + c], first = the start of the keys
// it reads (its request's and split's, its own in DISTINCT, half of them in
// SINGLE)
__global__ void __launch_bounds__(256, 1)
pair_stream(const int *page_of, int chunks, int spin_ns, const Mode m, const __grid_constant__ CUtensorMap map,
            int4 *out) {
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    unsigned char *base = smem_raw + ((1024u - (smem_addr(smem_raw) & 1023u)) & 1023u);
    unsigned char *stage = base + (m.stages == 2 ? Q_BYTES : 0);
    __shared__ __align__(8) unsigned long long full[MAX_STAGES], empty[MAX_STAGES];
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, S = m.stages;
    unsigned rank = 0;
    if (m.mc) asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    const size_t first = m.pattern == DISTINCT ? (size_t)blockIdx.x * chunks
                         : m.pattern == SINGLE ? (size_t)(blockIdx.x / 2) * chunks + (blockIdx.x & 1) * (chunks / 2)
                                               : (size_t)(blockIdx.x / 2) * chunks;
    if (m.pattern == SINGLE) chunks /= 2;
    /* a stage's "empty" phase completes when every user of it is done: each
     * consumer warp (producer form) or the work-group (thread 0), of this
     * work-group and, multicast, of the peer too */
    const unsigned users = (m.producer && !m.coarse ? CONSUMER_WARPS : 1) * (m.mc ? 2 : 1);
    if (tid == 0) {
        for (int s = 0; s < S; s++) {
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_addr(&full[s])));
            asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(&empty[s])), "r"(users));
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    if (m.mc || m.cluster) cluster_sync();
    else __syncthreads();
    unsigned long long policy = 0;
    if (m.hint == HINT_EVICT_FIRST) asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
    if (m.hint == HINT_EVICT_LAST) asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
    // the peer's empty barriers (multicast): a use of a stage is reported to both issuers
    unsigned peer_empty[MAX_STAGES] = {0, 0, 0};
    if (m.mc)
        for (int s = 0; s < S; s++)
            asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(peer_empty[s]) : "r"(smem_addr(&empty[s])), "r"(rank ^ 1u));

    auto issue = [&](int c) {
        const int s = c % S;
        const unsigned fb = smem_addr(&full[s]);
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(fb), "r"(CHUNK) : "memory");
        const int row = page_of[first + c] * 64;
        for (int k = 0; k < 9; k++) {
            const unsigned dst = smem_addr(stage + s * CHUNK + k * 8192);
            if (m.mc) {
                /* two issuers: boxes 0,2,4,6,8 by rank 0, 1,3,5,7 by rank 1; one: all by rank 0 */
                if (m.issuers == 2 ? (k & 1) != (int)rank : rank != 0) continue;
                asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                             " [%0], [%1, {%2, %3}], [%4], %5;"
                             ::"r"(dst), "l"(&map), "r"(k * 64), "r"(row), "r"(fb), "h"((unsigned short)3) : "memory");
            } else if (m.hint != HINT_NONE) {
                asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint"
                             " [%0], [%1, {%2, %3}], [%4], %5;"
                             ::"r"(dst), "l"(&map), "r"(k * 64), "r"(row), "r"(fb), "l"(policy) : "memory");
            } else {
                asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                             ::"r"(dst), "l"(&map), "r"(k * 64), "r"(row), "r"(fb) : "memory");
            }
        }
    };
    /* this user is done with stage s: tell both issuers */
    auto release = [&](int s) {
        asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(&empty[s])) : "memory");
        if (m.mc) asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(peer_empty[s]) : "memory");
    };
    int4 acc = make_int4(0, 0, 0, 0);
    if (m.producer) {
        if (warp == CONSUMER_WARPS) {
            if (lane == 0)
                for (int c = 0; c < chunks; c++) {
                    if (c >= S) wait_parity(smem_addr(&empty[c % S]), (unsigned)(c / S - 1) & 1u);
                    issue(c);
                }
        } else {
            for (int c = 0; c < chunks; c++) {
                wait_parity(smem_addr(&full[c % S]), (unsigned)(c / S) & 1u);
                const int4 x = *(const int4 *)(stage + (c % S) * CHUNK + tid * 16);
                acc.x ^= x.x, acc.y ^= x.y, acc.z ^= x.z, acc.w ^= x.w;
                hold(spin_ns);
                if (m.coarse) {
                    asm volatile("bar.sync 1, %0;" ::"n"(CONSUMER_WARPS * 32) : "memory");
                    if (tid == 0) release(c % S);
                } else {
                    __syncwarp();
                    if (lane == 0) release(c % S);
                }
            }
        }
    } else {
        if (tid == 0)
            for (int c = 0; c < S && c < chunks; c++) issue(c);
        for (int c = 0; c < chunks; c++) {
            const int s = c % S;
            wait_parity(smem_addr(&full[s]), (unsigned)(c / S) & 1u);
            const int4 x = *(const int4 *)(stage + s * CHUNK + tid * 16);
            acc.x ^= x.x, acc.y ^= x.y, acc.z ^= x.z, acc.w ^= x.w;
            hold(spin_ns);
            __syncthreads();
            if (tid == 0 && c + S < chunks) {
                if (m.mc) { /* then wait until the peer is done with it too */
                    release(s);
                    wait_parity(smem_addr(&empty[s]), (unsigned)(c / S) & 1u);
                }
                issue(c + S);
            }
        }
    }
    __syncthreads();
    if (m.mc) cluster_sync();
    for (int i = tid; i < 4096; i += blockDim.x) out[blockIdx.x * 4096 + i] = acc; /* 64 rows x 512 bf16 */
}

template <class F>
static void time_it(const char *name, Flush &fl, cudaStream_t s, double bytes, F launch) {
    const Timing t = time_launches(fl, s, 50, launch);
    printf("%-52s median %7.1f us  p10 %7.1f  p90 %7.1f  chunk bytes into SMs %6.0f GB/s\n", name, t.median_us,
           t.p10_us, t.p90_us, bytes / t.median_us * 1e-3);
    fflush(stdout);
}

int main() {
    const int requests = 32, keys = 16384, splits = 2, chunks = keys / 64 / splits;
    const int pages = requests * keys / 64 * 2; /* twice: DISTINCT reads keys of its own */
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    Flush fl;
    char *kv;
    CHECK(cudaMalloc(&kv, (size_t)pages * CHUNK));
    CHECK(cudaMemset(kv, 7, (size_t)pages * CHUNK));
    /* stream i's chunk c = page_of[i * chunks + c], pages shuffled; streams
     * 0..63 are the (request, split) pairs, 64..127 the extra keys of DISTINCT */
    const int *page_of = shuffled_pages(pages);
    int4 *out;
    CHECK(cudaMalloc(&out, (size_t)128 * 4096 * sizeof(int4)));

    const CUtensorMap map = chunk_map(kv, (size_t)pages * 64);
    CHECK(cudaFuncSetAttribute(pair_stream, cudaFuncAttributeMaxDynamicSharedMemorySize, 3 * CHUNK + 1024));
    printf("B=%d x %d keys, %d splits, 2 row tiles: %d work-groups of %d chunks (73.7 KB)\n", requests, keys, splits,
           requests * splits * 2, chunks);
    static const Mode modes[] = {
        {"shared", SHARED, 2, 0, 0, HINT_NONE, 0, 0, 0},
        {"shared+evict_first", SHARED, 2, 0, 0, HINT_EVICT_FIRST, 0, 0, 0},
        {"distinct", DISTINCT, 2, 0, 0, HINT_NONE, 0, 0, 0},
        {"single", SINGLE, 2, 0, 0, HINT_NONE, 0, 0, 0},
        {"shared, producer warp", SHARED, 2, 0, 1, HINT_NONE, 0, 0, 0},
        {"shared, producer warp, 3 stages", SHARED, 3, 0, 1, HINT_NONE, 0, 0, 0},
        {"shared, producer warp, one release", SHARED, 2, 0, 1, HINT_NONE, 0, 1, 0},
        {"shared, clusters of 2", SHARED, 2, 0, 0, HINT_NONE, 1, 0, 0},
        {"shared, producer warp, clusters of 2", SHARED, 2, 0, 1, HINT_NONE, 1, 0, 0},
        {"multicast", SHARED, 2, 1, 0, HINT_NONE, 1, 0, 2},
        {"multicast, producer warp", SHARED, 2, 1, 1, HINT_NONE, 1, 0, 2},
        {"multicast, producer warp, one release", SHARED, 2, 1, 1, HINT_NONE, 1, 1, 2},
        {"multicast, producer warp, one issuer", SHARED, 2, 1, 1, HINT_NONE, 1, 0, 1},
        {"multicast, producer warp, 3 stages", SHARED, 3, 1, 1, HINT_NONE, 1, 0, 2},
    };
    static const int spins[] = {0, 1000, 1500, 2000};
    for (int spin : spins)
        for (const Mode &m : modes) {
            const int blocks = requests * splits * 2;
            char name[80];
            snprintf(name, sizeof name, "%s, hold %d ns", m.name, spin);
            const double bytes = (double)blocks * (m.pattern == SINGLE ? chunks / 2 : chunks) * CHUNK;
            time_it(name, fl, s, bytes, [&] {
                cudaLaunchConfig_t cfg = {};
                cfg.gridDim = dim3(blocks), cfg.blockDim = dim3(256), cfg.dynamicSmemBytes = smem_bytes(m), cfg.stream = s;
                cudaLaunchAttribute attr;
                attr.id = cudaLaunchAttributeClusterDimension;
                attr.val.clusterDim.x = m.mc || m.cluster ? 2 : 1, attr.val.clusterDim.y = 1, attr.val.clusterDim.z = 1;
                cfg.attrs = &attr, cfg.numAttrs = 1;
                CHECK(cudaLaunchKernelEx(&cfg, pair_stream, page_of, chunks, spin, m, map, out));
            });
        }
    printf("ok\n");
    return 0;
}
