// A persistent pool of worker threads for the interpreter's parallel loops. Workers spin briefly after
// each job, then sleep on a condition variable, so back-to-back small ops do not pay a thread wake-up
// each (libdispatch's concurrentPerform does). Work is a fixed set of chunk indices; who runs which
// chunk is decided at run time, so callers must make each chunk's result independent of the thread
// that runs it (the interpreter's chunks write disjoint outputs).
#ifndef SHRINKWRAP_CWORKPOOL_H
#define SHRINKWRAP_CWORKPOOL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Runs fn(ctx, i) once for every i in 0 ..< chunks, on the calling thread and up to `threads` − 1 pool
/// workers (created on first need, at most 63). Returns 0 when done, or −1 without running anything when
/// the pool cannot take the job: another thread's job is in flight, the caller is itself a pool worker,
/// or no worker thread could be created. The caller then runs the chunks some other way.
int32_t swp_run(int64_t chunks, int32_t threads, void (*fn)(void *ctx, int64_t index), void *ctx);

/// How long idle workers spin before sleeping, in microseconds (default 300; SHRINKWRAP_SPIN_US sets it,
/// read once). Exposed for measurements.
int64_t swp_spin_microseconds(void);

/// Number of worker threads created so far.
int32_t swp_worker_count(void);

#ifdef __cplusplus
}
#endif

#endif
