/*
 * cmd_compile.c - `mla-tune compile --arch ARCH`: compile every variant of
 * the architecture's search space and report, per variant, ok/failed (or
 * SERIAL: compiled, but the compiler serialised its asynchronous
 * matrix-unit products), the compile time and the resources the compiler
 * reports.
 *
 * Needs no GPU: sm_* compiles with NVRTC, gfx* with hiprtc or, on a host
 * without ROCm, with clang's offline HIP compiler (the report names which).
 * Variants compile on several CPU threads; results print in space order.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "json.h"
#include "kernels/sources.h"
#include "kernels/build.h"
#include "runtime/base/parallel.h"
#include "runtime/gpu/jit.h"
#include "config.h"

typedef struct compile_job {
    mt_variant variant;
    mt_problem_static problem;
    mt_status status;
    char error[4096];
    double ms;
    mt_jit_origin origin;
    mt_kernel_resources res;
} compile_job;

typedef struct compile_batch {
    mt_jit *jit;
    const mt_target *target;
    compile_job *jobs;
} compile_batch;

typedef struct collect_ctx {
    compile_job *jobs;
    int n, cap, limit;
    mt_problem_static problem;
} collect_ctx;

static int collect(const mt_variant *v, void *user) {
    collect_ctx *c = user;
    if (c->limit > 0 && c->n >= c->limit) return 1;
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 64;
        compile_job *grown = realloc(c->jobs, (size_t)c->cap * sizeof *grown);
        if (!grown) return 1;
        c->jobs = grown;
    }
    memset(&c->jobs[c->n], 0, sizeof c->jobs[c->n]);
    c->jobs[c->n].variant = *v;
    c->jobs[c->n].problem = c->problem;
    c->n++;
    return 0;
}

/* Job i of the batch (mt_parallel_for: on several threads at once). */
static void compile_one(void *ctx, int i) {
    const compile_batch *batch = ctx;
    compile_job *job = &batch->jobs[i];
    const mt_code_object *obj = NULL;
    job->status = mt_build_compile(batch->jit, &job->variant, &job->problem, batch->target, &obj, &job->origin);
    mt_kernel_resources_unknown(&job->res);
    if (job->status != MT_OK) {
        snprintf(job->error, sizeof job->error, "%s", mt_last_error());
        return;
    }
    job->ms = obj->compile_ms;
    const char *entries[MT_MAX_ENTRIES];
    job->variant.family->entries(&job->variant, entries); /* entry 0: the one whose resources matter */
    mt_backend_parse_resources(mt_jit_backend(batch->jit), obj->log, entries[0], &job->res);
}

static const char *origin_name(mt_jit_origin o) {
    return o == MT_JIT_COMPILED ? "compiled" : o == MT_JIT_FROM_DISK ? "disk" : "memory";
}

/* One variant of a problem as an element of the JSON "variants" list:
 * the same figures as the table row, structured, with null for what the
 * compiler did not report (-1 in the table) and for a failed compile's. */
static void json_variant(const compile_job *job, const mt_target *target, int first) {
    char name[256];
    mt_variant_format(&job->variant, name, sizeof name);
    printf("%s\n      {\"status\": \"%s\", \"params\": ", first ? "" : ",",
           job->status != MT_OK ? "failed" : job->res.serialized_mma == 1 ? "serialized" : "ok");
    mt_json_params(stdout, name);
    if (job->status != MT_OK) {
        printf(", \"ms\": null, \"origin\": null, \"registers\": null, \"scalar_registers\": null, "
               "\"shared_bytes\": null, \"stack_bytes\": null, \"spills\": null, \"error\": ");
        mt_json_string(stdout, job->error);
        printf("}");
        return;
    }
    const mt_kernel_resources *r = &job->res;
    size_t dyn = job->variant.family->shared_bytes(&job->variant, &job->problem, target->warp_size);
    int spill = r->spill_stores < 0 ? -1 : r->spill_stores + (r->spill_loads > 0 ? r->spill_loads : 0);
    printf(", \"ms\": ");
    mt_json_number(stdout, job->ms);
    printf(", \"origin\": \"%s\", \"registers\": ", origin_name(job->origin));
    mt_json_count(stdout, r->registers);
    printf(", \"scalar_registers\": ");
    mt_json_count(stdout, r->scalar_registers);
    printf(", \"shared_bytes\": %zu, \"stack_bytes\": ", dyn + (size_t)(r->shared_bytes > 0 ? r->shared_bytes : 0));
    mt_json_count(stdout, r->local_bytes);
    printf(", \"spills\": ");
    mt_json_count(stdout, spill);
    printf(", \"error\": null}");
}

