/* access: pread/pwrite of one size at random aligned offsets or in sequence (psync), or reads and
 * writes through io_uring at a queue depth with registered files and buffers, on a laid-out file.
 *
 * The calls fsmeter's access family makes in its run phase: each thread opens the file (O_RDONLY
 * for reads, O_RDWR for writes, O_DIRECT when asked), then one pread or pwrite per request; with
 * io_uring a ring of depth rounded up to a power of two (at least 2), set up with the engine's
 * flags (cooperative task running, deferred to its single issuer), the file and the slots'
 * buffers registered, READ_FIXED/WRITE_FIXED requests, and io_uring_enter to submit what was
 * queued and wait for one completion, each completed slot queued again at once. Random offsets:
 * uniform over the file's request slots, aligned to `align`, from xoshiro256++ seeded per thread
 * as the engine seeds it. Sequential: each thread walks its own share of the file, wrapping.
 * Nothing per request but the call: no clock, no histogram.
 *
 * usage: access dir=D file=NAME file_size=BYTES size=BYTES rw=read|write random=0|1 align=BYTES
 *               threads=N seconds=S warmup=S [engine=psync|io_uring depth=N direct=0|1 seed=N]
 * The file must exist and hold file_size bytes. Prints the phase `run`. */
#include "bare.h"
#include <linux/io_uring.h>
#include <sys/mman.h>
#include <sys/uio.h>

static struct {
    char path[4096];
    u64 file_size, size, align, seed;
    int write, random, uring, depth, direct;
    u64 warmup_ns, run_ns;
} cfg;

/* Offsets of one thread: random slots, or its own sequential share. */
struct gen {
    struct xoshiro rng;
    u64 slots, lo, hi, pos;
};

