/* tree: fdtree's tree per thread, phase by phase: mkdir of every directory (parents first),
 * create (open, write of file_blocks x 4 KiB in write_size pieces, close) of every file, stat of
 * every file, unlink of every file, rmdir of every directory (deepest first).
 *
 * The calls of fsmeter's tree family: the same names (`tree-<tid>/L<level>D<n>/.../L<level>F<n>`,
 * counting down as fdtree does), the same walk order, absolute paths built in one buffer, mkdir
 * mode 0755, files opened O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC mode 0644 and written with zeros.
 * The engine also checks each stat's size against the size written (no call); so does this.
 *
 * usage: tree dir=D threads=N [levels=3 dirs_per_level=12 files_per_dir=25 file_blocks=1
 *             write_size=4K phases=mkdir,create,stat,remove,rmdir]
 * Prints each phase it runs; its operations are the directories or files it touched. */
#include "bare.h"

static struct {
    const char *dir;
    u32 levels, dirs_per_level, files_per_dir;
    u64 size, write_size;
} cfg;

enum { MKDIR, RMDIR, FILES };
enum { CREATE, STAT, REMOVE, READ };

struct walker {
    char path[4200];
    size_t len;
    int phase, file_op;
    char *zeros;
    u64 ops, bytes;
};

static void push_name(struct walker *w, u32 level, char tag, u64 n) {
    w->len += (size_t)sprintf(w->path + w->len, "/L%u%c%llu", level, tag, (unsigned long long)n);
}

static void visit_file(struct walker *w) {
    switch (w->file_op) {
    case CREATE: {
        int fd = sc_open(w->path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
        CHECK(fd >= 0, "create %s", w->path);
        for (u64 left = cfg.size; left > 0;) {
            u64 n = left < cfg.write_size ? left : cfg.write_size;
            long r = sc_write(fd, w->zeros, n);
            CHECK(r > 0, "write %s", w->path);
            left -= (u64)r;
        }
        CHECK(sc_close(fd) == 0, "close %s", w->path);
        w->bytes += cfg.size;
        break;
    }
    case STAT: {
        struct stat sb;
        CHECK(sc_stat(w->path, &sb) == 0, "stat %s", w->path);
        CHECK((u64)sb.st_size == cfg.size, "stat %s: %lld bytes", w->path, (long long)sb.st_size);
        break;
    }
    case READ: {
        int fd = sc_open(w->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0);
        CHECK(fd >= 0, "open %s", w->path);
        for (u64 left = cfg.size; left > 0;) {
            u64 n = left < cfg.write_size ? left : cfg.write_size;
            long r = sc_read(fd, w->zeros, n);
            CHECK(r > 0, "read %s", w->path);
            left -= (u64)r;
        }
        CHECK(sc_close(fd) == 0, "close %s", w->path);
        w->bytes += cfg.size;
        break;
    }
    case REMOVE:
        CHECK(sc_unlink(w->path) == 0, "unlink %s", w->path);
        break;
    }
    w->ops++;
}

static void visit_dir(struct walker *w, int make) {
    if (make && w->phase == MKDIR) {
        CHECK(sc_mkdir(w->path, 0755) == 0, "mkdir %s", w->path);
        w->ops++;
    } else if (!make && w->phase == RMDIR) {
        CHECK(sc_rmdir(w->path) == 0, "rmdir %s", w->path);
        w->ops++;
    }
}

/* fdtree's order: the directory's files, then all its subdirectories made, then each walked,
 * then all removed; names count down from the count to 1. */
static void walk_below(struct walker *w, u32 depth) {
    size_t len = w->len;
    u32 level = cfg.levels - depth;
    if (w->phase == FILES)
        for (u64 n = cfg.files_per_dir; n >= 1; n--) {
            push_name(w, level, 'F', n);
            visit_file(w);
            w->path[w->len = len] = 0;
        }
    if (depth < cfg.levels) {
        for (u64 n = cfg.dirs_per_level; n >= 1; n--) {
            push_name(w, level, 'D', n);
            visit_dir(w, 1);
            w->path[w->len = len] = 0;
        }
        for (u64 n = cfg.dirs_per_level; n >= 1; n--) {
            push_name(w, level, 'D', n);
            walk_below(w, depth + 1);
            w->path[w->len = len] = 0;
        }
        for (u64 n = cfg.dirs_per_level; n >= 1; n--) {
            push_name(w, level, 'D', n);
            visit_dir(w, 0);
            w->path[w->len = len] = 0;
        }
    }
}

static void tree_thread(struct share *sh, u64 start) {
    (void)start;
    struct walker *w = sh->arg;
    w->len = (size_t)sprintf(w->path, "%s/tree-%d", cfg.dir, sh->tid);
    visit_dir(w, 1);
    walk_below(w, 0);
    visit_dir(w, 0);
    sh->ops = w->ops;
    sh->bytes = w->bytes;
}

int main(int argc, char **argv) {
    args_init(argc, argv,
              "dir=D threads=N [levels=3 dirs_per_level=12 files_per_dir=25 file_blocks=1 write_size=4K "
              "phases=mkdir,create,stat,remove,rmdir]");
    cfg.dir = arg_str("dir", ".");
    cfg.levels = (u32)arg_u64("levels", 3);
    cfg.dirs_per_level = (u32)arg_u64("dirs_per_level", 12);
    cfg.files_per_dir = (u32)arg_u64("files_per_dir", 25);
    cfg.size = arg_u64("file_blocks", 1) * 4096;
    cfg.write_size = arg_u64("write_size", 4096);
    int n = (int)arg_u64("threads", 1);
    errno = 0;
    CHECK(n >= 1 && cfg.dirs_per_level >= 1 && cfg.write_size > 0, "threads, dirs_per_level, write_size >= 1");
    char phases[256];
    snprintf(phases, sizeof phases, "%s", arg_str("phases", "mkdir,create,stat,remove,rmdir"));
    size_t zlen = cfg.write_size < cfg.size ? cfg.write_size : (cfg.size ? cfg.size : 1);
    struct walker *w = calloc((size_t)n, sizeof *w);
    struct share *sh = calloc((size_t)n, sizeof *sh);
    for (char *save, *ph = strtok_r(phases, ",", &save); ph; ph = strtok_r(NULL, ",", &save)) {
        int phase, op = 0;
        if (!strcmp(ph, "mkdir"))
            phase = MKDIR;
        else if (!strcmp(ph, "rmdir"))
            phase = RMDIR;
        else if (!strcmp(ph, "create"))
            phase = FILES, op = CREATE;
        else if (!strcmp(ph, "stat"))
            phase = FILES, op = STAT;
        else if (!strcmp(ph, "remove"))
            phase = FILES, op = REMOVE;
        else if (!strcmp(ph, "read"))
            phase = FILES, op = READ;
        else
            die("phases: %s is not one of mkdir, create, stat, read, remove, rmdir", ph);
        phase_begin(ph);
        for (int i = 0; i < n; i++) {
            free(w[i].zeros);
            int with_buf = op == CREATE || op == READ;
            w[i] = (struct walker){.phase = phase, .file_op = op, .zeros = with_buf ? buffer(zlen, 0) : NULL};
            memset(&sh[i], 0, sizeof sh[i]);
            sh[i].arg = &w[i];
        }
        run_threads_around(n, own_table_setup, tree_thread, NULL, sh);
        phase_total(ph, n, sh);
    }
    return 0;
}
