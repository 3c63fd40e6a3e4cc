/* iozone: iozone's nine tests on one file of one cell (file size x record size): write/rewrite,
 * read/reread, random read/write, backward read, record rewrite, stride read, fwrite/frewrite,
 * fread/freread and the random mix, each pass timed from its first record to its end.
 *
 * The calls of fsmeter's iozone family for one cell: its opens (O_CLOEXEC, mode 0640; O_DIRECT
 * with direct=1 but for the stdio tests), the fsync after each open, the priming read and lseek of
 * the read test, one pwrite or pread per record at its offset (fsmeter's stdio tests go through a
 * buffer of one record, which passes whole records straight to pwrite and pread: the same calls),
 * the random order from the same Fisher-Yates shuffle of the same xoshiro256++ draws, iozone's
 * stride walk, the mix's threads (even ones read, odd ones write, each a rotation of the shuffle),
 * the fsync and close at the end of every pass (untimed unless fsync=1 or close=1), and the
 * unlink at the end of the cell. As iozone -a, each pass first touches every 32-byte line of the
 * record buffer (its "fetch"), outside the time. Nothing per record but the call.
 *
 * usage: iozone dir=D file_size=BYTES record=BYTES [tests=0,1,2,3,4,5,6,7,8 fsync=0 close=0
 *               direct=0 stride=17 mix_threads=2 seed=42 file=iozone.tmp]
 * Prints the phase `grid` (its operations are the timed records) and a result per pass
 * (write, rewrite, read, ...: its records, bytes and seconds). */
#include "bare.h"

static struct {
    char path[4200];
    u64 file_size, rec, numrecs, stride, seed;
    int fsync, close, direct, mix_threads;
    char *buf;
    u32 *perm;
    u64 timed_records;
} cfg;

static int xopen(int flags) {
    int fd = sc_open(cfg.path, flags | O_CLOEXEC, 0640);
    CHECK(fd >= 0, "open %s", cfg.path);
    return fd;
}

static int dflag(void) { return cfg.direct ? O_DIRECT : 0; }

static void xfsync(int fd) { CHECK(sc_fsync(fd) == 0, "fsync %s", cfg.path); }

static void fetch(void) {
    volatile char acc = 0;
    for (u64 i = 0; i < cfg.rec; i += 32)
        acc += ((volatile char *)cfg.buf)[i];
    (void)acc;
}

/* The end of a pass: fsync and close inside the time when asked, the rest after. */
static u64 finish(int fd, int write) {
    (void)write;
    if (cfg.fsync)
        xfsync(fd);
    if (cfg.close) {
        CHECK(sc_close(fd) == 0, "close");
        return now_ns();
    }
    u64 end = now_ns();
    xfsync(fd);
    CHECK(sc_close(fd) == 0, "close");
    return end;
}

/* The stdio tests' end: fflush (nothing pending: whole records), fsync of writes; close. */
static u64 finish_stream(int fd, int write) {
    if (cfg.close) {
        if (cfg.fsync && write)
            xfsync(fd);
        CHECK(sc_close(fd) == 0, "close");
        return now_ns();
    }
    if (cfg.fsync && write)
        xfsync(fd);
    u64 end = now_ns();
    if (write)
        xfsync(fd);
    CHECK(sc_close(fd) == 0, "close");
    return end;
}

static void pass_end(const char *col, u64 start, u64 end) {
    cfg.timed_records += cfg.numrecs;
    phase_end(col, cfg.numrecs, cfg.numrecs * cfg.rec, end - start);
}

enum { SEQ, PERM, BACK, FIRST, STRIDE };

