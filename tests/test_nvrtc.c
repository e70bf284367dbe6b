/*
 * NVRTC compiles for sm_90 on a host with no GPU: the test kernel and the
 * default MLA decode variant become cubins (ELF), the ptxas report is parsed
 * into registers / spills (and ptxas's note of serialised wgmma products),
 * and a broken source fails with the compiler's message.  Skipped (exit 77) only where libnvrtc cannot be loaded.
 */
#include "check.h"
#include "kernels/build.h"
#include "kernels/sources.h"
#include "tuner/kernels/tuner_kernels.h"
#include "kernels/mla_decode/mla_decode.h"
#include "runtime/gpu/backend.h"

int main(void) {
    mt_backend *b = NULL;
    if (mt_backend_open_for_arch("sm_90", &b) != MT_OK) {
        printf("SKIP: %s\n", mt_last_error());
        return CHECK_SKIP_CODE;
    }
    char version[64];
    CHECK_OK(mt_backend_compiler_version(b, version, sizeof version));
    CHECK(strncmp(version, "nvrtc-", 6) == 0);

    char *source = NULL;
    CHECK_OK(mt_kernel_source(mt_tuner_kernel_files, "test_kernels.cu", &source));
    mt_compile_result r;
    const char *opts[] = {"-DTEST_BLOCK=128"};
    CHECK_OK(mt_backend_compile(b, source, "test_kernels.cu", "sm_90", opts, 1, &r));
    CHECK(r.code_size > 4 && memcmp(r.code, "\x7f" "ELF", 4) == 0);
    mt_kernel_resources res;
    mt_backend_parse_resources(b, r.log, "mt_test_axpy", &res);
    CHECK_MSG(res.registers > 0 && res.registers < 255, "registers %d; log:\n%s", res.registers, r.log);
    CHECK_MSG(res.shared_bytes == 128 * 4, "static shared %d", res.shared_bytes);
    CHECK(res.spill_stores == 0 && res.local_bytes == 0);
    CHECK_MSG(res.serialized_mma == 0, "serialized_mma %d", res.serialized_mma);
    mt_compile_result_free(&r);
    free(source);

    /* ptxas's serialised-wgmma note names its kernel at the end of a line
     * outside the kernel's block (PERFLOG session 29): found for that
     * kernel only */
    const char *serial_log =
        "ptxas info    : (C7520) Potential Performance Loss: wgmma.mma_async instructions are serialized due to "
        "program dependence on compiler-inserted WG.AR in divergent path in the function 'slow_one'\n"
        "ptxas info    : Compiling entry function 'fast_one' for 'sm_90a'\n"
        "ptxas info    : Used 40 registers, used 1 barriers\n"
        "ptxas info    : Compiling entry function 'slow_one' for 'sm_90a'\n"
        "ptxas info    : Used 211 registers, used 16 barriers\n";
    mt_backend_parse_resources(b, serial_log, "slow_one", &res);
    CHECK_MSG(res.serialized_mma == 1 && res.registers == 211, "slow_one: %d, %d", res.serialized_mma, res.registers);
    mt_backend_parse_resources(b, serial_log, "fast_one", &res);
    CHECK_MSG(res.serialized_mma == 0 && res.registers == 40, "fast_one: %d, %d", res.serialized_mma, res.registers);
    mt_backend_parse_resources(b, serial_log, "slow", &res); /* a prefix of a name is not the name */
    CHECK(res.serialized_mma == -1);

    /* the real kernel, default variant */
    mt_variant v;
    mt_variant_default(&mt_family_mla_decode, &v);
    mt_target sm90;
    CHECK_OK(mt_target_for_arch("sm_90", &sm90));
    mt_problem_static s = {.d = 576, .dl = 512, .page_size = 64, .q_dtype = MT_BF16, .kv_dtype = MT_FP8_E4M3};
    CHECK_OK(mt_build_source(&v, &s, &sm90, &source)); /* the text the recipe compiles */
    char storage[16][48];
    const char *defines[16];
    int n = mt_variant_defines(&v, &s, storage, defines, 16);
    char dopts[16][52];
    const char *optp[16];
    for (int i = 0; i < n; i++) {
        snprintf(dopts[i], sizeof dopts[i], "-D%s", defines[i]);
        optp[i] = dopts[i];
    }
    CHECK_OK(mt_backend_compile(b, source, "mla_decode", "sm_90", optp, n, &r));
    mt_backend_parse_resources(b, r.log, MT_MLA_DECODE_KERNEL, &res);
    CHECK_MSG(res.registers > 0 && res.spill_stores == 0, "regs %d spills %d", res.registers, res.spill_stores);
    mt_compile_result_free(&r);
    free(source);

    /* a compile error comes back with the compiler's own words */
    CHECK_STATUS(mt_backend_compile(b, "extern \"C\" __global__ void k() { undefined_thing(); }", "bad.cu",
                                    "sm_90", NULL, 0, &r),
                 MT_ERR_COMPILE);
    CHECK_MSG(strstr(mt_last_error(), "undefined_thing") != NULL, "message: %s", mt_last_error());
    mt_compile_result_free(&r);
    /* NVRTC does not pretend to compile for AMD */
    CHECK_STATUS(mt_backend_compile(b, "x", "x.cu", "gfx942", NULL, 0, &r), MT_ERR_INVALID_ARGUMENT);
    mt_backend_close(b);
    return check_summary("test_nvrtc");
}
