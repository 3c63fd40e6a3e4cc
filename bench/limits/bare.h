/* What every bare loop shares: raw system calls, a clock, the phase protocol, threads started
 * together, the random generators fsmeter's families draw from, and argument parsing.
 *
 * The calls are made with the `syscall` instruction inline at the call site (on x86-64; through
 * syscall(2) elsewhere), not through glibc's wrappers, for two reasons. glibc makes read, write,
 * pread, pwrite, openat, close, fsync and fdatasync cancellation points and, in a process of
 * several threads, wraps each in pthread's cancel bookkeeping. And any wrapper is a function the
 * loop calls, whose `ret` comes after the system call: on a machine whose kernel or hypervisor
 * clears the CPU's return-address predictions on the way back to user space, that `ret`
 * mispredicts on every call (measured on the 2-core development machine: getppid 116 ns inline,
 * 162 ns from a called function; a 1 MiB file written and read back in 1 KiB calls, 1,155 against
 * 1,510 us). fsmeter's engine makes its calls inline the same way (rustix's raw backend, its
 * crate::sys), so a bare loop pays what the engine pays and no more. The path-taking calls use the
 * *at forms the engine makes (unlink as unlinkat, mkdir as mkdirat, stat as newfstatat, creat as
 * openat with O_WRONLY|O_CREAT|O_TRUNC): the same work under the calls' newer names.
 *
 * Output, on stdout, one line each: `phase NAME` as a measured phase starts (before its threads),
 * `result NAME OPS BYTES SECONDS` when it ends. bench/limits_syscalls.py cuts a system-call
 * trace at these lines, so nothing on the measured filesystem happens between a phase's two. */
#ifndef BARE_H
#define BARE_H
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

typedef uint64_t u64;
typedef uint32_t u32;

/* ---- system calls ---------------------------------------------------------------------------- */

#if defined(__x86_64__)
/* One system call, inline: the return value, or -1 with errno set. */
__attribute__((always_inline)) static inline long sc6(long n, long a, long b, long c, long d, long e, long f) {
    register long r10 __asm__("r10") = d, r8 __asm__("r8") = e, r9 __asm__("r9") = f;
    long r;
    __asm__ volatile("syscall"
                     : "=a"(r)
                     : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    if (__builtin_expect((unsigned long)r > -4096UL, 0)) {
        errno = (int)-r;
        return -1;
    }
    return r;
}
#else
#define sc6(n, a, b, c, d, e, f) syscall(n, a, b, c, d, e, f)
#endif
#define SC(n, a, b, c) sc6(n, (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define SC4(n, a, b, c, d) sc6(n, (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)

static inline long sc_read(int fd, void *b, size_t n) { return SC(SYS_read, fd, b, n); }
static inline long sc_write(int fd, const void *b, size_t n) { return SC(SYS_write, fd, b, n); }
static inline long sc_pread(int fd, void *b, size_t n, u64 off) { return SC4(SYS_pread64, fd, b, n, off); }
static inline long sc_pwrite(int fd, const void *b, size_t n, u64 off) { return SC4(SYS_pwrite64, fd, b, n, off); }
static inline int sc_openat(int dfd, const char *p, int flags, int mode) { return (int)SC4(SYS_openat, dfd, p, flags, mode); }
static inline int sc_open(const char *p, int flags, int mode) { return sc_openat(AT_FDCWD, p, flags, mode); }
static inline int sc_creat(const char *p, int mode) { return sc_open(p, O_WRONLY | O_CREAT | O_TRUNC, mode); }
static inline int sc_close(int fd) { return (int)SC(SYS_close, fd, 0, 0); }
static inline int sc_fsync(int fd) { return (int)SC(SYS_fsync, fd, 0, 0); }
static inline int sc_fdatasync(int fd) { return (int)SC(SYS_fdatasync, fd, 0, 0); }
static inline long sc_lseek(int fd, long off, int whence) { return SC(SYS_lseek, fd, off, whence); }
static inline int sc_ftruncate(int fd, long len) { return (int)SC(SYS_ftruncate, fd, len, 0); }
static inline int sc_unlinkat(int dfd, const char *p, int flags) { return (int)SC(SYS_unlinkat, dfd, p, flags); }
static inline int sc_unlink(const char *p) { return sc_unlinkat(AT_FDCWD, p, 0); }
static inline int sc_rmdir(const char *p) { return sc_unlinkat(AT_FDCWD, p, AT_REMOVEDIR); }
static inline int sc_mkdirat(int dfd, const char *p, int mode) { return (int)SC(SYS_mkdirat, dfd, p, mode); }
static inline int sc_mkdir(const char *p, int mode) { return sc_mkdirat(AT_FDCWD, p, mode); }
static inline int sc_fstatat(int dfd, const char *p, struct stat *st, int flags) {
    return (int)SC4(SYS_newfstatat, dfd, p, st, flags);
}
static inline int sc_stat(const char *p, struct stat *st) { return sc_fstatat(AT_FDCWD, p, st, 0); }
static inline int sc_fstat(int fd, struct stat *st) { return (int)SC(SYS_fstat, fd, st, 0); }
static inline int sc_rename(const char *a, const char *b) { return (int)SC4(SYS_renameat, AT_FDCWD, a, AT_FDCWD, b); }

/* ---- failing --------------------------------------------------------------------------------- */

__attribute__((noreturn, format(printf, 1, 2))) static void die(const char *fmt, ...) {
    int e = errno;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "bare: ");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    if (e)
        fprintf(stderr, ": %s", strerror(e));
    fputc('\n', stderr);
    exit(1);
}

