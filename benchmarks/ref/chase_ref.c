/* Minimal C reference for the idle-latency chase: the same FullRandom chain health_check builds
 * (512 MiB, 128-byte stride, transparent huge pages, splitmix64 seeded with 0, Fisher-Yates with
 * slot 0 first, multiply-shift bounds), walked with 256 unrolled dependent loads on CPU 0.
 * Prints ns per load: the mean of 3 repeats, each the median of 10 x 50 ms parts, as ours.
 * Written for health_check's benchmarks (docs/performance.md).
 *
 * Build: gcc -O2 -o chase_ref chase_ref.c
 * Usage: chase_ref [MIB] */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#define STRIDE 128
static uint64_t state = 0;
static uint64_t next_u64(void) {
    state += 0x9e3779b97f4a7c15ULL;
    uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
static size_t below(size_t n) { return (size_t)(((unsigned __int128)next_u64() * n) >> 64); }
static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

#define L1 p = *(void **)p;
#define L8 L1 L1 L1 L1 L1 L1 L1 L1
#define L64 L8 L8 L8 L8 L8 L8 L8 L8
#define L256 L64 L64 L64 L64

static void *walk(void *p, long calls) {
    for (long i = 0; i < calls; i++) {
        L256
    }
    return p;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    size_t bytes = (size_t)(argc > 1 ? atol(argv[1]) : 512) << 20;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(0, &set);
    sched_setaffinity(0, sizeof set, &set);
    size_t two = 2 << 20;
    char *map = mmap(NULL, bytes + two, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    madvise(map, bytes + two, MADV_HUGEPAGE);
    char *base = map + (two - (uintptr_t)map % two) % two;
    for (size_t i = 0; i < bytes; i += 4096) base[i] = 1;
    size_t n = bytes / STRIDE;
    uint32_t *order = malloc(n * sizeof *order);
    for (size_t i = 0; i < n; i++) order[i] = i;
    for (size_t i = n - 1; i >= 2; i--) {
        size_t j = 1 + below(i);
        uint32_t t = order[i]; order[i] = order[j]; order[j] = t;
    }
    for (size_t i = 0; i < n; i++)
        *(void **)(base + (size_t)order[i] * STRIDE) = base + (size_t)order[(i + 1) % n] * STRIDE;
    void *p = base;
    double t0 = now();
    while (now() - t0 < 0.2) p = walk(p, 64);
    double sum = 0;
    for (int r = 0; r < 3; r++) {
        double parts[10];
        for (int k = 0; k < 10; k++) {
            long calls = 0;
            double s = now(), e;
            do { p = walk(p, 64); calls += 64; } while ((e = now()) - s < 0.05);
            parts[k] = (e - s) * 1e9 / (calls * 256.0);
        }
        qsort(parts, 10, sizeof parts[0], cmp);
        sum += parts[5];
    }
    printf("%.2f\n", sum / 3);
    return p == NULL;
}
