// How many thread-block clusters of 1, 2 and 4 work-groups of the 64-row
// decode path's size (256 threads, 230928 bytes of dynamic shared memory)
// the GPU holds at once (cudaOccupancyMaxActiveClusters), and where a
// one-wave grid of 66 clusters of 2 actually lands (SM ids, start times).
#include <cstdio>
#include <cuda_runtime.h>
__global__ void probe(unsigned *sm, unsigned long long *t0) {
    extern __shared__ unsigned char smem[];
    unsigned id; asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
    unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    if (threadIdx.x == 0) { sm[blockIdx.x] = id; t0[blockIdx.x] = t; smem[0] = 1; }
    unsigned long long until = t + 200000; // 200 us busy
    while (true) { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); if (t > until) break; }
}
int main() {
    const size_t smem = 230928;
    cudaFuncSetAttribute(probe, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    cudaFuncSetAttribute(probe, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    for (int cs = 1; cs <= 4; cs *= 2) {
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = dim3(132 / cs * cs); cfg.blockDim = dim3(256); cfg.dynamicSmemBytes = smem;
        cudaLaunchAttribute a; a.id = cudaLaunchAttributeClusterDimension; a.val.clusterDim.x = cs; a.val.clusterDim.y = 1; a.val.clusterDim.z = 1;
        cfg.attrs = &a; cfg.numAttrs = 1;
        int n = -1; cudaError_t e = cudaOccupancyMaxActiveClusters(&n, probe, &cfg);
        printf("cluster size %d: max active clusters %d (%d work-groups) %s\n", cs, n, n * cs, cudaGetErrorString(e));
        unsigned *sm; unsigned long long *t0; int g = 132 / cs * cs;
        cudaMalloc(&sm, 4 * g); cudaMalloc(&t0, 8 * g);
        e = cudaLaunchKernelEx(&cfg, probe, sm, t0); cudaDeviceSynchronize();
        unsigned hs[132]; unsigned long long ht[132];
        cudaMemcpy(hs, sm, 4 * g, cudaMemcpyDeviceToHost); cudaMemcpy(ht, t0, 8 * g, cudaMemcpyDeviceToHost);
        unsigned long long lo = ht[0]; for (int i = 0; i < g; i++) if (ht[i] < lo) lo = ht[i];
        int late = 0; for (int i = 0; i < g; i++) late += ht[i] - lo > 100000;
        printf("  %d work-groups launched (%s): %d started more than 100 us after the first (a second wave)\n", g, cudaGetErrorString(e), late);
        cudaFree(sm); cudaFree(t0);
    }
    return 0;
}
