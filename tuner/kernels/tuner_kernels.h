/*
 * tuner_kernels.h - the tuner's own kernels (tuner/kernels: the .cu files), embedded
 * into the tool the way family kernels are into the library: the copy and
 * matrix ceilings, the cache flush and random fill of `bench` and the
 * sweep, and the faulting kernel the sweep's isolation tests inject.  None
 * of them is in libmlatune.
 */
#ifndef MT_TUNER_KERNELS_H
#define MT_TUNER_KERNELS_H

#include "kernels/sources.h"

extern const mt_source_file mt_tuner_kernel_files[];

#endif
