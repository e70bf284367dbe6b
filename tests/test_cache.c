/*
 * The code-object cache: the disk format (hit, miss, corrupt entries of
 * several kinds detected and rebuilt), the JIT's memory -> disk -> compile
 * order and its key, and two processes writing the same entry while a third
 * reads it.
 *
 * The JIT is driven by a counting test compiler (a backend whose compile()
 * returns a deterministic "code object" made from its input), so the test can
 * tell exactly when a compile happened.  The real NVRTC path is in
 * test_nvrtc.c.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <pthread.h>
#include <unistd.h>

#include "check.h"
#include "runtime/gpu/cache.h"
#include "runtime/gpu/jit.h"
#include "runtime/base/sha256.h"

static int compiles;
static const char *fake_version = "fake-1.0";

static mt_status fake_version_fn(mt_backend *b, char *buf, size_t n) {
    (void)b;
    snprintf(buf, n, "%s", fake_version);
    return MT_OK;
}

static mt_status fake_compile(mt_backend *b, const char *source, const char *name, const char *arch,
                              const char *const *options, int n_options, mt_compile_result *out) {
    (void)b; (void)name;
    __atomic_fetch_add(&compiles, 1, __ATOMIC_SEQ_CST);
    if (strstr(source, "#slow")) usleep(200000); /* long enough for the others to ask meanwhile */
    if (strstr(source, "#error")) {
        out->log = strdup("error: asked to fail");
        return mt_fail(MT_ERR_COMPILE, "fake compiler: #error in source");
    }
    /* code = "arch|opt1|opt2|source": the test can read back what was compiled */
    size_t n = strlen(arch) + strlen(source) + 2;
    for (int i = 0; i < n_options; i++) n += strlen(options[i]) + 1;
    char *code = malloc(n + 1);
    strcpy(code, arch);
    for (int i = 0; i < n_options; i++) strcat(strcat(code, "|"), options[i]);
    strcat(strcat(code, "|"), source);
    out->code = code;
    out->code_size = strlen(code) + 1;
    out->log = strdup("fake log: 7 registers");
    return MT_OK;
}

static const mt_backend_iface fake_iface = {.compiler_version = fake_version_fn, .compile = fake_compile};
static mt_backend fake_backend = {.name = "fake", .iface = &fake_iface, .has_compiler = 1};

static void make_temp_dir(char *buf, size_t n) {
    snprintf(buf, n, "/tmp/mla-tune-test-cache-XXXXXX");
    if (!mkdtemp(buf)) abort();
}

static void rm_rf(const char *dir) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

/* counts files under dir whose name contains `part` */
static int count_files(const char *dir, const char *part) {
    int n = 0;
    DIR *d = opendir(dir);
    if (!d) return 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) n += count_files(path, part);
        else if (strstr(e->d_name, part)) n++;
    }
    closedir(d);
    return n;
}

static void test_disk_format(const char *dir) {
    uint8_t key[32], other[32];
    mt_sha256_digest("key one", 7, key);
    mt_sha256_digest("key two", 7, other);
    void *code;
    size_t size;
    char *log;
    CHECK_STATUS(mt_cache_read(dir, key, &code, &size, &log), MT_ERR_NOT_FOUND);
    CHECK_OK(mt_cache_write(dir, key, "CODE", 5, "the log"));
    CHECK_OK(mt_cache_read(dir, key, &code, &size, &log));
    CHECK(size == 5 && memcmp(code, "CODE", 5) == 0 && strcmp(log, "the log") == 0);
    free(code);
    free(log);
    CHECK_STATUS(mt_cache_write(dir, key, NULL, 0, ""), MT_ERR_INVALID_ARGUMENT);

    char path[1024], other_path[1024];
    mt_cache_entry_path(dir, key, path, sizeof path);
    mt_cache_entry_path(dir, other, other_path, sizeof other_path);

    /* each kind of damage is detected, reported as corrupt, and the file removed */
    struct { const char *what; long offset; int truncate_to; } damage[] = {
        {"flipped payload byte", -2, -1}, {"flipped magic", 0, -1}, {"flipped length", 16, -1},
        {"truncated", 0, 50}, {"empty", 0, 0}};
    for (size_t i = 0; i < sizeof damage / sizeof damage[0]; i++) {
        CHECK_OK(mt_cache_write(dir, key, "CODE", 5, "the log"));
        if (damage[i].truncate_to >= 0) {
            CHECK(truncate(path, damage[i].truncate_to) == 0);
        } else {
            FILE *f = fopen(path, "r+b");
            fseek(f, damage[i].offset, damage[i].offset < 0 ? SEEK_END : SEEK_SET);
            int c = fgetc(f);
            fseek(f, -1, SEEK_CUR);
            fputc(c ^ 0x40, f);
            fclose(f);
        }
        CHECK_MSG(mt_cache_read(dir, key, &code, &size, &log) == MT_ERR_CORRUPT, "%s", damage[i].what);
        CHECK_MSG(strstr(mt_last_error(), "corrupt cache entry") != NULL, "%s: message '%s'", damage[i].what,
                  mt_last_error());
        CHECK_MSG(access(path, F_OK) != 0, "%s: corrupt file should be removed", damage[i].what);
    }
    /* a valid entry copied under another key's name is not served for it */
    CHECK_OK(mt_cache_write(dir, key, "CODE", 5, "the log"));
    char cmd[3300];
    snprintf(cmd, sizeof cmd, "mkdir -p \"$(dirname '%s')\" && cp '%s' '%s'", other_path, path, other_path);
    CHECK(system(cmd) == 0);
    CHECK_STATUS(mt_cache_read(dir, other, &code, &size, &log), MT_ERR_CORRUPT);
    CHECK(count_files(dir, ".tmp.") == 0);
}

