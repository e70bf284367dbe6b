/*
 * fp8_codes.h - the prelude's fp8 conversions as kernels use them on a
 * device (scalar and pair forms, both encodings: OCP e4m3 and fnuz), run on
 * all 256 codes and compared with a decoding written here from the formats'
 * definitions, independent of the code under test.  Shared by test_amd_emu
 * (the AMD targets on the CPU emulation, with the modelled conversion
 * instruction) and test_gpu_mla (the GPU at hand).
 */
#ifndef MT_TEST_FP8_CODES_H
#define MT_TEST_FP8_CODES_H

#include "runtime/gpu/jit.h"

/* An e4m3 code's value by the definition (NaN for the encoding's NaN). */
double fp8_e4m3_by_definition(unsigned b, int fnuz);

/* Runs the check on `arch` through `jit`; bad[0] / bad[1] get the number
 * of OCP / fnuz codes whose scalar or pair conversion differs (value, or
 * sign of zero, or NaN-ness), and the first few are printed.  MT_OK when
 * it compiled and ran. */
mt_status fp8_codes_check(mt_backend *b, mt_jit *jit, const char *arch, int bad[2]);

#endif