/* A failed compile's message under its table row: the first line (what
 * failed), then the compiler's own error lines (or, when none says
 * "error", its first lines), indented, at most 12. */
static void print_failure(const char *message) {
    const char *nl = strchr(message, '\n');
    printf("        %.*s\n", nl ? (int)(nl - message) : (int)strlen(message), message);
    if (!nl) return;
    const char *log = nl + 1;
    int printed = 0, any_error = strstr(log, "error") != NULL;
    for (const char *line = log; *line && printed < 12;) {
        size_t len = strcspn(line, "\n");
        int wanted = len > 0 && (!any_error || memmem(line, len, "error", 5) != NULL);
        if (wanted) printf("          %.*s\n", (int)len, line), printed++;
        line += len + (line[len] == '\n');
    }
    if (!printed) printf("          (the compiler printed nothing)\n");
}

static void usage(FILE *to) {
    fprintf(to,
            "usage: mla-tune compile --arch ARCH [options]\n\n"
            "Compiles every variant of ARCH's search space and reports per variant: ok/failed\n"
            "(or SERIAL: compiled, but the compiler serialised its asynchronous matrix-unit\n"
            "products, which runs slower), compile time, registers, shared memory, stack/scratch\n"
            "and spills.\n\n"
            "  --arch ARCH         sm_90, gfx942, ... (required)\n"
            "  --family NAME       one kernel family (default: all)\n"
            "  --q-dtype T         bf16|fp16 (default bf16)\n"
            "  --kv-dtype T        bf16|fp16|fp8e4m3|fp8e4m3fnuz (default bf16)\n"
            "  --space FILE        search space (default: configs/spaces/ARCH.yaml)\n"
            "  --defaults-only     only each family's default variant\n"
            "  --all-dtypes        every q/kv dtype pair\n"
            "  --all-pages         page sizes 1, 16 and 64\n"
            "  --page-size N       (default 64)\n"
            "  --d N, --dl N       head dims (default 576, 512)\n"
            "  --limit N           only the first N variants per problem\n"
            "  --jobs N            compiler threads (default: CPU count)\n"
            "  --cache-dir DIR     code-object cache (default $XDG_CACHE_HOME/mla-tune)\n"
            "  --no-cache          compile everything, keep nothing on disk\n"
            "  --json              one JSON object instead of the tables (params as objects,\n"
            "                      null where the compiler reports nothing)\n");
}

