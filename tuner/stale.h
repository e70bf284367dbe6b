/*
 * stale.h - `mla-tune show --stale`: the choices of the user and system
 * DBs that the runtime ignores because they were measured for other code
 * (runtime/api/validators.h), with what differs; and how many are valid or
 * carry no validators (trusted).
 */
#ifndef MT_STALE_H
#define MT_STALE_H

/* Lists them (JSON with json = 1); the process exit status (0 also when
 * some are stale: listing them is the job). */
int mt_show_stale(const char *user_path, int user_required, const char *system_path, int system_required,
                  const char *arch, int json);

#endif
