/*
 * hip/hip_runtime.h - HIP on the CPU: what the kernel sources (prelude.h +
 * kernels/mla_decode/*.cu, their AMD paths) need from HIP, implemented for the
 * host, so that the "hip-cpu" backend (runtime/gpu/backend_emu.c) can compile
 * them with the host's clang++ into a shared object and run them.
 *
 * It proves the kernels' logic under AMD's documented semantics: 64-lane
 * wavefronts, work-group barriers, LDS shared by a work-group, wave
 * shuffles and ballots, and the matrix-core (MFMA) instructions the kernels
 * use, modelled lane by lane from AMD's published operand layouts (below).
 * It proves nothing about the compiled GPU code, timing, occupancy,
 * register pressure or memory ordering between work-groups (they run one
 * after another).
 *
 * Execution model.  A launch runs its work-groups one after another on the
 * calling thread.  Each thread of a work-group is a fiber (its own stack,
 * switched in user space).  The scheduler runs every runnable fiber until
 * it reaches a synchronisation point:
 *   - a wave collective (shuffle, ballot, MFMA): the lane leaves its operand
 *     in the wave's slot and waits; when every live lane of the wave is
 *     waiting on the same collective, the scheduler computes all 64 results
 *     at once (so an MFMA sees all 64 lanes' registers, as the hardware does);
 *   - __syncthreads(): the fiber waits until every live thread of the
 *     work-group is there (exited threads count as arrived, as exited waves
 *     do on the hardware).
 * Lanes of one wave that reach different collectives, or a collective and
 * a barrier, are reported as divergence; a work-group where nothing can run
 * is reported as a deadlock (the launch fails with a message).
 *
 * The backend compiles a kernel source in two steps (backend_emu.c): the
 * preprocessor first, with __global__ and __shared__ left as the marker
 * identifiers below, from which it learns the kernel names (it writes an
 * entry point per kernel, mt_emu_entry_NAME(void **args)) and rewrites
 * `extern __shared__ T name[];` into a pointer to the launch's dynamic LDS;
 * then the compiler.
 */
#ifndef MT_EMU_HIP_RUNTIME_H
#define MT_EMU_HIP_RUNTIME_H

#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <pthread.h>
#include <utility>

#if !defined(__clang__)
#error "the HIP CPU emulation needs clang++ (ext_vector_type, _Float16)"
#endif

/* --- the language ------------------------------------------------------- */
#define __global__ mt_emu_kernel_mark_
#define __shared__ mt_emu_shared_mark_
#define __device__
#define __host__
#define __constant__ static const
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
#define warpSize 64

typedef struct mt_emu_dim3 {
    unsigned x, y, z;
} dim3;

namespace mt_emu {

enum { WAVE = 64, MAX_THREADS = 1024, MAX_WAVES = MAX_THREADS / WAVE, SLOT_BYTES = 64 };
enum fiber_state { RUNNABLE, AT_BARRIER, AT_COLLECTIVE, DONE };

struct wave;
typedef void (*collective_fn)(wave *w);

struct fiber {
    void *sp;              /* saved stack pointer while switched out */
    void *stack;
    size_t stack_size;
    fiber_state state;
    collective_fn op;      /* the collective it waits on */
    dim3 thread_idx;
    int lane;
    wave *w;
};

/* A wave's exchange area: each lane's operand in, each lane's result out. */
struct wave {
    alignas(16) unsigned char in[WAVE][SLOT_BYTES];
    alignas(16) unsigned char out[WAVE][SLOT_BYTES];
    fiber *lanes[WAVE];
    int n_lanes;
};

struct block_ctx {
    dim3 block_idx, block_dim, grid_dim;
    void *dynamic_shared;
};

/* the module's one scheduler state: launches are serialised by `lock` */
struct state {
    pthread_mutex_t lock;
    fiber fibers[MAX_THREADS];
    wave waves[MAX_WAVES];
    void *scheduler_sp;
    fiber *current;
    block_ctx block;
    void (*entry)(void **);
    void **args;
    char error[512];
    int failed;
};
static state S = {PTHREAD_MUTEX_INITIALIZER, {}, {}, nullptr, nullptr, {}, nullptr, nullptr, {0}, 0};

} // namespace mt_emu