static void gen_init(struct gen *g, int tid, int n) {
    u64 z = cfg.seed ^ ((u64)tid * 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    xoshiro_seed(&g->rng, z ^ (z >> 31));
    g->slots = (cfg.file_size - cfg.size) / cfg.align + 1;
    u64 share = cfg.file_size / (u64)n / cfg.align * cfg.align;
    if (share >= cfg.size && share > 0) {
        g->lo = (u64)tid * share;
        g->hi = tid + 1 == n ? cfg.file_size : g->lo + share;
    } else {
        g->lo = 0;
        g->hi = cfg.file_size;
    }
    g->pos = g->lo;
}

static inline u64 gen_next(struct gen *g) {
    if (cfg.random)
        return below(xoshiro_next(&g->rng), g->slots) * cfg.align;
    if (g->pos + cfg.size > g->hi)
        g->pos = g->lo;
    u64 off = g->pos;
    g->pos += cfg.size;
    return off;
}

static int open_file(void) {
    int flags = (cfg.write ? O_RDWR : O_RDONLY) | O_CLOEXEC | (cfg.direct ? O_DIRECT : 0);
    int fd = sc_open(cfg.path, flags, 0);
    CHECK(fd >= 0, "open %s", cfg.path);
    return fd;
}

/* Each thread on a table of its own, as the engine's; the first keeps the phase's descriptor, the
 * others open their own. Each closes its descriptor (or its copy) when it is done. */
static void thread_setup(struct share *sh) {
    own_fd_table();
    if (sh->tid > 0)
        *(int *)sh->arg = open_file();
}

static void thread_teardown(struct share *sh) { sc_close(*(int *)sh->arg); }

/* ---- psync ----------------------------------------------------------------------------------- */

static void psync_thread(struct share *sh, u64 start) {
    struct gen g;
    gen_init(&g, sh->tid, sh->nthreads);
    int fd = *(int *)sh->arg;
    char *buf = buffer(cfg.size, 0x5a);
    u64 measure = start + cfg.warmup_ns, deadline = measure + cfg.run_ns, ops = 0;
    int measuring = cfg.warmup_ns == 0;
    for (;;) {
        for (int i = 0; i < 64; i++) {
            u64 off = gen_next(&g);
            long r = cfg.write ? sc_pwrite(fd, buf, cfg.size, off) : sc_pread(fd, buf, cfg.size, off);
            CHECK(r == (long)cfg.size, "%s at %llu", cfg.write ? "pwrite" : "pread", (unsigned long long)off);
        }
        ops += 64;
        u64 t = now_ns();
        if (!measuring && t >= measure) {
            measuring = 1;
            ops = 0;
            measure = t; /* the measured window starts here, exactly */
        }
        if (t >= deadline)
            break;
    }
    sh->ops = ops;
    sh->bytes = ops * cfg.size;
    sh->measure_ns = measure;
}

/* ---- io_uring (no liburing: the raw interface) ----------------------------------------------- */

struct ring {
    int fd;
    unsigned *sq_tail, *sq_mask, *sq_array, *cq_head, *cq_tail, *cq_mask;
    struct io_uring_sqe *sqes;
    struct io_uring_cqe *cqes;
    unsigned entries;
};

/* The ring is set up as fsmeter's engine sets its own: completions run when the thread waits for
 * them (cooperative, deferred to the one thread that submits), or, on a kernel that refuses those
 * flags, cooperative only, then plain. */
static void ring_init(struct ring *r, unsigned entries) {
    static const unsigned tries[] = {
        IORING_SETUP_COOP_TASKRUN | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
        IORING_SETUP_COOP_TASKRUN,
        0,
    };
    struct io_uring_params p;
    r->fd = -1;
    for (unsigned t = 0; t < sizeof tries / sizeof tries[0] && r->fd < 0; t++) {
        memset(&p, 0, sizeof p);
        p.flags = tries[t];
        r->fd = (int)syscall(SYS_io_uring_setup, entries, &p);
    }
    CHECK(r->fd >= 0, "io_uring_setup");
    r->entries = p.sq_entries;
    size_t sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned);
    size_t cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
    int single = p.features & IORING_FEAT_SINGLE_MMAP;
    if (single && cq_len > sq_len)
        sq_len = cq_len;
    char *sq = mmap(NULL, sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQ_RING);
    CHECK(sq != MAP_FAILED, "mmap sq ring");
    char *cq = single ? sq
                      : mmap(NULL, cq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd,
                             IORING_OFF_CQ_RING);
    CHECK(cq != MAP_FAILED, "mmap cq ring");
    r->sqes = mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQES);
    CHECK(r->sqes != MAP_FAILED, "mmap sqes");
    r->sq_tail = (unsigned *)(sq + p.sq_off.tail);
    r->sq_mask = (unsigned *)(sq + p.sq_off.ring_mask);
    r->sq_array = (unsigned *)(sq + p.sq_off.array);
    r->cq_head = (unsigned *)(cq + p.cq_off.head);
    r->cq_tail = (unsigned *)(cq + p.cq_off.tail);
    r->cq_mask = (unsigned *)(cq + p.cq_off.ring_mask);
    r->cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
}

static inline void ring_queue(struct ring *r, int slot, u64 off) {
    unsigned tail = *r->sq_tail, i = tail & *r->sq_mask;
    struct io_uring_sqe *e = &r->sqes[i];
    memset(e, 0, sizeof *e);
    e->opcode = cfg.write ? IORING_OP_WRITE_FIXED : IORING_OP_READ_FIXED;
    e->flags = IOSQE_FIXED_FILE;
    e->fd = 0;
    e->off = off;
    e->addr = 0; /* set by the caller: the slot's buffer */
    e->len = (unsigned)cfg.size;
    e->buf_index = (unsigned short)slot;
    e->user_data = (u64)slot;
    r->sq_array[i] = i;
    __atomic_store_n(r->sq_tail, tail + 1, __ATOMIC_RELEASE);
}

