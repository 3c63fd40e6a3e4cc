/* fileset: PostMark: create a pool of files (open, write in write_block pieces, close), then
 * transactions (each a read or an append of a random live file, then a create or a delete), then
 * delete what is left; each thread with its own pool, as fsmeter's fileset family in postmark mode.
 *
 * The calls of that family, decided by the same MT19937 (PostMark's 1999 generator, seeded per
 * thread as the engine seeds it), so both make the same files of the same sizes in the same
 * order: openat on the directory's descriptor (O_NOFOLLOW|O_CLOEXEC, mode 0644), writes and reads in
 * write_block and read_block pieces, with buffering through a stdio-like buffer of the
 * directory's st_blksize as the engine sizes it (glibc takes st_blksize up to 8 KiB: the same on
 * tmpfs and ext4, whose st_blksize is 4 KiB; the engine makes no fstat per file), unlinkat.
 *
 * usage: fileset dir=D threads=N [files=5000 transactions=20000 size_low=500 size_high=10000
 *                read_block=512 write_block=512 bias_read=5 bias_create=5 buffering=1
 *                subdirectories=0 seed=42]
 * Prints the phases create, transactions (its operations are the transactions) and delete. */
#include "bare.h"

/* ---- PostMark's generator (the engine's Mt1999) ----------------------------------------------- */

struct mt {
    u32 mt[624];
    int mti;
};

static void mt_seed(struct mt *r, u32 seed) {
    u32 s = seed;
    for (int i = 0; i < 624; i++) {
        r->mt[i] = s & 0xffff0000u;
        s = s * 69069u + 1;
        r->mt[i] |= (s & 0xffff0000u) >> 16;
        s = s * 69069u + 1;
    }
    r->mti = 624;
}