int cmd_compile(int argc, char **argv) {
    const char *arch = NULL, *family_name = NULL, *cache_dir = NULL, *space_file = NULL;
    int all_dtypes = 0, all_pages = 0, defaults_only = 0, limit = 0, no_cache = 0, json = 0;
    long jobs = sysconf(_SC_NPROCESSORS_ONLN);
    mt_problem_static base = {.d = 576, .dl = 512, .page_size = 64, .q_dtype = MT_BF16, .kv_dtype = MT_BF16};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = (i + 1 < argc) ? argv[i + 1] : NULL;
        int takes = 1;
        if (strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--all-dtypes") == 0) {
            all_dtypes = 1, takes = 0;
        } else if (strcmp(a, "--no-cache") == 0) {
            no_cache = 1, takes = 0;
        } else if (strcmp(a, "--all-pages") == 0) {
            all_pages = 1, takes = 0;
        } else if (strcmp(a, "--defaults-only") == 0) {
            defaults_only = 1, takes = 0;
        } else if (strcmp(a, "--json") == 0) {
            json = 1, takes = 0;
        } else if (!val) {
            mt_cli_error("compile: %s needs a value", a);
            return 2;
        } else if (strcmp(a, "--arch") == 0) {
            arch = val;
        } else if (strcmp(a, "--family") == 0) {
            family_name = val;
        } else if (strcmp(a, "--cache-dir") == 0) {
            cache_dir = val;
        } else if (strcmp(a, "--space") == 0) {
            space_file = val;
        } else if (strcmp(a, "--q-dtype") == 0 || strcmp(a, "--kv-dtype") == 0) {
            if (mt_dtype_parse(val, a[2] == 'q' ? &base.q_dtype : &base.kv_dtype) != MT_OK) {
                mt_cli_error("compile: %s", mt_last_error());
                return 2;
            }
        } else {
            char *end = NULL;
            long n = strtol(val, &end, 10);
            if (!end || *end || n <= 0 || n > 1000000) {
                mt_cli_error("compile: %s wants a positive integer, got '%s'", a, val);
                return 2;
            }
            if (strcmp(a, "--page-size") == 0) base.page_size = (int)n;
            else if (strcmp(a, "--d") == 0) base.d = (int)n;
            else if (strcmp(a, "--dl") == 0) base.dl = (int)n;
            else if (strcmp(a, "--limit") == 0) limit = (int)n;
            else if (strcmp(a, "--jobs") == 0) jobs = n;
            else {
                mt_cli_error("compile: unknown option '%s'", a);
                usage(stderr);
                return 2;
            }
        }
        i += takes;
    }
    if (!arch) {
        mt_cli_error("compile: --arch is required");
        usage(stderr);
        return 2;
    }
    mt_target target;
    if (mt_target_for_arch(arch, &target) != MT_OK) {
        mt_cli_error("compile: %s", mt_last_error());
        return 2;
    }
    if (family_name && !mt_family_find(family_name)) {
        mt_cli_error("compile: unknown kernel family '%s'", family_name);
        return 2;
    }
    char space_path[1024];
    if (!space_file) {
        char rel[128];
        snprintf(rel, sizeof rel, "spaces/%s.yaml", arch);
        if (mt_config_file(rel, space_path, sizeof space_path) != MT_OK) {
            mt_cli_error("compile: %s", mt_last_error());
            return 1;
        }
        space_file = space_path;
    }
    mt_space_config spaces;
    if (mt_load_space(space_file, &spaces) != MT_OK) {
        mt_cli_error("compile: %s", mt_last_error());
        return 1;
    }
    if (strcmp(spaces.arch, arch) != 0) {
        mt_cli_error("compile: %s describes %s, not %s", space_file, spaces.arch, arch);
        return 1;
    }
    mt_backend *b = NULL;
    if (mt_backend_open_for_arch(arch, &b) != MT_OK) {
        mt_cli_error("compile: %s", mt_last_error());
        return 1;
    }
    mt_jit *jit = NULL;
    if (mt_jit_create(b, no_cache ? "" : cache_dir, &jit) != MT_OK) {
        mt_cli_error("compile: %s", mt_last_error());
        mt_backend_close(b);
        return 1;
    }
    char version[128];
    mt_backend_compiler_version(b, version, sizeof version);
    if (json) {
        printf("{\"arch\": ");
        mt_json_string(stdout, arch);
        printf(", \"compiler\": ");
        mt_json_string(stdout, version);
        printf(", \"backend\": ");
        mt_json_string(stdout, b->name);
        printf(", \"threads\": %ld, \"cache\": ", jobs);
        if (mt_jit_cache_dir(jit)[0]) mt_json_string(stdout, mt_jit_cache_dir(jit));
        else printf("null");
        printf(", \"space\": ");
        mt_json_string(stdout, space_file);
        printf(", \"problems\": [");
    } else {
        printf("compiling for %s with %s (%s backend), %ld threads, cache %s\nspace: %s\n", arch, version, b->name,
               jobs, mt_jit_cache_dir(jit)[0] ? mt_jit_cache_dir(jit) : "off", space_file);
    }
    int problems_shown = 0;

    static const mt_dtype q_types[] = {MT_BF16, MT_FP16};
    static const mt_dtype kv_types[] = {MT_BF16, MT_FP16, MT_FP8_E4M3};
    int total = 0, failed = 0, serialized = 0, pruned_total = 0;
    static const int page_sizes[] = {1, 16, 64};
    for (int fi = 0; fi < spaces.n_spaces; fi++) {
        const mt_family *f = spaces.spaces[fi].family;
        if (family_name && strcmp(family_name, f->name) != 0) continue;
        for (int pi = 0; pi < 3; pi++)
        for (int qi = 0; qi < 2; qi++)
            for (int ki = 0; ki < 3; ki++) {
                mt_problem_static problem = base;
                if (all_dtypes) {
                    problem.q_dtype = q_types[qi];
                    problem.kv_dtype = kv_types[ki];
                } else if (qi + ki > 0) {
                    continue;
                }
                if (all_pages) problem.page_size = page_sizes[pi];
                else if (pi > 0) continue;
                mt_space space = spaces.spaces[fi];
                if (defaults_only) {
                    mt_variant dv;
                    if (mt_variant_default_for(f, &problem, &target, &dv) != MT_OK) {
                        mt_cli_error("compile: %s", mt_last_error());
                        failed++;
                        continue;
                    }
                    for (int p = 0; p < f->n_params; p++) {
                        space.n_values[p] = 1;
                        space.values[p][0] = dv.values[p];
                    }
                }
                collect_ctx cc = {.limit = limit, .problem = problem};
                int pruned = 0;
                mt_space_enumerate(&space, &problem, &target, collect, &cc, &pruned);
                pruned_total += pruned;
                if (json) {
                    printf("%s\n  {\"family\": \"%s\", \"d\": %d, \"dl\": %d, \"page_size\": %d, \"q_dtype\": \"%s\", "
                           "\"kv_dtype\": \"%s\", \"pruned\": %d, \"variants\": [", problems_shown++ ? "," : "", f->name,
                           problem.d, problem.dl, problem.page_size, mt_dtype_name(problem.q_dtype),
                           mt_dtype_name(problem.kv_dtype), pruned);
                } else {
                    printf("\n%s  D=%d Dl=%d page=%d q=%s kv=%s: %d variants (%d pruned by constraints)\n", f->name,
                           problem.d, problem.dl, problem.page_size, mt_dtype_name(problem.q_dtype),
                           mt_dtype_name(problem.kv_dtype), cc.n, pruned);
                }
                compile_batch batch = {.jit = jit, .target = &target, .jobs = cc.jobs};
                mt_parallel_for(cc.n, (int)(jobs < 1 ? 1 : jobs > 64 ? 64 : jobs), compile_one, &batch);
                if (!json)
                    printf("%-7s %9s %-8s %5s %5s %7s %6s %6s  %s\n", "status", "ms", "origin", "regs", "sgprs",
                           "shared", "stack", "spill", "variant");
                for (int i = 0; i < cc.n; i++) {
                    compile_job *job = &cc.jobs[i];
                    char name[256];
                    mt_variant_format(&job->variant, name, sizeof name);
                    total++;
                    if (json) {
                        failed += job->status != MT_OK;
                        serialized += job->status == MT_OK && job->res.serialized_mma == 1;
                        json_variant(job, &target, i == 0);
                        continue;
                    }
                    if (job->status != MT_OK) {
                        failed++;
                        printf("%-7s %9s %-8s %5s %5s %7s %6s %6s  %s\n", "FAILED", "-", "-", "-", "-", "-", "-", "-",
                               name);
                        print_failure(job->error);
                        continue;
                    }
                    mt_kernel_resources *r = &job->res;
                    size_t dyn = f->shared_bytes(&job->variant, &job->problem, target.warp_size);
                    int spill = r->spill_stores < 0 ? -1 : r->spill_stores + (r->spill_loads > 0 ? r->spill_loads : 0);
                    serialized += r->serialized_mma == 1;
                    printf("%-7s %9.1f %-8s %5d %5d %7zu %6d %6d  %s\n", r->serialized_mma == 1 ? "SERIAL" : "ok",
                           job->ms, origin_name(job->origin),
                           r->registers, r->scalar_registers, dyn + (size_t)(r->shared_bytes > 0 ? r->shared_bytes : 0),
                           r->local_bytes, spill, name);
                }
                if (json) printf("%s]}", cc.n ? "\n    " : "");
                free(cc.jobs);
            }
    }
    mt_jit_stats stats = mt_jit_get_stats(jit);
    if (json)
        printf("%s], \"total\": %d, \"ok\": %d, \"failed\": %d, \"serialized\": %d, \"pruned\": %d, \"compiled\": %ld, "
               "\"disk_hits\": %ld}\n",
               problems_shown ? "\n" : "", total, total - failed - serialized, failed, serialized, pruned_total,
               stats.compiles, stats.disk_hits);
    else
        printf("\n%d variants: %d ok, %d failed, %d serialized; %d pruned before compiling; %ld compiled, %ld from "
               "disk cache\n"
               "(regs = registers per thread, VGPRs on AMD; sgprs = scalar registers per wave, AMD only; shared = "
               "dynamic\n + static bytes per group; -1 = not reported by this compiler; SERIAL = compiled, but the "
               "compiler\n serialised its asynchronous matrix-unit products: slow)\n",
               total, total - failed - serialized, failed, serialized, pruned_total, stats.compiles, stats.disk_hits);
    mt_jit_destroy(jit);
    mt_backend_close(b);
    return failed ? 1 : 0;
}