static u64 records(int fd, int write, int order) {
    u64 pos = 0, wrap = 0, n = cfg.numrecs, s = cfg.stride;
    fetch();
    u64 start = now_ns();
    for (u64 i = 0; i < n; i++) {
        u64 r;
        switch (order) {
        case SEQ: r = i; break;
        case PERM: r = cfg.perm[i]; break;
        case BACK: r = n - 1 - i; break;
        case FIRST: r = 0; break;
        default: /* iozone's stride walk, wrapping one record further on */
            r = pos;
            if (pos + 1 + s >= (n > 0 ? n - 1 : 0)) {
                wrap++;
                pos = n <= s ? 0 : wrap % n;
            } else {
                pos = pos + s;
            }
        }
        long got = write ? sc_pwrite(fd, cfg.buf, cfg.rec, r * cfg.rec) : sc_pread(fd, cfg.buf, cfg.rec, r * cfg.rec);
        CHECK(got == (long)cfg.rec, "%s record %llu", write ? "pwrite" : "pread", (unsigned long long)r);
    }
    return start;
}

static void test0(void) {
    int fd = xopen(O_CREAT | O_WRONLY);
    CHECK(sc_ftruncate(fd, 0) == 0, "ftruncate");
    CHECK(sc_close(fd) == 0, "close");
    sc_unlink(cfg.path);
    CHECK(sc_close(xopen(O_CREAT | O_WRONLY | O_TRUNC)) == 0, "close");
    static const char *cols[] = {"write", "rewrite"};
    for (int p = 0; p < 2; p++) {
        fd = xopen(O_RDWR | dflag());
        xfsync(fd);
        u64 start = records(fd, 1, SEQ);
        pass_end(cols[p], start, finish(fd, 1));
    }
}

static void test1(void) {
    static const char *cols[] = {"read", "reread"};
    for (int p = 0; p < 2; p++) {
        int fd = xopen(O_RDONLY | dflag());
        xfsync(fd);
        CHECK(sc_read(fd, cfg.buf, cfg.rec) == (long)cfg.rec, "read");
        CHECK(sc_lseek(fd, 0, SEEK_SET) == 0, "lseek");
        u64 start = records(fd, 0, SEQ);
        pass_end(cols[p], start, finish(fd, 0));
    }
}

static void test2(void) {
    static const char *cols[] = {"random_read", "random_write"};
    for (int p = 0; p < 2; p++) {
        int fd = xopen(O_RDWR | O_CREAT | dflag());
        u64 start = records(fd, p, PERM);
        pass_end(cols[p], start, finish(fd, p));
    }
}

static void one_pass(const char *col, int flags, int write, int order) {
    int fd = xopen(flags | dflag());
    xfsync(fd);
    u64 start = records(fd, write, order);
    pass_end(col, start, finish(fd, write));
}

static void stdio_test(int write) {
    static const char *wcols[] = {"fwrite", "frewrite"}, *rcols[] = {"fread", "freread"};
    for (int p = 0; p < 2; p++) {
        int fd = xopen(write ? O_RDWR | O_CREAT : O_RDONLY);
        xfsync(fd);
        u64 start = records(fd, write, SEQ);
        pass_end(write ? wcols[p] : rcols[p], start, finish_stream(fd, write));
    }
}

/* ---- test 8: the random mix -------------------------------------------------------------------- */

struct mixer {
    int fd;
    char *buf;
};

static void mix_thread(struct share *sh, u64 start) {
    (void)start;
    struct mixer *m = sh->arg;
    u64 n = cfg.numrecs, shift = ((u64)sh->tid * n) / (u64)sh->nthreads;
    for (u64 i = 0; i < n; i++) {
        u64 r = cfg.perm[(i + shift) % n];
        long got = sh->tid % 2 == 0 ? sc_pread(m->fd, m->buf, cfg.rec, r * cfg.rec)
                                    : sc_pwrite(m->fd, m->buf, cfg.rec, r * cfg.rec);
        CHECK(got == (long)cfg.rec, "mix record %llu", (unsigned long long)r);
    }
    if (cfg.fsync && sh->tid % 2 == 1)
        xfsync(m->fd);
    sh->ops = n;
    sh->bytes = n * cfg.rec;
}

