/* Minimal C reference for the vector read kernel: one thread per CPU, each pinned and walking
 * its own first-touched region (128 MiB, or the MiB given: health_check's thread_region_mib) with
 * the vector loads it was built for: 64-byte (AVX-512) or 32-byte (AVX2) on x86_64, SVE at the
 * thread's vector length or 16-byte NEON on aarch64; prints all threads' bytes over the mean
 * thread time in MiB/s, the median of 3 phases of 0.5 s.
 * Written for health_check's benchmarks (docs/performance.md).
 *
 * Build: gcc -O2 -mavx512f -pthread -o read_ref read_ref.c   (or -mavx2 without AVX-512)
 *        gcc -O2 -march=armv8-a+sve -pthread ...             (or -march=armv8-a for NEON)
 * Usage: read_ref [MIB per thread] */
#define _GNU_SOURCE
#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__ARM_FEATURE_SVE)
#include <arm_sve.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif
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
static double (*bytes)[PHASES], (*secs)[PHASES];

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* One 8 KiB block, four vectors per step; returns a value that depends on every load. */
static uint64_t read_block(const char *p) {
#if defined(__AVX512F__)
    __m512i acc = _mm512_setzero_si512();
    for (int k = 0; k < 8192; k += 256) {
        acc = _mm512_or_si512(acc, _mm512_loadu_si512(p + k));
        acc = _mm512_or_si512(acc, _mm512_loadu_si512(p + k + 64));
        acc = _mm512_or_si512(acc, _mm512_loadu_si512(p + k + 128));
        acc = _mm512_or_si512(acc, _mm512_loadu_si512(p + k + 192));
    }
    return (uint64_t)_mm512_reduce_or_epi64(acc);
#elif defined(__AVX2__)
    __m256i acc = _mm256_setzero_si256();
    for (int k = 0; k < 8192; k += 128) {
        acc = _mm256_or_si256(acc, _mm256_loadu_si256((const __m256i *)(p + k)));
        acc = _mm256_or_si256(acc, _mm256_loadu_si256((const __m256i *)(p + k + 32)));
        acc = _mm256_or_si256(acc, _mm256_loadu_si256((const __m256i *)(p + k + 64)));
        acc = _mm256_or_si256(acc, _mm256_loadu_si256((const __m256i *)(p + k + 96)));
    }
    return (uint64_t)_mm256_extract_epi64(acc, 0) | (uint64_t)_mm256_extract_epi64(acc, 3);
#elif defined(__ARM_FEATURE_SVE)
    const uint8_t *q = (const uint8_t *)p;
    svbool_t all = svptrue_b8();
    svuint8_t acc = svdup_u8(0);
    size_t vl = svcntb(), k = 0;
    for (; k + 4 * vl <= 8192; k += 4 * vl) {
        acc = svorr_u8_x(all, acc, svld1_u8(all, q + k));
        acc = svorr_u8_x(all, acc, svld1_u8(all, q + k + vl));
        acc = svorr_u8_x(all, acc, svld1_u8(all, q + k + 2 * vl));
        acc = svorr_u8_x(all, acc, svld1_u8(all, q + k + 3 * vl));
    }
    for (; k < 8192; k += vl) { /* vector lengths that do not divide the block */
        svbool_t some = svwhilelt_b8_u64(k, 8192);
        acc = svorr_u8_m(some, acc, svld1_u8(some, q + k));
    }
    return svorv_u8(all, acc);
#elif defined(__aarch64__)
    const uint8_t *q = (const uint8_t *)p;
    uint8x16_t acc = vdupq_n_u8(0);
    for (int k = 0; k < 8192; k += 64) {
        uint8x16x4_t v = vld1q_u8_x4(q + k);
        acc = vorrq_u8(acc, vorrq_u8(vorrq_u8(v.val[0], v.val[1]), vorrq_u8(v.val[2], v.val[3])));
    }
    return vgetq_lane_u64(vreinterpretq_u64_u8(acc), 0) | vgetq_lane_u64(vreinterpretq_u64_u8(acc), 1);
#else
#error "build for AVX2 or AVX-512 (x86_64) or for aarch64"
#endif
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
        uint64_t acc = 0;
        do {
            for (int b = 0; b < 64; b++) {
                acc |= read_block(r + off);
                off = (off + 8192) % REGION;
            }
            n += 64 * 8192.0;
        } while ((e = now()) - s < 0.5);
        volatile uint64_t sink = acc;
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
    pthread_t *t = calloc(nthreads, sizeof *t);
    bytes = calloc(nthreads, sizeof *bytes);
    secs = calloc(nthreads, sizeof *secs);
    if (!t || !bytes || !secs) return 1;
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
