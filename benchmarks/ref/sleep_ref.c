/* Minimal C reference for the sleep section: N threads each call nanosleep(100 ns) in a loop for
 * S seconds; prints the calls per second of all threads. Written for health_check's benchmarks
 * (docs/performance.md); same method as the sleep section, nothing else.
 *
 * Build: gcc -O2 -pthread -o sleep_ref sleep_ref.c
 * Usage: sleep_ref THREADS SECONDS */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static atomic_int stop_flag;
static pthread_mutex_t gate = PTHREAD_MUTEX_INITIALIZER;

static void *worker(void *arg) {
    unsigned long *count = arg;
    const struct timespec req = {0, 100};
    pthread_mutex_lock(&gate); /* start together */
    pthread_mutex_unlock(&gate);
    unsigned long n = 0;
    while (!atomic_load_explicit(&stop_flag, memory_order_relaxed)) {
        nanosleep(&req, NULL);
        n++;
    }
    *count = n;
    return NULL;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s THREADS SECONDS\n", argv[0]);
        return 2;
    }
    int threads = atoi(argv[1]);
    double seconds = atof(argv[2]);
    pthread_t *tids = calloc(threads, sizeof *tids);
    unsigned long *counts = calloc(threads, sizeof *counts);
    pthread_mutex_lock(&gate);
    for (int i = 0; i < threads; i++)
        pthread_create(&tids[i], NULL, worker, &counts[i]);
    double start = now();
    pthread_mutex_unlock(&gate);
    struct timespec d = {(time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9)};
    nanosleep(&d, NULL);
    atomic_store(&stop_flag, 1);
    unsigned long total = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(tids[i], NULL);
        total += counts[i];
    }
    printf("%.1f\n", total / (now() - start));
    return 0;
}
