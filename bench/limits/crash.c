/* crash: each thread grows files_per_thread files in its own directory with pwrite of write_size
 * (appends, or overwrites of written blocks), and every dirty_bytes makes a sync point: fsync or
 * fdatasync (alternating with sync=mixed) of each file written since the last one, then fsync of
 * the directory when files were created since.
 *
 * The calls of fsmeter's crash family in its write phase, decided by the same xoshiro256++ draws
 * from the same seeds, so both make the same files, writes and syncs in the same order. What the
 * family does beyond them is left out: no block is filled with its verified header and checksum
 * (the bare loop writes one constant buffer) and no ledger line is formatted.
 *
 * usage: crash dir=D threads=N seconds=S [files=16 file_size=4M block=4K write_size=16K dirty=1M
 *              overwrite_pct=25 sync=fsync|fdatasync|mixed seed=42]
 * Prints the phase `write` (its operations are the writes). */
#include "bare.h"

static struct {
    const char *dir;
    u64 file_size, block, write_size, dirty_bytes, seed, run_ns;
    u32 files, overwrite_pct;
    int sync; /* 0 fsync, 1 fdatasync, 2 mixed */
} cfg;

struct file {
    int fd, dirty;
    u64 blocks;
};

struct writer {
    int dir_fd;
    char path[4200];
    size_t dir_len;
    struct xoshiro rng;
    struct file *files;
    u32 nfiles, created_since;
    u64 dirty, sync_points;
    char *buf;
};

