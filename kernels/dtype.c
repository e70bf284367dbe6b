/*
 * dtype.c - host storage conversions (see dtype.h).  Written from the IEEE
 * 754 binary16 definition, bfloat16 as the top half of binary32, the OCP
 * FP8 e4m3 ("fn") definition: bias 7, no infinities, S.1111.111 = NaN, max
 * finite 448, and e4m3 "fnuz" (bias 8, no infinities, no negative zero,
 * 0x80 = NaN, max finite 240).
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

/* e4m3 with exponent bias `bias`: the value of the non-NaN code b */
static float e4m3_value(uint8_t b, int bias) {
    int sign = b >> 7, exp = (b >> 3) & 0xf, mant = b & 7;
    float v = exp == 0 ? ldexpf((float)mant, 1 - bias - 3) : ldexpf((float)(mant | 8), exp - bias - 3);
    return sign ? -v : v;
}

/* |f| (not NaN) -> the e4m3 magnitude code of bias `bias` nearest to it,
 * ties to even, saturated at max_code (the largest finite magnitude) */
static uint8_t e4m3_magnitude(float a, int bias, uint8_t max_code) {
    const float max_finite = e4m3_value(max_code, bias);
    if (a >= max_finite) return max_code;  /* saturate: neither encoding has an infinity */
    /* round in a's binade (subnormals share the smallest normal binade's step) */
    int e;
    frexpf(a, &e);                         /* a = m * 2^e, m in [0.5, 1) */
    int exp = e - 1 + bias;
    if (exp < 1) exp = 1;
    const float step = ldexpf(1.0f, exp - bias - 3);
    const float v = rintf(a / step) * step; /* round to nearest even */
    if (v >= max_finite) return max_code;
    if (v < ldexpf(1.0f, 1 - bias)) return (uint8_t)lrintf(v / ldexpf(1.0f, 1 - bias - 3)); /* subnormal */
    frexpf(v, &e);
    const int mant = (int)lrintf(ldexpf(v, -(e - 1)) * 8.0f) - 8;
    return (uint8_t)((e - 1 + bias) << 3 | mant);
}

float mt_host_fp8e4m3_to_f32(uint8_t b) { return (b & 0x7f) == 0x7f ? NAN : e4m3_value(b, 7); }

uint8_t mt_host_f32_to_fp8e4m3(float f) {
    if (isnan(f)) return 0x7f;
    return (uint8_t)((signbit(f) ? 0x80 : 0) | e4m3_magnitude(fabsf(f), 7, 0x7e));
}

float mt_host_fp8e4m3fnuz_to_f32(uint8_t b) { return b == 0x80 ? NAN : e4m3_value(b, 8); }

uint8_t mt_host_f32_to_fp8e4m3fnuz(float f) {
    if (isnan(f)) return 0x80;
    const uint8_t m = e4m3_magnitude(fabsf(f), 8, 0x7f);
    return m == 0 ? 0 : (uint8_t)((signbit(f) ? 0x80 : 0) | m); /* no negative zero: 0x80 is NaN */
}

float mt_host_load(mt_dtype t, const void *base, size_t i) {
    switch (t) {
    case MT_BF16: return mt_host_bf16_to_f32(((const uint16_t *)base)[i]);
    case MT_FP16: return mt_host_f16_to_f32(((const uint16_t *)base)[i]);
    case MT_FP8_E4M3: return mt_host_fp8e4m3_to_f32(((const uint8_t *)base)[i]);
    case MT_FP8_E4M3_FNUZ: return mt_host_fp8e4m3fnuz_to_f32(((const uint8_t *)base)[i]);
    }
    return NAN;
}

void mt_host_store(mt_dtype t, void *base, size_t i, float x) {
    switch (t) {
    case MT_BF16: ((uint16_t *)base)[i] = mt_host_f32_to_bf16(x); break;
    case MT_FP16: ((uint16_t *)base)[i] = mt_host_f32_to_f16(x); break;
    case MT_FP8_E4M3: ((uint8_t *)base)[i] = mt_host_f32_to_fp8e4m3(x); break;
    case MT_FP8_E4M3_FNUZ: ((uint8_t *)base)[i] = mt_host_f32_to_fp8e4m3fnuz(x); break;
    }
}

float mt_host_unit_kv_scale(mt_dtype t) {
    return t == MT_FP8_E4M3 ? 1.0f / 224.0f : t == MT_FP8_E4M3_FNUZ ? 1.0f / 120.0f : 1.0f;
}
