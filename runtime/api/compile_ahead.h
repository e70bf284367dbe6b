/*
 * compile_ahead.h - a plan's variants compiled side by side before they
 * are loaded one by one: a plan with no tuning entry compiles its built-in
 * rule's variants (up to MT_MAX_HEURISTIC + 1) on first use, each NVRTC /
 * hiprtc compile taking a second or more.
 */
#ifndef MT_COMPILE_AHEAD_H
#define MT_COMPILE_AHEAD_H

#include "kernels/build.h"

/* Compiles the code objects of variants[0..n) for problem `s` on `t` into
 * the JIT's caches, on up to MT_COMPILE_AHEAD_THREADS threads (no more
 * than the host's CPUs).  Failures are not reported here: the plan's own
 * build of each variant, which follows, finds the objects that compiled in
 * memory and compiles again (and reports) the ones that did not. */
void mt_compile_ahead(mt_jit *jit, const mt_variant *variants, int n, const mt_problem_static *s, const mt_target *t);

enum { MT_COMPILE_AHEAD_THREADS = 16 };

#endif