static u64 file_seed(u64 seed, u32 tid, u32 idx) {
    u64 z = seed ^ ((((u64)tid << 32) | idx) * 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* std::fs::File::open + sync_all + drop: what the engine does to make a directory durable. */
static void fsync_dir(const char *path) {
    int fd = sc_open(path, O_RDONLY | O_CLOEXEC, 0);
    CHECK(fd >= 0, "open %s", path);
    CHECK(sc_fsync(fd) == 0, "fsync %s", path);
    sc_close(fd);
}

static void setup(struct writer *w, int tid) {
    snprintf(w->path, sizeof w->path, "%s/crash-t%d", cfg.dir, tid);
    w->dir_len = strlen(w->path);
    CHECK(sc_mkdir(w->path, 0777) == 0, "mkdir %s", w->path);
    fsync_dir(w->path);
    fsync_dir(cfg.dir);
    w->dir_fd = sc_open(w->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    CHECK(w->dir_fd >= 0, "open %s", w->path);
    xoshiro_seed(&w->rng, file_seed(cfg.seed, (u32)tid, UINT32_MAX));
    w->files = calloc(cfg.files, sizeof *w->files);
    w->buf = buffer(cfg.write_size, 0x5a);
}

static void sync_point(struct writer *w) {
    int data_only = cfg.sync == 1 || (cfg.sync == 2 && w->sync_points % 2 == 1);
    w->sync_points++;
    for (u32 i = 0; i < w->nfiles; i++) {
        if (!w->files[i].dirty)
            continue;
        int rc = data_only ? sc_fdatasync(w->files[i].fd) : sc_fsync(w->files[i].fd);
        CHECK(rc == 0, "%s", data_only ? "fdatasync" : "fsync");
        w->files[i].dirty = 0;
    }
    w->dirty = 0;
    if (w->created_since) {
        CHECK(sc_fsync(w->dir_fd) == 0, "fsync %s", w->path);
        w->created_since = 0;
    }
}

static void create_file(struct writer *w) {
    snprintf(w->path + w->dir_len, sizeof w->path - w->dir_len, "/f%06u", w->nfiles);
    int fd = sc_open(w->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    CHECK(fd >= 0, "create %s", w->path);
    w->path[w->dir_len] = 0;
    w->files[w->nfiles++] = (struct file){.fd = fd};
    w->created_since++;
}

/* As the engine's writer: on a table of its own it makes its directory and opens it before the
 * start, and closes its files and the directory after its window, on its own thread. */
static void writer_setup(struct share *sh) {
    own_fd_table();
    setup(sh->arg, sh->tid);
}

static void writer_teardown(struct share *sh) {
    struct writer *w = sh->arg;
    for (u32 j = 0; j < w->nfiles; j++)
        sc_close(w->files[j].fd);
    sc_close(w->dir_fd);
}

static void writer_thread(struct share *sh, u64 start) {
    struct writer *w = sh->arg;
    u64 deadline = start + cfg.run_ns, max_blocks = cfg.file_size / cfg.block;
    u64 wblocks = cfg.write_size / cfg.block, writes = 0;
    for (;;) {
        if (now_ns() >= deadline)
            break;
        if (w->dirty >= cfg.dirty_bytes) {
            sync_point(w);
            continue;
        }
        u32 growing = 0;
        for (u32 i = 0; i < w->nfiles; i++)
            growing += w->files[i].blocks + wblocks <= max_blocks;
        if (w->nfiles < cfg.files && (growing == 0 || xoshiro_u32(&w->rng) % 8 == 0)) {
            create_file(w);
            continue;
        }
        u64 slot = xoshiro_next(&w->rng) % w->nfiles;
        struct file *f = &w->files[slot];
        int overwrite =
            f->blocks >= wblocks && (f->blocks + wblocks > max_blocks || xoshiro_u32(&w->rng) % 100 < cfg.overwrite_pct);
        u64 first = overwrite ? xoshiro_next(&w->rng) % (f->blocks - wblocks + 1) : f->blocks;
        if (!overwrite && f->blocks + wblocks > max_blocks)
            continue;
        CHECK(sc_pwrite(f->fd, w->buf, cfg.write_size, first * cfg.block) == (long)cfg.write_size, "pwrite");
        writes++;
        if (!overwrite)
            f->blocks += wblocks;
        f->dirty = 1;
        w->dirty += cfg.write_size;
    }
    sh->ops = writes;
    sh->bytes = writes * cfg.write_size;
}

int main(int argc, char **argv) {
    args_init(argc, argv,
              "dir=D threads=N seconds=S [files=16 file_size=4M block=4K write_size=16K dirty=1M "
              "overwrite_pct=25 sync=fsync|fdatasync|mixed seed=42]");
    cfg.dir = arg_str("dir", ".");
    cfg.files = (u32)arg_u64("files", 16);
    cfg.file_size = arg_u64("file_size", 4 << 20);
    cfg.block = arg_u64("block", 4096);
    cfg.write_size = arg_u64("write_size", 16 << 10);
    cfg.dirty_bytes = arg_u64("dirty", 1 << 20);
    cfg.overwrite_pct = (u32)arg_u64("overwrite_pct", 25);
    cfg.seed = arg_u64("seed", 42);
    cfg.run_ns = (u64)(arg_f64("seconds", 10) * 1e9);
    const char *sync = arg_str("sync", "mixed");
    cfg.sync = strcmp(sync, "fsync") == 0 ? 0 : strcmp(sync, "fdatasync") == 0 ? 1 : 2;
    int n = (int)arg_u64("threads", 1);
    errno = 0;
    CHECK(n >= 1 && cfg.files >= 1 && cfg.block > 0 && cfg.write_size % cfg.block == 0 &&
              cfg.file_size >= cfg.write_size && cfg.dirty_bytes >= cfg.write_size,
          "bad sizes: write_size a multiple of block, file_size and dirty at least write_size");
    struct writer *w = calloc((size_t)n, sizeof *w);
    struct share *sh = calloc((size_t)n, sizeof *sh);
    phase_begin("write");
    for (int i = 0; i < n; i++)
        sh[i].arg = &w[i];
    run_threads_around(n, writer_setup, writer_thread, writer_teardown, sh);
    phase_rate("write", n, sh);
    return 0;
}