#define CHECK(cond, ...)                                                                             \
    do {                                                                                             \
        if (__builtin_expect(!(cond), 0))                                                            \
            die(__VA_ARGS__);                                                                        \
    } while (0)

/* write(2) all of `n` bytes (a short write goes on where it stopped), as fsmeter's write_all. */
static inline void write_all(int fd, const void *b, size_t n, const char *what) {
    const char *p = b;
    while (n > 0) {
        long w = sc_write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        CHECK(w > 0, "write %s", what);
        p += w;
        n -= (size_t)w;
    }
}

/* ---- clock ----------------------------------------------------------------------------------- */

static inline u64 now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (u64)ts.tv_sec * 1000000000ull + (u64)ts.tv_nsec;
}

/* ---- the phase protocol ---------------------------------------------------------------------- */

static void say(const char *fmt, ...) {
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof line - 1)
        n = sizeof line - 1;
    write_all(1, line, (size_t)n, "stdout");
}

static void phase_begin(const char *name) { say("phase %s\n", name); }

static void phase_end(const char *name, u64 ops, u64 bytes, u64 ns) {
    say("result %s %llu %llu %.9f\n", name, (unsigned long long)ops, (unsigned long long)bytes, ns / 1e9);
}

/* ---- threads started together ---------------------------------------------------------------- */

/* One thread's share of a phase: its argument, what it did, and its measured window (from the
 * common start, or from the end of its warm-up, to the end of its work). */
struct share {
    int tid, nthreads;
    void *arg;
    u64 ops, bytes, measure_ns, end_ns;
};

struct gate {
    pthread_barrier_t barrier;
    u64 start_ns;
};

struct thread_arg {
    struct share *sh;
    struct gate *g;
    void (*setup)(struct share *);
    void (*fn)(struct share *, u64 start_ns);
    void (*teardown)(struct share *);
};

static void *thread_main(void *p) {
    struct thread_arg *a = p;
    if (a->setup)
        a->setup(a->sh); /* before the clock starts, as fsmeter's setup closures */
    pthread_barrier_wait(&a->g->barrier);
    pthread_barrier_wait(&a->g->barrier); /* the start time is set between the two */
    a->sh->measure_ns = a->g->start_ns;
    a->fn(a->sh, a->g->start_ns);
    a->sh->end_ns = now_ns();
    if (a->teardown)
        a->teardown(a->sh); /* after the thread's window, as fsmeter's state drops */
    return NULL;
}

/* Runs fn on sh[0..n) (each a thread of its own, made before the clock starts) released together;
 * setup and teardown (if not NULL) run on each thread before and after it, outside its measured
 * window. A fn that warms up first moves its share's measure_ns to where its measured work began.
 * With n == 1 the work runs on a thread of its own as well, as in fsmeter (the process has two). */
__attribute__((unused)) static void run_threads_around(int n, void (*setup)(struct share *),
                                                       void (*fn)(struct share *, u64),
                                                       void (*teardown)(struct share *), struct share *sh) {
    struct gate g;
    struct thread_arg *ta = calloc((size_t)n, sizeof *ta);
    pthread_t *th = calloc((size_t)n, sizeof *th);
    CHECK(ta && th, "calloc");
    pthread_barrier_init(&g.barrier, NULL, (unsigned)n + 1);
    for (int i = 0; i < n; i++) {
        sh[i].tid = i;
        sh[i].nthreads = n;
        ta[i] = (struct thread_arg){.sh = &sh[i], .g = &g, .setup = setup, .fn = fn, .teardown = teardown};
        errno = pthread_create(&th[i], NULL, thread_main, &ta[i]);
        CHECK(errno == 0, "pthread_create");
    }
    pthread_barrier_wait(&g.barrier);
    g.start_ns = now_ns();
    pthread_barrier_wait(&g.barrier);
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&g.barrier);
    free(ta);
    free(th);
}

__attribute__((unused)) static void run_threads(int n, void (*fn)(struct share *, u64), struct share *sh) {
    run_threads_around(n, NULL, fn, NULL, sh);
}

/* A fixed amount of work: the phase lasts from the common start to the last thread's end. */
__attribute__((unused)) static void phase_total(const char *name, int n, struct share *sh) {
    u64 ops = 0, bytes = 0, start = sh[0].measure_ns, end = 0;
    for (int i = 0; i < n; i++) {
        ops += sh[i].ops;
        bytes += sh[i].bytes;
        if (sh[i].measure_ns < start)
            start = sh[i].measure_ns;
        if (sh[i].end_ns > end)
            end = sh[i].end_ns;
    }
    phase_end(name, ops, bytes, end - start);
}

