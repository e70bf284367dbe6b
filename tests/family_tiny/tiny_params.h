/*
 * tiny_params.h - the test family's kernel argument, shared by its host
 * side (C, tiny.c) and its kernel (tiny.cu), like a real family's params.h.
 */
#ifndef MT_TINY_PARAMS_H
#define MT_TINY_PARAMS_H

#ifdef __cplusplus
typedef unsigned long long tiny_ptr;
#else
#include <stdint.h>
typedef uint64_t tiny_ptr;
#endif

typedef struct tiny_params {
    tiny_ptr x, y;   /* float [n] each */
    int n;
    float a, b;      /* y = a * x + b */
    int pad_;
} tiny_params;

#endif