static inline u32 mt_next(struct mt *r) {
    static const u32 mag[2] = {0, 0x9908b0dfu};
    u32 *mt = r->mt, y;
    if (r->mti >= 624) {
        int kk;
        for (kk = 0; kk < 624 - 397; kk++) {
            y = (mt[kk] & 0x80000000u) | (mt[kk + 1] & 0x7fffffffu);
            mt[kk] = mt[kk + 397] ^ (y >> 1) ^ mag[y & 1];
        }
        for (; kk < 623; kk++) {
            y = (mt[kk] & 0x80000000u) | (mt[kk + 1] & 0x7fffffffu);
            mt[kk] = mt[kk + 397 - 624] ^ (y >> 1) ^ mag[y & 1];
        }
        y = (mt[623] & 0x80000000u) | (mt[0] & 0x7fffffffu);
        mt[623] = mt[396] ^ (y >> 1) ^ mag[y & 1];
        r->mti = 0;
    }
    y = mt[r->mti++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
}

static inline u32 rnd(struct mt *r, u32 x) { return x > 0 ? mt_next(r) % x : 0; }

/* ---- the pool --------------------------------------------------------------------------------- */

static struct {
    const char *dir;
    u32 low, high, subdirs;
    u64 files, transactions, seed;
    size_t rbs, wbs, sbuf_len;
    int bias_read, bias_create, buffering, nthreads;
    int dfd;
} cfg;

struct slot {
    u32 size, num, dir;
};

struct worker {
    int tid;
    u64 share;
    struct mt rng;
    struct slot *table;
    size_t n, allocated, min_free;
    u64 live;
    u32 num;
    char *source, *read_buf, *sbuf;
    size_t sfill;
    char path[64];
};

static u32 thread_seed(u64 seed, int tid) {
    if (tid == 0)
        return (u32)seed;
    u64 z = seed ^ ((u64)tid * 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (u32)(z ^ (z >> 31));
}

static u64 share_of(u64 total, int n, int tid) { return total / (u64)n + ((u64)tid < total % (u64)n); }

static void worker_reset(struct worker *w, int tid) {
    w->tid = tid;
    w->share = share_of(cfg.files, cfg.nthreads, tid);
    mt_seed(&w->rng, thread_seed(cfg.seed, tid));
    size_t n = (size_t)cfg.high << 1;
    w->source = malloc(n);
    for (size_t i = 0; i < n; i++)
        w->source[i] = (char)(32 + rnd(&w->rng, 95));
    w->read_buf = calloc(1, cfg.rbs);
    w->sbuf = calloc(1, cfg.sbuf_len);
    w->n = (size_t)w->share << 1;
    w->table = calloc(w->n ? w->n : 1, sizeof *w->table);
}

static int find_free(struct worker *w, size_t *out) {
    if (w->allocated < w->n && w->table[w->allocated].size == 0) {
        *out = w->allocated++;
        return 1;
    }
    for (size_t i = w->min_free; i < w->n; i++)
        if (w->table[i].size == 0) {
            w->min_free = w->allocated = i + 1;
            *out = i;
            return 1;
        }
    w->min_free = w->n;
    return 0;
}

static size_t find_used(struct worker *w) {
    for (;;) {
        size_t i = rnd(&w->rng, (u32)w->n);
        if (w->table[i].size)
            return i;
    }
}

static void build_name(struct worker *w, struct slot s) {
    u64 name = (u64)(s.num - 1) * (u64)cfg.nthreads + (u64)w->tid + 1;
    if (cfg.subdirs > 1)
        sprintf(w->path, "s%u/%llu", s.dir % cfg.subdirs, (unsigned long long)name);
    else
        sprintf(w->path, "%llu", (unsigned long long)name);
}

static int open_slot(struct worker *w, struct slot s, int flags) {
    build_name(w, s);
    int fd = sc_openat(cfg.dfd, w->path, flags | O_NOFOLLOW | O_CLOEXEC, 0644);
    CHECK(fd >= 0, "open %s/%s", cfg.dir, w->path);
    return fd;
}

/* One write_block piece, through the stdio-like buffer when buffering. */
static void out(struct worker *w, int fd, size_t off, size_t len) {
    if (!cfg.buffering) {
        write_all(fd, w->source + off, len, w->path);
        return;
    }
    size_t cap = cfg.sbuf_len, n = cap - w->sfill < len ? cap - w->sfill : len;
    memcpy(w->sbuf + w->sfill, w->source + off, n);
    w->sfill += n;
    size_t rest = len - n;
    if (rest > 0) {
        write_all(fd, w->sbuf, w->sfill, w->path);
        w->sfill = 0;
        size_t direct = rest - rest % cap, s = off + n;
        if (direct > 0)
            write_all(fd, w->source + s, direct, w->path);
        size_t tail = rest - direct;
        memcpy(w->sbuf, w->source + s + direct, tail);
        w->sfill = tail;
    }
}

static void write_blocks(struct worker *w, int fd, size_t size) {
    size_t off = 0, i = size;
    for (; i >= cfg.wbs; i -= cfg.wbs, off += cfg.wbs)
        out(w, fd, off, cfg.wbs);
    if (i > 0)
        out(w, fd, off, i);
    if (cfg.buffering && w->sfill > 0)
        write_all(fd, w->sbuf, w->sfill, w->path);
    w->sfill = 0;
    CHECK(sc_close(fd) == 0, "close %s", w->path);
}

static long read_some(int fd, char *b, size_t n) {
    for (;;) {
        long r = sc_read(fd, b, n);
        if (r >= 0)
            return r;
        CHECK(errno == EINTR, "read");
    }
}

/* fread of `want` bytes through the stdio-like buffer (glibc's rule: a request of at least a
 * whole buffer goes straight to read(2) in multiples of the buffer). */
struct rstream {
    size_t pos, end;
};

static void sread(struct worker *w, struct rstream *s, int fd, size_t want) {
    size_t cap = cfg.sbuf_len;
    while (want > 0) {
        size_t have = s->end - s->pos;
        if (want <= have) {
            memcpy(w->read_buf, w->sbuf + s->pos, want);
            s->pos += want;
            return;
        }
        if (have > 0) {
            memcpy(w->read_buf, w->sbuf + s->pos, have);
            want -= have;
            s->pos = s->end;
        }
        if (want < cap) {
            long n = read_some(fd, w->sbuf, cap);
            if (n == 0)
                return;
            s->pos = 0;
            s->end = (size_t)n;
        } else {
            size_t count = cap >= 128 ? want - want % cap : want;
            long n = read_some(fd, w->read_buf, count);
            if (n == 0)
                return;
            want -= (size_t)n;
        }
    }
}

static void read_blocks(struct worker *w, int fd, size_t size) {
    size_t i = size;
    if (!cfg.buffering) {
        for (; i >= cfg.rbs; i -= cfg.rbs)
            read_some(fd, w->read_buf, cfg.rbs);
        if (i > 0)
            read_some(fd, w->read_buf, i);
        return;
    }
    struct rstream s = {0, 0};
    for (; i >= cfg.rbs; i -= cfg.rbs)
        sread(w, &s, fd, cfg.rbs);
    if (i > 0)
        sread(w, &s, fd, i);
}

static int create(struct worker *w, u64 *bytes) {
    size_t i;
    if (!find_free(w, &i))
        return 0;
    u32 sub = cfg.subdirs > 1 ? rnd(&w->rng, cfg.subdirs) : 0;
    w->num++;
    u32 size = cfg.low + rnd(&w->rng, cfg.high - cfg.low);
    struct slot s = {size, w->num, sub};
    w->table[i] = s;
    w->live++;
    int flags = cfg.buffering ? O_WRONLY | O_CREAT | O_TRUNC : O_RDWR | O_CREAT;
    write_blocks(w, open_slot(w, s, flags), size);
    *bytes += size;
    return 1;
}

static int delete(struct worker *w, size_t i) {
    struct slot s = w->table[i];
    if (s.size == 0)
        return 0;
    build_name(w, s);
    CHECK(sc_unlinkat(cfg.dfd, w->path, 0) == 0, "unlink %s/%s", cfg.dir, w->path);
    w->table[i].size = 0;
    w->live--;
    if (i < w->min_free)
        w->min_free = i;
    return 1;
}

static void read_file(struct worker *w, size_t i, u64 *bytes) {
    struct slot s = w->table[i];
    int fd = open_slot(w, s, O_RDONLY);
    read_blocks(w, fd, s.size);
    sc_close(fd);
    *bytes += s.size;
}

static int append(struct worker *w, size_t i, u64 *bytes) {
    struct slot s = w->table[i];
    if (s.size >= cfg.high)
        return 0;
    int flags = cfg.buffering ? O_WRONLY | O_CREAT | O_APPEND : O_RDWR | O_APPEND;
    int fd = open_slot(w, s, flags);
    u32 block = rnd(&w->rng, cfg.high - s.size) + 1;
    write_blocks(w, fd, block);
    w->table[i].size += block;
    *bytes += block;
    return 1;
}

/* ---- phases ----------------------------------------------------------------------------------- */

static void create_thread(struct share *sh, u64 start) {
    (void)start;
    struct worker *w = sh->arg;
    for (u64 k = 0; k < w->share; k++)
        sh->ops += (u64)create(w, &sh->bytes);
}

static void transactions_thread(struct share *sh, u64 start) {
    (void)start;
    struct worker *w = sh->arg;
    u64 quota = share_of(cfg.transactions, cfg.nthreads, sh->tid), done = 0;
    while (done < quota && w->live > 0) {
        if (cfg.bias_read != -1) {
            int read = (int)rnd(&w->rng, 10) < cfg.bias_read;
            size_t slot = find_used(w);
            if (read)
                read_file(w, slot, &sh->bytes);
            else
                append(w, slot, &sh->bytes);
        }
        if (cfg.bias_create != -1) {
            if ((int)rnd(&w->rng, 10) < cfg.bias_create)
                create(w, &sh->bytes);
            else if (w->live > 0)
                delete(w, find_used(w));
        }
        done++;
    }
    sh->ops = done;
}

static void delete_thread(struct share *sh, u64 start) {
    (void)start;
    struct worker *w = sh->arg;
    for (size_t i = 0; i < w->n; i++)
        sh->ops += (u64)delete(w, i);
}

/* A thread's copy of the directory's descriptor in its own table, closed as fsmeter's worker closes
 * the locations its table kept. */
static void close_dir_copy(struct share *sh) {
    (void)sh;
    sc_close(cfg.dfd);
}

static void open_dir(void) {
    cfg.dfd = sc_open(cfg.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    CHECK(cfg.dfd >= 0, "open directory %s", cfg.dir);
}

int main(int argc, char **argv) {
    args_init(argc, argv,
              "dir=D threads=N [files=5000 transactions=20000 size_low=500 size_high=10000 read_block=512 "
              "write_block=512 bias_read=5 bias_create=5 buffering=1 subdirectories=0 seed=42]");
    cfg.dir = arg_str("dir", ".");
    cfg.files = arg_u64("files", 5000);
    cfg.transactions = arg_u64("transactions", 20000);
    cfg.low = (u32)arg_u64("size_low", 500);
    cfg.high = (u32)arg_u64("size_high", 10000);
    cfg.rbs = arg_u64("read_block", 512);
    cfg.wbs = arg_u64("write_block", 512);
    cfg.bias_read = (int)arg_f64("bias_read", 5);
    cfg.bias_create = (int)arg_f64("bias_create", 5);
    cfg.buffering = (int)arg_u64("buffering", 1);
    cfg.subdirs = (u32)arg_u64("subdirectories", 0);
    cfg.seed = arg_u64("seed", 42);
    cfg.nthreads = (int)arg_u64("threads", 1);
    int n = cfg.nthreads;
    errno = 0;
    CHECK(n >= 1 && cfg.high >= cfg.low && cfg.rbs > 0 && cfg.wbs > 0, "bad parameters");
    struct worker *w = calloc((size_t)n, sizeof *w);
    struct share *sh = calloc((size_t)n, sizeof *sh);

    phase_begin("create");
    open_dir();
    struct stat st;
    cfg.sbuf_len = sc_fstat(cfg.dfd, &st) == 0 && st.st_blksize > 0 ? (size_t)st.st_blksize : 4096;
    if (cfg.sbuf_len < 512)
        cfg.sbuf_len = 512;
    if (cfg.sbuf_len > 1 << 20)
        cfg.sbuf_len = 1 << 20;
    for (u32 k = 0; cfg.subdirs > 1 && k < cfg.subdirs; k++) {
        char name[32];
        sprintf(name, "s%u", k);
        CHECK(sc_mkdirat(cfg.dfd, name, 0700) == 0 || errno == EEXIST, "mkdir %s/%s", cfg.dir, name);
    }
    for (int i = 0; i < n; i++) {
        worker_reset(&w[i], i);
        sh[i].arg = &w[i];
    }
    run_threads_around(n, own_table_setup, create_thread, close_dir_copy, sh);
    sc_close(cfg.dfd);
    phase_total("create", n, sh);

    phase_begin("transactions");
    open_dir();
    memset(sh, 0, (size_t)n * sizeof *sh);
    for (int i = 0; i < n; i++)
        sh[i].arg = &w[i];
    run_threads_around(n, own_table_setup, transactions_thread, close_dir_copy, sh);
    sc_close(cfg.dfd);
    phase_total("transactions", n, sh);

    phase_begin("delete");
    open_dir();
    memset(sh, 0, (size_t)n * sizeof *sh);
    for (int i = 0; i < n; i++)
        sh[i].arg = &w[i];
    run_threads_around(n, own_table_setup, delete_thread, close_dir_copy, sh);
    for (u32 k = 0; cfg.subdirs > 1 && k < cfg.subdirs; k++) {
        char name[32];
        sprintf(name, "s%u", k);
        CHECK(sc_unlinkat(cfg.dfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT, "rmdir %s/%s", cfg.dir, name);
    }
    sc_close(cfg.dfd);
    phase_total("delete", n, sh);
    return 0;
}