static void test_jit_order(const char *dir) {
    mt_jit *jit = NULL;
    CHECK_OK(mt_jit_create(&fake_backend, dir, &jit));
    const char *defs1[] = {"TILE_Q=16"}, *defs2[] = {"TILE_Q=32"};
    mt_jit_request req = {.source = "kernel body", .source_name = "k.cu", .arch = "sm_90", .defines = defs1,
                          .n_defines = 1};
    const mt_code_object *obj = NULL;
    mt_jit_origin origin;
    compiles = 0;
    CHECK_OK(mt_jit_compile(jit, &req, &obj, &origin));
    CHECK(origin == MT_JIT_COMPILED && compiles == 1);
    CHECK(obj && strcmp(obj->code, "sm_90|-DTILE_Q=16|kernel body") == 0);
    CHECK(obj && strcmp(obj->log, "fake log: 7 registers") == 0);
    const mt_code_object *again = NULL;
    CHECK_OK(mt_jit_compile(jit, &req, &again, &origin));
    CHECK(origin == MT_JIT_FROM_MEMORY && again == obj && compiles == 1);
    mt_jit_destroy(jit);

    /* a new process (a new jit) finds it on disk */
    CHECK_OK(mt_jit_create(&fake_backend, dir, &jit));
    CHECK_OK(mt_jit_compile(jit, &req, &obj, &origin));
    CHECK(origin == MT_JIT_FROM_DISK && compiles == 1);
    CHECK(obj && strcmp(obj->code, "sm_90|-DTILE_Q=16|kernel body") == 0 && strcmp(obj->log, "fake log: 7 registers") == 0);

    /* each part of the key matters: define, arch, option, source */
    uint8_t k0[32], k1[32];
    CHECK_OK(mt_jit_key(jit, &req, k0));
    mt_jit_request changed = req;
    changed.defines = defs2;
    CHECK_OK(mt_jit_key(jit, &changed, k1));
    CHECK(memcmp(k0, k1, 32) != 0);
    changed = req;
    changed.arch = "sm_80";
    CHECK_OK(mt_jit_key(jit, &changed, k1));
    CHECK(memcmp(k0, k1, 32) != 0);
    changed = req;
    changed.source = "kernel body ";
    CHECK_OK(mt_jit_key(jit, &changed, k1));
    CHECK(memcmp(k0, k1, 32) != 0);
    /* "-DA" + "B" must differ from "-DAB": fields are length-prefixed */
    const char *split_a[] = {"A", "B"}, *split_b[] = {"AB"};
    changed = req;
    changed.defines = split_a, changed.n_defines = 2;
    CHECK_OK(mt_jit_key(jit, &changed, k0));
    changed.defines = split_b, changed.n_defines = 1;
    CHECK_OK(mt_jit_key(jit, &changed, k1));
    CHECK(memcmp(k0, k1, 32) != 0);
    mt_jit_destroy(jit);

    /* a new compiler version never reuses the old code object */
    fake_version = "fake-2.0";
    CHECK_OK(mt_jit_create(&fake_backend, dir, &jit));
    CHECK_OK(mt_jit_compile(jit, &req, &obj, &origin));
    CHECK(origin == MT_JIT_COMPILED && compiles == 2);
    mt_jit_destroy(jit);
    fake_version = "fake-1.0";

    /* a corrupt entry is rebuilt, never loaded */
    CHECK_OK(mt_jit_create(&fake_backend, dir, &jit));
    uint8_t key[32];
    CHECK_OK(mt_jit_key(jit, &req, key));
    char path[1024];
    mt_cache_entry_path(dir, key, path, sizeof path);
    FILE *f = fopen(path, "r+b");
    CHECK(f != NULL);
    if (f) {
        fseek(f, -3, SEEK_END);
        fputc('X', f);
        fclose(f);
    }
    CHECK_OK(mt_jit_compile(jit, &req, &obj, &origin));
    CHECK(origin == MT_JIT_COMPILED && compiles == 3);
    CHECK(mt_jit_get_stats(jit).corrupt_rebuilt == 1);
    CHECK(obj && strcmp(obj->code, "sm_90|-DTILE_Q=16|kernel body") == 0);
    mt_jit_destroy(jit);
    /* ... and the rebuilt entry on disk is good again */
    void *code;
    size_t size;
    char *log;
    CHECK_OK(mt_cache_read(dir, key, &code, &size, &log));
    CHECK(strcmp(code, "sm_90|-DTILE_Q=16|kernel body") == 0);
    free(code);
    free(log);

    /* compile errors pass through with the compiler's message, nothing cached */
    CHECK_OK(mt_jit_create(&fake_backend, dir, &jit));
    mt_jit_request bad = req;
    bad.source = "#error no";
    CHECK_STATUS(mt_jit_compile(jit, &bad, &obj, &origin), MT_ERR_COMPILE);
    CHECK(strstr(mt_last_error(), "#error") != NULL);
    CHECK_OK(mt_jit_key(jit, &bad, key));
    CHECK_STATUS(mt_cache_read(dir, key, &code, &size, &log), MT_ERR_NOT_FOUND);
    mt_jit_destroy(jit);

    /* a FIFO where an entry should be (issue 25): not waited on; removed
     * and rebuilt like any damaged entry */
    char entry[1024];
    CHECK_OK(mt_jit_create(&fake_backend, dir, &jit));
    CHECK_OK(mt_jit_key(jit, &req, key));
    mt_jit_destroy(jit);
    mt_cache_entry_path(dir, key, entry, sizeof entry);
    unlink(entry);
    CHECK(mkfifo(entry, 0644) == 0);
    alarm(60);  /* a hang fails the test */
    CHECK_STATUS(mt_cache_read(dir, key, &code, &size, &log), MT_ERR_CORRUPT);
    alarm(0);
    CHECK(access(entry, F_OK) != 0);

    /* an unwritable cache folder (issue 25): the JIT runs without a disk
     * cache and says so once, naming the folder */
    char err_path[600];
    snprintf(err_path, sizeof err_path, "%s/stderr.txt", dir);
    fflush(stderr);
    int saved = dup(2), fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 2);
    close(fd);
    mt_status st = mt_jit_create(&fake_backend, "/proc/mla-tune-cannot-exist", &jit);
    int before = compiles;
    mt_status c1 = st == MT_OK ? mt_jit_compile(jit, &req, &obj, &origin) : st;
    mt_status c2 = st == MT_OK ? mt_jit_compile(jit, &bad, &obj, &origin) : st;
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    CHECK_OK(st);
    CHECK(c1 == MT_OK && c2 == MT_ERR_COMPILE && compiles == before + 2);
    CHECK(st != MT_OK || mt_jit_cache_dir(jit)[0] == '\0');
    if (st == MT_OK) mt_jit_destroy(jit);
    /* the default folder under a HOME nobody can write */
    const char *env[] = {"MLA_TUNE_CACHE_DIR", "XDG_CACHE_HOME", "HOME"};
    char *old[3];
    for (int i = 0; i < 3; i++) old[i] = getenv(env[i]) ? strdup(getenv(env[i])) : NULL;
    unsetenv("MLA_TUNE_CACHE_DIR"), unsetenv("XDG_CACHE_HOME"), setenv("HOME", "/proc/mla-tune-home", 1);
    fd = open(err_path, O_WRONLY | O_APPEND);
    saved = dup(2);
    dup2(fd, 2);
    close(fd);
    st = mt_jit_create(&fake_backend, NULL, &jit);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    for (int i = 0; i < 3; i++) {
        if (old[i]) setenv(env[i], old[i], 1);
        else unsetenv(env[i]);
        free(old[i]);
    }
    CHECK_OK(st);
    if (st == MT_OK) mt_jit_destroy(jit);
    FILE *err = fopen(err_path, "r");
    char text[4096] = "";
    if (err) text[fread(text, 1, sizeof text - 1, err)] = '\0', fclose(err);
    int lines = 0;
    for (const char *p = text; (p = strstr(p, "running without a disk cache")); p++) lines++;
    CHECK_MSG(lines == 2 && strstr(text, "/proc/mla-tune-cannot-exist") && strstr(text, "/proc/mla-tune-home"),
              "warnings: %s", text);
}

