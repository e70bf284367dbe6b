/*
 * dtype.c - host storage conversions (see dtype.h).  Written from the IEEE
 * 754 binary16 definition, bfloat16 as the top half of binary32, and the OCP
 * FP8 e4m3 ("fn") definition: bias 7, no infinities, S.1111.111 = NaN, max
 * finite 448.
 */
#include "dtype.h"

#include <math.h>
#include <string.h>

static float bits_to_float(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint32_t float_to_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

float mt_host_bf16_to_f32(uint16_t h) { return bits_to_float((uint32_t)h << 16); }

uint16_t mt_host_f32_to_bf16(float f) {
    uint32_t u = float_to_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float mt_host_f16_to_f32(uint16_t h) {
    int sign = h >> 15, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    float v;
    if (exp == 0x1f) v = mant ? NAN : INFINITY;
    else if (exp == 0) v = ldexpf((float)mant, -24);
    else v = ldexpf((float)(mant | 0x400), exp - 25);
    return sign ? -v : v;
}

uint16_t mt_host_f32_to_f16(float f) {
    uint32_t u = float_to_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return sign | 0x7e00u;
    if (a >= 0x477ff000u) return sign | 0x7c00u;
    if (a < 0x38800000u) return sign | (uint16_t)lrintf(bits_to_float(a) * 16777216.0f);
    uint32_t r = a + 0xfffu + ((a >> 13) & 1u);
    return sign | (uint16_t)((r - 0x38000000u) >> 13);
}

float mt_host_fp8e4m3_to_f32(uint8_t b) {
    int sign = b >> 7, exp = (b >> 3) & 0xf, mant = b & 7;
    if (exp == 0xf && mant == 7) return NAN;
    float v = exp == 0 ? ldexpf((float)mant, -9) : ldexpf((float)(mant | 8), exp - 10);
    return sign ? -v : v;
}

uint8_t mt_host_f32_to_fp8e4m3(float f) {
    if (isnan(f)) return 0x7f;
    uint8_t sign = signbit(f) ? 0x80 : 0;
    float a = fabsf(f);
    if (a >= 448.0f) return sign | 0x7e;  /* saturate: e4m3fn has no infinity */
    /* find the nearest representable value by rounding in its binade */
    int e;
    frexpf(a, &e);                 /* a = m * 2^e, m in [0.5, 1) */
    int exp = e - 1 + 7;           /* biased exponent of a */
    if (exp < 1) exp = 1;          /* subnormals share the 2^-6 binade's step */
    float step = ldexpf(1.0f, exp - 7 - 3);
    float q = rintf(a / step);     /* round to nearest even */
    float v = q * step;
    if (v >= 448.0f) return sign | 0x7e;
    /* re-encode v exactly */
    if (v < ldexpf(1.0f, -6)) return sign | (uint8_t)lrintf(v / ldexpf(1.0f, -9));
    frexpf(v, &e);
    int be = e - 1 + 7;
    int mant = (int)lrintf(ldexpf(v, -(e - 1)) * 8.0f) - 8;
    return sign | (uint8_t)(be << 3) | (uint8_t)mant;
}
