/*
 * prelude.h - the one place where kernel sources meet vendor differences.
 *
 * Every kernel in kernels/ is compiled with this text in front of it (the
 * JIT concatenates them; see kernels/sources.h), by NVRTC for sm_*, by hiprtc
 * for gfx* on a ROCm host, and by clang's HIP compiler for the offline
 * gfx942 check.  Kernels use only what is defined here for anything that
 * differs between CUDA and HIP:
 *
 *   MT_WARP                 threads per warp / wavefront (32 or 64)
 *   mt_shfl_xor(v, m)       butterfly shuffle within a warp
 *   mt_shfl_xor32(v, m)     the same within groups of 32 lanes
 *   mt_shfl_up(v, d)        lane i gets lane i - d's v (its own below d); any 32/64-bit type
 *   mt_warp_sum / max       reductions over a warp, result in every lane
 *   mt_exp2f, mt_log2f      fast base-2 exponent and logarithm
 *   mt_bf16_to_f32 ...      storage <-> float conversions, bit-exact and
 *   mt_f16_to_f32 ...       identical on both vendors (no vendor headers)
 *   mt_fp8e4m3_to_f32       fp8 e4m3 in both encodings: OCP "fn" and
 *   mt_fp8e4m3fnuz_to_f32   "fnuz" (kernels/dtype.h has the definitions)
 *   mt_cvt_e4m3x2_f16x2 ... two fp8 -> f16x2, exact (hardware where it reads
 *                           the encoding: sm_89+ and gfx950 OCP, gfx942 fnuz)
 *   MT_NEG_INF, MT_NAN
 *   mt_grid_dependency_wait   programmatic dependent launch (sm_90+; a
 *   mt_grid_launch_dependents no-op elsewhere)
 *   mt_wgmma_*, mt_swizzle128  Hopper warpgroup matrix instructions (sm_90a only;
 *                           MT_HAVE_WGMMA says they exist)
 *   mt_cluster_*, mt_dsmem_*  thread-block clusters and their distributed
 *                           shared memory (sm_90a, with MT_HAVE_WGMMA)
 *
 * Storage types are plain integers (uint16_t for bf16/fp16, uint8_t for
 * fp8): the conversions are ours, so no vendor half/bfloat16 header is
 * needed under NVRTC or hiprtc.
 */
#if defined(__HIP__) || defined(__HIPCC_RTC__) || defined(__HIP_PLATFORM_AMD__)
#define MT_HIP 1
#if !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#endif
/* The wavefront width, from the target: GCN / CDNA (gfx9: gfx90a, gfx942,
 * gfx950) run 64-wide, RDNA (gfx10-12) 32-wide under HIP.  Not from
 * __AMDGCN_WAVEFRONT_SIZE: LLVM removed that macro (clang 22, ROCm 7.2).
 * Compilers older than the family macros (__GFX9__ ...) still name the chip
 * (__gfx90a__ ...), so both are checked. */
#if defined(__GFX10__) || defined(__GFX11__) || defined(__GFX12__)
#define MT_WARP 32
#elif defined(__GFX9__) || defined(__gfx900__) || defined(__gfx906__) || defined(__gfx908__) || \
    defined(__gfx90a__) || defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__) || defined(__gfx950__)
#define MT_WARP 64
#else
#error "mla-tune: unknown AMD target (no __GFX9__ / __GFX1x__ macro): its wavefront width is not known"
#endif
#else
#define MT_CUDA 1
#define MT_WARP 32
#endif

/* A kernel parameter whose address device code may take without a copy
 * to local memory (CUDA's __grid_constant__; HIP's parameters are
 * addressable as they are). */
#if MT_CUDA
#define MT_GRID_CONST __grid_constant__
#else
#define MT_GRID_CONST
#endif

typedef unsigned char mt_u8;
typedef unsigned short mt_u16;
typedef unsigned int mt_u32;
typedef unsigned long long mt_u64;

#define MT_NEG_INF (__int_as_float(0xff800000))
#define MT_NAN (__int_as_float(0x7fc00000))

__device__ __forceinline__ float mt_shfl_xor(float v, int mask) {
#if MT_CUDA
    return __shfl_xor_sync(0xffffffffu, v, mask);
#else
    return __shfl_xor(v, mask);
#endif
}

/* Butterfly shuffle within aligned groups of 32 lanes (the whole warp on
 * NVIDIA, half a wavefront on 64-wide AMD targets); float or int. */
template <typename T>
__device__ __forceinline__ T mt_shfl_xor32(T v, int mask) {
#if MT_CUDA
    return __shfl_xor_sync(0xffffffffu, v, mask);
#else
    return __shfl_xor(v, mask, 32);
#endif
}

