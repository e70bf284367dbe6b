/*
 * ceilings.h - what the GPU can do at best, measured on the spot: the
 * device-to-device copy bandwidth (the memory ceiling of a decode kernel)
 * and the matrix-unit throughput of the instructions our kernels use (the
 * compute ceiling).  The sweep's workers measure both when they start and
 * the sweep stores them in the DB (the report's % copy and % matrix);
 * `mla-tune bench` measures both in the same run as the decode timings.
 */
#ifndef MT_CEILINGS_H
#define MT_CEILINGS_H

#include "runtime/gpu/backend.h"
#include "runtime/gpu/jit.h"

/* GB/s of a 1 GiB device-to-device copy (bytes read + bytes written), the
 * median of 9 after a warm-up.  0 when it cannot run (the message says why). */
double mt_ceiling_copy_gbps(mt_backend *b, mt_stream s);

/* TFLOP/s of mma.sync m16n8k16 bf16 issued back to back from registers by
 * 8 warps per group, 4 groups per compute unit; median of 7.  0 where the
 * target has no such instruction (not sm_80+) or it cannot run. */
double mt_ceiling_mma_tflops(mt_backend *b, mt_jit *jit, const char *arch, int compute_units, mt_stream s);

/* The same for Hopper's warpgroup instructions (wgmma m64n256k16, A from
 * registers, B from shared memory, 2 warpgroups per SM), which the mma=2
 * decode path uses; 0 on anything but sm_90. */
double mt_ceiling_wgmma_tflops(mt_backend *b, mt_jit *jit, const char *arch, int compute_units, mt_stream s);
/* ... and its fp8 form (wgmma m64n256k32 e4m3, B K-major): what fp8 prefill is held to. */
double mt_ceiling_wgmma_fp8_tflops(mt_backend *b, mt_jit *jit, const char *arch, int compute_units, mt_stream s);

/* The matrix ceiling a decode's TFLOP/s is measured against: the faster of
 * the two above (wgmma on sm_90, mma.sync elsewhere on NVIDIA), what
 * `bench` calls %mma and the sweep stores as "matrix_tflops"; 0 where
 * neither runs. */
double mt_ceiling_matrix_tflops(mt_backend *b, mt_jit *jit, const char *arch, int compute_units, mt_stream s);

#endif
