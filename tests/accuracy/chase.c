/* Reference for the accuracy tests (tests/accuracy.rs): idle memory latency measured the plain
 * way, written independently of src/memory. One random cycle (Sattolo's algorithm, xorshift64*)
 * through every 128-byte slot of a MIB MiB mapping, walked with dependent loads on one pinned
 * CPU; prints ns per load, the median of 9 equal parts of SECONDS in all, after a warm-up walk of
 * a tenth of that.
 *
 * PAGES: thp (2 MiB-aligned, MADV_HUGEPAGE), 4k (MADV_NOHUGEPAGE), 2m or 1g (hugetlb).
 *
 * Build: cc -O2 -o chase chase.c
 * Usage: chase MIB CPU SECONDS PAGES */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#ifndef MAP_HUGE_SHIFT
#define MAP_HUGE_SHIFT 26
#endif
#define STRIDE 128
#define PARTS 9

static uint64_t rng = 0x9c0ffee5eed1234bULL;
static uint64_t next(void) {
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 0x2545f4914f6cdd1dULL;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

#define L1 p = *(void *const *)p;
#define L8 L1 L1 L1 L1 L1 L1 L1 L1
#define L64 L8 L8 L8 L8 L8 L8 L8 L8

/* 64 x 64 dependent loads. */
static void *walk(void *p) {
    for (int i = 0; i < 64; i++) {
        L64
    }
    __asm__ volatile("" : "+r"(p));
    return p;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s MIB CPU SECONDS thp|4k|2m|1g\n", argv[0]);
        return 2;
    }
    size_t bytes = (size_t)atol(argv[1]) << 20;
    int cpu = atoi(argv[2]);
    double seconds = atof(argv[3]);
    const char *pages = argv[4];
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
        perror("sched_setaffinity");
        return 1;
    }
    char *base;
    if (strcmp(pages, "2m") == 0 || strcmp(pages, "1g") == 0) {
        int shift = pages[0] == '2' ? 21 : 30;
        base = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | (shift << MAP_HUGE_SHIFT), -1, 0);
        if (base == MAP_FAILED) {
            perror("mmap hugetlb");
            return 1;
        }
    } else {
        size_t align = 2 << 20;
        char *map = mmap(NULL, bytes + align, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (map == MAP_FAILED) {
            perror("mmap");
            return 1;
        }
        base = map + (align - (uintptr_t)map % align) % align;
        madvise(base, bytes, strcmp(pages, "thp") == 0 ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
    }
    memset(base, 0, bytes); /* first touch on the measuring CPU */
    size_t n = bytes / STRIDE;
    uint32_t *to = malloc(n * sizeof *to);
    for (size_t i = 0; i < n; i++) to[i] = (uint32_t)i;
    for (size_t i = n - 1; i > 0; i--) { /* Sattolo: one cycle through every slot */
        size_t j = next() % i;
        uint32_t t = to[i];
        to[i] = to[j];
        to[j] = t;
    }
    for (size_t i = 0; i < n; i++) *(void **)(base + i * STRIDE) = base + (size_t)to[i] * STRIDE;
    free(to);
    void *p = base;
    double t0 = now();
    while (now() - t0 < seconds / 10) p = walk(p);
    double part[PARTS];
    for (int k = 0; k < PARTS; k++) {
        double loads = 0, s = now(), e;
        do {
            p = walk(p);
            loads += 64 * 64;
        } while ((e = now()) - s < seconds / PARTS);
        part[k] = (e - s) * 1e9 / loads;
    }
    qsort(part, PARTS, sizeof part[0], cmp);
    printf("%.2f\n", part[PARTS / 2]);
    return p == NULL;
}
