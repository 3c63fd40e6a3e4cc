/* replay: dbench's clients replaying a load file (parsed before the clock starts) with the
 * system calls of dbench's fileio backend: NTCreateX as open (mkdir first for a directory),
 * fstat; Close; Rename; Unlink; Rmdir; Mkdir; Deltree (opendir, getdents, unlink, recursively);
 * QUERY_PATH_INFORMATION as stat; QUERY_FILE_INFORMATION as fstat; QUERY_FS_INFORMATION as
 * statvfs; SET_FILE_INFORMATION as fstat and utimensat; FIND_FIRST as opendir and getdents;
 * WriteX and ReadX as pwrite and pread at the given offset; LockX and UnlockX as fcntl; Flush as
 * fsync; every name first looked up as dbench's resolve_name does (stat, then a case-blind scan
 * of the parent directory when stat fails).
 *
 * Flags, modes and sizes are fsmeter's replay family's (O_CLOEXEC on every open, directories
 * opened O_RDONLY|O_DIRECTORY|O_NONBLOCK then fstat as glibc's opendir, a 32 KiB getdents
 * buffer). Unlike fsmeter, names are plain paths below the directory, as dbench gives them:
 * fsmeter resolves every name below the job's directory with openat2(RESOLVE_BENEATH) and opens
 * the parent directory (O_PATH) of a name in a subdirectory for the call on that name, so that a
 * hostile load file cannot lead a client out of it. Those extra calls are what the system-call
 * comparison shows; they are not part of the load.
 *
 * usage: replay dir=D loadfile=PATH threads=N [passes=1 | seconds=S warmup=S] [resolve=1]
 * Makes dir/clients/clientN first (untimed), then prints the phase `run` (its operations are the
 * load file's operations, Sleep excepted). */
#include "bare.h"
#include <ctype.h>
#include <dirent.h>
#include <sys/statvfs.h>

enum {
    NTCREATEX, CLOSE, RENAME, UNLINK, DELTREE, RMDIR, MKDIR, QPATHINFO, QFILEINFO, QFSINFO,
    SFILEINFO, FIND, WRITEX, READX, LOCKX, UNLOCKX, FLUSH, SLEEP
};
#define MARK '\001' /* stands for "client1" in a stored path */
#define DENTS 32768

struct op {
    u32 kind, expect_ok, handle;
    char *path, *path2;
    u64 a, b, c;
};

static struct {
    const char *dir;
    struct op *ops;
    size_t nops, cap;
    u32 nhandles;
    u64 max_io;
    int resolve;
    u64 passes, warmup_ns, run_ns;
} cfg;

/* ---- parsing, before the clock ---------------------------------------------------------------- */

#define HSLOTS (1u << 20)
static long long *hkeys;
static u32 *hvals;

static u32 intern_handle(long long h) {
    u32 i = (u32)((unsigned long long)h * 0x9E3779B97F4A7C15ull >> 44) & (HSLOTS - 1);
    for (;; i = (i + 1) & (HSLOTS - 1)) {
        if (hvals[i] == 0) {
            hkeys[i] = h;
            hvals[i] = ++cfg.nhandles;
            return hvals[i] - 1;
        }
        if (hkeys[i] == h)
            return hvals[i] - 1;
    }
}

/* A quoted load-file path, backslashes already turned into slashes: "client1" becomes MARK. */
static char *stored_path(const char *tok) {
    char *out = malloc(strlen(tok) + 1), *o = out;
    while (*tok) {
        if (!strncmp(tok, "client1", 7)) {
            *o++ = MARK;
            tok += 7;
        } else {
            *o++ = *tok++;
        }
    }
    *o = 0;
    return out;
}

static long long num(const char *t) { return strtoll(t, NULL, 0); }

