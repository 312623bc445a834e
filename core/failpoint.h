// Failpoints: named points in the code that crash tests arm from the environment.
//
//   CUTOVER_FAILPOINTS="store.put:after=7:kill,fsync:after=2:error"
//
// Each entry is NAME[:after=N][:ACTION]. The point NAME fires on its N-th hit (1-based, default 1)
// and on every hit after it when the action is `error`; `kill` and `abort` end the process there.
// Actions:
//   kill        raise SIGKILL (no cleanup, no flush: the crash tests' model of a power cut)
//   abort       call abort()
//   error       CUTOVER_FAILPOINT_RETURN sites return Status::IoError("failpoint NAME")
//   sleep=MS    sleep MS milliseconds, then go on
// A point's position in the code states its meaning: "store.put.after" sits after a write.
//
// Entries are separated by commas; spaces around an entry are ignored. A point named twice, an
// entry with two actions, or an unknown option is an error: a process whose CUTOVER_FAILPOINTS is
// malformed writes "cutover: CUTOVER_FAILPOINTS: <why>" to stderr and exits 2 before main, so a
// crash test with a typo never runs unarmed.
//
// Compiled in always. Unarmed, a point costs one relaxed load and a predictable branch.
// Thread-safety: hits may come from any thread, also while Configure runs; counters are atomic.
#ifndef CUTOVER_CORE_FAILPOINT_H_
#define CUTOVER_CORE_FAILPOINT_H_

#include <atomic>
#include <string>
#include <string_view>

#include "core/status.h"

namespace cutover::failpoint {

// True while at least one point is armed (from CUTOVER_FAILPOINTS at start-up, or Configure).
extern std::atomic<bool> g_armed;

// Slow path of the macros. Returns true when the point's action is `error` and it fired.
bool Hit(std::string_view name);

// Replaces the armed set (tests use this; the environment is read at start-up) and resets the hit
// counts. An empty spec disarms everything. InvalidArgument on a malformed spec, which leaves the
// previous set armed.
Status Configure(const std::string& spec);

// Number of times the point was hit since it was configured (0 for points not armed).
long HitCount(std::string_view name);

}  // namespace cutover::failpoint

#define CUTOVER_FAILPOINT(name)                                                                 \
  do {                                                                                          \
    if (__builtin_expect(::cutover::failpoint::g_armed.load(::std::memory_order_relaxed), 0)) { \
      (void)::cutover::failpoint::Hit(name);                                                    \
    }                                                                                           \
  } while (0)

// In a function returning Status or Result<T>: returns an IoError when the point fires `error`.
#define CUTOVER_FAILPOINT_RETURN(name)                                                          \
  do {                                                                                          \
    if (__builtin_expect(::cutover::failpoint::g_armed.load(::std::memory_order_relaxed), 0) && \
        ::cutover::failpoint::Hit(name)) {                                                      \
      return ::cutover::Status::IoError(std::string("failpoint ") + (name));                    \
    }                                                                                           \
  } while (0)

#endif  // CUTOVER_CORE_FAILPOINT_H_
