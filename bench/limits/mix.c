/* mix: AIM7 disk tasks (re-aim's workfile.disk: every disk job, equal weights), each task a
 * process of its own running its job list once: files created, read and written in 1 KiB blocks
 * (in sequence, at random offsets with lseek, O_SYNC, O_DIRECT), copies of the shared input file,
 * and disk_src's stats and creates in a small tree; jobs per minute over the slowest task's time.
 *
 * The calls of fsmeter's mix family in a subrun of `tasks` tasks: the same job lists (re-aim's
 * per-task counts and random order, from the same SplitMix64 draws and seeds), the same temporary
 * names (dir/tmpb.<task><counter>, ...), creat(2) (made as openat, as the engine makes it) and open(2) with the same flags and modes, the
 * same lseek offsets (re-aim's 15-bit draws), the same disk_src tree (made before the clock, as
 * the family's prepare phase makes it). Before the tasks start, as the family does in each
 * subrun: the shared input tmpa.common written in 1 KiB blocks and fsynced, the tree's directory
 * opened, and sync(2). re-aim's system("sync") inside the jobs: sync=none skips it, sync=syscall
 * calls sync(2) (fsmeter's sync=shell forks /bin/sh -c sync, a program start per sync, which no
 * bare loop makes). Each task is a process forked before the clock starts, as fsmeter's task
 * program is a process of its own, and the tasks are released together.
 *
 * usage: mix dir=D tasks=N [jobs_per_task=100 file_kib=10 pool_kib=1024 sync=none|syscall seed=42]
 * Prints the phase `subruns` (its operations are the jobs of all tasks; jobs per minute is
 * operations / seconds x 60). */
#include "bare.h"
#include <sys/mman.h>
#include <sys/wait.h>

#define BLOCK 1024
#define MFILES 75
#define STATS 57
#define CREATES 43
#define ENTRIES 40
#define SPAN 32768

/* re-aim's workfile.disk, in its order. */
enum job {
    DISK_RR, DISK_BRR, DISK_DIO_RR, DISK_RW, DISK_BRW, DISK_DIO_RW, SYNC_DISK_RW, DISK_RD, DISK_BRD, DISK_DIO_RD,
    DISK_WRT, DISK_BWRT, DISK_DIO_WRT, SYNC_DISK_WRT, DISK_CP, DISK_BCP, DISK_DIO_CP, SYNC_DISK_CP,
    SYNC_DISK_UPDATE, DISK_SRC, NJOBS
};

static const char *LEAF[7] = {"bin", "usr/guest", "usr/spool/mail/in", "usr/src/cmd/ls/old",
                              "usr/proj/tools/pack/v2/src", "usr/doc/man/man1", "usr/local/lib/term/tab/x/y"};

static struct {
    char root[1024], fakeh[1100];
    u64 file_kib, seed, jobs_per_task;
    int tasks, sync, root_fd;
    char stat_names[STATS][64], creat_names[CREATES][64];
} cfg;

/* ---- re-aim's draws (the engine's order::Rng: SplitMix64) -------------------------------------- */

struct rng {
    u64 x;
};