template <typename T>
__device__ __forceinline__ T mt_shfl_up(T v, int delta) {
#if MT_CUDA
    return __shfl_up_sync(0xffffffffu, v, delta);
#else
    return __shfl_up(v, delta);
#endif
}

__device__ __forceinline__ float mt_warp_sum(float v) {
#pragma unroll
    for (int m = MT_WARP / 2; m > 0; m >>= 1) v += mt_shfl_xor(v, m);
    return v;
}

__device__ __forceinline__ float mt_warp_max(float v) {
#pragma unroll
    for (int m = MT_WARP / 2; m > 0; m >>= 1) v = fmaxf(v, mt_shfl_xor(v, m));
    return v;
}

__device__ __forceinline__ float mt_exp2f(float x) { return exp2f(x); }
__device__ __forceinline__ float mt_log2f(float x) { return log2f(x); }

/* bf16 is the top half of an IEEE float. */
__device__ __forceinline__ float mt_bf16_to_f32(mt_u16 h) { return __int_as_float((int)((mt_u32)h << 16)); }

/* float -> bf16, round to nearest even; NaN stays NaN. */
__device__ __forceinline__ mt_u16 mt_f32_to_bf16(float f) {
    mt_u32 u = (mt_u32)__float_as_int(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (mt_u16)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (mt_u16)(u >> 16);
}

/* IEEE binary16 -> float, exact for every input (subnormals, inf, NaN). */
__device__ __forceinline__ float mt_f16_to_f32(mt_u16 h) {
    mt_u32 sign = (mt_u32)(h & 0x8000u) << 16;
    mt_u32 exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    if (exp == 0x1fu) return __int_as_float((int)(sign | 0x7f800000u | (mant << 13)));
    if (exp == 0) {  /* zero or subnormal: mant * 2^-24 */
        float v = (float)mant * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    return __int_as_float((int)(sign | ((exp + 112u) << 23) | (mant << 13)));
}

/* float -> IEEE binary16, round to nearest even, overflow to inf. */
__device__ __forceinline__ mt_u16 mt_f32_to_f16(float f) {
    mt_u32 u = (mt_u32)__float_as_int(f);
    mt_u32 sign = (u >> 16) & 0x8000u;
    mt_u32 a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (mt_u16)(sign | 0x7e00u);            /* NaN */
    if (a >= 0x477ff000u) return (mt_u16)(sign | 0x7c00u);           /* rounds past 65504 */
    if (a < 0x38800000u) {                                           /* below 2^-14: subnormal */
        /* scale so the result's integer part is the subnormal mantissa */
        float v = __int_as_float((int)a) * 16777216.0f;              /* * 2^24 */
        mt_u32 m = (mt_u32)__float2uint_rn(v);
        return (mt_u16)(sign | m);
    }
    mt_u32 r = a + 0xfffu + ((a >> 13) & 1u);                        /* round mantissa to 10 bits */
    return (mt_u16)(sign | ((r - 0x38000000u) >> 13));
}

/* fp8 e4m3 ("fn": no infinities, S.1111.111 is NaN), bias 7. */
__device__ __forceinline__ float mt_fp8e4m3_to_f32(mt_u8 b) {
    mt_u32 sign = (mt_u32)(b & 0x80u) << 24;
    mt_u32 exp = (b >> 3) & 0xfu, mant = b & 0x7u;
    if (exp == 0xfu && mant == 0x7u) return MT_NAN;
    if (exp == 0) {  /* subnormal: mant * 2^-9 */
        float v = (float)mant * 0.001953125f;
        return sign ? -v : v;
    }
    return __int_as_float((int)(sign | ((exp + 120u) << 23) | (mant << 20)));
}

/* fp8 e4m3 "fnuz" (gfx942's): bias 8, no infinities, no negative zero,
 * 0x80 (fn's -0) is the only NaN; so 0x7f / 0xff are +-240, not NaN. */
__device__ __forceinline__ float mt_fp8e4m3fnuz_to_f32(mt_u8 b) {
    if (b == 0x80u) return MT_NAN;
    mt_u32 sign = (mt_u32)(b & 0x80u) << 24;
    mt_u32 exp = (b >> 3) & 0xfu, mant = b & 0x7u;
    if (exp == 0) {  /* subnormal: mant * 2^-10 */
        float v = (float)mant * 0.0009765625f;
        return sign ? -v : v;
    }
    return __int_as_float((int)(sign | ((exp + 119u) << 23) | (mant << 20)));
}

/* Programmatic dependent launch (runtime/gpu/backend.h, launch_dependent): a
 * kernel launched that way may start while the kernel before it in the
 * stream still runs, so it waits here before reading anything that kernel
 * wrote (the wait also makes those writes visible).  The kernel before it
 * may say early that its dependents can be scheduled.  Both are no-ops
 * where the launch is ordinary (AMD, NVIDIA before sm_90). */
__device__ __forceinline__ void mt_grid_dependency_wait(void) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void mt_grid_launch_dependents(void) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}

/* --- timeline probe (tuner/trace-timeline.sh; NVIDIA only) ----------------
 * Off unless the source is compiled with MT_TRACE defined, which the
 * runtime never does: the probe script puts a traced copy of the kernel
 * sources in MLA_TUNE_KERNEL_DIR.  MT_TRACE_MARK(i) keeps the global timer
 * (ns, comparable across SMs) and the SM's cycle counter (for short
 * intervals) in slot i (a constant, so the slots stay in registers).
 * MT_TRACE_DUMP(kind) prints one line per calling thread:
 *   MTT kind block smid gt[0..7] clk[0..7]   (slots never marked are 0)
 * A kernel with wgmma must not print: the call to printf makes ptxas
 * serialize every wgmma of the kernel (warning C7510), which would change
 * what is measured.  So the decode kernel keeps its lines in a module
 * buffer (MT_TRACE_KEEP) and the reduce, launched after it, prints them
 * (mt_trace_print_kept) after its own marks. */
#if defined(MT_TRACE) && MT_CUDA
#define MT_TRACE_MAX_KEPT 4096
struct mt_trace {
    mt_u64 gt[8], clk[8];
};
struct mt_trace_line {
    int kind, block;
    unsigned smid;
    mt_trace t;
};
__device__ mt_trace_line mt_trace_kept[MT_TRACE_MAX_KEPT];
__device__ int mt_trace_kept_count;
__device__ __forceinline__ void mt_trace_mark(mt_trace &t, int i) {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t.gt[i])::"memory");
    t.clk[i] = (mt_u64)clock64();
}
/* the block's index in its grid, and the grid's size */
__device__ __forceinline__ int mt_trace_block(void) {
    return (int)(blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z));
}
__device__ __forceinline__ int mt_trace_blocks(void) { return (int)(gridDim.x * gridDim.y * gridDim.z); }
__device__ __forceinline__ mt_trace_line mt_trace_line_of(const mt_trace &t, int kind) {
    mt_trace_line l;
    l.kind = kind, l.block = mt_trace_block(), l.t = t;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(l.smid));
    return l;
}
__device__ __noinline__ void mt_trace_print(const mt_trace_line &l) {
    const mt_trace &t = l.t;
    printf("MTT %d %d %u %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu\n", l.kind,
           l.block, l.smid, t.gt[0], t.gt[1], t.gt[2], t.gt[3], t.gt[4], t.gt[5], t.gt[6], t.gt[7], t.clk[0],
           t.clk[1], t.clk[2], t.clk[3], t.clk[4], t.clk[5], t.clk[6], t.clk[7]);
}
/* keeps line `slot` (0 .. per_block - 1) of the calling block */
__device__ __forceinline__ void mt_trace_keep(const mt_trace &t, int kind, int slot, int per_block) {
    const int index = per_block * mt_trace_block() + slot;
    if (index < MT_TRACE_MAX_KEPT) mt_trace_kept[index] = mt_trace_line_of(t, kind);
    if (index == 0) mt_trace_kept_count = min(per_block * mt_trace_blocks(), MT_TRACE_MAX_KEPT);
}
/* a later kernel's blocks print the kept lines between them (after
 * mt_grid_dependency_wait, so the lines are visible) */
