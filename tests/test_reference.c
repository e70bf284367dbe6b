/*
 * The CPU reference against cases computed by hand, and the host dtype
 * conversions against known encodings.  Everything else (the GPU kernels,
 * the tuner's verification) is judged by this reference, so it is checked
 * on its own first.
 */
#include <math.h>

#include "check.h"
#include "kernels/dtype.h"
#include "kernels/mla_decode/mla_reference.h"

#define NEAR(a, b) (fabs((a) - (b)) < 1e-9)

static void test_dtypes(void) {
    CHECK(mt_host_f32_to_bf16(1.0f) == 0x3f80);
    CHECK(mt_host_f32_to_bf16(-2.0f) == 0xc000);
    CHECK(mt_host_bf16_to_f32(0x3f80) == 1.0f);
    /* round to nearest even: 1 + 2^-8 is halfway between bf16 1.0 and 1+2^-7 */
    CHECK(mt_host_f32_to_bf16(1.0f + 1.0f / 256) == 0x3f80);
    CHECK(mt_host_f32_to_bf16(1.0f + 3.0f / 256) == 0x3f82);
    CHECK(mt_host_f32_to_f16(1.0f) == 0x3c00);
    CHECK(mt_host_f32_to_f16(65504.0f) == 0x7bff);
    CHECK(mt_host_f32_to_f16(65520.0f) == 0x7c00);          /* rounds to inf */
    CHECK(mt_host_f32_to_f16(5.9604644775390625e-8f) == 0x0001); /* smallest subnormal */
    CHECK(mt_host_f16_to_f32(0x0001) == 5.9604644775390625e-8f);
    CHECK(mt_host_f16_to_f32(0xc000) == -2.0f);
    CHECK(isnan(mt_host_f16_to_f32(0x7e00)));
    CHECK(mt_host_fp8e4m3_to_f32(0x38) == 1.0f);
    CHECK(mt_host_fp8e4m3_to_f32(0x7e) == 448.0f);
    CHECK(mt_host_fp8e4m3_to_f32(0x01) == 0.001953125f);
    CHECK(mt_host_fp8e4m3_to_f32(0xb8) == -1.0f);
    CHECK(isnan(mt_host_fp8e4m3_to_f32(0x7f)) && isnan(mt_host_fp8e4m3_to_f32(0xff)));
    CHECK(mt_host_f32_to_fp8e4m3(1000.0f) == 0x7e);          /* saturates */
    /* every finite fp8 code round-trips; every fp16 code round-trips */
    int fp8_ok = 1, f16_ok = 1;
    for (int b = 0; b < 256; b++)
        if ((b & 0x7f) != 0x7f) fp8_ok &= mt_host_f32_to_fp8e4m3(mt_host_fp8e4m3_to_f32((uint8_t)b)) == b;
    for (int h = 0; h < 65536; h++)
        if (((h >> 10) & 0x1f) != 0x1f) f16_ok &= mt_host_f32_to_f16(mt_host_f16_to_f32((uint16_t)h)) == h;
    CHECK(fp8_ok);
    CHECK(f16_ok);
}

/* The value of e4m3 code b from the format's definition, in double,
 * written from the definition and not from the code under test: 1 sign,
 * 4 exponent, 3 mantissa bits; exponent field 0 is subnormal,
 * (-1)^s 2^(1-bias) m/8, otherwise (-1)^s 2^(e-bias) (1 + m/8).  The NaN
 * codes are the caller's business. */
static double e4m3_definition(int b, int bias) {
    const int s = b >> 7, e = (b >> 3) & 15, m = b & 7;
    const double mag = e == 0 ? pow(2.0, 1 - bias) * m / 8.0 : pow(2.0, e - bias) * (1.0 + m / 8.0);
    return s ? -mag : mag;
}

typedef struct fp8_format {
    const char *name;
    int bias;
    float (*decode)(uint8_t);
    uint8_t (*encode)(float);
    int (*is_nan_code)(int b);
    int max_code;      /* the largest finite magnitude's code */
    double max_value;
} fp8_format;

static int ocp_nan_code(int b) { return (b & 0x7f) == 0x7f; }
static int fnuz_nan_code(int b) { return b == 0x80; }