static void test8(void) {
    int n = cfg.mix_threads;
    struct mixer *m = calloc((size_t)n, sizeof *m);
    struct share *sh = calloc((size_t)n, sizeof *sh);
    for (int t = 0; t < n; t++) {
        m[t].fd = xopen(O_RDWR | dflag());
        m[t].buf = buffer(cfg.rec, 0x33 + t);
        sh[t].arg = &m[t];
    }
    for (int t = 0; t < n; t++)
        xfsync(m[t].fd);
    run_threads(n, mix_thread, sh);
    u64 start = sh[0].measure_ns, end = 0, ops = 0, bytes = 0;
    for (int t = 0; t < n; t++) {
        end = sh[t].end_ns > end ? sh[t].end_ns : end;
        ops += sh[t].ops;
        bytes += sh[t].bytes;
    }
    for (int t = 0; t < n; t++)
        CHECK(sc_close(m[t].fd) == 0, "close");
    if (cfg.close)
        end = now_ns();
    phase_end("mix", ops, bytes, end - start);
    for (int t = 0; t < n; t++)
        free(m[t].buf);
    free(m);
    free(sh);
}

int main(int argc, char **argv) {
    args_init(argc, argv,
              "dir=D file_size=BYTES record=BYTES [tests=0,1,2,3,4,5,6,7,8 fsync=0 close=0 direct=0 stride=17 "
              "mix_threads=2 seed=42 file=iozone.tmp]");
    snprintf(cfg.path, sizeof cfg.path, "%s/%s", arg_str("dir", "."), arg_str("file", "iozone.tmp"));
    cfg.file_size = arg_u64("file_size", 64 << 20);
    cfg.rec = arg_u64("record", 4096);
    cfg.fsync = (int)arg_u64("fsync", 0);
    cfg.close = (int)arg_u64("close", 0);
    cfg.direct = (int)arg_u64("direct", 0);
    cfg.stride = arg_u64("stride", 17);
    cfg.mix_threads = (int)arg_u64("mix_threads", 2);
    cfg.seed = arg_u64("seed", 42);
    errno = 0;
    CHECK(cfg.rec > 0 && cfg.file_size >= cfg.rec && cfg.stride >= 1 && cfg.mix_threads >= 1, "bad parameters");
    cfg.numrecs = cfg.file_size / cfg.rec;
    int want[9] = {0};
    char tests[64];
    snprintf(tests, sizeof tests, "%s", arg_str("tests", "0,1,2,3,4,5,6,7,8"));
    for (char *save, *t = strtok_r(tests, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int k = atoi(t);
        CHECK(k >= 0 && k <= 8, "tests: %s is not 0..8", t);
        want[k] = 1;
    }
    /* The cell's setup, untimed: buffers, and the shuffle (xoshiro256++ from seed + cell 0). */
    cfg.buf = buffer(cfg.rec, 0x5a);
    cfg.perm = malloc(cfg.numrecs * sizeof *cfg.perm);
    struct xoshiro rng;
    xoshiro_seed(&rng, cfg.seed);
    for (u64 i = 0; i < cfg.numrecs; i++)
        cfg.perm[i] = (u32)i;
    for (u64 i = cfg.numrecs - 1; i >= 1; i--) {
        u64 j = xoshiro_next(&rng) % (i + 1);
        u32 t = cfg.perm[i];
        cfg.perm[i] = cfg.perm[j];
        cfg.perm[j] = t;
    }
    phase_begin("grid");
    u64 t0 = now_ns();
    if (want[0]) test0();
    if (want[1]) test1();
    if (want[2]) test2();
    if (want[3]) one_pass("bkwd_read", O_RDONLY, 0, BACK);
    if (want[4]) one_pass("record_rewrite", O_RDWR | O_CREAT, 1, FIRST);
    if (want[5]) one_pass("stride_read", O_RDONLY, 0, STRIDE);
    if (want[6]) stdio_test(1);
    if (want[7]) stdio_test(0);
    if (want[8]) test8();
    sc_unlink(cfg.path);
    phase_end("grid", cfg.timed_records, cfg.timed_records * cfg.rec, now_ns() - t0);
    return 0;
}