__device__ __noinline__ void mt_trace_print_kept(void) {
    for (int i = mt_trace_block(); i < mt_trace_kept_count; i += mt_trace_blocks()) mt_trace_print(mt_trace_kept[i]);
}
#define MT_TRACE_DECL mt_trace mt_tr = {}
#define MT_TRACE_MARK(i) mt_trace_mark(mt_tr, (i))
#define MT_TRACE_DUMP(kind) mt_trace_print(mt_trace_line_of(mt_tr, (kind)))
#define MT_TRACE_KEEP(kind, slot, per_block) mt_trace_keep(mt_tr, (kind), (slot), (per_block))
#define MT_TRACE_PRINT_KEPT() mt_trace_print_kept()
#else
#define MT_TRACE_DECL
#define MT_TRACE_MARK(i) ((void)0)
#define MT_TRACE_DUMP(kind) ((void)0)
#define MT_TRACE_KEEP(kind, slot, per_block) ((void)0)
#define MT_TRACE_PRINT_KEPT() ((void)0)
#endif

/* --- NVIDIA matrix units and asynchronous copies (sm_80 and newer) --------
 * Used by the MMA=1 path on NVIDIA (kernels/mla_decode/mma_sync.cu); the AMD matrix cores
 * (MFMA) follow in the section after this one. */