/* --- fibers: a user-space context switch -------------------------------- */
extern "C" {
/* saves the callee-saved registers on the current stack, stores the stack
 * pointer in *from, switches to `to` and restores its registers */
__attribute__((visibility("hidden"))) void mt_emu_switch(void **from, void *to);
__attribute__((visibility("hidden"))) void mt_emu_fiber_start(void);
__attribute__((visibility("hidden"), used, noreturn)) void mt_emu_fiber_main(mt_emu::fiber *f);
}
#if defined(__x86_64__)
__asm__(".text\n"
        ".p2align 4\n"
        ".globl mt_emu_switch\n.hidden mt_emu_switch\n.type mt_emu_switch,@function\n"
        "mt_emu_switch:\n"
        "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
        "  subq $8, %rsp\n  stmxcsr (%rsp)\n  fnstcw 4(%rsp)\n"
        "  movq %rsp, (%rdi)\n  movq %rsi, %rsp\n"
        "  ldmxcsr (%rsp)\n  fldcw 4(%rsp)\n  addq $8, %rsp\n"
        "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
        "  ret\n"
        ".size mt_emu_switch, .-mt_emu_switch\n"
        ".globl mt_emu_fiber_start\n.hidden mt_emu_fiber_start\n.type mt_emu_fiber_start,@function\n"
        "mt_emu_fiber_start:\n"
        "  movq %rbx, %rdi\n  call mt_emu_fiber_main\n  ud2\n"
        ".size mt_emu_fiber_start, .-mt_emu_fiber_start\n");
#else
#error "the HIP CPU emulation's fibers are written for x86-64"
#endif

namespace mt_emu {

/* A fresh fiber's stack as mt_emu_switch expects to find it: the control
 * words, six registers (rbx = the fiber), then the start routine as the
 * return address, placed so that the start routine's call is 16-aligned. */
static void fiber_prepare(fiber *f) {
    uintptr_t top = ((uintptr_t)f->stack + f->stack_size) & ~(uintptr_t)15;
    uint64_t *p = (uint64_t *)(top - 24);
    p[0] = (uint64_t)(uintptr_t)&mt_emu_fiber_start;  /* ret */
    uint64_t *regs = (uint64_t *)(top - 80);
    unsigned mxcsr = 0;
    unsigned short fpcw = 0;
    __asm__ volatile("stmxcsr %0\n fnstcw %1" : "=m"(mxcsr), "=m"(fpcw));
    memset(regs, 0, 56);
    memcpy((char *)regs, &mxcsr, 4);
    memcpy((char *)regs + 4, &fpcw, 2);
    regs[1] = 0;                      /* r15 */
    regs[2] = 0;                      /* r14 */
    regs[3] = 0;                      /* r13 */
    regs[4] = 0;                      /* r12 */
    regs[5] = (uint64_t)(uintptr_t)f; /* rbx */
    regs[6] = 0;                      /* rbp */
    f->sp = regs;
}

static inline fiber *self(void) { return S.current; }

/* back to the scheduler, in state `st` */
static inline void yield(fiber_state st) {
    fiber *f = S.current;
    f->state = st;
    mt_emu_switch(&f->sp, S.scheduler_sp);
}

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...) {
    if (S.failed) return;
    S.failed = 1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(S.error, sizeof S.error, fmt, ap);
    va_end(ap);
}

/* A wave collective: this lane's operand in, wait for the whole wave, the
 * result out.  T_IN and T_OUT are plain bytes of at most SLOT_BYTES. */
template <class T_OUT, class T_IN> static inline T_OUT collective(collective_fn op, const T_IN &in) {
    static_assert(sizeof(T_IN) <= SLOT_BYTES && sizeof(T_OUT) <= SLOT_BYTES, "collective operand too large");
    fiber *f = S.current;
    memcpy(f->w->in[f->lane], &in, sizeof in);
    f->op = op;
    yield(AT_COLLECTIVE);
    T_OUT out;
    memcpy(&out, f->w->out[f->lane], sizeof out);
    return out;
}

} // namespace mt_emu

