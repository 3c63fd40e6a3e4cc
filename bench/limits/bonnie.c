/* bonnie: Bonnie's data-file phases (putc through stdio, block writes, rewrite, getc, block reads,
 * random seeks by several seekers) and bonnie++'s small-file phases (create, stat, delete, in
 * sequence and at random).
 *
 * The calls of fsmeter's bonnie family, phase by phase: the data file unlinked and created
 * O_RDWR|O_CREAT|O_EXCL for the writing phases, opened O_RDWR for the others; putc and getc
 * through glibc's stdio on that descriptor (fdopen: its buffer is the file's st_blksize, as the
 * engine's, and fdopen adds one fcntl(F_GETFL) per phase); block phases with pwrite and pread of
 * `chunk` at the running offset, rewrite as pread then pwrite, one byte changed per chunk; each
 * phase ended by fsync (fsync=1) and close; seeks: seek_procs threads with a descriptor each,
 * taking tickets from one counter, lseek and read of a chunk at a mixed offset, every tenth also
 * lseek and write back. Small files: bonnie++'s names and sizes from the engine's generator,
 * openat/write/close, fstatat then openat/read/close, unlinkat, readdir order for the sequential
 * stat and delete, syncfs at the end of creates and deletes.
 *
 * usage: bonnie dir=D [size=64M (0: small-file tests only) chunk=8K char_size=8M seeks=4000 seek_procs=3 fsync=1 files=1024
 *               file_max_size=0 file_min_size=0 file_dirs=1 file_chunk=8K seed=42 phases=...]
 * phases: putc_write,block_write,rewrite,getc_read,block_read,seeks,seq_create,seq_stat,seq_del,
 * ran_create,ran_stat,ran_del (the default, in this order). */
#include "bare.h"
#include <dirent.h>
#include <sys/vfs.h>

static struct {
    const char *dir;
    char data[4200], top[4200];
    u64 size, chunk, char_size, seeks, seed, files, file_max, file_min, file_chunk;
    int seek_procs, fsync, file_dirs;
} cfg;

static int open_data(int create) {
    if (create)
        sc_unlink(cfg.data);
    int fd = sc_open(cfg.data, O_RDWR | O_CLOEXEC | (create ? O_CREAT | O_EXCL : 0) | O_NOFOLLOW, 0600);
    CHECK(fd >= 0, "open %s", cfg.data);
    return fd;
}

static void finish(int fd) {
    if (cfg.fsync)
        CHECK(sc_fsync(fd) == 0, "fsync %s", cfg.data);
    CHECK(sc_close(fd) == 0, "close %s", cfg.data);
}

/* ---- the data file ---------------------------------------------------------------------------- */

static void seq_phase(const char *phase) {
    int putc_w = !strcmp(phase, "putc_write"), getc_r = !strcmp(phase, "getc_read");
    int create = putc_w || !strcmp(phase, "block_write"), rewrite = !strcmp(phase, "rewrite");
    int write = create || rewrite;
    u64 total = putc_w || getc_r ? (cfg.char_size < cfg.size ? cfg.char_size : cfg.size) : cfg.size;
    phase_begin(phase);
    int fd = open_data(create);
    FILE *f = NULL;
    if (putc_w || getc_r) {
        f = fdopen(fd, putc_w ? "w" : "r");
        CHECK(f, "fdopen %s", cfg.data);
    }
    char *buf = buffer(cfg.chunk, 0);
    u64 chars[256] = {0}, ops = 0, done = 0;
    size_t bufindex = 0;
    u64 t0 = now_ns();
    while (done < total) {
        size_t n = total - done < cfg.chunk ? total - done : cfg.chunk;
        if (putc_w) {
            for (size_t i = 0; i < n; i++)
                CHECK(putc((int)(i & 0x7f), f) != EOF, "putc");
        } else if (getc_r) {
            for (size_t i = 0; i < n; i++) {
                int c = getc(f);
                CHECK(c != EOF, "getc: early end of file");
                chars[c]++;
            }
        } else if (rewrite) {
            CHECK(sc_pread(fd, buf, n, done) == (long)n, "pread");
            buf[bufindex % cfg.chunk]++;
            bufindex++;
            CHECK(sc_pwrite(fd, buf, n, done) == (long)n, "pwrite");
        } else if (write) {
            buf[bufindex]++;
            bufindex = (bufindex + 1) % cfg.chunk;
            CHECK(sc_pwrite(fd, buf, n, done) == (long)n, "pwrite");
        } else {
            CHECK(sc_pread(fd, buf, n, done) == (long)n, "pread");
        }
        done += n;
        ops++;
    }
    if (putc_w)
        CHECK(fflush(f) == 0, "fflush");
    if (f) {
        if (cfg.fsync)
            CHECK(sc_fsync(fd) == 0, "fsync");
        CHECK(fclose(f) == 0, "fclose");
    } else {
        finish(fd);
    }
    u64 t1 = now_ns();
    free(buf);
    phase_end(phase, ops, done, t1 - t0);
}