#if MT_CUDA
/* The shared-memory address of a generic pointer into shared memory (what
 * the instructions below take). */
__device__ __forceinline__ unsigned mt_smem_addr(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }

/* D = A * B + D, m16n8k16, fp32 accumulators; A/B as packed 16-bit pairs. */
__device__ __forceinline__ void mt_mma_16816(float *d, const mt_u32 *a, const mt_u32 *b, int fp16) {
    if (fp16)
        asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    else
        asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/* Two 8x8 16-bit matrices from shared memory, transposed: threads 0-15
 * give the row addresses (row t%8 of matrix t/8). */
__device__ __forceinline__ void mt_ldmatrix_x2_trans(mt_u32 *r, const void *smem_row) {
    unsigned addr = mt_smem_addr(smem_row);
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];" : "=r"(r[0]), "=r"(r[1]) : "r"(addr));
}

/* Two 8x8 16-bit matrices from shared memory: threads 0-15 give the row
 * addresses (row t%8 of matrix t/8); the B operand of one n8 tile stored
 * as [n][k]. */
__device__ __forceinline__ void mt_ldmatrix_x2(mt_u32 *r, const void *smem_row) {
    unsigned addr = mt_smem_addr(smem_row);
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];" : "=r"(r[0]), "=r"(r[1]) : "r"(addr));
}

/* Four 8x8 16-bit matrices from shared memory: threads 8i..8i+7 give the
 * row addresses of matrix i; register i receives matrix i (the A operand of
 * m16n8k16 from a row-major tile, or two k-steps of a B operand stored as
 * [n][k]). */
