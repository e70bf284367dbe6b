/*
 * dtype.h - host-side conversions between float and the storage types the
 * kernels read (bf16, fp16, fp8 e4m3 "fn").  Bit-exact twins of the device
 * conversions in prelude.h, used to make test data, by the CPU reference,
 * and by verification.
 */
#ifndef MT_DTYPE_H
#define MT_DTYPE_H

#include <stdint.h>

float mt_host_bf16_to_f32(uint16_t h);
uint16_t mt_host_f32_to_bf16(float f);     /* round to nearest even */
float mt_host_f16_to_f32(uint16_t h);
uint16_t mt_host_f32_to_f16(float f);      /* round to nearest even */
float mt_host_fp8e4m3_to_f32(uint8_t b);   /* 0x7f / 0xff are NaN */
uint8_t mt_host_f32_to_fp8e4m3(float f);   /* round to nearest even, saturate at 448 */

#endif