static u64 next_ticket;

/* Each seeker opens its file in a descriptor table of its own, before the clock starts, as
 * bonnie++'s forked seekers and fsmeter's: the file is held by that table alone, so read(2)
 * skips the file-position lock a shared file would take. */
static void seek_setup(struct share *sh) {
    own_fd_table();
    *(int *)sh->arg = open_data(0);
}

static void seek_thread(struct share *sh, u64 start) {
    (void)start;
    int fd = *(int *)sh->arg;
    char *buf = buffer(cfg.chunk, 0);
    u64 nchunks = cfg.size / cfg.chunk, seed = mix64(cfg.seed);
    for (;;) {
        u64 t = __atomic_fetch_add(&next_ticket, 1, __ATOMIC_RELAXED);
        if (t >= cfg.seeks)
            break;
        u64 at = mix64(seed ^ t) % nchunks;
        off_t off = (off_t)(at * cfg.chunk);
        CHECK(sc_lseek(fd, off, SEEK_SET) >= 0, "lseek");
        CHECK(sc_read(fd, buf, cfg.chunk) == (long)cfg.chunk, "read");
        if (t % 10 == 0) {
            buf[at % cfg.chunk]--;
            CHECK(sc_lseek(fd, off, SEEK_SET) >= 0, "lseek");
            write_all(fd, buf, cfg.chunk, cfg.data);
        }
        sh->ops++;
    }
    finish(fd);
    free(buf);
}

static void seeks_phase(void) {
    int n = cfg.seek_procs;
    int *fds = calloc((size_t)n, sizeof *fds);
    struct share *sh = calloc((size_t)n, sizeof *sh);
    phase_begin("seeks");
    next_ticket = 0;
    for (int i = 0; i < n; i++)
        sh[i].arg = &fds[i];
    run_threads_around(n, seek_setup, seek_thread, NULL, sh);
    phase_total("seeks", n, sh);
    free(fds);
    free(sh);
}

/* ---- the small files -------------------------------------------------------------------------- */

static const char RAND_CHARS[] = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
#define STRIDE 24

static struct {
    char *names;
    u32 *dir_of, *sizes, *order;
    int *dir_fds;
} ft;

static u64 rng_state;
static void rng_init(u64 stream) { rng_state = mix64(cfg.seed ^ mix64(stream)); }
static u64 rng_next(void) { return mix64(++rng_state); }

static void make_names(int random) {
    u64 n = cfg.files, per_dir = n / (u64)cfg.file_dirs, in_dir = 0;
    u32 dir = 0;
    free(ft.names);
    free(ft.dir_of);
    free(ft.sizes);
    free(ft.order);
    ft.names = calloc(n, STRIDE);
    ft.dir_of = calloc(n, sizeof *ft.dir_of);
    ft.sizes = calloc(n, sizeof *ft.sizes);
    ft.order = calloc(n, sizeof *ft.order);
    for (u64 i = 0; i < n; i++) {
        ft.order[i] = (u32)i;
        size_t len = (size_t)(rng_next() % 13);
        char extra[13], hex[24];
        for (size_t c = 0; c < len; c++)
            extra[c] = RAND_CHARS[rng_next() % (sizeof RAND_CHARS - 1)];
        extra[len] = 0;
        sprintf(hex, "%010llx", (unsigned long long)i);
        char *slot = ft.names + i * STRIDE;
        if (random)
            sprintf(slot, "%s%s", extra, hex);
        else
            sprintf(slot, "%s%s", hex, extra);
        ft.dir_of[i] = dir < (u32)cfg.file_dirs - 1 ? dir : (u32)cfg.file_dirs - 1;
        if (++in_dir > per_dir) {
            in_dir = 0;
            dir++;
        }
    }
    u64 range = cfg.file_max - cfg.file_min;
    for (u64 i = 0; i < n; i++)
        ft.sizes[i] = (u32)(range > 0 ? cfg.file_min + rng_next() % (range + 1) : cfg.file_max);
}

