/*
 * cmd_rehash.c - `mla-tune rehash --db FILE --from-kernels DIR`: rows
 * measured from an older kernel tree keep counting when today's text
 * compiles to the same code (tuner/rehash.h says how that is proven).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "rehash.h"

static void usage(FILE *to) {
    fprintf(to,
            "usage: mla-tune rehash --db FILE --from-kernels DIR [--dry-run] [--jobs N] [--verbose]\n\n"
            "After a kernel edit every row measured from the old text is stale: the runtime\n"
            "ignores its choices (`mla-tune show --stale`).  For each group of such rows whose\n"
            "hash is the text of the tree in DIR (laid out like kernels/, e.g. unpacked by\n"
            "`git archive REV kernels | tar -x --strip-components=1 -C DIR`), rehash compiles\n"
            "the variant from that text and from today's with this host's compiler (the one\n"
            "the rows were measured with) and, where the code objects are byte-identical,\n"
            "gives the rows today's hash; then derives the choices again.  Rows whose code\n"
            "changed stay stale: measure them again (`mla-tune sweep` resumes them).\n"
            "No GPU is needed.\n\n"
            "  --db FILE            the database, rewritten in place (required)\n"
            "  --from-kernels DIR   the kernel tree the stale rows were measured with (required)\n"
            "  --dry-run            report only (the file is opened for writing only when rows move)\n"
            "  --jobs N             compiler threads (default: CPU count)\n"
            "  --verbose            a line per group, not only the changed and failed ones\n");
}

int cmd_rehash(int argc, char **argv) {
    const char *db_path = NULL, *tree = NULL;
    int dry_run = 0, verbose = 0;
    long jobs = sysconf(_SC_NPROCESSORS_ONLN);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--dry-run") == 0) dry_run = 1;
        else if (strcmp(a, "--verbose") == 0) verbose = 1;
        else if (i + 1 < argc && strcmp(a, "--db") == 0) db_path = argv[++i];
        else if (i + 1 < argc && strcmp(a, "--from-kernels") == 0) tree = argv[++i];
        else if (i + 1 < argc && strcmp(a, "--jobs") == 0) {
            char *end = NULL;
            jobs = strtol(argv[++i], &end, 10);
            if (!*argv[i] || *end || jobs < 1 || jobs > 256) {
                mt_cli_error("rehash: --jobs takes 1..256, not '%s'", argv[i]);
                return 2;
            }
        } else {
            mt_cli_error("rehash: unknown or incomplete argument '%s' (mla-tune rehash --help)", a);
            return 2;
        }
    }
    if (!db_path || !tree) {
        mt_cli_error("rehash: --db FILE and --from-kernels DIR are both required (mla-tune rehash --help)");
        return 2;
    }
    char prelude[4096];
    snprintf(prelude, sizeof prelude, "%s/prelude.h", tree);
    if (access(prelude, R_OK) != 0) {
        mt_cli_error("rehash: %s is not a kernel tree (no readable prelude.h)", tree);
        return 2;
    }
    if (access(db_path, F_OK) != 0) {
        mt_cli_error("rehash: %s: no such file", db_path);
        return 1;
    }
    mt_rehash_report r;
    mt_status st = mt_rehash(db_path, tree, (int)(jobs > 0 ? jobs : 1), dry_run, verbose, stdout, &r);
    if (st != MT_OK) {
        mt_cli_error("rehash: %s", mt_last_error());
        return 1;
    }
    printf("%s: %d groups of rows with validators: %d current, %d proven the same code (%d rows %s), "
           "%d with changed code, %d of another text, %d of another compiler, %d failed",
           db_path, r.groups, r.current, r.restamped, r.rows_restamped, dry_run ? "would move" : "moved",
           r.code_changed, r.other_text, r.other_compiler, r.failed);
    if (r.skipped_rows) printf("; %d unreadable groups skipped", r.skipped_rows);
    printf("\n");
    return r.failed ? 1 : 0;
}