__device__ __forceinline__ void mt_ldmatrix_x4(mt_u32 *r, const void *smem_row) {
    unsigned addr = mt_smem_addr(smem_row);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

/* The same, transposed: the B operand of two n8 tiles from a [k][n] tile. */
__device__ __forceinline__ void mt_ldmatrix_x4_trans(mt_u32 *r, const void *smem_row) {
    unsigned addr = mt_smem_addr(smem_row);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

/* Two floats -> packed bf16x2 / f16x2 (lo in the low half), round to
 * nearest even, in one instruction. */
__device__ __forceinline__ mt_u32 mt_pack_bf16x2(float lo, float hi) {
    mt_u32 r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}
__device__ __forceinline__ mt_u32 mt_pack_f16x2(float lo, float hi) {
    mt_u32 r;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

/* Two fp8 e4m3 (low byte first) -> f16x2, exact (every e4m3 value, NaN
 * included, is an fp16 value).  One instruction on sm_89 and newer. */
__device__ __forceinline__ mt_u32 mt_cvt_e4m3x2_f16x2(mt_u16 two) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    mt_u32 r;
    asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(r) : "h"(two));
    return r;
#else
    return (mt_u32)mt_f32_to_f16(mt_fp8e4m3_to_f32((mt_u8)(two & 0xff))) |
           ((mt_u32)mt_f32_to_f16(mt_fp8e4m3_to_f32((mt_u8)(two >> 8))) << 16);
#endif
}

/* The same for fnuz, which NVIDIA has no instruction for: each byte to
 * float in software, then the pair to f16x2 in one instruction (exact:
 * every fnuz value, subnormals down to 2^-10 included, is an fp16 value). */
__device__ __forceinline__ mt_u32 mt_cvt_e4m3fnuzx2_f16x2(mt_u16 two) {
    return mt_pack_f16x2(mt_fp8e4m3fnuz_to_f32((mt_u8)(two & 0xff)), mt_fp8e4m3fnuz_to_f32((mt_u8)(two >> 8)));
}

/* 16 bytes global -> shared without registers; src_bytes = 0 writes zeros. */
__device__ __forceinline__ void mt_cp_async16(void *smem, const void *gmem, int src_bytes) {
    unsigned addr = mt_smem_addr(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(addr), "l"(gmem), "r"(src_bytes));
}
__device__ __forceinline__ void mt_cp_async_commit(void) { asm volatile("cp.async.commit_group;"); }
template <int N> __device__ __forceinline__ void mt_cp_async_wait(void) {
    asm volatile("cp.async.wait_group %0;" ::"n"(N));
}
#endif

/* --- NVIDIA Hopper warpgroup matrix instructions (sm_90a) -----------------
 * Used by the MMA=2 paths (kernels/mla_decode/wgmma*.cu).  A warpgroup is 4 consecutive
 * warps (128 threads); one wgmma.mma_async multiplies a 64-row A (shared
 * memory through a descriptor, or registers) by a B in shared memory into
 * fp32 accumulators spread over the warpgroup:
 *   warp w of the group holds rows 16w .. 16w+15; lane l holds, for each
 *   8-column block j, d[4j+0..1] = row 16w + l/4, columns 8j + 2(l%4) + 0..1
 *   and d[4j+2..3] = the same columns of row 16w + l/4 + 8
 * (the m16n8 accumulator layout of mma.sync, repeated over the columns).
 * An A operand in registers has mma.sync's m16n8k16 A layout per warp, so
 * the accumulators of one product become the A operand of the next without
 * moving between lanes.
 *
 * Operands in shared memory are described by a 64-bit descriptor; the only
 * layout used here is the 128-byte swizzle: a tile is stored as blocks of
 * 64 16-bit columns; in a block, row r takes 128 bytes at r * 128 and its
 * 16-byte piece u sits at position u ^ (r % 8) (mt_swizzle128).  Blocks are
 * 1024-byte aligned.  K-major (the reduction dimension contiguous, as Q and
 * K are stored): rows 8 apart are sbo = 1024 bytes apart, the k16 steps of
 * a block start 32 bytes apart.  MN-major (V as the B operand of P V: the
 * output columns contiguous, keys are rows): lbo = the distance between
 * 64-column blocks, sbo = 1024 between groups of 8 keys. */
#if MT_CUDA && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define MT_HAVE_WGMMA 1

/* The tensor copy engine (TMA): one thread asks for a box of a 2-D array
 * described by a tensor map (built on the host, runtime/gpu/backend.h
 * tensor_map_2d; passed as a __grid_constant__ kernel parameter) to be
 * copied into shared memory in the 128-byte swizzle; completion is counted
 * in bytes on an mbarrier, which the consumers wait on by phase parity. */
struct __align__(64) mt_tensor_map {
    mt_u64 opaque[16];
};
__device__ __forceinline__ void mt_mbar_init(mt_u64 *bar, int count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(mt_smem_addr(bar)), "r"(count) : "memory");
}
/* makes initialised mbarriers visible to the copy engine (then a barrier) */
__device__ __forceinline__ void mt_mbar_init_fence(void) { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
/* arrives once and announces `bytes` still to come from copies */
__device__ __forceinline__ void mt_mbar_expect_tx(mt_u64 *bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(mt_smem_addr(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mt_mbar_wait(mt_u64 *bar, unsigned parity) {
    unsigned done;
    do {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(mt_smem_addr(bar)), "r"(parity)
                     : "memory");
    } while (!done);
}
/* box at (col, row) of the map's array -> dst (1024-byte aligned for the swizzle) */
__device__ __forceinline__ void mt_tma_load_2d(void *dst, const mt_tensor_map *map, int col, int row, mt_u64 *bar) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                 ::"r"(mt_smem_addr(dst)), "l"((mt_u64)map), "r"(col), "r"(row), "r"(mt_smem_addr(bar))
                 : "memory");
}

/* Thread-block clusters (launched with a cluster shape, runtime/gpu/backend.h
 * launch_cluster): the blocks of a cluster run at the same time on one GPC
 * and may read each other's shared memory.  mt_cluster_sync is a barrier
 * over every thread of the cluster that also orders shared-memory writes
 * before it with reads after it (release / acquire); mt_dsmem_addr maps an
 * address of this block's shared memory to the same offset in block
 * `rank` of the cluster, for mt_dsmem_load4. */
__device__ __forceinline__ void mt_cluster_sync(void) {
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
__device__ __forceinline__ unsigned mt_cluster_rank(void) {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
__device__ __forceinline__ unsigned mt_dsmem_addr(const void *local, unsigned rank) {
    unsigned out;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(out) : "r"(mt_smem_addr(local)), "r"(rank));
    return out;
}
__device__ __forceinline__ float4 mt_dsmem_load4(unsigned addr) {
    float4 v;
    asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "r"(addr)
                 : "memory");
    return v;
}
__device__ __forceinline__ float mt_dsmem_load(unsigned addr) {
    float v;
    asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(addr) : "memory");
    return v;
}

/* Byte offset of 16-byte piece u of row r in a 128-byte-swizzled tile of
 * `rows` rows (blocks of 64 16-bit columns, each rows * 128 bytes). */
