/*
 * build.h - the one recipe from a variant to kernels that can run: the
 * family names its source files, they are put after the prelude
 * (kernels/sources.h), the problem's facts and the variant's values become
 * defines, the JIT compiles (memory, disk or compiler), and the family's
 * entry points are looked up and given their shared-memory limit.
 *
 * The JIT key covers only the text the variant compiles, so editing one
 * path's file discards only that path's cached builds.
 */
#ifndef MT_BUILD_H
#define MT_BUILD_H

#include "kernels/family.h"
#include "runtime/gpu/jit.h"

/* Compiles (or finds) variant v for problem s on target t: needs no device
 * (the sweep's compile-ahead, `mla-tune compile`).  *origin may be NULL. */
mt_status mt_build_compile(mt_jit *jit, const mt_variant *v, const mt_problem_static *s, const mt_target *t,
                           const mt_code_object **obj, mt_jit_origin *origin);

/* The same with extra compiler options (tests that build a deliberately
 * broken kernel: part of the key like everything else). */
mt_status mt_build_compile_with(mt_jit *jit, const mt_variant *v, const mt_problem_static *s, const mt_target *t,
                                const char *const *options, int n_options, const mt_code_object **obj,
                                mt_jit_origin *origin);

/* The same from the text given (mt_build_source_in's, for instance: an
 * older kernel tree's), with the variant's defines. */
mt_status mt_build_compile_text(mt_jit *jit, const mt_variant *v, const mt_problem_static *s, const mt_target *t,
                                const char *text, const char *const *options, int n_options,
                                const mt_code_object **obj, mt_jit_origin *origin);

/* The entry points of a compiled variant on the calling thread's device,
 * ready to launch. */
mt_status mt_build_load(mt_jit *jit, const mt_code_object *obj, const mt_variant *v, const mt_problem_static *s,
                        const mt_target *t, mt_kernels *out);

/* Both: what a plan and a sweep worker do per variant. */
mt_status mt_build_variant(mt_jit *jit, const mt_variant *v, const mt_problem_static *s, const mt_target *t,
                           mt_kernels *out);

/* The text variant v compiles for problem `s` on `t` (prelude and its
 * files): for tools that compile without the JIT.  *out is malloc'd. */
mt_status mt_build_source(const mt_variant *v, const mt_problem_static *s, const mt_target *t, char **out);

/* mt_build_source with the files read from the folder `kernel_dir`, laid
 * out like kernels/ (NULL: mt_build_source). */
mt_status mt_build_source_in(const mt_variant *v, const mt_problem_static *s, const mt_target *t,
                             const char *kernel_dir, char **out);

/* The validator of a measurement (issue 25): the hex SHA-256 of the text
 * variant v compiles for problem `s` on `t` (the prelude and its family's files, as
 * mt_build_source composes them; MLA_TUNE_KERNEL_DIR included).  A
 * measurement records it; the runtime ignores a choice whose variant now
 * compiles from other text. */
mt_status mt_build_source_hash(const mt_variant *v, const mt_problem_static *s, const mt_target *t, char hex[65]);

#endif