static void shuffle(void) {
    u64 n = cfg.files;
    for (u64 i = 0; i < n; i++) {
        u64 j = rng_next() % n;
        u32 t = ft.order[i];
        ft.order[i] = ft.order[j];
        ft.order[j] = t;
    }
}

static void make_dirs(void) {
    CHECK(sc_mkdir(cfg.top, 0700) == 0, "mkdir %s", cfg.top);
    free(ft.dir_fds);
    ft.dir_fds = calloc((size_t)cfg.file_dirs, sizeof(int));
    for (int d = 0; d < cfg.file_dirs; d++) {
        char p[4300];
        if (cfg.file_dirs > 1) {
            snprintf(p, sizeof p, "%s/%05d", cfg.top, d);
            CHECK(sc_mkdir(p, 0700) == 0, "mkdir %s", p);
        } else {
            snprintf(p, sizeof p, "%s", cfg.top);
        }
        ft.dir_fds[d] = sc_open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW, 0);
        CHECK(ft.dir_fds[d] >= 0, "open %s", p);
    }
}

static u64 stat_file(int dfd, const char *name, char *buf) {
    struct stat sb;
    CHECK(sc_fstatat(dfd, name, &sb, 0) == 0, "stat %s", name);
    u64 size = (u64)sb.st_size;
    if (size == 0)
        return 0;
    int fd = sc_openat(dfd, name, O_RDONLY | O_CLOEXEC, 0);
    CHECK(fd >= 0, "open %s", name);
    for (u64 done = 0; done < size;) {
        u64 want = size - done < cfg.file_chunk ? size - done : cfg.file_chunk;
        long r = sc_read(fd, buf, want);
        CHECK(r > 0, "read %s", name);
        done += (u64)r;
    }
    sc_close(fd);
    return size;
}

