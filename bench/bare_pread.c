/* The syscall-bound ceiling for cached random reads: 4 KiB pread at random aligned offsets of one
 * file, in a tight loop with no per-operation timing, for a number of seconds; prints operations/s.
 * bench_access.py compares fsmeter's rand-read-4k on the same file against it.
 * Usage: bare_pread FILE FILE_SIZE_BYTES SECONDS   (build: gcc -O2 -o bare_pread bare_pread.c) */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s FILE FILE_SIZE_BYTES SECONDS\n", argv[0]);
        return 2;
    }
    int fd = open(argv[1], O_RDONLY);
    if (fd < 0) {
        perror(argv[1]);
        return 1;
    }
    uint64_t blocks = strtoull(argv[2], NULL, 10) / 4096;
    double seconds = atof(argv[3]);
    if (blocks == 0 || seconds <= 0) {
        fprintf(stderr, "the file must hold at least one 4 KiB block and SECONDS must be > 0\n");
        return 2;
    }
    static char buf[4096] __attribute__((aligned(4096)));
    uint64_t x = 88172645463325252ULL, ops = 0; /* xorshift64: cheap, no libc call per read */
    double start = now_s(), end = start + seconds, t = start;
    while (t < end) {
        for (int i = 0; i < 4096; i++) { /* look at the clock every 4096 reads only */
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if (pread(fd, buf, sizeof buf, (off_t)((x % blocks) * 4096)) != (ssize_t)sizeof buf) {
                perror("pread");
                return 1;
            }
        }
        ops += 4096;
        t = now_s();
    }
    printf("%.0f\n", ops / (t - start));
    return 0;
}
