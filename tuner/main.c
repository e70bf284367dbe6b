/*
 * main.c - the mla-tune command: dispatches to a subcommand, after turning
 * the accepted alternative spellings of options into the one each command
 * parses (aliases below).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "db/db.h"
#include "protocol.h"
#include "sweep.h"

#ifndef MT_VERSION
#define MT_VERSION "0.1.0"
#endif

void mt_cli_error(const char *fmt, ...) {
    /* messages quote files (a database row, a config value): control bytes
     * other than line breaks and tabs are shown as \xNN, so that hostile
     * text cannot send escape sequences to the terminal (issue 25) */
    char msg[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fputs("mla-tune: ", stderr);
    for (const unsigned char *p = (const unsigned char *)msg; *p; p++) {
        if ((*p < 0x20 && *p != '\n' && *p != '\t') || *p == 0x7f) fprintf(stderr, "\\x%02x", *p);
        else fputc(*p, stderr);
    }
    fputc('\n', stderr);
}

void mt_cli_bad_value(const char *cmd, const char *opt, const char *value, const char *want) {
    if (want) mt_cli_error("%s: bad value '%s' for %s (%s)", cmd, value, opt, want);
    else mt_cli_error("%s: bad value '%s' for %s", cmd, value, opt);
}

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} commands[] = {
    {"devices", cmd_devices, "list the GPUs this host has (backend, arch, CUs, memory)"},
    {"compile", cmd_compile, "compile every kernel variant of an architecture's search space"},
    {"sweep", cmd_sweep, "measure every variant of a plan's problem keys into a tuning database"},
    {"show", cmd_show, "print the chosen variant per architecture and problem key"},
    {"export", cmd_export, "write a deployable database for one architecture"},
    {"import", cmd_import, "add a database's measurements to the user database"},
    {"merge", cmd_merge, "join two databases into a new one"},
    {"rehash", cmd_rehash, "keep a database's rows valid across kernel edits that leave the code unchanged"},
    {"lookup", cmd_lookup, "print what the runtime would run for a problem, and why"},
    {"holdout", cmd_holdout, "hold each key out: what runs from the others, timed by the key's own rows"},
    {"bench", cmd_bench, "time decode through the runtime for a grid of shapes, against measured ceilings"},
    {"crossover", cmd_crossover, "time both prefill forms (MQA, MHA) of chunks on the GPU and store the crossover"},
    {"report", cmd_report, "write an HTML + Markdown report (SVG plots) of a tuning database"},
};

/* One name per meaning across commands, the older spellings kept: `-o`
 * and `--output`; `--devices` (sweep, a list) and `--device` (bench, one
 * GPU) each accepted where the other is parsed; `--plan` for sweep's
 * `--config`.  Rewritten in place before the command sees argv. */
static const struct {
    const char *command, *alias, *parsed;
} aliases[] = {
    {"sweep", "--device", "--devices"},
    {"sweep", "--plan", "--config"},
    {"bench", "--devices", "--device"},
    {"report", "--output", "-o"},
};

static void apply_aliases(const char *command, int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        for (size_t a = 0; a < sizeof aliases / sizeof aliases[0]; a++)
            if (strcmp(command, aliases[a].command) == 0 && strcmp(argv[i], aliases[a].alias) == 0)
                argv[i] = (char *)aliases[a].parsed;
}

static void usage(FILE *to) {
    fprintf(to, "usage: mla-tune COMMAND [ARGS]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(to, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(to, "\n'mla-tune COMMAND --help' describes a command's arguments.\n"
                "Read commands (show, lookup, devices, compile, bench) take --json.\n"
                "Also: -o = --output, --devices = --device (sweep, bench), --plan = --config (sweep).\n"
                "'mla-tune --version' prints the version.\n");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
        printf("mla-tune %s (tuning database schema %d)\n", MT_VERSION, MT_DB_SCHEMA_VERSION);
        return 0;
    }
    if (strcmp(argv[1], "__worker") == 0) return cmd_worker(argc - 1, argv + 1);  /* internal: see protocol.h */
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[1], commands[i].name) == 0) {
            apply_aliases(argv[1], argc - 1, argv + 1);
            return commands[i].run(argc - 1, argv + 1);
        }
    mt_cli_error("unknown command '%s'", argv[1]);
    usage(stderr);
    return 2;
}