__device__ __forceinline__ int mt_swizzle128(int r, int u, int rows) {
    return (u >> 3) * (rows * 128) + r * 128 + (((u & 7) ^ (r & 7)) << 4);
}

__device__ __forceinline__ mt_u64 mt_wgmma_desc(const void *smem, int lbo, int sbo) {
    mt_u64 addr = mt_smem_addr(smem);
    return ((addr & 0x3ffffu) >> 4) | ((mt_u64)((lbo >> 4) & 0x3fff) << 16) |
           ((mt_u64)((sbo >> 4) & 0x3fff) << 32) | (1ull << 62); /* layout 1: 128-byte swizzle */
}

/* Ordering around the asynchronous products: fence before the first
 * wgmma that reads registers written since the last one; commit closes a
 * group; wait<N> returns when at most N groups are still running.  Shared
 * memory written by ordinary stores or cp.async is seen by wgmma (the
 * "async proxy") only after a proxy fence by the writing thread. */
__device__ __forceinline__ void mt_wgmma_fence(void) { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void mt_wgmma_commit(void) { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N> __device__ __forceinline__ void mt_wgmma_wait(void) {
    asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
__device__ __forceinline__ void mt_fence_proxy_async(void) { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

/* Keeps the compiler from moving accumulator reads across a wait. */
template <int N> __device__ __forceinline__ void mt_wgmma_pin(float *d) {
#pragma unroll
    for (int i = 0; i < N; i++) asm volatile("" : "+f"(d[i])::"memory");
}

/* Named barriers (0 is __syncthreads): `count` threads of the block. */
__device__ __forceinline__ void mt_bar_sync(int id, int count) { asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(count) : "memory"); }
__device__ __forceinline__ void mt_bar_arrive(int id, int count) { asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(count) : "memory"); }

#define MT_OUT8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), \
                   "+f"(d[i + 6]), "+f"(d[i + 7])
#define MT_OUT32(i) MT_OUT8(i), MT_OUT8(i + 8), MT_OUT8(i + 16), MT_OUT8(i + 24)
#define MT_OUT128 MT_OUT32(0), MT_OUT32(32), MT_OUT32(64), MT_OUT32(96)
#define MT_ACC32 \
    "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define MT_ACC128 \
    "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
    "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, " \
    "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
    "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, " \
    "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
    "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"

/* d[32] (+)= A[64 x 16] * B[16 x 64]; A and B K-major in shared memory. */
#define MT_WGMMA_N64_SS(TY)                                                                            \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"                                       \
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " {" MT_ACC32 "}, %32, %33, p, 1, 1, 0, 0;\n}\n" \
                 : MT_OUT32(0)                                                                         \
                 : "l"(a_desc), "l"(b_desc), "r"(accumulate))
template <int FP16>
__device__ __forceinline__ void mt_wgmma_m64n64k16_ss(float *d, mt_u64 a_desc, mt_u64 b_desc, int accumulate) {
    if (FP16) MT_WGMMA_N64_SS("f16");
    else MT_WGMMA_N64_SS("bf16");
}

/* Keeps the A-operand registers of a wgmma in flight alive (and
 * unchanged) until here: call it after the wait that retires the wgmma, so
 * the compiler cannot give those registers to other values while the
 * tensor cores may still read them. */
template <int N> __device__ __forceinline__ void mt_wgmma_pin_a(mt_u32 *a) {
#pragma unroll
    for (int i = 0; i < N; i++) asm volatile("" : "+r"(a[i])::"memory");
}

/* d[8] (+)= A[64 x 16] * B[16 x 16]; A in registers (a[4] per thread), B
 * K-major in shared memory (the transposed products of the fp8 path: 64
 * keys or 64 output columns by 16 heads). */
#define MT_WGMMA_N16_RS(TY)                                                                            \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %13, 0;\n"                                       \
                 "wgmma.mma_async.sync.aligned.m64n16k16.f32." TY "." TY " "                            \
                 "{%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9, %10, %11}, %12, p, 1, 1, 0;\n}\n"        \
                 : MT_OUT8(0)                                                                          \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(accumulate))
template <int FP16>
__device__ __forceinline__ void mt_wgmma_m64n16k16_rs(float *d, const mt_u32 *a, mt_u64 b_desc, int accumulate) {
    if (FP16) MT_WGMMA_N16_RS("f16");
    else MT_WGMMA_N16_RS("bf16");
}

/* d[8] (+)= A[64 x 16] * B[16 x 16], both in shared memory, B K-major; A
 * K-major (TRANS_A 0: keys by D, the scores of the bf16 transposed path) or
 * MN-major (TRANS_A 1: V^T read from the V rows as stored). */
