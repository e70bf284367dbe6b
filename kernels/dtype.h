/*
 * dtype.h - host-side conversions between float and the storage types the
 * kernels read (bf16, fp16, fp8 e4m3 in its two encodings).  Bit-exact
 * twins of the device conversions in prelude.h, used to make test data, by
 * the CPU reference, and by verification.
 *
 * The two fp8 encodings (both 1 sign, 4 exponent, 3 mantissa bits):
 *   e4m3 "fn" (OCP, MT_FP8_E4M3): bias 7, S.1111.111 is NaN, max 448,
 *     +0 and -0; NVIDIA's and gfx950's native fp8.
 *   e4m3 "fnuz" (MT_FP8_E4M3_FNUZ): bias 8, 0x80 (the would-be -0) is the
 *     only NaN, no negative zero, max 240; gfx942's native fp8.
 * A code means half as much in fnuz as in fn (bias 8 vs 7), except the
 * three codes whose meaning differs (0x7f/0xff: NaN in fn, +-240 in fnuz;
 * 0x80: -0 in fn, NaN in fnuz).
 * Quantisation rule for both: round to nearest even, saturate to the
 * format's largest finite value (a value the format cannot hold, such as
 * fn's 448 in fnuz, becomes +-240), NaN to the format's NaN; in fnuz a
 * negative value that rounds to zero is +0.
 */
#ifndef MT_DTYPE_H
#define MT_DTYPE_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/variant.h"

float mt_host_bf16_to_f32(uint16_t h);
uint16_t mt_host_f32_to_bf16(float f);     /* round to nearest even */
float mt_host_f16_to_f32(uint16_t h);
uint16_t mt_host_f32_to_f16(float f);      /* round to nearest even */
float mt_host_fp8e4m3_to_f32(uint8_t b);   /* 0x7f / 0xff are NaN */
uint8_t mt_host_f32_to_fp8e4m3(float f);   /* round to nearest even, saturate at 448 */
float mt_host_fp8e4m3fnuz_to_f32(uint8_t b);  /* 0x80 is NaN */
uint8_t mt_host_f32_to_fp8e4m3fnuz(float f);  /* round to nearest even, saturate at 240 */

/* Element i of an array of storage type t, as float; and x stored there
 * (rounded / quantised by the rules above). */
float mt_host_load(mt_dtype t, const void *base, size_t i);
void mt_host_store(mt_dtype t, void *base, size_t i, float x);

/* The per-tensor KV scale that test and tuning data in [-1, 1) is stored
 * with: fp8 data then spans half the format's range (1/224 in fn, whose
 * max is 448; 1/120 in fnuz, max 240), so quantisation keeps 3 mantissa
 * bits and never saturates; 1 for the 16-bit types. */
float mt_host_unit_kv_scale(mt_dtype t);

#endif
