/*
 * tiny.h - a kernel family that exists only in the tests ("test_tiny",
 * problem kind "tiny"): y = a x + b over n floats.  It plugs into the
 * library through kernels/family.h alone (mt_family_register), to show
 * that a family needs nothing outside its own folder.
 */
#ifndef MT_TEST_TINY_H
#define MT_TEST_TINY_H

#include "kernels/family.h"

extern const mt_family mt_family_tiny;

enum { TINY_P_BLOCK, TINY_P_ITEMS };

/* One call's arguments (the family's own struct, given to launch). */
typedef struct tiny_args {
    mt_devptr x, y;
    int n;
    float a, b;
} tiny_args;

#endif