extern "C" void mt_emu_fiber_main(mt_emu::fiber *f) {
    mt_emu::S.entry(mt_emu::S.args);
    f->state = mt_emu::DONE;
    mt_emu_switch(&f->sp, mt_emu::S.scheduler_sp);
    __builtin_unreachable();
}

/* --- built-in variables --------------------------------------------------- */
#define threadIdx (mt_emu::S.current->thread_idx)
#define blockIdx (mt_emu::S.block.block_idx)
#define blockDim (mt_emu::S.block.block_dim)
#define gridDim (mt_emu::S.block.grid_dim)

static inline void __syncthreads(void) { mt_emu::yield(mt_emu::AT_BARRIER); }
/* one work-group runs at a time and the fibers of one share memory
 * sequentially: fences order nothing further */
static inline void __threadfence(void) {}
static inline void __threadfence_block(void) {}

namespace mt_emu {
/* `extern __shared__ T name[]` becomes `T *const name = dynamic_shared();` */
struct dynamic_shared_ptr {
    template <class T> operator T *() const { return (T *)S.block.dynamic_shared; }
};
static inline dynamic_shared_ptr dynamic_shared(void) { return dynamic_shared_ptr(); }
} // namespace mt_emu

/* --- scalar helpers ------------------------------------------------------ */
static inline float __int_as_float(int i) { return __builtin_bit_cast(float, i); }
static inline int __float_as_int(float f) { return __builtin_bit_cast(int, f); }
static inline float __uint_as_float(unsigned i) { return __builtin_bit_cast(float, i); }
static inline unsigned __float_as_uint(float f) { return __builtin_bit_cast(unsigned, f); }
static inline unsigned __float2uint_rn(float f) { return (unsigned)nearbyintf(f); }
static inline int __float2int_rn(float f) { return (int)nearbyintf(f); }
/* glibc declares __expf and __logf itself: the kernels' calls are renamed */
#define __expf mt_emu_expf
#define __logf mt_emu_logf
static inline float mt_emu_expf(float x) { return expf(x); }
static inline float mt_emu_logf(float x) { return logf(x); }
static inline float __fdividef(float a, float b) { return a / b; }
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
static inline int __ffsll(unsigned long long x) { return __builtin_ffsll((long long)x); }
static inline float __frcp_rn(float a) { return 1.0f / a; }

#define MT_EMU_MINMAX(T)                                         \
    static inline T min(T a, T b) { return a < b ? a : b; }      \
    static inline T max(T a, T b) { return a > b ? a : b; }
MT_EMU_MINMAX(int)
MT_EMU_MINMAX(unsigned)
MT_EMU_MINMAX(long)
MT_EMU_MINMAX(unsigned long)
MT_EMU_MINMAX(long long)
MT_EMU_MINMAX(unsigned long long)
static inline float min(float a, float b) { return fminf(a, b); }
static inline float max(float a, float b) { return fmaxf(a, b); }
static inline double min(double a, double b) { return fmin(a, b); }
static inline double max(double a, double b) { return fmax(a, b); }
#undef MT_EMU_MINMAX

struct alignas(8) float2 { float x, y; };
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(8) uint2 { unsigned x, y; };
struct alignas(16) uint4 { unsigned x, y, z, w; };
struct alignas(8) int2 { int x, y; };
struct alignas(16) int4 { int x, y, z, w; };
static inline float2 make_float2(float x, float y) { return {x, y}; }
static inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
static inline uint2 make_uint2(unsigned x, unsigned y) { return {x, y}; }
static inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return {x, y, z, w}; }
static inline int2 make_int2(int x, int y) { return {x, y}; }
static inline int4 make_int4(int x, int y, int z, int w) { return {x, y, z, w}; }

/* Atomics: work-groups run one at a time and the fibers of one switch only
 * at synchronisation points, so a read-modify-write is atomic as written. */
