/*
 * mt_emu_launch.h - what the "hip-cpu" backend (runtime/gpu/backend_emu.c, C)
 * hands the emulated kernel module (hip/hip_runtime.h, compiled as C++ into
 * each module) for one launch: one definition for both sides.
 */
#ifndef MT_EMU_LAUNCH_H
#define MT_EMU_LAUNCH_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mt_emu_launch_desc {
    void (*entry)(void **args);
    unsigned grid[3], block[3];
    size_t shared_bytes;
    void **args;
    char error[512];
} mt_emu_launch_desc;

#ifdef __cplusplus
}
#endif
#endif
