/*
 * commands.h - the subcommands of mla-tune.  Each takes the arguments after
 * its own name and returns the process exit status (0 ok, 1 failure, 2 bad
 * usage).
 */
#ifndef MT_COMMANDS_H
#define MT_COMMANDS_H

int cmd_devices(int argc, char **argv);
int cmd_compile(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_merge(int argc, char **argv);
/* `rehash` (cmd_rehash.c): rows proven unchanged by a kernel edit keep counting. */
int cmd_rehash(int argc, char **argv);
int cmd_lookup(int argc, char **argv);
/* `holdout` (cmd_holdout.c): each key held out and looked up from the others, timed by its own rows. */
int cmd_holdout(int argc, char **argv);
/* `lookup --prefill` (cmd_lookup_prefill.c): cmd_lookup hands it the whole command line. */
int cmd_lookup_prefill(int argc, char **argv);
/* `lookup --crossover` (cmd_lookup_crossover.c): which prefill form; the whole command line, as --prefill. */
int cmd_lookup_crossover(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_bench(int argc, char **argv);
/* `bench --prefill` (cmd_bench_prefill.c): cmd_bench hands it the whole command line. */
int cmd_bench_prefill(int argc, char **argv);
/* `crossover` (cmd_crossover.c): both prefill forms timed, the crossover stored. */
int cmd_crossover(int argc, char **argv);

/* Prints "mla-tune: <message>" to stderr. */
void mt_cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "mla-tune: CMD: bad value 'VALUE' for OPT (WANT)", the part in brackets
 * when want is not NULL: what the value should have been. */
void mt_cli_bad_value(const char *cmd, const char *opt, const char *value, const char *want);

#endif
