// The work pool behind CWorkPool.h.
//
// One job at a time (a try-lock; a second concurrent submitter gets −1). The job's state is one 64-bit
// word: the job's generation in the high 32 bits and the next unclaimed chunk in the low 32 bits. A
// participant claims a chunk with a compare-and-swap that also checks the generation, so a worker that
// wakes late for an old job can never claim a chunk of a newer one. Between jobs the submitter closes
// the word (new generation, index CLOSED) before it rewrites the job's function, context and count, and
// opens it (index 0) after; every access to those fields is atomic.
#define _GNU_SOURCE
#include "CWorkPool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define SWP_PAUSE() _mm_pause()
#elif defined(__aarch64__)
#define SWP_PAUSE() __asm__ __volatile__("yield")
#else
#define SWP_PAUSE() ((void)0)
#endif

enum { MAX_WORKERS = 63 };
static const uint32_t CLOSED = 0xFFFFFFFFu;

typedef void (*swp_fn)(void *, int64_t);

static struct {
    _Atomic uint64_t word;             // generation << 32 | next chunk (CLOSED between jobs)
    _Atomic(swp_fn) fn;
    _Atomic(void *) ctx;
    _Atomic int64_t chunks;
    _Atomic int64_t completed;         // chunks finished in the current job
    _Atomic int32_t sleepers;          // workers waiting on `wake`
    _Atomic int32_t workers;           // threads created
    pthread_mutex_t submit;            // one job at a time
    pthread_mutex_t lock;              // guards `wake` and worker creation
    pthread_cond_t wake;
} pool = {
    .submit = PTHREAD_MUTEX_INITIALIZER,
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .wake = PTHREAD_COND_INITIALIZER,
};

static _Thread_local int in_worker;

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

int64_t swp_spin_microseconds(void) {
    static _Atomic int64_t cached = -1;
    int64_t v = atomic_load_explicit(&cached, memory_order_relaxed);
    if (v >= 0) return v;
    v = 300;
    const char *env = getenv("SHRINKWRAP_SPIN_US");
    if (env && *env) {
        char *end = NULL;
        long long parsed = strtoll(env, &end, 10);
        if (end && *end == '\0' && parsed >= 0 && parsed <= 1000000) v = parsed;
    }
    atomic_store_explicit(&cached, v, memory_order_relaxed);
    return v;
}

int32_t swp_worker_count(void) { return atomic_load(&pool.workers); }

/// Claims and runs chunks of generation `gen` until none is left (or the job is no longer `gen`).
static void drain(uint32_t gen) {
    swp_fn fn = atomic_load(&pool.fn);
    void *ctx = atomic_load(&pool.ctx);
    int64_t chunks = atomic_load(&pool.chunks);
    uint64_t v = atomic_load(&pool.word);
    for (;;) {
        uint32_t index = (uint32_t)v;
        if ((uint32_t)(v >> 32) != gen || index == CLOSED || (int64_t)index >= chunks) return;
        if (atomic_compare_exchange_weak(&pool.word, &v, v + 1)) {
            fn(ctx, (int64_t)index);
            atomic_fetch_add(&pool.completed, 1);
            v = atomic_load(&pool.word);
        }
    }
}

/// True when the word holds an open job of a generation other than `seen`.
static int open_job(uint64_t v, uint32_t seen) { return (uint32_t)(v >> 32) != seen && (uint32_t)v != CLOSED; }

static void *worker_main(void *arg) {
    (void)arg;
    in_worker = 1;
    uint32_t seen = (uint32_t)(atomic_load(&pool.word) >> 32);
    const int64_t spin_ns = swp_spin_microseconds() * 1000;
    for (;;) {
        uint64_t v = atomic_load(&pool.word);
        if (!open_job(v, seen)) {
            int64_t start = now_ns();
            for (;;) {
                for (int i = 0; i < 64 && !open_job(v, seen); i++) {
                    SWP_PAUSE();
                    v = atomic_load(&pool.word);
                }
                if (open_job(v, seen) || now_ns() - start > spin_ns) break;
            }
            if (!open_job(v, seen)) {
                pthread_mutex_lock(&pool.lock);
                atomic_fetch_add(&pool.sleepers, 1);
                while (!open_job(v = atomic_load(&pool.word), seen)) pthread_cond_wait(&pool.wake, &pool.lock);
                atomic_fetch_sub(&pool.sleepers, 1);
                pthread_mutex_unlock(&pool.lock);
            }
        }
        seen = (uint32_t)(v >> 32);
        drain(seen);
    }
    return NULL;
}

/// Makes sure `wanted` workers exist; returns how many do.
static int32_t ensure_workers(int32_t wanted) {
    if (wanted > MAX_WORKERS) wanted = MAX_WORKERS;
    int32_t have = atomic_load(&pool.workers);
    if (have >= wanted) return have;
    pthread_mutex_lock(&pool.lock);
    have = atomic_load(&pool.workers);
    while (have < wanted) {
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&attr, 8u << 20);  // Swift kernels may recurse into parallel helpers
        pthread_t t;
        int rc = pthread_create(&t, &attr, worker_main, NULL);
        pthread_attr_destroy(&attr);
        if (rc != 0) break;
        have += 1;
        atomic_store(&pool.workers, have);
    }
    pthread_mutex_unlock(&pool.lock);
    return have;
}

int32_t swp_run(int64_t chunks, int32_t threads, swp_fn fn, void *ctx) {
    if (chunks <= 0) return 0;
    if (in_worker || threads < 2 || chunks >= (int64_t)CLOSED) return -1;
    if (ensure_workers(threads - 1) < 1) return -1;
    if (pthread_mutex_trylock(&pool.submit) != 0) return -1;

    uint32_t gen = (uint32_t)(atomic_load(&pool.word) >> 32) + 1;
    if (gen == 0) gen = 1;  // generation 0 never names a job
    atomic_store(&pool.word, ((uint64_t)gen << 32) | CLOSED);
    atomic_store(&pool.fn, fn);
    atomic_store(&pool.ctx, ctx);
    atomic_store(&pool.chunks, chunks);
    atomic_store(&pool.completed, 0);
    atomic_store(&pool.word, (uint64_t)gen << 32);
    if (atomic_load(&pool.sleepers) > 0) {
        pthread_mutex_lock(&pool.lock);
        pthread_cond_broadcast(&pool.wake);
        pthread_mutex_unlock(&pool.lock);
    }
    in_worker = 1;  // a parallel loop inside a chunk runs inline rather than deadlock on `submit`
    drain(gen);
    in_worker = 0;
    // Wait for chunks other threads claimed; yield now and then so an oversubscribed machine progresses.
    for (uint32_t spins = 0; atomic_load(&pool.completed) < chunks; spins++) {
        SWP_PAUSE();
        if ((spins & 0x3FF) == 0x3FF) sched_yield();
    }
    atomic_store(&pool.word, ((uint64_t)gen << 32) | CLOSED);
    pthread_mutex_unlock(&pool.submit);
    return 0;
}
