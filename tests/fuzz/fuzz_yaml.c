/*
 * libFuzzer target: the YAML config loader (libyaml -> tree -> plan and
 * space validation) on arbitrary bytes.  Any input must give MT_OK or a
 * clean error; ASan/UBSan catch the rest.
 */
#include <stddef.h>
#include <stdint.h>

#include "tuner/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    mt_plan plan;
    if (mt_parse_plan("fuzz.yaml", (const char *)data, size, &plan) == MT_OK) mt_plan_free(&plan);
    mt_space_config space;
    mt_parse_space("fuzz.yaml", (const char *)data, size, &space);
    return 0;
}