/* Every one of the 256 codes: decodes to the definition's value (the sign
 * of zero included), and encodes back to itself; every midpoint between
 * neighbouring magnitudes rounds to the even code, and just off it to the
 * nearer one; past the largest value saturates. */
static void check_fp8_format(const fp8_format *f) {
    int wrong_value = 0, wrong_round_trip = 0, wrong_tie = 0, nan_codes = 0;
    for (int b = 0; b < 256; b++) {
        const float got = f->decode((uint8_t)b);
        if (f->is_nan_code(b)) {
            nan_codes++;
            wrong_value += !isnan(got);
            wrong_round_trip += f->encode(got) != (f->bias == 8 ? 0x80 : 0x7f);
            continue;
        }
        const double want = e4m3_definition(b, f->bias);
        if ((double)got != want || !signbit(got) != !signbit(want)) {
            if (wrong_value++ < 3) fprintf(stderr, "%s: code 0x%02x decodes to %.9g, the definition says %.9g\n",
                                           f->name, b, (double)got, want);
        }
        wrong_round_trip += f->encode(got) != b;
    }
    for (int c = 0; c < f->max_code; c++) {
        const double lo = e4m3_definition(c, f->bias), hi = e4m3_definition(c + 1, f->bias), mid = (lo + hi) / 2;
        const int even = c % 2 == 0 ? c : c + 1;
        wrong_tie += f->encode((float)mid) != even || f->encode((float)-mid) != (even == 0 && f->bias == 8 ? 0 : (0x80 | even));
        wrong_tie += f->encode((float)(mid + (hi - lo) / 8)) != c + 1 || f->encode((float)(mid - (hi - lo) / 8)) != c;
    }
    CHECK_MSG(wrong_value == 0, "%s: %d codes decode to other values than the format's definition", f->name, wrong_value);
    CHECK_MSG(wrong_round_trip == 0, "%s: %d codes do not encode back to themselves", f->name, wrong_round_trip);
    CHECK_MSG(wrong_tie == 0, "%s: %d rounding cases (ties to even, nearest) wrong", f->name, wrong_tie);
    CHECK_MSG(nan_codes == (f->bias == 8 ? 1 : 2), "%s: %d NaN codes", f->name, nan_codes);
    CHECK_MSG((double)f->decode((uint8_t)f->max_code) == f->max_value, "%s: largest value %g", f->name,
              (double)f->decode((uint8_t)f->max_code));
    /* saturation, not NaN: there is no infinity in either encoding */
    CHECK(f->encode((float)(f->max_value * 1.05)) == f->max_code && f->encode(1e30f) == f->max_code);
    CHECK(f->encode(-1e30f) == (0x80 | f->max_code) && f->encode(INFINITY) == f->max_code);
}

static void test_fp8_encodings(void) {
    const fp8_format ocp = {.name = "fp8e4m3 (OCP fn)", .bias = 7, .decode = mt_host_fp8e4m3_to_f32,
                            .encode = mt_host_f32_to_fp8e4m3, .is_nan_code = ocp_nan_code, .max_code = 0x7e,
                            .max_value = 448.0};
    const fp8_format fnuz = {.name = "fp8e4m3fnuz", .bias = 8, .decode = mt_host_fp8e4m3fnuz_to_f32,
                             .encode = mt_host_f32_to_fp8e4m3fnuz, .is_nan_code = fnuz_nan_code, .max_code = 0x7f,
                             .max_value = 240.0};
    check_fp8_format(&ocp);
    check_fp8_format(&fnuz);
    /* fnuz has no negative zero: -0 and negative values that round to 0 are +0 */
    CHECK(mt_host_f32_to_fp8e4m3fnuz(-0.0f) == 0x00 && mt_host_f32_to_fp8e4m3fnuz(-1e-6f) == 0x00);
    CHECK(mt_host_f32_to_fp8e4m3(-0.0f) == 0x80);
    /* the rule for values the other encoding cannot hold: OCP's 448 and 256
     * saturate to fnuz's 240; fnuz's smallest subnormal 2^-10 is below
     * OCP's 2^-9 and ties to 0; a code means half as much in fnuz */
    CHECK(mt_host_f32_to_fp8e4m3fnuz(mt_host_fp8e4m3_to_f32(0x7e)) == 0x7f);
    CHECK(mt_host_f32_to_fp8e4m3fnuz(256.0f) == 0x7f);
    CHECK(mt_host_f32_to_fp8e4m3(mt_host_fp8e4m3fnuz_to_f32(0x01)) == 0x00);
    CHECK(mt_host_fp8e4m3fnuz_to_f32(0x38) == 0.5f && mt_host_fp8e4m3_to_f32(0x38) == 1.0f);
    CHECK(mt_host_fp8e4m3fnuz_to_f32(0x7f) == 240.0f && isnan(mt_host_fp8e4m3_to_f32(0x7f)));
    CHECK(isnan(mt_host_fp8e4m3fnuz_to_f32(0x80)) && mt_host_fp8e4m3_to_f32(0x80) == 0.0f);
    /* the generic load / store the tests and the tuner use */
    uint8_t bytes[2];
    mt_host_store(MT_FP8_E4M3_FNUZ, bytes, 1, 1.0f);
    mt_host_store(MT_FP8_E4M3, bytes, 0, 1.0f);
    CHECK(bytes[0] == 0x38 && bytes[1] == 0x40);
    CHECK(mt_host_load(MT_FP8_E4M3_FNUZ, bytes, 1) == 1.0f && mt_host_load(MT_FP8_E4M3_FNUZ, bytes, 0) == 0.5f);
}