#define MT_WGMMA_N16_SS(TY, TA)                                                                        \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %10, 0;\n"                                       \
                 "wgmma.mma_async.sync.aligned.m64n16k16.f32." TY "." TY " "                            \
                 "{%0, %1, %2, %3, %4, %5, %6, %7}, %8, %9, p, 1, 1, " TA ", 0;\n}\n"                  \
                 : MT_OUT8(0)                                                                          \
                 : "l"(a_desc), "l"(b_desc), "r"(accumulate))
template <int FP16, int TRANS_A>
__device__ __forceinline__ void mt_wgmma_m64n16k16_ss(float *d, mt_u64 a_desc, mt_u64 b_desc, int accumulate) {
    if (FP16 && TRANS_A) MT_WGMMA_N16_SS("f16", "1");
    else if (FP16) MT_WGMMA_N16_SS("f16", "0");
    else if (TRANS_A) MT_WGMMA_N16_SS("bf16", "1");
    else MT_WGMMA_N16_SS("bf16", "0");
}

/* d[128] += A[64 x 16] * B[16 x 256]; A in registers (a[4] per thread),
 * B MN-major in shared memory. */
#define MT_WGMMA_N256_RS(TY)                                                                           \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %133, 0;\n"                                      \
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32." TY "." TY " {" MT_ACC128 "}, "         \
                 "{%128, %129, %130, %131}, %132, p, 1, 1, 1;\n}\n"                                    \
                 : MT_OUT128                                                                           \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(accumulate))
template <int FP16>
__device__ __forceinline__ void mt_wgmma_m64n256k16_rs(float *d, const mt_u32 *a, mt_u64 b_desc, int accumulate) {
    if (FP16) MT_WGMMA_N256_RS("f16");
    else MT_WGMMA_N256_RS("bf16");
}

/* d[128] += A[64 x 16] * B[16 x 256]; A K-major, B MN-major, both in
 * shared memory. */
#define MT_WGMMA_N256_SS(TY)                                                                           \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"                                      \
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32." TY "." TY " {" MT_ACC128 "}, "         \
                 "%128, %129, p, 1, 1, 0, 1;\n}\n"                                                     \
                 : MT_OUT128                                                                           \
                 : "l"(a_desc), "l"(b_desc), "r"(accumulate))
template <int FP16>
__device__ __forceinline__ void mt_wgmma_m64n256k16_ss(float *d, mt_u64 a_desc, mt_u64 b_desc, int accumulate) {
    if (FP16) MT_WGMMA_N256_SS("f16");
    else MT_WGMMA_N256_SS("bf16");
}
#endif

/* --- AMD matrix cores (MFMA, CDNA: gfx90a, gfx942, gfx950) ---------------
 * Used by the MMA=1 path on 64-wide wavefronts (kernels/mla_decode/mfma.cu).  Compiled
 * for gfx942 in CI (clang's HIP compiler, register and LDS report); no AMD
 * GPU has run it yet. */
#if MT_HIP
typedef mt_u32 mt_u32x2 __attribute__((ext_vector_type(2)));
typedef mt_u32 mt_u32x4 __attribute__((ext_vector_type(4)));
typedef float mt_f32x4 __attribute__((ext_vector_type(4)));
typedef short mt_s16x4 __attribute__((ext_vector_type(4)));
typedef _Float16 mt_h16x4 __attribute__((ext_vector_type(4)));

/* D = A * B + D, 16x16x16, fp32 accumulators (v_mfma_f32_16x16x16_bf16 /
 * _f16).  Operands: four 16-bit values in two registers, low half first.
 * Lane l (of 64) holds
 *   A[l % 16][4 * (l / 16) + i]       i = 0..3   (rows x k)
 *   B[4 * (l / 16) + i][l % 16]                  (k x columns)
 *   D[4 * (l / 16) + i][l % 16]                  (rows x columns)
 * so a lane's A and B values are 4 consecutive k of one row / column. */
__device__ __forceinline__ mt_f32x4 mt_mfma_16x16x16(mt_f32x4 d, mt_u32x2 a, mt_u32x2 b, int fp16) {
    if (fp16)
        return __builtin_amdgcn_mfma_f32_16x16x16f16(__builtin_bit_cast(mt_h16x4, a), __builtin_bit_cast(mt_h16x4, b),
                                                     d, 0, 0, 0);
    return __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(__builtin_bit_cast(mt_s16x4, a), __builtin_bit_cast(mt_s16x4, b),
                                                     d, 0, 0, 0);
}

