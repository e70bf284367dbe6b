/*
 * compiler_process.c - what the backends that run a compiler as a
 * subprocess share (backend.h, "helpers for implementations"): running it
 * with its output in a file, reading the files it wrote, asking a clang
 * its version, and removing the temporary folder afterwards.
 */
#define _GNU_SOURCE
#include "backend.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int mt_run_process(char *const argv[], const char *log_path) {
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        int fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        execvp(argv[0], argv);
        fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Read in pieces: a compiler's log or output need not be a regular file
 * whose size ftell knows. */
char *mt_read_whole_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n + 4096 + 1 > cap) {
            cap = (n + 4096 + 1) * 2;
            char *grown = realloc(buf, cap);
            if (!grown) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = grown;
        }
        size_t got = fread(buf + n, 1, 4096, f);
        n += got;
        if (got < 4096) break;
    }
    fclose(f);
    buf[n] = '\0';
    if (size) *size = n;
    return buf;
}

int mt_clang_version(const char *cmd, const char *log_path, char *version, size_t size) {
    char *argv[] = {(char *)cmd, "--version", NULL};
    if (mt_run_process(argv, log_path) != 0) return -1;
    char *text = mt_read_whole_file(log_path, NULL);
    const char *v = text ? strstr(text, "clang version ") : NULL;
    int major = v ? atoi(v + 14) : 0;
    if (v && version) snprintf(version, size, "%.*s", (int)strcspn(v + 14, " \n"), v + 14);
    free(text);
    return major;
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

void mt_remove_tree(const char *dir) { nftw(dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS); }