static void parse(const char *file) {
    FILE *f = fopen(file, "r");
    CHECK(f, "open %s", file);
    hkeys = calloc(HSLOTS, sizeof *hkeys);
    hvals = calloc(HSLOTS, sizeof *hvals);
    char *line = NULL;
    size_t len = 0;
    while (getline(&line, &len, f) >= 0) {
        char *tok[20];
        int n = 0;
        for (char *p = line; *p; p++)
            if (*p == '\\')
                *p = '/';
        for (char *p = line; *p && n < 19;) {
            while (*p == ' ')
                p++;
            if (!*p || *p == '\n' || *p == '\r')
                break;
            char *t = p, *o = p;
            int quoted = 0;
            while (*p && *p != '\n' && *p != '\r' && (quoted || *p != ' ')) {
                if (*p == '"')
                    quoted = !quoted;
                else
                    *o++ = *p;
                p++;
            }
            if (*p)
                p++;
            *o = 0;
            tok[n++] = t;
        }
        if (n < 2 || tok[0][0] == '#')
            continue;
        char **t = tok;
        if (isdigit((unsigned char)t[0][0])) {
            t++;
            n--;
        }
        if (n < 2)
            continue;
        const char *st = t[n - 1];
        struct op op = {0};
        op.expect_ok = !strcmp(st, "NT_STATUS_OK") || !strcmp(st, "SUCCESS") ||
                       (!strncmp(st, "0x", 2) && strtoull(st + 2, NULL, 16) == 0);
        const char *name = t[0];
        if (!strcmp(name, "NTCreateX")) {
            op.kind = NTCREATEX, op.path = stored_path(t[1]), op.a = (u64)num(t[2]), op.b = (u64)num(t[3]);
            op.handle = intern_handle(num(t[4]));
        } else if (!strcmp(name, "Close") || !strcmp(name, "Flush")) {
            op.kind = name[0] == 'C' ? CLOSE : FLUSH, op.handle = intern_handle(num(t[1]));
        } else if (!strcmp(name, "QUERY_FILE_INFORMATION") || !strcmp(name, "SET_FILE_INFORMATION")) {
            op.kind = name[0] == 'Q' ? QFILEINFO : SFILEINFO, op.handle = intern_handle(num(t[1]));
        } else if (!strcmp(name, "Rename")) {
            op.kind = RENAME, op.path = stored_path(t[1]), op.path2 = stored_path(t[2]);
        } else if (!strcmp(name, "Unlink") || !strcmp(name, "Deltree") || !strcmp(name, "Rmdir") ||
                   !strcmp(name, "Mkdir") || !strcmp(name, "QUERY_PATH_INFORMATION")) {
            op.kind = name[0] == 'U' ? UNLINK : name[0] == 'D' ? DELTREE : name[0] == 'R' ? RMDIR
                    : name[0] == 'M' ? MKDIR : QPATHINFO;
            op.path = stored_path(t[1]);
        } else if (!strcmp(name, "QUERY_FS_INFORMATION")) {
            op.kind = QFSINFO;
        } else if (!strcmp(name, "FIND_FIRST")) {
            op.kind = FIND, op.path = stored_path(t[1]), op.a = (u64)num(t[2]), op.b = (u64)num(t[3]);
        } else if (!strcmp(name, "WriteX") || !strcmp(name, "ReadX")) {
            op.kind = name[0] == 'W' ? WRITEX : READX, op.handle = intern_handle(num(t[1]));
            op.a = (u64)num(t[2]), op.b = (u64)num(t[3]), op.c = (u64)num(t[4]);
            if (op.b > cfg.max_io)
                cfg.max_io = op.b;
        } else if (!strcmp(name, "LockX") || !strcmp(name, "UnlockX")) {
            op.kind = name[0] == 'L' ? LOCKX : UNLOCKX, op.handle = intern_handle(num(t[1]));
            op.a = (u64)num(t[2]), op.b = (u64)num(t[3]);
        } else if (!strcmp(name, "Sleep")) {
            op.kind = SLEEP, op.a = (u64)num(t[1]);
        } else {
            errno = 0;
            die("%s: unknown operation %s", file, name);
        }
        if (cfg.nops == cfg.cap) {
            cfg.cap = cfg.cap ? cfg.cap * 2 : 4096;
            cfg.ops = realloc(cfg.ops, cfg.cap * sizeof *cfg.ops);
        }
        cfg.ops[cfg.nops++] = op;
    }
    free(line);
    fclose(f);
    free(hkeys);
    free(hvals);
}

/* ---- one client ------------------------------------------------------------------------------ */

struct client {
    int id;
    char cname[32];
    size_t base_len;
    char p1[4200], p2[4200];
    int *fds;
    u32 *names; /* per handle: the op whose path opened it */
    char *zeros, *rbuf;
    char *dents[16];
};

static void build(struct client *c, char *buf, const char *path) {
    char *o = buf + c->base_len;
    for (const char *p = path; *p; p++) {
        if (*p == MARK) {
            strcpy(o, c->cname);
            o += strlen(c->cname);
        } else {
            *o++ = *p;
        }
    }
    *o = 0;
}

/* glibc's opendir without its allocation: open O_DIRECTORY|O_NONBLOCK, then fstat. */
static int open_dir(const char *path) {
    int fd = sc_open(path, O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC, 0);
    if (fd >= 0) {
        struct stat st;
        sc_fstat(fd, &st);
    }
    return fd;
}

static inline long getdents(int fd, char *buf) { return syscall(SYS_getdents64, fd, buf, DENTS); }

struct dirent64_raw {
    u64 ino;
    int64_t off;
    unsigned short reclen;
    unsigned char type;
    char name[];
};

