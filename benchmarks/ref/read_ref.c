/* Minimal C reference for the vector read kernel: one thread per CPU, each pinned and walking
 * its own first-touched region (128 MiB, or the MiB given: health_check's thread_region_mib) with 64-byte (AVX-512) or 32-byte (AVX2) loads; prints
 * all threads' bytes over the mean thread time in MiB/s, the median of 3 phases of 0.5 s.
 * Written for health_check's benchmarks (docs/performance.md).
 *
 * Build: gcc -O2 -mavx512f -pthread -o read_ref read_ref.c   (or -mavx2 without AVX-512)
 * Usage: read_ref [MIB per thread] */
#define _GNU_SOURCE
#include <immintrin.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static size_t REGION = 128UL << 20;
#define PHASES 4 /* the first warms up */
static int nthreads;
static pthread_barrier_t gate;
static double bytes[256][PHASES], secs[256][PHASES];

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void *worker(void *arg) {
    long id = (long)arg;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(id, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    char *r = mmap(NULL, REGION, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    for (size_t i = 0; i < REGION; i += 4096) r[i] = 1;
    size_t off = 0;
    for (int ph = 0; ph < PHASES; ph++) {
        pthread_barrier_wait(&gate);
        double s = now(), e;
        double n = 0;
#ifdef __AVX512F__
        __m512i acc = _mm512_setzero_si512();
#else
        __m256i acc = _mm256_setzero_si256();
#endif
        do {
            for (int b = 0; b < 64; b++) {
                const char *p = r + off;
#ifdef __AVX512F__
                for (int k = 0; k < 8192; k += 256) {
                    acc = _mm512_or_si512(acc, _mm512_loadu_si512(p + k));
                    acc = _mm512_or_si512(acc, _mm512_loadu_si512(p + k + 64));
                    acc = _mm512_or_si512(acc, _mm512_loadu_si512(p + k + 128));
                    acc = _mm512_or_si512(acc, _mm512_loadu_si512(p + k + 192));
                }
#else
                for (int k = 0; k < 8192; k += 128) {
                    acc = _mm256_or_si256(acc, _mm256_loadu_si256((const __m256i *)(p + k)));
                    acc = _mm256_or_si256(acc, _mm256_loadu_si256((const __m256i *)(p + k + 32)));
                    acc = _mm256_or_si256(acc, _mm256_loadu_si256((const __m256i *)(p + k + 64)));
                    acc = _mm256_or_si256(acc, _mm256_loadu_si256((const __m256i *)(p + k + 96)));
                }
#endif
                off = (off + 8192) % REGION;
            }
            n += 64 * 8192.0;
        } while ((e = now()) - s < 0.5);
        volatile char sink = ((char *)&acc)[0];
        (void)sink;
        bytes[id][ph] = n;
        secs[id][ph] = e - s;
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1) REGION = (size_t)atol(argv[1]) << 20;
    nthreads = sysconf(_SC_NPROCESSORS_ONLN);
    pthread_barrier_init(&gate, NULL, nthreads);
    pthread_t t[256];
    for (long i = 0; i < nthreads; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < nthreads; i++) pthread_join(t[i], NULL);
    double rates[PHASES - 1];
    for (int ph = 1; ph < PHASES; ph++) {
        double b = 0, s = 0;
        for (int i = 0; i < nthreads; i++) { b += bytes[i][ph]; s += secs[i][ph]; }
        rates[ph - 1] = b / (s / nthreads) / (1024.0 * 1024.0);
    }
    double a = rates[0], b = rates[1], c = rates[2];
    double med = a > b ? (b > c ? b : (a > c ? c : a)) : (a > c ? a : (b > c ? c : b));
    printf("%.1f\n", med);
    return 0;
}