/* Two writer processes store the same key over and over (a 1 MiB entry, so
 * a torn write would be visible) while a reader reads it; nobody may ever
 * see a corrupt or partial entry. */
static void test_two_writers(const char *dir) {
    enum { ROUNDS = 60, SIZE = 1 << 20 };
    uint8_t key[32];
    mt_sha256_digest("shared key", 10, key);
    unsigned char *payload = malloc(SIZE);
    for (int i = 0; i < SIZE; i++) payload[i] = (unsigned char)(i * 31 + 7);
    pid_t kids[3];
    for (int k = 0; k < 3; k++) {
        kids[k] = fork();
        if (kids[k] == 0) {
            int bad = 0;
            for (int r = 0; r < ROUNDS; r++) {
                if (k < 2) {
                    if (mt_cache_write(dir, key, payload, SIZE, "same log") != MT_OK) bad++;
                }
                void *code;
                size_t size;
                char *log;
                mt_status st = mt_cache_read(dir, key, &code, &size, &log);
                if (st == MT_OK) {
                    if (size != SIZE || memcmp(code, payload, SIZE) != 0 || strcmp(log, "same log") != 0) bad++;
                    free(code);
                    free(log);
                } else if (st != MT_ERR_NOT_FOUND || k < 2) {
                    /* writers always find something; the reader may start before any write */
                    fprintf(stderr, "child %d round %d: %s\n", k, r, mt_last_error());
                    bad++;
                }
            }
            _exit(bad ? 1 : 0);
        }
    }
    for (int k = 0; k < 3; k++) {
        int status = 0;
        waitpid(kids[k], &status, 0);
        CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child %d saw a bad entry", k);
    }
    CHECK(count_files(dir, ".tmp.") == 0);
    free(payload);
}