template <class T> static inline T atomicAdd(T *p, T v) { T old = *p; *p = old + v; return old; }
template <class T> static inline T atomicSub(T *p, T v) { T old = *p; *p = old - v; return old; }
template <class T> static inline T atomicExch(T *p, T v) { T old = *p; *p = v; return old; }
template <class T> static inline T atomicMax(T *p, T v) { T old = *p; *p = old > v ? old : v; return old; }
template <class T> static inline T atomicMin(T *p, T v) { T old = *p; *p = old < v ? old : v; return old; }
template <class T> static inline T atomicCAS(T *p, T cmp, T v) { T old = *p; if (old == cmp) *p = v; return old; }

/* --- wave collectives ------------------------------------------------------
 * HIP's semantics (hip/amd_detail/amd_warp_functions.h): a shuffle reads
 * lane src of the caller's group of `width` lanes; a source outside the
 * group (xor / down past its end) reads the caller's own value. */
namespace mt_emu {
struct shfl_in {
    unsigned char v[8];
    int src;  /* the lane to read (already resolved by the caller) */
};
static void op_shuffle(wave *w) {
    for (int l = 0; l < w->n_lanes; l++) {
        shfl_in in;
        memcpy(&in, w->in[l], sizeof in);
        int src = in.src;
        if (src < 0 || src >= w->n_lanes) src = l;
        shfl_in from;
        memcpy(&from, w->in[src], sizeof from);
        memcpy(w->out[l], from.v, 8);
    }
}
template <class T> static inline T shuffle_from(T v, int src) {
    static_assert(sizeof(T) <= 8, "shuffle of a value wider than 8 bytes");
    shfl_in in = {};
    memcpy(in.v, &v, sizeof v);
    in.src = src;
    unsigned char out[8];
    struct bytes8 { unsigned char b[8]; };
    bytes8 r = collective<bytes8>(op_shuffle, in);
    memcpy(out, r.b, 8);
    T t;
    memcpy(&t, out, sizeof t);
    return t;
}
static inline int lane_id(void) { return S.current->lane; }
static void op_ballot(wave *w) {
    unsigned long long mask = 0;
    for (int l = 0; l < w->n_lanes; l++)
        if (w->in[l][0]) mask |= 1ull << l;
    for (int l = 0; l < w->n_lanes; l++) memcpy(w->out[l], &mask, sizeof mask);
}
} // namespace mt_emu

static inline int __lane_id(void) { return mt_emu::lane_id(); }
template <class T> static inline T __shfl(T v, int src, int width = warpSize) {
    int self = mt_emu::lane_id();
    return mt_emu::shuffle_from(v, (self & ~(width - 1)) + (src & (width - 1)));
}
template <class T> static inline T __shfl_xor(T v, int mask, int width = warpSize) {
    int self = mt_emu::lane_id(), idx = self ^ mask;
    if (idx >= ((self + width) & ~(width - 1))) idx = self;
    return mt_emu::shuffle_from(v, idx);
}
template <class T> static inline T __shfl_down(T v, unsigned delta, int width = warpSize) {
    int self = mt_emu::lane_id(), idx = self + (int)delta;
    if ((idx & ~(width - 1)) != (self & ~(width - 1))) idx = self;
    return mt_emu::shuffle_from(v, idx);
}
template <class T> static inline T __shfl_up(T v, unsigned delta, int width = warpSize) {
    int self = mt_emu::lane_id(), idx = self - (int)delta;
    if (idx < (self & ~(width - 1))) idx = self;
    return mt_emu::shuffle_from(v, idx);
}
static inline unsigned long long __ballot(int pred) {
    unsigned char p[1] = {(unsigned char)(pred != 0)};
    return mt_emu::collective<unsigned long long>(mt_emu::op_ballot, p);
}
static inline int __any(int pred) { return __ballot(pred) != 0; }
static inline int __all(int pred) {
    unsigned long long m = __ballot(pred), live = 0;
    for (int l = 0; l < mt_emu::S.current->w->n_lanes; l++) live |= 1ull << l;
    return m == live;
}