static void uring_thread(struct share *sh, u64 start) {
    struct gen g;
    gen_init(&g, sh->tid, sh->nthreads);
    int fd = *(int *)sh->arg;
    int depth = cfg.depth;
    unsigned entries = 2;
    while (entries < (unsigned)depth)
        entries <<= 1;
    struct ring r;
    ring_init(&r, entries);
    CHECK(syscall(SYS_io_uring_register, r.fd, IORING_REGISTER_FILES, &fd, 1) == 0, "register files");
    struct iovec *iov = calloc((size_t)depth, sizeof *iov);
    for (int s = 0; s < depth; s++)
        iov[s] = (struct iovec){buffer(cfg.size, 0x5a), cfg.size};
    CHECK(syscall(SYS_io_uring_register, r.fd, IORING_REGISTER_BUFFERS, iov, depth) == 0, "register buffers");
    u64 measure = start + cfg.warmup_ns, deadline = measure + cfg.run_ns, ops = 0;
    int measuring = cfg.warmup_ns == 0, stopping = 0, inflight = 0;
    unsigned queued = 0;
    for (int s = 0; s < depth; s++) {
        ring_queue(&r, s, gen_next(&g));
        r.sqes[(*r.sq_tail - 1) & *r.sq_mask].addr = (u64)(uintptr_t)iov[s].iov_base;
        queued++;
        inflight++;
    }
    u64 n = 0;
    while (inflight > 0) {
        for (;;) {
            long rc = syscall(SYS_io_uring_enter, r.fd, queued, 1, IORING_ENTER_GETEVENTS, NULL, 0);
            if (rc >= 0)
                break;
            CHECK(errno == EINTR, "io_uring_enter");
        }
        queued = 0;
        unsigned head = *r.cq_head, tail = __atomic_load_n(r.cq_tail, __ATOMIC_ACQUIRE);
        for (; head != tail; head++) {
            struct io_uring_cqe *c = &r.cqes[head & *r.cq_mask];
            int slot = (int)c->user_data;
            CHECK(c->res == (int)cfg.size, "io_uring %s: result %d", cfg.write ? "write" : "read", c->res);
            ops++;
            if ((++n & 63) == 0 && !stopping) {
                u64 t = now_ns();
                if (!measuring && t >= measure) {
                    measuring = 1;
                    ops = 0;
                    measure = t;
                }
                stopping = t >= deadline;
            }
            if (stopping) {
                inflight--;
                continue;
            }
            ring_queue(&r, slot, gen_next(&g));
            r.sqes[(*r.sq_tail - 1) & *r.sq_mask].addr = (u64)(uintptr_t)iov[slot].iov_base;
            queued++;
        }
        __atomic_store_n(r.cq_head, head, __ATOMIC_RELEASE);
    }
    sh->ops = ops;
    sh->bytes = ops * cfg.size;
    sh->measure_ns = measure;
    sc_close(r.fd);
}

int main(int argc, char **argv) {
    args_init(argc, argv,
              "dir=D file=NAME file_size=BYTES size=BYTES rw=read|write random=0|1 align=BYTES threads=N "
              "seconds=S warmup=S [engine=psync|io_uring depth=N direct=0|1 seed=N]");
    snprintf(cfg.path, sizeof cfg.path, "%s/%s", arg_str("dir", "."), arg_str("file", "fsmeter.access.0"));
    cfg.file_size = arg_u64("file_size", 0);
    cfg.size = arg_u64("size", 4096);
    cfg.align = arg_u64("align", cfg.size);
    cfg.write = strcmp(arg_str("rw", "read"), "write") == 0;
    cfg.random = (int)arg_u64("random", 1);
    cfg.uring = strcmp(arg_str("engine", "psync"), "io_uring") == 0;
    cfg.depth = (int)arg_u64("depth", 1);
    cfg.direct = (int)arg_u64("direct", 0);
    cfg.seed = arg_u64("seed", 42);
    cfg.warmup_ns = (u64)(arg_f64("warmup", 0) * 1e9);
    cfg.run_ns = (u64)(arg_f64("seconds", 5) * 1e9);
    int n = (int)arg_u64("threads", 1);
    errno = 0;
    CHECK(cfg.size > 0 && cfg.align > 0 && cfg.file_size >= cfg.size, "file_size must hold at least one request");
    CHECK(n >= 1 && cfg.depth >= 1, "threads and depth must be >= 1");
    /* The engine opens the file for the phase, before the common start; its first thread uses that
     * descriptor (a copy in its own table), each other thread opens its own in its setup. */
    int *fds = calloc((size_t)n, sizeof *fds);
    struct share *sh = calloc((size_t)n, sizeof *sh);
    CHECK(fds && sh, "calloc");
    phase_begin("run");
    fds[0] = open_file();
    for (int i = 0; i < n; i++)
        sh[i].arg = &fds[i];
    run_threads_around(n, thread_setup, cfg.uring ? uring_thread : psync_thread, thread_teardown, sh);
    sc_close(fds[0]);
    phase_rate("run", n, sh);
    return 0;
}