static u64 splitmix(struct rng *r) {
    r->x += 0x9E3779B97F4A7C15ull;
    u64 z = r->x;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static u64 task_seed(u64 seed, int tasks, int task) {
    struct rng r = {seed ^ ((u64)tasks << 32) ^ ((u64)task * 0xA24BAED4963EE407ull)};
    return splitmix(&r);
}

static void drop(int *ids, u32 *counts, int *n, int pos) {
    memmove(&ids[pos], &ids[pos + 1], (size_t)(*n - 1 - pos) * sizeof *ids);
    memmove(&counts[pos], &counts[pos + 1], (size_t)(*n - 1 - pos) * sizeof *counts);
    (*n)--;
}

/* The engine's per_task_counts and task_order, for equal weights over the disk jobs. */
static int task_order(struct rng *r, int *out) {
    u32 counts[NJOBS];
    int ids[NJOBS], n = 0, total = 0, got = 0, pos = 0;
    double load = (double)cfg.jobs_per_task / NJOBS;
    for (int j = 0; j < NJOBS; j++) {
        u32 c = (u32)load;
        double frac = load - c;
        if (frac >= 0.5)
            c++;
        else if (frac != 0.0 && c == 0)
            c = 1;
        if (c > 0) {
            ids[n] = j;
            counts[n++] = c;
            total += (int)c;
        }
    }
    while (got < total) {
        pos = (int)((pos + splitmix(r) % (u64)n) % (u64)n);
        if (counts[pos] == 0) {
            drop(ids, counts, &n, pos);
            pos = 0;
            continue;
        }
        counts[pos]--;
        out[got++] = ids[pos];
        if (counts[pos] == 0) {
            drop(ids, counts, &n, pos);
            pos = 0;
        }
    }
    return total;
}

/* ---- one task ---------------------------------------------------------------------------------- */

struct task {
    int index;
    u64 counter;
    struct rng rng;
    char path[1200], common[1100];
    char *buf;
};

/* dir/<prefix><task as 5 digits><counter as 5 digits>: re-aim's unique temporary names. */
static const char *temp(struct task *t, const char *prefix) {
    t->counter++;
    snprintf(t->path, sizeof t->path, "%s/%s%05llu%05llu", cfg.root, prefix,
             (unsigned long long)(t->index % 100000), (unsigned long long)(t->counter % 100000));
    return t->path;
}

static void do_sync(void) {
    if (cfg.sync)
        sync();
}

enum access { SEQ, RANDOM, RANDOM_BYTE };

static void blocks(struct task *t, int fd, u64 count, u64 span, enum access a, int write) {
    for (u64 i = 0; i < count; i++) {
        if (a != SEQ) {
            u64 r = splitmix(&t->rng) % SPAN;
            u64 bytes = span * BLOCK;
            u64 blk = a == RANDOM_BYTE ? (r % (bytes ? bytes : 1)) / BLOCK : r % (span ? span : 1);
            CHECK(sc_lseek(fd, (off_t)(blk * BLOCK), SEEK_SET) >= 0, "lseek");
        }
        long got = write ? sc_write(fd, t->buf, BLOCK) : sc_read(fd, t->buf, BLOCK);
        CHECK(got == BLOCK, "%s %s", write ? "write" : "read", t->path);
    }
}

static void fill_then(struct task *t, const char *prefix, u64 n, enum access a, int write, int direct, int between,
                      int after) {
    const char *p = temp(t, prefix);
    int fd = sc_creat(p, 0777);
    CHECK(fd >= 0, "creat %s", p);
    blocks(t, fd, n, n, SEQ, 1);
    sc_close(fd);
    if (between)
        do_sync();
    fd = sc_open(t->path, (write ? O_WRONLY : O_RDONLY) | (direct ? O_DIRECT : 0) | O_NOFOLLOW, 0);
    CHECK(fd >= 0, "open %s", t->path);
    blocks(t, fd, n, n, a, write);
    sc_close(fd);
    sc_unlink(t->path);
    if (after)
        do_sync();
}

static void sync_random_write(struct task *t, u64 n) {
    int fd = sc_open(temp(t, "tmpb."), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0777);
    CHECK(fd >= 0, "open %s", t->path);
    blocks(t, fd, n, n, SEQ, 1);
    sc_close(fd);
    fd = sc_open(t->path, O_WRONLY | O_SYNC | O_NOFOLLOW, 0);
    CHECK(fd >= 0, "open %s", t->path);
    blocks(t, fd, n, n, RANDOM, 1);
    sc_close(fd);
    sc_unlink(t->path);
}

static void sync_update(struct task *t, u64 n) {
    int fd = sc_open(temp(t, "tmpb."), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0777);
    CHECK(fd >= 0, "open %s", t->path);
    blocks(t, fd, n, n, SEQ, 1);
    sc_close(fd);
    fd = sc_open(t->path, O_RDWR | O_SYNC | O_NOFOLLOW, 0);
    CHECK(fd >= 0, "open %s", t->path);
    for (u64 i = 0; i < n / 2; i++) {
        blocks(t, fd, 1, n, RANDOM, 0);
        blocks(t, fd, 1, n, SEQ, 1);
    }
    sc_close(fd);
    sc_unlink(t->path);
}

static void seq_write(struct task *t, u64 n, int flags, int syncs) {
    int fd = sc_open(temp(t, flags == O_DIRECT ? "tmpc." : "tmpb."), O_WRONLY | O_CREAT | O_TRUNC | flags | O_NOFOLLOW, 0777);
    CHECK(fd >= 0, "open %s", t->path);
    if (syncs)
        do_sync();
    blocks(t, fd, n, n, SEQ, 1);
    sc_unlink(t->path);
    sc_close(fd);
    if (syncs)
        do_sync();
}

static void read_common(struct task *t, u64 n, int flags, int after) {
    int fd = sc_open(t->common, O_RDONLY | flags | O_NOFOLLOW, 0);
    CHECK(fd >= 0, "open %s", t->common);
    blocks(t, fd, n, n, SEQ, 0);
    sc_close(fd);
    if (after)
        do_sync();
}

static void copy(struct task *t, u64 n, int src_flags, int dst_flags, int syncs) {
    if (syncs && dst_flags == 0)
        do_sync();
    int src = sc_open(t->common, O_RDONLY | src_flags | O_NOFOLLOW, 0);
    CHECK(src >= 0, "open %s", t->common);
    int trunc = dst_flags == O_DIRECT ? 0 : O_TRUNC;
    int dst = sc_open(temp(t, "tmpb."), O_WRONLY | O_CREAT | trunc | dst_flags | O_NOFOLLOW, 0777);
    CHECK(dst >= 0, "open %s", t->path);
    if (syncs)
        do_sync();
    for (u64 i = 0; i < n; i++) {
        CHECK(sc_read(src, t->buf, BLOCK) == BLOCK, "read %s", t->common);
        CHECK(sc_write(dst, t->buf, BLOCK) == BLOCK, "write %s", t->path);
    }
    sc_unlink(t->path);
    sc_close(src);
    sc_close(dst);
    if (syncs)
        do_sync();
}

static void disk_src(struct task *t) {
    int lf = sc_openat(cfg.root_fd, "dirlist", O_RDONLY | O_NOFOLLOW, 0);
    CHECK(lf >= 0, "open dirlist");
    while (sc_read(lf, t->buf, 4096) > 0)
        ;
    sc_close(lf);
    unsigned char slots[2][MFILES];
    for (int i = 0; i < MFILES; i++) {
        slots[0][i] = i < STATS ? (unsigned char)i : 255;
        slots[1][i] = i < CREATES ? (unsigned char)i : 255;
    }
    for (int s = 0; s < 2; s++)
        for (int pass = 0; pass < 5; pass++)
            for (int i = 0; i < MFILES; i++) {
                int j = (int)(splitmix(&t->rng) % MFILES);
                unsigned char x = slots[s][i];
                slots[s][i] = slots[s][j];
                slots[s][j] = x;
            }
    char name[96];
    for (int i = 0; i < MFILES; i++) {
        if (slots[0][i] != 255) {
            struct stat st;
            CHECK(sc_fstatat(cfg.root_fd, cfg.stat_names[slots[0][i]], &st, 0) == 0, "stat");
        }
        if (slots[1][i] != 255) {
            snprintf(name, sizeof name, "%s%05d", cfg.creat_names[slots[1][i]], t->index % 100000);
            int fd = sc_openat(cfg.root_fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0777);
            CHECK(fd >= 0, "creat %s", name);
            sc_close(fd);
            CHECK(sc_unlinkat(cfg.root_fd, name, 0) == 0, "unlink %s", name);
        }
    }
}

static void run_job(struct task *t, int id) {
    u64 n = cfg.file_kib, half = cfg.file_kib / 2;
    switch (id) {
    case DISK_RR: fill_then(t, "tmpb.", n, RANDOM, 0, 0, 1, 1); break;
    case DISK_RW: fill_then(t, "tmpb.", n, RANDOM, 1, 0, 1, 1); break;
    case DISK_RD: fill_then(t, "tmpf.", n, SEQ, 0, 0, 1, 1); break;
    case DISK_BRR: fill_then(t, "tmpc.", n, RANDOM, 0, 0, 0, 0); break;
    case DISK_BRW: fill_then(t, "tmpc.", n, RANDOM, 1, 0, 0, 0); break;
    case DISK_DIO_RR: fill_then(t, "tmpe.", n, RANDOM_BYTE, 0, 1, 1, 1); break;
    case DISK_DIO_RW: fill_then(t, "tmpb.", n, RANDOM, 1, 1, 1, 1); break;
    case SYNC_DISK_RW: sync_random_write(t, half); break;
    case SYNC_DISK_UPDATE: sync_update(t, n); break;
    case DISK_WRT: seq_write(t, n, 0, 1); break;
    case DISK_BWRT: seq_write(t, n, 0, 0); break;
    case SYNC_DISK_WRT: seq_write(t, half, O_SYNC, 0); break;
    case DISK_DIO_WRT: seq_write(t, n, O_DIRECT, 1); break;
    case DISK_BRD: read_common(t, n, 0, 0); break;
    case DISK_DIO_RD: read_common(t, n, O_DIRECT, 1); break;
    case DISK_CP: copy(t, n, 0, 0, 1); break;
    case DISK_BCP: copy(t, n, 0, 0, 0); break;
    case SYNC_DISK_CP: copy(t, half, 0, O_SYNC, 0); break;
    case DISK_DIO_CP: copy(t, n, O_DIRECT, O_DIRECT, 1); break;
    case DISK_SRC: disk_src(t); break;
    }
}

/* ---- the tree and the subrun ------------------------------------------------------------------- */

static void make_tree(void) {
    char p[1400], q[1400], list[65536];
    size_t len = 0;
    snprintf(p, sizeof p, "%s/dirlist", cfg.fakeh);
    int k = 0;
    const char *fixed[8] = {"fake00", "bin", "usr", "usr/spool", "usr/src/cmd", "usr/proj/tools", "usr/doc/man",
                            "usr/local/lib/term"};
    for (int i = 0; i < 8; i++)
        snprintf(cfg.stat_names[k++], 64, "%s", fixed[i]);
    int c = 0;
    for (int d = 0; d < 7; d++) {
        for (int i = 0; i < 7; i++)
            snprintf(cfg.stat_names[k++], 64, "%s/f%02d", LEAF[d], (i * 5 + d) % ENTRIES);
        for (int i = 0; i < 6; i++)
            snprintf(cfg.creat_names[c++], 64, "%s/new%d.", LEAF[d], i);
    }
    snprintf(cfg.creat_names[c++], 64, "new0.");
    if (access(p, F_OK) == 0)
        return;
    CHECK(sc_mkdir(cfg.fakeh, 0777) == 0 || errno == EEXIST, "mkdir %s", cfg.fakeh);
    snprintf(q, sizeof q, "%s/fake00", cfg.fakeh);
    int fd = sc_open(q, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    CHECK(fd >= 0, "create %s", q);
    sc_close(fd);
    for (int d = 0; d < 7; d++) {
        /* mkdir -p */
        snprintf(p, sizeof p, "%s/%s", cfg.fakeh, LEAF[d]);
        for (char *s = p + strlen(cfg.fakeh) + 1; *s; s++)
            if (*s == '/') {
                *s = 0;
                CHECK(sc_mkdir(p, 0777) == 0 || errno == EEXIST, "mkdir %s", p);
                *s = '/';
            }
        CHECK(sc_mkdir(p, 0777) == 0 || errno == EEXIST, "mkdir %s", p);
        for (int i = 0; i < ENTRIES; i++) {
            char f[1500];
            snprintf(f, sizeof f, "%s/f%02d", p, i);
            CHECK(link(q, f) == 0 || errno == EEXIST, "link %s", f);
            len += (size_t)snprintf(list + len, sizeof list - len, "%s/f%02d\n", LEAF[d], i);
        }
    }
    for (int i = 0; i < STATS; i++)
        len += (size_t)snprintf(list + len, sizeof list - len, "s %s\n", cfg.stat_names[i]);
    for (int i = 0; i < CREATES; i++)
        len += (size_t)snprintf(list + len, sizeof list - len, "c %s\n", cfg.creat_names[i]);
    snprintf(p, sizeof p, "%s/dirlist", cfg.fakeh);
    fd = sc_open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    CHECK(fd >= 0, "create %s", p);
    write_all(fd, list, len, p);
    sc_close(fd);
}

/* What each task leaves in the shared mapping. */
struct slot {
    u64 start_ns, end_ns, jobs;
};

int main(int argc, char **argv) {
    args_init(argc, argv, "dir=D tasks=N [jobs_per_task=100 file_kib=10 pool_kib=1024 sync=none|syscall seed=42]");
    snprintf(cfg.root, sizeof cfg.root, "%s/mix", arg_str("dir", "."));
    snprintf(cfg.fakeh, sizeof cfg.fakeh, "%s/fakeh", cfg.root);
    cfg.tasks = (int)arg_u64("tasks", 1);
    cfg.jobs_per_task = arg_u64("jobs_per_task", 100);
    cfg.file_kib = arg_u64("file_kib", 10) + arg_u64("pool_kib", 1024) / (u64)(cfg.tasks > 0 ? cfg.tasks : 1);
    cfg.seed = arg_u64("seed", 42);
    cfg.sync = strcmp(arg_str("sync", "none"), "syscall") == 0;
    errno = 0;
    CHECK(cfg.tasks >= 1 && cfg.file_kib > 0, "tasks >= 1 and a file size > 0");
    CHECK(sc_mkdir(cfg.root, 0777) == 0 || errno == EEXIST, "mkdir %s", cfg.root);
    make_tree(); /* the family's prepare phase */

    phase_begin("subruns");
    /* tmpa.common: file_kib blocks of re-aim's printable pattern, then fsync. */
    char *block = buffer(4096, 0);
    for (int j = 0; j < 4096; j++)
        block[j] = (char)(' ' + j % 95);
    char common[1100];
    snprintf(common, sizeof common, "%s/tmpa.common", cfg.root);
    int fd = sc_open(common, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0666);
    CHECK(fd >= 0, "create %s", common);
    for (u64 i = 0; i < cfg.file_kib; i++)
        write_all(fd, block, BLOCK, common);
    CHECK(sc_fsync(fd) == 0, "fsync %s", common);
    sc_close(fd);
    cfg.root_fd = sc_open(cfg.fakeh, O_RDONLY | O_CLOEXEC, 0);
    CHECK(cfg.root_fd >= 0, "open %s", cfg.fakeh);
    sync();

    int n = cfg.tasks, go[2];
    struct slot *slots = mmap(NULL, (size_t)n * sizeof *slots, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(slots != MAP_FAILED, "mmap");
    CHECK(pipe(go) == 0, "pipe");
    pid_t *pids = calloc((size_t)n, sizeof *pids);
    for (int i = 0; i < n; i++) {
        struct task t = {.index = i, .rng = {task_seed(cfg.seed ^ 0x5EED, n, i)}};
        snprintf(t.common, sizeof t.common, "%s", common);
        t.buf = buffer(4096, 0);
        memcpy(t.buf, block, 4096);
        int order[4096];
        struct rng orng = {task_seed(cfg.seed, n, i)};
        CHECK(cfg.jobs_per_task < 4000, "jobs_per_task must be below 4000");
        int jobs = task_order(&orng, order);
        pids[i] = fork();
        CHECK(pids[i] >= 0, "fork");
        if (pids[i] == 0) {
            char c;
            sc_close(go[1]);
            CHECK(sc_read(go[0], &c, 1) == 0, "wait for the start"); /* the parent closes: all start */
            slots[i].start_ns = now_ns();
            for (int j = 0; j < jobs; j++)
                run_job(&t, order[j]);
            slots[i].jobs = (u64)jobs;
            slots[i].end_ns = now_ns();
            _exit(0);
        }
        free(t.buf);
    }
    sc_close(go[0]);
    u64 t0 = now_ns();
    sc_close(go[1]);
    int failed = 0;
    for (int i = 0; i < n; i++) {
        int st;
        CHECK(waitpid(pids[i], &st, 0) == pids[i], "waitpid");
        failed |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
    }
    errno = 0;
    CHECK(!failed, "a task failed");
    u64 end = t0, jobs = 0;
    for (int i = 0; i < n; i++) {
        end = slots[i].end_ns > end ? slots[i].end_ns : end;
        jobs += slots[i].jobs;
    }
    sc_close(cfg.root_fd);
    phase_end("subruns", jobs, 0, end - t0);
    return 0;
}
