/*
 * cmd_devices.c - `mla-tune devices`: list the GPUs, or say plainly what was
 * looked for when there are none.  With --json the answer is one object,
 * {"devices": [...], "error": null or what was looked for}, so that a
 * script reads "no GPU" the same way it reads a list.
 */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "json.h"
#include "runtime/gpu/backend.h"
#include "runtime/gpu/blaslt.h"

static void json_device(int i, const mt_device_info *d) {
    printf("%s\n    {\"index\": %d, \"backend\": ", i ? "," : "", i);
    mt_json_string(stdout, d->backend);
    printf(", \"arch\": ");
    mt_json_string(stdout, d->arch);
    printf(", \"name\": ");
    mt_json_string(stdout, d->name);
    printf(", \"compute_units\": %d, \"warp_size\": %d, \"memory_bytes\": %zu, \"shared_per_group_max\": %zu, "
           "\"clock_mhz\": %d, \"memory_gbps\": %.0f, \"driver\": ",
           d->compute_units, d->warp_size, d->total_memory, d->shared_per_group_max, d->clock_khz / 1000,
           mt_device_memory_gbps(d));
    mt_json_string(stdout, d->driver_version);
    printf("}");
}

static int json_error(const char *message) {
    printf("{\"devices\": [], \"error\": ");
    mt_json_string(stdout, message);
    printf("}\n");
    return 1;
}

/* The vendor BLAS the MHA/MQA crossover needs (issue 29), found or not. */
static void blas_line(mt_backend *b) {
    mt_device_info info;
    if (mt_backend_device_info(b, 0, &info) != MT_OK) {
        mt_clear_error();
        return;
    }
    mt_blaslt_vendor v = strcmp(info.backend, "hip") == 0 ? MT_BLASLT_HIPBLASLT : MT_BLASLT_CUBLASLT;
    mt_blaslt lt;
    if (mt_blaslt_open(v, &lt) == MT_OK) {
        printf("vendor BLAS: %s %zu (%s)\n", mt_blaslt_vendor_name(v), lt.version, lt.library);
        mt_blaslt_close(&lt);
    } else {
        printf("vendor BLAS: %s\n", mt_last_error());
        mt_clear_error();
    }
}

int cmd_devices(int argc, char **argv) {
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0) {
            printf("usage: mla-tune devices [--json]\n\nLists every GPU found through HIP and CUDA. Exits 1 when none\n"
                   "(--json: {\"devices\": [], \"error\": \"what was looked for\"}).\n");
            return 0;
        }
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
            continue;
        }
        mt_cli_error("devices: unexpected argument '%s'", argv[i]);
        return 2;
    }
    mt_backend *b = NULL;
    int count = 0;
    if (mt_backend_discover(&b) != MT_OK || mt_backend_device_count(b, &count) != MT_OK) {
        mt_cli_error("%s", mt_last_error());
        int rc = json ? json_error(mt_last_error()) : 1;
        mt_backend_close(b);
        return rc;
    }
    if (json) printf("{\"devices\": [");
    else
        printf("%-3s %-7s %-8s %-5s %-6s %-10s %-9s %-8s %-7s %s\n", "#", "backend", "arch", "CUs", "warp", "memory",
               "shared", "clock", "GB/s", "name");
    int failed = 0, shown = 0;
    for (int i = 0; i < count; i++) {
        mt_device_info info;
        if (mt_backend_device_info(b, i, &info) != MT_OK) {
            mt_cli_error("device %d: %s", i, mt_last_error());
            failed = 1;
            continue;
        }
        if (json) json_device(shown++, &info);
        else
            printf("%-3d %-7s %-8s %-5d %-6d %-10.1f %-9zu %-8d %-7.0f %s (driver %s)\n", i, info.backend, info.arch,
                   info.compute_units, info.warp_size, info.total_memory / (1024.0 * 1024 * 1024),
                   info.shared_per_group_max, info.clock_khz / 1000, mt_device_memory_gbps(&info), info.name,
                   info.driver_version);
    }
    if (json) printf("%s], \"error\": %s}\n", shown ? "\n  " : "", failed ? "\"a device could not be read\"" : "null");
    else if (shown || count) blas_line(b);
    mt_backend_close(b);
    return failed;
}