#if defined(__gfx950__)
/* CDNA4 (gfx950): D = A * B + D, 16x16x32 (v_mfma_f32_16x16x32_bf16 /
 * _f16), twice the k of the form above per instruction.  Lane l holds
 *   A[l % 16][8 * (l / 16) + i]       i = 0..7 (four registers, low half first)
 *   B[8 * (l / 16) + i][l % 16]
 *   D as above
 * (AMD Instinct CDNA4 ISA, matrix operand layout; composable_kernel's
 * xdlops tables). */
#define MT_HAVE_MFMA_K32 1
typedef __bf16 mt_bf16x8 __attribute__((ext_vector_type(8)));
typedef _Float16 mt_h16x8 __attribute__((ext_vector_type(8)));
__device__ __forceinline__ mt_f32x4 mt_mfma_16x16x32(mt_f32x4 d, mt_u32x4 a, mt_u32x4 b, int fp16) {
    if (fp16)
        return __builtin_amdgcn_mfma_f32_16x16x32_f16(__builtin_bit_cast(mt_h16x8, a), __builtin_bit_cast(mt_h16x8, b),
                                                      d, 0, 0, 0);
    return __builtin_amdgcn_mfma_f32_16x16x32_bf16(__builtin_bit_cast(mt_bf16x8, a), __builtin_bit_cast(mt_bf16x8, b),
                                                   d, 0, 0, 0);
}
#endif

/* Two floats -> packed bf16x2 / f16x2 (lo in the low half), round to
 * nearest even: the same results as the NVIDIA instructions above. */
__device__ __forceinline__ mt_u32 mt_pack_bf16x2(float lo, float hi) {
    return (mt_u32)mt_f32_to_bf16(lo) | ((mt_u32)mt_f32_to_bf16(hi) << 16);
}
__device__ __forceinline__ mt_u32 mt_pack_f16x2(float lo, float hi) {
    return (mt_u32)mt_f32_to_f16(lo) | ((mt_u32)mt_f32_to_f16(hi) << 16);
}

/* Two floats that are fp16 values (fp8 decoded) -> f16x2: the plain
 * conversion (v_cvt_f16_f32) is exact for them whatever its rounding. */
__device__ __forceinline__ mt_u32 mt_exact_f16x2(float lo, float hi) {
    return (mt_u32)__builtin_bit_cast(mt_u16, (_Float16)lo) | ((mt_u32)__builtin_bit_cast(mt_u16, (_Float16)hi) << 16);
}

/* Two fp8 (low byte first) -> f16x2, exact, in each encoding.  The CDNA3
 * and CDNA4 conversion v_cvt_pk_f32_fp8 (clang's
 * __builtin_amdgcn_cvt_pk_f32_fp8(src, word_sel): word_sel false reads
 * bytes 0 and 1, AMDGPUBuiltins.rst) reads fnuz on gfx940-942 ("AMD
 * Instinct MI300 ISA", FP8 conversions) and OCP e4m3 on gfx950 ("AMD
 * Instinct MI355X ISA"); each decoded value is a float exactly, so it is
 * used where it reads the encoding asked for and software elsewhere
 * (gfx90a has no fp8 instructions). */
#if defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__)
#define MT_HW_FP8 1 /* reads fnuz */
#define MT_HW_FP8_FNUZ 1
#elif defined(__gfx950__)
#define MT_HW_FP8 1 /* reads OCP e4m3 */
#define MT_HW_FP8_FNUZ 0
#endif
template <bool FNUZ> __device__ __forceinline__ mt_u32 mt_cvt_fp8x2_f16x2(mt_u16 two) {
#if defined(MT_HW_FP8)
    if (FNUZ == (bool)MT_HW_FP8_FNUZ) {
        typedef float mt_f32x2 __attribute__((ext_vector_type(2)));
        const mt_f32x2 f = __builtin_amdgcn_cvt_pk_f32_fp8((int)two, false);
        return mt_exact_f16x2(f[0], f[1]);
    }
#endif
    const mt_u8 lo = (mt_u8)(two & 0xff), hi = (mt_u8)(two >> 8);
    return FNUZ ? mt_exact_f16x2(mt_fp8e4m3fnuz_to_f32(lo), mt_fp8e4m3fnuz_to_f32(hi))
                : mt_exact_f16x2(mt_fp8e4m3_to_f32(lo), mt_fp8e4m3_to_f32(hi));
}
__device__ __forceinline__ mt_u32 mt_cvt_e4m3x2_f16x2(mt_u16 two) { return mt_cvt_fp8x2_f16x2<false>(two); }
__device__ __forceinline__ mt_u32 mt_cvt_e4m3fnuzx2_f16x2(mt_u16 two) { return mt_cvt_fp8x2_f16x2<true>(two); }
#endif