/* --- matrix cores (MFMA) ---------------------------------------------------
 * A software model of each MFMA instruction the kernels use, lane by lane,
 * from AMD's published operand layouts:
 *   - AMD Matrix Instruction Calculator (github.com/ROCm/amd_matrix_instruction_calculator),
 *     CDNA3, `v_mfma_f32_16x16x16_bf16` / `_f16` (also "AMD Instinct MI300
 *     ISA", section 7.1, "Dependent arithmetic / matrix operand layout"):
 *       A[i][k]  lane 16 * (k / 4) + i, element k % 4 of the lane's 4
 *                16-bit values (2 VGPRs, low half first)
 *       B[k][j]  lane 16 * (k / 4) + j, element k % 4
 *       C/D[i][j] lane 16 * (i / 4) + j, element i % 4 of its 4 floats
 *   - CDNA4 (gfx950) `v_mfma_f32_16x16x32_bf16` / `_f16` ("AMD Instinct
 *     MI355X ISA", matrix operand layout; composable_kernel's xdlops tables):
 *       A[i][k]  lane 16 * (k / 8) + i, element k % 8 (8 values, 4 VGPRs)
 *       B[k][j]  lane 16 * (k / 8) + j, element k % 8
 *       C/D as above.
 * Products of bf16/fp16 values are exact in fp32; they are summed in fp32
 * in k order onto C (the hardware's internal order may differ in the last
 * bit).  Two negative controls: MT_EMU_WRONG_MFMA_LANES swaps the roles of
 * i and k/4 in the A layout, a plausible transcription error; results must
 * then be wrong.  MT_EMU_WRONG_MFMA_K32_PAIRING reads the 16x16x32 A operand
 * as two 16x16x16 operands side by side (A[i][k] in lane 16 * ((k % 16) / 4)
 * + i, element 4 * (k / 16) + k % 4) while B keeps the documented layout:
 * the mistake of pairing the two k halves differently in A and B.  Only the
 * gfx950 forms change, so only gfx950 results may go wrong. */
