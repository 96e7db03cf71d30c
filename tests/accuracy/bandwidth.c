/* Reference for the accuracy tests (tests/accuracy.rs): memory bandwidth measured the plain way,
 * written independently of src/memory. One thread per CPU of our affinity mask (in order), each
 * pinned, with its own anonymous mapping(s) of MIB MiB first-touched on its CPU; an unmeasured
 * warm-up, then SECONDS of the kernel; prints the sum over threads of bytes / own time, in MiB/s.
 *
 *   read      every 64-byte line: 8-byte loads at +0 and +32 (bytes counted: the range walked)
 *   simd16|simd32|simd64   every byte loaded with 16/32/64-byte vector loads
 *   sve       every byte loaded with SVE loads at the thread's vector length (aarch64)
 *   memcpy    memcpy(dst, src, MIB MiB) in a loop (bytes counted once per copy)
 *
 * Build: cc -O2 -pthread -o bandwidth bandwidth.c
 * Usage: bandwidth MODE THREADS MIB SECONDS */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#if defined(__aarch64__)
#include <sys/auxv.h>
#endif

static const char *mode;
static size_t region;
static double seconds;
static int cpus[1024];
static pthread_barrier_t gate;
static double rates[1024];
static volatile uint64_t sink;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static char *fresh(void) {
    char *r = mmap(NULL, region, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (r == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    for (size_t i = 0; i < region; i += 4096) r[i] = (char)i;
    return r;
}

/* 512 KiB of the region from offset `off`; returns a value that depends on every load. */
#define CHUNK (512u << 10)

static uint64_t read_scalar(const char *p) {
    const uint64_t *q = (const uint64_t *)p;
    uint64_t a = 0, b = 0;
    for (size_t i = 0; i < CHUNK / 8; i += 8) {
        a += q[i];
        b += q[i + 4];
    }
    return a + b;
}

#define VECTOR_KERNEL(NAME, BYTES, ATTR)                                                       \
    typedef uint64_t NAME##_v __attribute__((vector_size(BYTES)));                              \
    ATTR static uint64_t NAME(const char *p) {                                                  \
        const NAME##_v *q = (const NAME##_v *)p;                                                \
        NAME##_v a = {0}, b = {0}, c = {0}, d = {0};                                            \
        for (size_t i = 0; i < CHUNK / BYTES; i += 4) {                                         \
            a |= q[i];                                                                          \
            b |= q[i + 1];                                                                      \
            c |= q[i + 2];                                                                      \
            d |= q[i + 3];                                                                      \
        }                                                                                       \
        a |= b | c | d;                                                                         \
        uint64_t s = 0;                                                                         \
        for (size_t k = 0; k < BYTES / 8; k++) s |= a[k];                                       \
        return s;                                                                               \
    }

VECTOR_KERNEL(read16, 16, )
#if defined(__x86_64__)
VECTOR_KERNEL(read32, 32, __attribute__((target("avx2"))))
VECTOR_KERNEL(read64, 64, __attribute__((target("avx512f"))))
#endif

#if defined(__aarch64__) && defined(HWCAP_SVE)
/* SVE for this function only: the program runs on CPUs without it (the mode is refused there). */
#pragma GCC push_options
#pragma GCC target("+sve")
#include <arm_sve.h>
static uint64_t read_sve(const char *p) {
    const uint8_t *q = (const uint8_t *)p;
    svbool_t all = svptrue_b8();
    svuint8_t a = svdup_u8(0), b = a, c = a, d = a;
    size_t vl = svcntb(), i = 0;
    for (; i + 4 * vl <= CHUNK; i += 4 * vl) {
        a = svorr_u8_x(all, a, svld1_u8(all, q + i));
        b = svorr_u8_x(all, b, svld1_u8(all, q + i + vl));
        c = svorr_u8_x(all, c, svld1_u8(all, q + i + 2 * vl));
        d = svorr_u8_x(all, d, svld1_u8(all, q + i + 3 * vl));
    }
    for (; i < CHUNK; i += vl) { /* vector lengths that do not divide the chunk */
        svbool_t some = svwhilelt_b8_u64(i, CHUNK);
        a = svorr_u8_m(some, a, svld1_u8(some, q + i));
    }
    a = svorr_u8_x(all, svorr_u8_x(all, a, b), svorr_u8_x(all, c, d));
    return svorv_u8(all, a);
}
#pragma GCC pop_options
#endif

static uint64_t (*kernel)(const char *);

static void *worker(void *arg) {
    long id = (long)arg;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpus[id], &set);
    if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0) {
        fprintf(stderr, "cannot pin to CPU %d\n", cpus[id]);
        exit(1);
    }
    int copy = strcmp(mode, "memcpy") == 0;
    char *src = fresh();
    char *dst = copy ? fresh() : NULL;
    size_t off = 0;
    uint64_t s = 0;
    for (int phase = 0; phase < 2; phase++) { /* 0: warm-up, 1: measured */
        double len = phase ? seconds : seconds / 4;
        pthread_barrier_wait(&gate);
        double bytes = 0, start = now(), end;
        do {
            if (copy) {
                memcpy(dst, src, region);
                s += (uint8_t)dst[region - 1];
                bytes += (double)region;
            } else {
                for (int k = 0; k < 4; k++) {
                    s += kernel(src + off);
                    off = (off + CHUNK) % region;
                }
                bytes += 4.0 * CHUNK;
            }
        } while ((end = now()) - start < len);
        if (phase) rates[id] = bytes / (end - start);
    }
    sink += s;
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s read|simd16|simd32|simd64|sve|memcpy THREADS MIB SECONDS\n", argv[0]);
        return 2;
    }
    mode = argv[1];
    int threads = atoi(argv[2]);
    region = (size_t)atol(argv[3]) << 20;
    seconds = atof(argv[4]);
    if (strcmp(mode, "read") == 0) kernel = read_scalar;
    else if (strcmp(mode, "simd16") == 0) kernel = read16;
#if defined(__x86_64__)
    else if (strcmp(mode, "simd32") == 0 && __builtin_cpu_supports("avx2")) kernel = read32;
    else if (strcmp(mode, "simd64") == 0 && __builtin_cpu_supports("avx512f")) kernel = read64;
#endif
#if defined(__aarch64__) && defined(HWCAP_SVE)
    else if (strcmp(mode, "sve") == 0 && (getauxval(AT_HWCAP) & HWCAP_SVE)) kernel = read_sve;
#endif
    else if (strcmp(mode, "memcpy") != 0) {
        fprintf(stderr, "mode %s is not available here\n", mode);
        return 2;
    }
    if (threads < 1 || threads > 1024 || region < CHUNK || region % CHUNK) {
        fprintf(stderr, "bad THREADS or MIB\n");
        return 2;
    }
    cpu_set_t mask;
    sched_getaffinity(0, sizeof mask, &mask);
    for (int c = 0, n = 0; c < CPU_SETSIZE && n < threads; c++)
        if (CPU_ISSET(c, &mask)) cpus[n++] = c;
    if (CPU_COUNT(&mask) < threads) {
        fprintf(stderr, "only %d usable CPUs\n", CPU_COUNT(&mask));
        return 2;
    }
    pthread_barrier_init(&gate, NULL, threads);
    pthread_t t[1024];
    for (long i = 0; i < threads; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    double total = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(t[i], NULL);
        total += rates[i];
    }
    printf("%.1f\n", total / (1024.0 * 1024.0));
    return 0;
}
