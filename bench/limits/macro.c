/* macro: the filesystem calls of the tools the macro family times, without the tools: cp of one
 * file as GNU cp 9 makes it (open, stat, create, a clone attempt, copy_file_range to the end, or
 * read and write of 128 KiB when the source is on another filesystem),
 * tar's extraction of a tree listed beforehand (mkdir; create, write, set times, owner and mode,
 * close per file; the directories' times, owners and modes at the end), rm -rf of that tree
 * (open, getdents, unlink per directory, deepest first, rmdir), each followed, as the family
 * follows each tool with `sync -f DIR`, by syncfs of the target.
 *
 * Against these the family's figures say what the tools cost beyond their calls: starting a
 * program, bzip2's decompression inside tar, GNU tar's and cp's own work. The tree is read from a
 * manifest (one line per archive member, in archive order: `d MODE PATH` or `f MODE SIZE PATH`)
 * that the bench writes from the archive before the clock starts; the files' data is written
 * from a zero buffer in tar's 10 KiB record pieces.
 *
 * usage: macro dir=D cp_src=PATH manifest=PATH [phases=cp,untar,rm]
 * Prints each phase (cp: 1 operation of the file's bytes; untar and rm: the tree's files and
 * bytes). */
#include "bare.h"
#include <dirent.h>
#include <linux/fs.h>
#include <sys/ioctl.h>

static struct {
    const char *dir;
    char dst[4200], tree[4200];
} cfg;

struct entry {
    int dir;
    unsigned mode;
    u64 size;
    char *path;
};

static struct entry *ents;
static size_t nents;

static void read_manifest(const char *path) {
    FILE *f = fopen(path, "r");
    CHECK(f, "open %s", path);
    char *line = NULL;
    size_t cap = 0, len = 0;
    ssize_t n;
    while ((n = getline(&line, &len, f)) > 0) {
        if (line[n - 1] == '\n')
            line[n - 1] = 0;
        if (nents == cap) {
            cap = cap ? cap * 2 : 1024;
            ents = realloc(ents, cap * sizeof *ents);
        }
        struct entry e = {0};
        int off = 0;
        if (line[0] == 'd' && sscanf(line, "d %o %n", &e.mode, &off) == 1) {
            e.dir = 1;
        } else if (line[0] == 'f' && sscanf(line, "f %o %llu %n", &e.mode, (unsigned long long *)&e.size, &off) == 2) {
            e.dir = 0;
        } else {
            errno = 0;
            die("%s: not a manifest line: %s", path, line);
        }
        e.path = strdup(line + off);
        ents[nents++] = e;
    }
    free(line);
    fclose(f);
}

/* `sync -f DIR`: open the directory, syncfs, close. */
static void sync_fs(void) {
    int fd = sc_open(cfg.dir, O_RDONLY | O_NONBLOCK, 0);
    CHECK(fd >= 0, "open %s", cfg.dir);
    CHECK(syncfs(fd) == 0, "syncfs %s", cfg.dir);
    sc_close(fd);
}

static void cp_phase(const char *src) {
    phase_begin("cp");
    u64 t0 = now_ns();
    int in = sc_open(src, O_RDONLY, 0);
    CHECK(in >= 0, "open %s", src);
    struct stat st;
    CHECK(sc_fstat(in, &st) == 0, "stat %s", src);
    int out = sc_open(cfg.dst, O_WRONLY | O_CREAT | O_EXCL, 0644);
    CHECK(out >= 0, "create %s", cfg.dst);
    ioctl(out, FICLONE, in); /* refused (EXDEV, EOPNOTSUPP) unless both are on one filesystem that clones */
    CHECK(sc_fstat(out, &st) == 0, "stat %s", cfg.dst);
    posix_fadvise(in, 0, 0, POSIX_FADV_SEQUENTIAL);
    u64 done = 0;
    ssize_t n = copy_file_range(in, NULL, out, NULL, 0x7fffffffc0000000ll - 0x40000000ll, 0);
    if (n >= 0) {
        for (done = (u64)n; n > 0; done += (u64)n)
            CHECK((n = copy_file_range(in, NULL, out, NULL, 0x7fffffffc0000000ll - 0x40000000ll, 0)) >= 0,
                  "copy_file_range");
    } else {
        /* another filesystem: cp reads and writes 128 KiB at a time */
        CHECK(errno == EXDEV || errno == EOPNOTSUPP || errno == EINVAL, "copy_file_range");
        static char buf[131072];
        long r;
        while ((r = sc_read(in, buf, sizeof buf)) > 0) {
            write_all(out, buf, (size_t)r, cfg.dst);
            done += (u64)r;
        }
        CHECK(r == 0, "read %s", src);
    }
    sc_close(in);
    CHECK(sc_close(out) == 0, "close %s", cfg.dst);
    sync_fs();
    phase_end("cp", 1, done, now_ns() - t0);
}