/* D=2, Dl=1 so every number can be checked by hand.  Key j is (k0, k1);
 * its value is k0. */
static void test_by_hand(void) {
    /* zeroed: a case reads q rows it does not set (Sq=3 below reads a third
     * row), and garbage there made the score NaN now and then in CI */
    uint16_t q[8] = {0}, kv[16] = {0};
    int32_t table[4], lens[2];
    double out[8], lse[8];
    mt_mla_host_problem p = {.s = {.d = 2, .dl = 1, .page_size = 1, .q_dtype = MT_BF16, .kv_dtype = MT_BF16},
                             .batch = 1, .n_heads = 1, .sq = 1, .max_blocks = 4, .scale = 1.0, .kv_scale = 1.0,
                             .q = q, .kv = kv, .block_table = table, .seq_lens = lens};
    /* one query (1, 0); keys (1, 0) and (0, 1): scores 1 and 0 */
    q[0] = mt_host_f32_to_bf16(1), q[1] = mt_host_f32_to_bf16(0);
    kv[0] = mt_host_f32_to_bf16(1), kv[1] = mt_host_f32_to_bf16(0);
    kv[2] = mt_host_f32_to_bf16(0), kv[3] = mt_host_f32_to_bf16(1);
    table[0] = 0, table[1] = 1;
    lens[0] = 2;
    mt_mla_reference(&p, out, lse, 1);
    double e = exp(1.0);
    CHECK(NEAR(out[0], e / (e + 1)));   /* 0.7311 */
    CHECK(NEAR(lse[0], log(e + 1)));    /* 1.3133 */

    /* the block table is followed: swap the pages, same keys in other order */
    kv[0] = mt_host_f32_to_bf16(0), kv[1] = mt_host_f32_to_bf16(1);
    kv[2] = mt_host_f32_to_bf16(1), kv[3] = mt_host_f32_to_bf16(0);
    table[0] = 1, table[1] = 0;
    mt_mla_reference(&p, out, lse, 1);
    CHECK(NEAR(out[0], e / (e + 1)));
    /* the scale multiplies the scores: scale 2 -> scores 2, 0 */
    p.scale = 2.0;
    mt_mla_reference(&p, out, lse, 1);
    CHECK(NEAR(out[0], exp(2.0) / (exp(2.0) + 1)) && NEAR(lse[0], log(exp(2.0) + 1)));
    p.scale = 1.0;

    /* causal among Sq=2 query tokens, L=3 keys with values 1, 2, 3 and
     * zero scores: token 0 sees keys 0..1 (mean 1.5), token 1 all (mean 2) */
    table[0] = 0, table[1] = 1, table[2] = 2;
    for (int j = 0; j < 3; j++) kv[2 * j] = mt_host_f32_to_bf16((float)(j + 1)), kv[2 * j + 1] = mt_host_f32_to_bf16(0);
    q[0] = q[1] = q[2] = q[3] = mt_host_f32_to_bf16(0);
    p.sq = 2;
    lens[0] = 3;
    mt_mla_reference(&p, out, lse, 1);
    CHECK(NEAR(out[0], 1.5) && NEAR(lse[0], log(2.0)));
    CHECK(NEAR(out[1], 2.0) && NEAR(lse[1], log(3.0)));

    /* fewer keys than query tokens: L=1, Sq=3 -> tokens 0 and 1 have no
     * keys (out 0, lse -inf); token 2 sees key 0 */
    p.sq = 3;
    lens[0] = 1;
    mt_mla_reference(&p, out, lse, 1);
    CHECK(out[0] == 0 && isinf(lse[0]) && lse[0] < 0);
    CHECK(out[1] == 0 && isinf(lse[1]) && lse[1] < 0);
    CHECK(NEAR(out[2], 1.0) && NEAR(lse[2], 0.0));

    /* an empty request next to a full one, two heads, page size 2 */
    p.sq = 1, p.n_heads = 2, p.batch = 2, p.max_blocks = 2, p.s.page_size = 2;
    lens[0] = 0, lens[1] = 3;
    table[0] = table[1] = 0;  /* request 0: unused */
    table[2] = 1, table[3] = 0; /* request 1: page 1 holds tokens 0,1; page 0 token 2 */
    /* page 0 = tokens (kv[0..3]), page 1 = (kv[4..7]) */
    kv[0] = mt_host_f32_to_bf16(5), kv[1] = mt_host_f32_to_bf16(0);
    kv[2] = mt_host_f32_to_bf16(9), kv[3] = mt_host_f32_to_bf16(0);
    kv[4] = mt_host_f32_to_bf16(1), kv[5] = mt_host_f32_to_bf16(0);
    kv[6] = mt_host_f32_to_bf16(3), kv[7] = mt_host_f32_to_bf16(0);
    for (int i = 0; i < 8; i++) q[i] = mt_host_f32_to_bf16(0);
    mt_mla_reference(&p, out, lse, 2);
    CHECK(out[0] == 0 && out[1] == 0 && isinf(lse[0]) && isinf(lse[1]));
    CHECK(NEAR(out[2], 3.0) && NEAR(out[3], 3.0));  /* mean of 1, 3, 5 */

    /* fp8 KV with its per-tensor scale: 0x38 = 1.0, 0x40 = 2.0; scale 0.5 */
    uint8_t kv8[4] = {0x38, 0x00, 0x40, 0x00};
    uint16_t q2[2] = {mt_host_f32_to_bf16(0), mt_host_f32_to_bf16(0)};
    int32_t t2[2] = {0, 1}, l2[1] = {2};
    mt_mla_host_problem p8 = {.s = {.d = 2, .dl = 1, .page_size = 1, .q_dtype = MT_FP16, .kv_dtype = MT_FP8_E4M3},
                              .batch = 1, .n_heads = 1, .sq = 1, .max_blocks = 2, .scale = 1.0, .kv_scale = 0.5,
                              .q = q2, .kv = kv8, .block_table = t2, .seq_lens = l2};
    q2[0] = mt_host_f32_to_f16(0), q2[1] = mt_host_f32_to_f16(0);
    mt_mla_reference(&p8, out, lse, 1);
    CHECK(NEAR(out[0], 0.75));  /* mean of 0.5 and 1.0 */
}

static void test_relative_error(void) {
    double a[3] = {1, 2, 3}, b[3] = {1, 2, 3};
    CHECK(mt_relative_error(a, b, 3) == 0);
    a[1] = NAN;
    CHECK(isinf(mt_relative_error(a, b, 3)));
    a[1] = 2.1;
    CHECK(fabs(mt_relative_error(a, b, 3) - 0.1 / sqrt(14.0)) < 1e-12);
    double c[2] = {-INFINITY, 1}, d[2] = {-INFINITY, 1};
    CHECK(mt_relative_error(c, d, 2) == 0);
    c[0] = 0;
    CHECK(isinf(mt_relative_error(c, d, 2)));
}

int main(void) {
    test_dtypes();
    test_fp8_encodings();
    test_by_hand();
    test_relative_error();
    return check_summary("test_reference");
}
