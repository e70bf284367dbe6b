/*
 * cmd_devices.c - `mla-tune devices`: list the GPUs, or say plainly what was
 * looked for when there are none.
 */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "runtime/gpu/backend.h"

int cmd_devices(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0) {
            printf("usage: mla-tune devices\n\nLists every GPU found through HIP and CUDA. Exits 1 when none.\n");
            return 0;
        }
        mt_cli_error("devices: unexpected argument '%s'", argv[i]);
        return 2;
    }
    mt_backend *b = NULL;
    if (mt_backend_discover(&b) != MT_OK) {
        mt_cli_error("%s", mt_last_error());
        return 1;
    }
    int count = 0;
    if (mt_backend_device_count(b, &count) != MT_OK) {
        mt_cli_error("%s", mt_last_error());
        mt_backend_close(b);
        return 1;
    }
    printf("%-3s %-7s %-8s %-5s %-6s %-10s %-9s %-8s %s\n", "#", "backend", "arch", "CUs", "warp", "memory",
           "shared", "clock", "name");
    int failed = 0;
    for (int i = 0; i < count; i++) {
        mt_device_info info;
        if (mt_backend_device_info(b, i, &info) != MT_OK) {
            mt_cli_error("device %d: %s", i, mt_last_error());
            failed = 1;
            continue;
        }
        printf("%-3d %-7s %-8s %-5d %-6d %-10.1f %-9zu %-8d %s (driver %s)\n", i, info.backend, info.arch,
               info.compute_units, info.warp_size, info.total_memory / (1024.0 * 1024 * 1024),
               info.shared_per_group_max, info.clock_khz / 1000, info.name, info.driver_version);
    }
    mt_backend_close(b);
    return failed;
}