static void untar_phase(void) {
    CHECK(sc_mkdir(cfg.tree, 0755) == 0, "mkdir %s", cfg.tree); /* the family's step, outside the time */
    CHECK(chdir(cfg.tree) == 0, "chdir %s", cfg.tree);       /* tar -C */
    static char zeros[10240];
    phase_begin("untar");
    u64 t0 = now_ns(), files = 0, bytes = 0;
    struct timespec tm[2] = {{0, UTIME_OMIT}, {1700000000, 0}};
    for (size_t i = 0; i < nents; i++) {
        struct entry *e = &ents[i];
        if (e->dir) {
            CHECK(sc_mkdirat(AT_FDCWD, e->path, 0700) == 0, "mkdir %s", e->path);
            continue;
        }
        int fd = sc_openat(AT_FDCWD, e->path, O_WRONLY | O_CREAT | O_EXCL | O_NOCTTY | O_NONBLOCK | O_CLOEXEC, 0600);
        CHECK(fd >= 0, "create %s", e->path);
        for (u64 left = e->size; left > 0;) {
            size_t k = left < sizeof zeros ? (size_t)left : sizeof zeros;
            write_all(fd, zeros, k, e->path);
            left -= k;
        }
        futimens(fd, tm);
        CHECK(fchown(fd, 0, 0) == 0 || errno == EPERM, "fchown %s", e->path);
        CHECK(fchmod(fd, e->mode) == 0, "fchmod %s", e->path);
        CHECK(sc_close(fd) == 0, "close %s", e->path);
        files++;
        bytes += e->size;
    }
    /* tar's delayed directory attributes, deepest first */
    for (size_t i = nents; i-- > 0;) {
        struct entry *e = &ents[i];
        if (!e->dir)
            continue;
        utimensat(AT_FDCWD, e->path, tm, AT_SYMLINK_NOFOLLOW);
        CHECK(fchownat(AT_FDCWD, e->path, 0, 0, AT_SYMLINK_NOFOLLOW) == 0 || errno == EPERM, "chown %s", e->path);
        int fd = sc_openat(AT_FDCWD, e->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_PATH, 0);
        CHECK(fd >= 0, "open %s", e->path);
        char proc[64];
        snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
        CHECK(chmod(proc, e->mode) == 0, "chmod %s", e->path);
        sc_close(fd);
    }
    sync_fs();
    phase_end("untar", files, bytes, now_ns() - t0);
    CHECK(chdir("/") == 0, "chdir /");
}

/* rm -rf below an open directory: unlink what is not a directory, recurse into what is. */
static void remove_below(int dfd, u64 *files, u64 *bytes) {
    char buf[32768];
    for (;;) {
        long n = syscall(SYS_getdents64, dfd, buf, sizeof buf);
        CHECK(n >= 0, "getdents64");
        if (n == 0)
            break;
        for (long off = 0; off < n;) {
            struct {
                u64 ino;
                int64_t off;
                unsigned short reclen;
                unsigned char type;
                char name[];
            } *d = (void *)(buf + off);
            off += d->reclen;
            if (!strcmp(d->name, ".") || !strcmp(d->name, ".."))
                continue;
            if (d->type == DT_DIR) {
                int sub = sc_openat(dfd, d->name, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC | O_DIRECTORY, 0);
                CHECK(sub >= 0, "open %s", d->name);
                remove_below(sub, files, bytes);
                sc_close(sub);
                CHECK(sc_unlinkat(dfd, d->name, AT_REMOVEDIR) == 0, "rmdir %s", d->name);
            } else {
                CHECK(sc_unlinkat(dfd, d->name, 0) == 0, "unlink %s", d->name);
                (*files)++;
            }
        }
    }
}

static void rm_phase(void) {
    u64 bytes = 0, files = 0;
    for (size_t i = 0; i < nents; i++)
        bytes += ents[i].size;
    phase_begin("rm");
    u64 t0 = now_ns(), unused = 0;
    int fd = sc_open(cfg.tree, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC | O_DIRECTORY, 0);
    CHECK(fd >= 0, "open %s", cfg.tree);
    remove_below(fd, &files, &unused);
    sc_close(fd);
    CHECK(sc_rmdir(cfg.tree) == 0, "rmdir %s", cfg.tree);
    sync_fs();
    phase_end("rm", files, bytes, now_ns() - t0);
}

int main(int argc, char **argv) {
    args_init(argc, argv, "dir=D cp_src=PATH manifest=PATH [phases=cp,untar,rm]");
    cfg.dir = arg_str("dir", ".");
    snprintf(cfg.dst, sizeof cfg.dst, "%s/macro-cp.bin", cfg.dir);
    snprintf(cfg.tree, sizeof cfg.tree, "%s/macro-tree", cfg.dir);
    const char *src = arg_str("cp_src", NULL), *manifest = arg_str("manifest", NULL);
    char phases[64];
    snprintf(phases, sizeof phases, "%s", arg_str("phases", "cp,untar,rm"));
    errno = 0;
    CHECK(src && manifest, "cp_src= and manifest= are needed");
    read_manifest(manifest);
    for (char *save, *ph = strtok_r(phases, ",", &save); ph; ph = strtok_r(NULL, ",", &save)) {
        if (!strcmp(ph, "cp"))
            cp_phase(src);
        else if (!strcmp(ph, "untar"))
            untar_phase();
        else if (!strcmp(ph, "rm"))
            rm_phase();
        else
            die("phases: %s is not cp, untar or rm", ph);
    }
    sc_unlink(cfg.dst);
    return 0;
}
