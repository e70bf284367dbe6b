/*
 * fp8_codes.c - see fp8_codes.h.
 */
#include "fp8_codes.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/dtype.h"
#include "kernels/sources.h"

double fp8_e4m3_by_definition(unsigned b, int fnuz) {
    /* 1 sign, 4 exponent, 3 mantissa bits; OCP "fn": bias 7, S.1111.111
     * NaN; "fnuz": bias 8, 0x80 the only NaN */
    const int bias = fnuz ? 8 : 7, e = (b >> 3) & 15, m = b & 7;
    if (fnuz ? b == 0x80 : (b & 0x7f) == 0x7f) return NAN;
    const double v = e == 0 ? m / 8.0 * ldexp(1.0, 1 - bias) : (1 + m / 8.0) * ldexp(1.0, e - bias);
    return b & 0x80 ? -v : v;
}

static int same_value(double want, float got) {
    return isnan(want) ? isnan(got) : (double)got == want && !signbit(want) == !signbit(got);
}

/* thread b converts code b alone and as the low byte of a pair whose high
 * byte is 255 - b (so every code is in both halves) */
static const char *const fp8_codes_kernel =
    "extern \"C\" __global__ void fp8_codes(float *scalar, unsigned *pairs) {\n"
    "    const int b = threadIdx.x;\n"
    "    scalar[b] = mt_fp8e4m3_to_f32((mt_u8)b);\n"
    "    scalar[256 + b] = mt_fp8e4m3fnuz_to_f32((mt_u8)b);\n"
    "    const mt_u16 two = (mt_u16)(b | ((255 - b) << 8));\n"
    "    pairs[b] = mt_cvt_e4m3x2_f16x2(two);\n"
    "    pairs[256 + b] = mt_cvt_e4m3fnuzx2_f16x2(two);\n"
    "}\n";

mt_status fp8_codes_check(mt_backend *b, mt_jit *jit, const char *arch, int bad[2]) {
    bad[0] = bad[1] = 0;
    /* the library's prelude, then the kernel above */
    const mt_source_file table[] = {{.name = "fp8_codes.cu", .text = fp8_codes_kernel, .size = strlen(fp8_codes_kernel)},
                                    {.name = NULL}};
    char *source = NULL;
    mt_status st = mt_kernel_source(table, "fp8_codes.cu", &source);
    if (st != MT_OK) return st;
    mt_jit_request req = {.source = source, .source_name = "fp8_codes.cu", .arch = arch};
    const mt_code_object *obj = NULL;
    mt_function fn = NULL;
    st = mt_jit_compile(jit, &req, &obj, NULL);
    free(source);
    if (st == MT_OK) st = mt_jit_function(jit, obj, "fp8_codes", &fn);
    if (st != MT_OK) return st;
    mt_devptr d_scalar = 0, d_pairs = 0;
    float scalar[512];
    unsigned pairs[512];
    void *args[] = {&d_scalar, &d_pairs};
    unsigned grid[3] = {1, 1, 1}, block[3] = {256, 1, 1};
    if ((st = mt_backend_mem_alloc(b, sizeof scalar, &d_scalar)) == MT_OK &&
        (st = mt_backend_mem_alloc(b, sizeof pairs, &d_pairs)) == MT_OK &&
        (st = mt_backend_launch(b, fn, grid, block, 0, NULL, args)) == MT_OK &&
        (st = mt_backend_copy_to_host(b, scalar, d_scalar, sizeof scalar, NULL)) == MT_OK)
        st = mt_backend_copy_to_host(b, pairs, d_pairs, sizeof pairs, NULL);
    if (d_scalar) mt_backend_mem_free(b, d_scalar);
    if (d_pairs) mt_backend_mem_free(b, d_pairs);
    if (st != MT_OK) return st;
    for (int fnuz = 0; fnuz < 2; fnuz++)
        for (unsigned c = 0; c < 256; c++) {
            const unsigned pair = pairs[256 * fnuz + c];
            const double want = fp8_e4m3_by_definition(c, fnuz);
            const float lo = mt_host_f16_to_f32((uint16_t)(pair & 0xffff)), hi = mt_host_f16_to_f32((uint16_t)(pair >> 16));
            const int ok = same_value(want, scalar[256 * fnuz + c]) && same_value(want, lo) &&
                           same_value(fp8_e4m3_by_definition(255 - c, fnuz), hi);
            if (!ok && bad[fnuz]++ < 4)
                printf("%s %s code 0x%02x: want %g, scalar %g, pair %g / %g (want %g)\n", arch,
                       fnuz ? "fp8e4m3fnuz" : "fp8e4m3", c, want, scalar[256 * fnuz + c], lo, hi,
                       fp8_e4m3_by_definition(255 - c, fnuz));
        }
    return MT_OK;
}