/* dbench's resolve_name: stat; when that fails, a case-blind scan of the parent directory. */
static int resolve_name(struct client *c, char *buf) {
    struct stat st;
    if (sc_stat(buf, &st) == 0)
        return 1;
    if (!cfg.resolve)
        return 0;
    char *slash = strrchr(buf, '/');
    if (!slash)
        return 0;
    *slash = 0;
    int fd = open_dir(buf);
    *slash = '/';
    if (fd < 0)
        return 0;
    const char *want = slash + 1;
    for (int found = 0; !found;) {
        long n = getdents(fd, c->dents[0]);
        if (n <= 0)
            break;
        for (long off = 0; off < n;) {
            struct dirent64_raw *d = (struct dirent64_raw *)(c->dents[0] + off);
            if (!strcasecmp(d->name, want)) {
                found = 1;
                break;
            }
            off += d->reclen;
        }
    }
    sc_close(fd);
    return 0;
}

static void deltree(struct client *c, int fd, int depth) {
    char *buf = c->dents[depth + 1 < 16 ? depth + 1 : 15];
    for (;;) {
        long n = getdents(fd, buf);
        if (n <= 0)
            break;
        for (long off = 0; off < n;) {
            struct dirent64_raw *d = (struct dirent64_raw *)(buf + off);
            off += d->reclen;
            if (!strcmp(d->name, ".") || !strcmp(d->name, ".."))
                continue;
            struct stat st;
            if (sc_fstatat(fd, d->name, &st, AT_SYMLINK_NOFOLLOW) != 0)
                continue;
            if (S_ISDIR(st.st_mode)) {
                int sub = sc_openat(fd, d->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
                if (sub >= 0) {
                    sc_fstat(sub, &st);
                    deltree(c, sub, depth + 1);
                }
            } else {
                sc_unlinkat(fd, d->name, 0);
            }
        }
    }
    sc_close(fd);
}

static u64 exec_op(struct client *c, const struct op *op) {
    if (op->path)
        build(c, c->p1, op->path);
    if (op->path2)
        build(c, c->p2, op->path2);
    int *fd = op->kind == SLEEP || op->kind == QFSINFO || op->path ? NULL : &c->fds[op->handle];
    if (fd && *fd < 0) {
        errno = EBADF;
        die("client%d: handle %u is not open", c->id, op->handle);
    }
    struct stat st;
    switch (op->kind) {
    case NTCREATEX: {
        resolve_name(c, c->p1);
        int flags = O_RDWR;
        if (op->b == 2)
            flags |= O_CREAT;
        if (op->b == 4 || op->b == 5)
            flags |= O_CREAT | O_TRUNC;
        if (op->a & 1) {
            sc_mkdir(c->p1, 0700);
            flags = O_RDONLY | O_DIRECTORY;
        }
        int f = sc_open(c->p1, flags | O_CLOEXEC, 0600);
        if (f < 0 && errno == EISDIR)
            f = sc_open(c->p1, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
        if (f < 0)
            return 0;
        if (!op->expect_ok) {
            sc_close(f);
            return 0;
        }
        if (c->fds[op->handle] >= 0)
            sc_close(c->fds[op->handle]);
        c->fds[op->handle] = f;
        c->names[op->handle] = (u32)(op - cfg.ops);
        sc_fstat(f, &st);
        return 0;
    }
    case CLOSE:
        sc_close(*fd);
        *fd = -1;
        return 0;
    case RENAME:
        resolve_name(c, c->p1);
        resolve_name(c, c->p2);
        sc_rename(c->p1, c->p2);
        return 0;
    case UNLINK:
        resolve_name(c, c->p1);
        sc_unlink(c->p1);
        return 0;
    case RMDIR:
        resolve_name(c, c->p1);
        sc_rmdir(c->p1);
        return 0;
    case MKDIR:
        resolve_name(c, c->p1);
        sc_mkdir(c->p1, 0777);
        return 0;
    case DELTREE: {
        int d = open_dir(c->p1);
        if (d >= 0)
            deltree(c, d, 0);
        return 0;
    }
    case QPATHINFO:
        resolve_name(c, c->p1);
        return 0;
    case QFILEINFO:
        sc_fstat(*fd, &st);
        return 0;
    case QFSINFO: {
        struct statvfs sv;
        c->p1[c->base_len] = 0;
        statvfs(c->p1, &sv);
        return 0;
    }
    case SFILEINFO: {
        sc_fstat(*fd, &st);
        build(c, c->p2, cfg.ops[c->names[op->handle]].path);
        struct timespec tm[2] = {{st.st_atime - 10, 0}, {st.st_mtime - 12, 0}};
        utimensat(AT_FDCWD, c->p2, tm, AT_SYMLINK_NOFOLLOW);
        return 0;
    }
    case FIND: {
        resolve_name(c, c->p1);
        if (!strpbrk(c->p1, "<>*?\""))
            return 0;
        char *slash = strrchr(c->p1, '/');
        *slash = 0;
        int d = open_dir(c->p1);
        *slash = '/';
        if (d < 0)
            return 0;
        for (u64 left = op->b; left > 0;) {
            long n = getdents(d, c->dents[0]);
            if (n <= 0)
                break;
            for (long off = 0; off < n && left > 0; left--)
                off += ((struct dirent64_raw *)(c->dents[0] + off))->reclen;
        }
        sc_close(d);
        return 0;
    }
    case WRITEX:
        CHECK(sc_pwrite(*fd, c->zeros, op->b, op->a) == (long)op->c, "client%d: WriteX", c->id);
        return op->b;
    case READX:
        sc_pread(*fd, c->rbuf, op->b, op->a);
        return op->b;
    case LOCKX:
    case UNLOCKX: {
        struct flock l = {.l_type = op->kind == LOCKX ? F_WRLCK : F_UNLCK, .l_whence = SEEK_SET,
                          .l_start = (off_t)op->a, .l_len = (off_t)op->b};
        fcntl(*fd, F_SETLKW, &l);
        return 0;
    }
    case FLUSH:
        sc_fsync(*fd);
        return 0;
    case SLEEP:
        usleep((useconds_t)op->a);
        return 0;
    }
    return 0;
}

static void client_thread(struct share *sh, u64 start) {
    struct client *c = sh->arg;
    u64 measure = start + cfg.warmup_ns, deadline = cfg.run_ns ? measure + cfg.run_ns : UINT64_MAX;
    int measuring = cfg.warmup_ns == 0, stop = 0;
    u64 ops = 0, bytes = 0, n = 0;
    for (u64 pass = 0; !stop && (cfg.passes == 0 || pass < cfg.passes); pass++)
        for (size_t i = 0; i < cfg.nops; i++) {
            const struct op *op = &cfg.ops[i];
            u64 b = exec_op(c, op);
            if (op->kind == SLEEP)
                continue;
            ops++;
            bytes += b;
            if (cfg.run_ns && (++n & 31) == 0) {
                u64 t = now_ns();
                if (!measuring && t >= measure) {
                    measuring = 1;
                    ops = bytes = 0;
                    sh->measure_ns = t;
                }
                if (t >= deadline) {
                    stop = 1;
                    break;
                }
            }
        }
    for (u32 h = 0; h < cfg.nhandles; h++)
        if (c->fds[h] >= 0)
            sc_close(c->fds[h]);
    sh->ops = ops;
    sh->bytes = bytes;
}

int main(int argc, char **argv) {
    args_init(argc, argv, "dir=D loadfile=PATH threads=N [passes=1 | seconds=S warmup=S] [resolve=1]");
    cfg.dir = arg_str("dir", ".");
    cfg.resolve = (int)arg_u64("resolve", 1);
    cfg.run_ns = (u64)(arg_f64("seconds", 0) * 1e9);
    cfg.warmup_ns = (u64)(arg_f64("warmup", 0) * 1e9);
    cfg.passes = arg_u64("passes", cfg.run_ns ? 0 : 1);
    int n = (int)arg_u64("threads", 1);
    parse(arg_str("loadfile", "/usr/share/dbench/client.txt"));
    errno = 0;
    CHECK(cfg.nops > 0 && n >= 1, "no operations, or threads < 1");
    char base[4200];
    snprintf(base, sizeof base, "%s/clients", cfg.dir);
    CHECK(sc_mkdir(base, 0777) == 0 || errno == EEXIST, "mkdir %s", base);
    struct client *cl = calloc((size_t)n, sizeof *cl);
    struct share *sh = calloc((size_t)n, sizeof *sh);
    char *zeros = calloc(1, cfg.max_io + 1);
    for (int i = 0; i < n; i++) {
        snprintf(base, sizeof base, "%s/clients/client%d", cfg.dir, i);
        CHECK(sc_mkdir(base, 0777) == 0 || errno == EEXIST, "mkdir %s", base);
        struct client *c = &cl[i];
        c->id = i;
        snprintf(c->cname, sizeof c->cname, "client%d", i);
        c->base_len = strlen(cfg.dir);
        memcpy(c->p1, cfg.dir, c->base_len);
        memcpy(c->p2, cfg.dir, c->base_len);
        c->fds = malloc((cfg.nhandles + 1) * sizeof *c->fds);
        for (u32 h = 0; h <= cfg.nhandles; h++)
            c->fds[h] = -1;
        c->names = calloc(cfg.nhandles + 1, sizeof *c->names);
        c->zeros = zeros;
        c->rbuf = malloc(cfg.max_io + 1);
        for (int d = 0; d < 16; d++)
            c->dents[d] = malloc(DENTS);
        sh[i].arg = c;
    }
    phase_begin("run");
    run_threads(n, client_thread, sh);
    if (cfg.run_ns)
        phase_rate("run", n, sh);
    else
        phase_total("run", n, sh);
    return 0;
}