/* Threads asking at once for a key that is being built wait for that one
 * build (variants differing only in a flag-like parameter share a key, and
 * the sweep's compile-ahead threads meet them side by side). */
typedef struct same_key { mt_jit *jit; const mt_code_object *obj; mt_status st; } same_key;
static void *ask(void *arg) {
    same_key *k = arg;
    mt_jit_request req = {.source = "kernel #slow", .source_name = "k.cu", .arch = "sm_90"};
    k->st = mt_jit_compile(k->jit, &req, &k->obj, NULL);
    return NULL;
}
static void test_one_build_per_key(void) {
    mt_jit *jit = NULL;
    CHECK_OK(mt_jit_create(&fake_backend, "", &jit));
    int before = compiles;
    pthread_t t[8];
    same_key k[8];
    for (int i = 0; i < 8; i++) {
        k[i] = (same_key){jit, NULL, MT_ERR_VENDOR};
        pthread_create(&t[i], NULL, ask, &k[i]);
    }
    for (int i = 0; i < 8; i++) pthread_join(t[i], NULL);
    int same = 1;
    for (int i = 0; i < 8; i++) same &= k[i].st == MT_OK && k[i].obj == k[0].obj;
    CHECK_MSG(same && compiles == before + 1, "%d compiles for 8 threads asking at once", compiles - before);
    mt_jit_destroy(jit);
}

int main(void) {
    char dir[256];
    make_temp_dir(dir, sizeof dir);
    test_disk_format(dir);
    test_jit_order(dir);
    test_two_writers(dir);
    test_one_build_per_key();
    char def[512];
    setenv("MLA_TUNE_CACHE_DIR", "", 1);
    setenv("XDG_CACHE_HOME", "/x/y", 1);
    CHECK_OK(mt_cache_default_dir(def, sizeof def));
    CHECK(strcmp(def, "/x/y/mla-tune") == 0);
    setenv("MLA_TUNE_CACHE_DIR", "/a/b", 1);
    CHECK_OK(mt_cache_default_dir(def, sizeof def));
    CHECK(strcmp(def, "/a/b") == 0);
    rm_rf(dir);
    return check_summary("test_cache");
}