namespace mt_emu {
static inline float bf16_bits_to_f32(unsigned short h) { return __builtin_bit_cast(float, (unsigned)h << 16); }
static inline float f16_bits_to_f32(unsigned short h) {
    unsigned sign = (unsigned)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    if (exp == 0x1fu) return __builtin_bit_cast(float, sign | 0x7f800000u | (mant << 13));
    if (exp == 0) {
        float v = (float)mant * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    return __builtin_bit_cast(float, sign | ((exp + 112u) << 23) | (mant << 13));
}
template <int K> struct mfma_in {
    unsigned short a[K / 4], b[K / 4];  /* this lane's K/4 16-bit values of A and of B */
    float c[4];
};
/* lane holding A[i][k] (and, with j for i, B[k][j]) for a 16x16xK shape */
template <int K> static inline int ab_lane(int i, int k) {
#if defined(MT_EMU_WRONG_MFMA_LANES)
    return 16 * (i % 4) + 4 * (i / 4) + k / (K / 4); /* a lane per (row, k group), in the wrong order */
#else
    return 16 * (k / (K / 4)) + i;
#endif
}
template <int K, int FP16> static void op_mfma_16x16(wave *w) {
    const int per = K / 4; /* k values per lane */
    mfma_in<K> in[WAVE];
    for (int l = 0; l < WAVE; l++) memcpy(&in[l], w->in[l], sizeof in[l]);
    float a[16][K], b[K][16];
    for (int i = 0; i < 16; i++)
        for (int k = 0; k < K; k++) {
            int la = ab_lane<K>(i, k) % WAVE, e = k % per;
#if defined(MT_EMU_WRONG_MFMA_K32_PAIRING)
            if (K == 32) la = 16 * ((k % 16) / 4) + i, e = 4 * (k / 16) + k % 4;
#endif
            a[i][k] = FP16 ? f16_bits_to_f32(in[la].a[e]) : bf16_bits_to_f32(in[la].a[e]);
            e = k % per;
            int lb = 16 * (k / per) + i; /* B[k][j = i] */
            b[k][i] = FP16 ? f16_bits_to_f32(in[lb].b[e]) : bf16_bits_to_f32(in[lb].b[e]);
        }
    for (int l = 0; l < WAVE; l++) {
        float d[4];
        for (int e = 0; e < 4; e++) {
            const int i = 4 * (l / 16) + e, j = l % 16;
            float acc = in[l].c[e];
            for (int k = 0; k < K; k++) acc += a[i][k] * b[k][j];
            d[e] = acc;
        }
        memcpy(w->out[l], d, sizeof d);
    }
}
template <int K, int FP16, class V, class C> static inline C mfma_16x16(const V &a, const V &b, const C &c) {
    static_assert(sizeof(V) == K / 2, "operand size");
    mfma_in<K> in;
    memcpy(in.a, &a, sizeof a);
    memcpy(in.b, &b, sizeof b);
    memcpy(in.c, &c, sizeof in.c);
    return collective<C>(op_mfma_16x16<K, FP16>, in);
}
} // namespace mt_emu

/* the builtins, as clang declares them for gfx9 targets (the operand
 * modifiers cbsz / abid / blgp must be 0: broadcasts are not modelled) */
typedef float mt_emu_f32x4 __attribute__((ext_vector_type(4)));
typedef short mt_emu_s16x4 __attribute__((ext_vector_type(4)));
typedef _Float16 mt_emu_h16x4 __attribute__((ext_vector_type(4)));
typedef __bf16 mt_emu_bf16x8 __attribute__((ext_vector_type(8)));
typedef _Float16 mt_emu_h16x8 __attribute__((ext_vector_type(8)));
/* fp8 -> f32 conversions: v_cvt_pk_f32_fp8 (clang's
 * __builtin_amdgcn_cvt_pk_f32_fp8(src, word_sel): two bytes of src, bytes
 * 0-1 when word_sel is false, 2-3 when true, byte 2*word_sel in .x; clang's
 * AMDGPUBuiltins.rst).  Its encoding is the target's: e4m3 "fnuz" on
 * gfx940-942 (bias 8, 0x80 the only NaN; "AMD Instinct MI300 ISA"), OCP
 * e4m3 on gfx950 (bias 7, S.1111.111 NaN; "AMD Instinct MI355X ISA").
 * Decoded here from those definitions. */
#if defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__) || defined(__gfx950__)
namespace mt_emu {
static inline float fp8_e4m3_value(unsigned b) {
#if defined(__gfx950__)
    const int bias = 7, nan = (b & 0x7f) == 0x7f;
#else
    const int bias = 8, nan = b == 0x80;
#endif
    if (nan) return NAN;
    const int e = (b >> 3) & 15, m = b & 7;
    const float v = e == 0 ? ldexpf((float)m, 1 - bias - 3) : ldexpf((float)(8 + m), e - bias - 3);
    return b & 0x80 ? -v : v;
}
} // namespace mt_emu
typedef float mt_emu_f32x2 __attribute__((ext_vector_type(2)));
static inline mt_emu_f32x2 __builtin_amdgcn_cvt_pk_f32_fp8(int src, bool word_sel) {
    const unsigned u = (unsigned)src >> (word_sel ? 16 : 0);
    return mt_emu_f32x2{mt_emu::fp8_e4m3_value(u & 0xff), mt_emu::fp8_e4m3_value((u >> 8) & 0xff)};
}
#endif

#define MT_EMU_NO_MODIFIERS(cbsz, abid, blgp) \
    if ((cbsz) || (abid) || (blgp)) mt_emu::fail("MFMA operand modifiers (cbsz/abid/blgp) are not modelled")
static inline mt_emu_f32x4 __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(mt_emu_s16x4 a, mt_emu_s16x4 b, mt_emu_f32x4 c,
                                                                      int cbsz, int abid, int blgp) {
    MT_EMU_NO_MODIFIERS(cbsz, abid, blgp);
    return mt_emu::mfma_16x16<16, 0>(a, b, c);
}
static inline mt_emu_f32x4 __builtin_amdgcn_mfma_f32_16x16x16f16(mt_emu_h16x4 a, mt_emu_h16x4 b, mt_emu_f32x4 c, int cbsz,
                                                                  int abid, int blgp) {
    MT_EMU_NO_MODIFIERS(cbsz, abid, blgp);
    return mt_emu::mfma_16x16<16, 1>(a, b, c);
}
#if defined(__gfx950__)
static inline mt_emu_f32x4 __builtin_amdgcn_mfma_f32_16x16x32_bf16(mt_emu_bf16x8 a, mt_emu_bf16x8 b, mt_emu_f32x4 c,
                                                                    int cbsz, int abid, int blgp) {
    MT_EMU_NO_MODIFIERS(cbsz, abid, blgp);
    return mt_emu::mfma_16x16<32, 0>(a, b, c);
}
static inline mt_emu_f32x4 __builtin_amdgcn_mfma_f32_16x16x32_f16(mt_emu_h16x8 a, mt_emu_h16x8 b, mt_emu_f32x4 c,
                                                                   int cbsz, int abid, int blgp) {
    MT_EMU_NO_MODIFIERS(cbsz, abid, blgp);
    return mt_emu::mfma_16x16<32, 1>(a, b, c);
}
#endif

/* --- the launch ----------------------------------------------------------- */
#include "mt_emu_launch.h" /* what backend_emu.c passes (the include folder is runtime/gpu/emu) */
extern "C" __attribute__((visibility("default"))) int mt_emu_launch(mt_emu_launch_desc *d);

namespace mt_emu {
enum { STACK_BYTES = 256 << 10 };

static int run_block(int n_threads) {
    /* fresh fibers at the kernel's start */
    for (int t = 0; t < n_threads; t++) {
        fiber *f = &S.fibers[t];
        if (!f->stack) {
            /* the lowest page stays inaccessible: a fiber that overflows its
             * stack faults instead of writing over its neighbour's */
            f->stack = mmap(nullptr, STACK_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                            -1, 0);
            if (f->stack == MAP_FAILED) {
                f->stack = nullptr;
                fail("cannot map a fiber stack");
                return 1;
            }
            mprotect(f->stack, 4096, PROT_NONE);
            f->stack_size = STACK_BYTES;
        }
        f->state = RUNNABLE;
        f->op = nullptr;
        const dim3 &bd = S.block.block_dim;
        f->thread_idx = {(unsigned)t % bd.x, (unsigned)t / bd.x % bd.y, (unsigned)t / (bd.x * bd.y)};
        f->lane = t % WAVE;
        f->w = &S.waves[t / WAVE];
        S.waves[t / WAVE].lanes[t % WAVE] = f;
        S.waves[t / WAVE].n_lanes = min(WAVE, n_threads - t / WAVE * WAVE);
        fiber_prepare(f);
    }
    const int n_waves = (n_threads + WAVE - 1) / WAVE;
    for (;;) {
        int ran = 0;
        for (int t = 0; t < n_threads; t++) {
            fiber *f = &S.fibers[t];
            if (f->state != RUNNABLE) continue;
            S.current = f;
            mt_emu_switch(&S.scheduler_sp, f->sp);
            S.current = nullptr;
            ran++;
            if (S.failed) return 1;
        }
        /* wave collectives whose lanes are all there */
        int released = 0, live = 0, at_barrier = 0;
        for (int wi = 0; wi < n_waves; wi++) {
            wave *w = &S.waves[wi];
            int waiting = 0, done = 0, barrier = 0;
            collective_fn op = nullptr;
            int same = 1;
            for (int l = 0; l < w->n_lanes; l++) {
                fiber *f = w->lanes[l];
                if (f->state == AT_COLLECTIVE) {
                    if (waiting++ && f->op != op) same = 0;
                    op = f->op;
                } else if (f->state == DONE) {
                    done++;
                } else if (f->state == AT_BARRIER) {
                    barrier++;
                }
            }
            live += w->n_lanes - done;
            at_barrier += barrier;
            if (!waiting) continue;
            if (!same || waiting != w->n_lanes) {
                fail("wave %d of work-group (%u,%u,%u) diverged: %d lanes at a wave collective%s, %d at a barrier, "
                     "%d exited (a collective needs all %d lanes)",
                     wi, S.block.block_idx.x, S.block.block_idx.y, S.block.block_idx.z, waiting,
                     same ? "" : " (not the same one)", barrier, done, w->n_lanes);
                return 1;
            }
            op(w);
            if (S.failed) return 1;
            for (int l = 0; l < w->n_lanes; l++) w->lanes[l]->state = RUNNABLE;
            released++;
        }
        if (released || ran) continue;
        if (live == 0) return 0;
        if (at_barrier == live) {
            for (int t = 0; t < n_threads; t++)
                if (S.fibers[t].state == AT_BARRIER) S.fibers[t].state = RUNNABLE;
            continue;
        }
        fail("work-group (%u,%u,%u) deadlocked: %d live threads, %d at the barrier", S.block.block_idx.x,
             S.block.block_idx.y, S.block.block_idx.z, live, at_barrier);
        return 1;
    }
}
} // namespace mt_emu

extern "C" int mt_emu_launch(mt_emu_launch_desc *d) {
    using namespace mt_emu;
    pthread_mutex_lock(&S.lock);
    S.failed = 0;
    S.error[0] = '\0';
    const unsigned n_threads = d->block[0] * d->block[1] * d->block[2];
    int rc = 0;
    /* the dynamic LDS, then a canary: a kernel that writes past the bytes
     * the host asked for (its LDS layout and mt_mla_decode_shared_bytes
     * disagree) is caught after its work-group */
    enum { CANARY = 4096 };
    unsigned char *lds = nullptr;
    if (n_threads == 0 || n_threads > MAX_THREADS) {
        fail("block of %u threads (1..%d)", n_threads, (int)MAX_THREADS);
        rc = 1;
    } else if (posix_memalign((void **)&lds, 256, d->shared_bytes + CANARY) != 0) {
        fail("cannot allocate %zu bytes of LDS", d->shared_bytes);
        rc = 1;
    }
    S.entry = d->entry;
    S.args = d->args;
    S.block.block_dim = {d->block[0], d->block[1], d->block[2]};
    S.block.grid_dim = {d->grid[0], d->grid[1], d->grid[2]};
    S.block.dynamic_shared = lds;
    for (unsigned z = 0; !rc && z < d->grid[2]; z++)
        for (unsigned y = 0; !rc && y < d->grid[1]; y++)
            for (unsigned x = 0; !rc && x < d->grid[0]; x++) {
                S.block.block_idx = {x, y, z};
                /* LDS starts as garbage on the hardware: poison it */
                memset(lds, 0xff, d->shared_bytes);
                memset(lds + d->shared_bytes, 0xa5, CANARY);
                rc = run_block((int)n_threads);
                for (int i = 0; !rc && i < CANARY; i++)
                    if (lds[d->shared_bytes + i] != 0xa5) {
                        fail("work-group (%u,%u,%u) wrote LDS byte %zu, past the %zu bytes of the launch", x, y, z,
                             d->shared_bytes + (size_t)i, d->shared_bytes);
                        rc = 1;
                    }
            }
    free(lds);
    snprintf(d->error, sizeof d->error, "%s", S.error);
    pthread_mutex_unlock(&S.lock);
    return rc;
}

namespace mt_emu {
/* the entry point written for each kernel: unpacks void **args into its
 * parameters (each args[i] points at a value of the parameter's type) */
template <class... P, size_t... I>
static inline void invoke_unpacked(void (*k)(P...), void **args, std::index_sequence<I...>) {
    k(*(typename std::remove_reference<P>::type *)args[I]...);
}
template <class... P> static inline void invoke(void (*k)(P...), void **args) {
    invoke_unpacked(k, args, std::index_sequence_for<P...>());
}
} // namespace mt_emu

#endif
