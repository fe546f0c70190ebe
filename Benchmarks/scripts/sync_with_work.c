// How much CPU a durable commit may spend between its syncs: the preallocated
// write + fdatasync loop of strata-bench's limit, with a busy wait of W microseconds before
// each write standing in for a commit's own work. The variants run in turns, 100 syncs each,
// so that they see the same minutes of the disk.
//
//     cc -O2 -o /tmp/sync_with_work Benchmarks/scripts/sync_with_work.c && /tmp/sync_with_work /tmp
//
// Prints each variant's cycle (work + write + sync) and what the sync part took. On this
// project's VM (session 45) the sync part stayed at ~115 µs whatever the work, so the cycle
// is the work plus the sync: a commit reaches 0.9 of the limit only if it spends at most
// ~13 µs of CPU between syncs.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void spin(double microseconds) {
    double end = now() + microseconds * 1e-6;
    while (now() < end) {}
}

int main(int argc, char **argv) {
    const char *directory = argc > 1 ? argv[1] : ".";
    char path[4096];
    snprintf(path, sizeof path, "%s/sync_with_work.bin", directory);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) { perror(path); return 1; }
    const size_t size = 64 << 20;
    char *zeros = calloc(1, size);
    if (write(fd, zeros, size) != (ssize_t)size || fsync(fd) != 0) { perror("preallocating"); return 1; }
    char page[4096];
    memset(page, 0x5A, sizeof page);

    const double work[] = {0, 5, 10, 15, 20, 25, 30, 40, 50, 60};
    const int variants = sizeof work / sizeof work[0];
    double seconds[sizeof work / sizeof work[0]] = {0};
    long offset = 0;
    int rounds = 20, perRound = 100;
    for (int round = 0; round < rounds; round++) {
        for (int k = 0; k < variants; k++) {
            int v = (k + round) % variants;  // rotate the order, so no variant always follows another
            double start = now();
            for (int i = 0; i < perRound; i++) {
                spin(work[v]);
                if (pwrite(fd, page, sizeof page, offset) != (ssize_t)sizeof page || fdatasync(fd) != 0) { perror("sync"); return 1; }
                offset = (offset + (long)sizeof page) % (long)size;
            }
            seconds[v] += now() - start;
        }
    }
    int syncs = rounds * perRound;
    for (int v = 0; v < variants; v++) {
        double cycle = seconds[v] / syncs * 1e6;
        printf("work %4.0f us: cycle %6.1f us, write + sync %6.1f us, %5.2f of the no-work rate\n",
               work[v], cycle, cycle - work[v], seconds[0] / seconds[v]);
    }
    close(fd);
    unlink(path);
    return 0;
}