/* A timed phase: each thread's rate over its own window, summed; reported as the ops and bytes
 * of all threads over the seconds that make that rate. */
__attribute__((unused)) static void phase_rate(const char *name, int n, struct share *sh) {
    double rate = 0, brate = 0;
    u64 ops = 0, bytes = 0;
    for (int i = 0; i < n; i++) {
        double s = (sh[i].end_ns - sh[i].measure_ns) / 1e9;
        ops += sh[i].ops;
        bytes += sh[i].bytes;
        if (s > 0) {
            rate += sh[i].ops / s;
            brate += sh[i].bytes / s;
        }
    }
    phase_end(name, ops, bytes, rate > 0 ? (u64)(ops / rate * 1e9) : 0);
}

/* ---- random numbers -------------------------------------------------------------------------- */

/* SplitMix64's finaliser (fsmeter's mix64). */
static inline u64 mix64(u64 z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* xoshiro256++, seeded as rand_xoshiro's seed_from_u64 seeds it (SplitMix64 over the seed), so a
 * loop draws the sequence fsmeter's engine draws from the same seed. */
struct xoshiro {
    u64 s[4];
};

static inline u64 rotl64(u64 x, int k) { return (x << k) | (x >> (64 - k)); }

__attribute__((unused)) static void xoshiro_seed(struct xoshiro *r, u64 seed) {
    for (int i = 0; i < 4; i++) {
        seed += 0x9E3779B97F4A7C15ull;
        u64 z = seed;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        r->s[i] = z ^ (z >> 31);
    }
}

static inline u64 xoshiro_next(struct xoshiro *r) {
    u64 *s = r->s;
    u64 out = rotl64(s[0] + s[3], 23) + s[0];
    u64 t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl64(s[3], 45);
    return out;
}

/* rand_core's next_u32 of a 64-bit generator: the high half. */
static inline u32 xoshiro_u32(struct xoshiro *r) { return (u32)(xoshiro_next(r) >> 32); }

/* Lemire's multiply-shift: uniform in [0, n). */
static inline u64 below(u64 x, u64 n) { return (u64)(((unsigned __int128)x * n) >> 64); }

/* ---- arguments ------------------------------------------------------------------------------- */

/* key=value arguments after the fixed ones; arg_u64("threads", 1) and friends read them. */
static int g_argc;
static char **g_argv;

static const char *arg_str(const char *key, const char *dflt) {
    size_t k = strlen(key);
    for (int i = 1; i < g_argc; i++)
        if (strncmp(g_argv[i], key, k) == 0 && g_argv[i][k] == '=')
            return g_argv[i] + k + 1;
    return dflt;
}

/* A size or count: digits with an optional K/M/G suffix (powers of 1024). */
__attribute__((unused)) static u64 arg_u64(const char *key, u64 dflt) {
    const char *v = arg_str(key, NULL);
    if (!v)
        return dflt;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    switch (*end) {
    case 'K': x <<= 10; end++; break;
    case 'M': x <<= 20; end++; break;
    case 'G': x <<= 30; end++; break;
    }
    if (*end || errno || end == v) {
        errno = 0;
        die("%s=%s: not a whole number (K, M, G suffixes allowed)", key, v);
    }
    return x;
}

__attribute__((unused)) static double arg_f64(const char *key, double dflt) {
    const char *v = arg_str(key, NULL);
    if (!v)
        return dflt;
    char *end;
    double x = strtod(v, &end);
    if (*end || end == v) {
        errno = 0;
        die("%s=%s: not a number", key, v);
    }
    return x;
}

static void args_init(int argc, char **argv, const char *usage) {
    g_argc = argc;
    g_argv = argv;
    for (int i = 1; i < argc; i++)
        if (!strchr(argv[i], '=')) {
            fprintf(stderr, "usage: %s %s\n", argv[0], usage);
            exit(2);
        }
    if (!arg_str("dir", NULL)) {
        fprintf(stderr, "usage: %s %s\n", argv[0], usage);
        exit(2);
    }
}

/* The calling thread's own copy of the descriptor table (unshare(CLONE_FILES)): its calls then look
 * their descriptors up without taking a reference, as a single-threaded process's do. */
__attribute__((unused)) static void own_fd_table(void) { CHECK(unshare(CLONE_FILES) == 0, "unshare(CLONE_FILES)"); }

/* A setup for run_threads_around: the thread on a descriptor table of its own, as fsmeter's workers
 * of the access, tree, fileset, crash, iozone and bonnie families are. (fsmeter's table holds only
 * what the worker keeps; a loop's is a whole copy, which the process's exit releases.) */
__attribute__((unused)) static void own_table_setup(struct share *sh) {
    (void)sh;
    own_fd_table();
}

/* An aligned buffer (O_DIRECT wants 4 KiB alignment), filled with `byte`. */
__attribute__((unused)) static void *buffer(size_t n, int byte) {
    void *p;
    errno = posix_memalign(&p, 4096, n ? n : 1);
    CHECK(errno == 0, "posix_memalign %zu", n);
    memset(p, byte, n);
    return p;
}

#endif