static void files_phase(const char *phase) {
    int random = !strncmp(phase, "ran_", 4);
    int creating = strstr(phase, "_create") != NULL, deleting = strstr(phase, "_del") != NULL;
    int stream = !strcmp(phase, "seq_create") ? 1 : !strcmp(phase, "seq_stat") ? 2 : !strcmp(phase, "seq_del") ? 3
               : !strcmp(phase, "ran_create") ? 4 : !strcmp(phase, "ran_stat") ? 5 : 6;
    phase_begin(phase);
    rng_init((u64)stream);
    if (creating) {
        make_names(random);
        make_dirs();
    } else if (random) {
        shuffle();
    }
    int fs_fd = sc_open(cfg.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    CHECK(fs_fd >= 0, "open %s", cfg.dir);
    char *buf = buffer(cfg.file_chunk ? cfg.file_chunk : 1, 0);
    u64 count = 0, bytes = 0, t0 = now_ns();
    if (creating) {
        for (u64 i = 0; i < cfg.files; i++) {
            int dfd = ft.dir_fds[ft.dir_of[i]];
            const char *name = ft.names + i * STRIDE;
            int fd = sc_openat(dfd, name, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0600);
            CHECK(fd >= 0, "create %s", name);
            for (u64 done = 0; done < ft.sizes[i];) {
                u64 n = ft.sizes[i] - done < cfg.file_chunk ? ft.sizes[i] - done : cfg.file_chunk;
                long w = sc_write(fd, buf, n);
                CHECK(w > 0, "write %s", name);
                done += (u64)w;
            }
            CHECK(sc_close(fd) == 0, "close %s", name);
            count++;
            bytes += ft.sizes[i];
        }
    } else if (random) {
        for (u64 k = 0; k < cfg.files; k++) {
            u32 j = ft.order[k];
            int dfd = ft.dir_fds[ft.dir_of[j]];
            const char *name = ft.names + (size_t)j * STRIDE;
            if (deleting)
                CHECK(sc_unlinkat(dfd, name, 0) == 0, "unlink %s", name);
            else
                bytes += stat_file(dfd, name, buf);
            count++;
        }
    } else {
        for (int d = 0; d < cfg.file_dirs; d++) {
            int dfd = ft.dir_fds[d];
            DIR *dir = fdopendir(dup(dfd));
            CHECK(dir, "opendir");
            rewinddir(dir);
            struct dirent *e;
            while ((e = readdir(dir))) {
                if (e->d_name[0] == '.')
                    continue;
                if (deleting)
                    CHECK(sc_unlinkat(dfd, e->d_name, 0) == 0, "unlink %s", e->d_name);
                else
                    bytes += stat_file(dfd, e->d_name, buf);
                count++;
            }
            closedir(dir);
        }
    }
    if (creating || deleting) {
        if (deleting) {
            for (int d = 0; cfg.file_dirs > 1 && d < cfg.file_dirs; d++) {
                char p[4300];
                snprintf(p, sizeof p, "%s/%05d", cfg.top, d);
                CHECK(sc_rmdir(p) == 0, "rmdir %s", p);
            }
            CHECK(sc_rmdir(cfg.top) == 0, "rmdir %s", cfg.top);
        }
        CHECK(syncfs(fs_fd) == 0, "syncfs");
    }
    u64 t1 = now_ns();
    sc_close(fs_fd);
    if (deleting)
        for (int d = 0; d < cfg.file_dirs; d++)
            sc_close(ft.dir_fds[d]);
    free(buf);
    phase_end(phase, count, bytes, t1 - t0);
}

int main(int argc, char **argv) {
    args_init(argc, argv,
              "dir=D [size=64M chunk=8K char_size=8M seeks=4000 seek_procs=3 fsync=1 files=1024 file_max_size=0 "
              "file_min_size=0 file_dirs=1 file_chunk=8K seed=42 phases=...]");
    cfg.dir = arg_str("dir", ".");
    snprintf(cfg.data, sizeof cfg.data, "%s/Bonnie.data", cfg.dir);
    snprintf(cfg.top, sizeof cfg.top, "%s/Bonnie.files", cfg.dir);
    cfg.size = arg_u64("size", 64 << 20);
    cfg.chunk = arg_u64("chunk", 8192);
    cfg.char_size = arg_u64("char_size", cfg.size);
    cfg.seeks = arg_u64("seeks", 4000);
    cfg.seek_procs = (int)arg_u64("seek_procs", 3);
    cfg.fsync = (int)arg_u64("fsync", 1);
    cfg.files = arg_u64("files", 1024);
    cfg.file_max = arg_u64("file_max_size", 0);
    cfg.file_min = arg_u64("file_min_size", 0);
    cfg.file_dirs = (int)arg_u64("file_dirs", 1);
    cfg.file_chunk = arg_u64("file_chunk", 8192);
    cfg.seed = arg_u64("seed", 42);
    errno = 0;
    CHECK(cfg.chunk > 0 && (cfg.size == 0 || cfg.size >= cfg.chunk) && cfg.seek_procs >= 1 && cfg.file_dirs >= 1,
          "bad parameters");
    char phases[512];
    snprintf(phases, sizeof phases, "%s",
             arg_str("phases", "putc_write,block_write,rewrite,getc_read,block_read,seeks,seq_create,seq_stat,"
                               "seq_del,ran_create,ran_stat,ran_del"));
    for (char *save, *ph = strtok_r(phases, ",", &save); ph; ph = strtok_r(NULL, ",", &save)) {
        if (cfg.size == 0 && strncmp(ph, "seq_", 4) && strncmp(ph, "ran_", 4))
            die("phases: %s needs a data file: give size > 0 (size=0 runs the small-file tests only)", ph);
        if (!strcmp(ph, "seeks"))
            seeks_phase();
        else if (!strncmp(ph, "seq_", 4) || !strncmp(ph, "ran_", 4))
            files_phase(ph);
        else if (!strcmp(ph, "putc_write") || !strcmp(ph, "block_write") || !strcmp(ph, "rewrite") ||
                 !strcmp(ph, "getc_read") || !strcmp(ph, "block_read"))
            seq_phase(ph);
        else
            die("phases: %s is not a bonnie phase", ph);
    }
    sc_unlink(cfg.data);
    return 0;
}
