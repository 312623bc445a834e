// Running work that may hang (a call into a broken GPU driver, an external tool) in a child
// process with a deadline, so the probe itself never hangs or crashes with it.
//
// Thread-safety: call from a single-threaded process, or accept that the forked child holds
// only the calling thread (the work must not take locks held by other threads).
#ifndef CUTOVER_PROBE_SUBPROCESS_H_
#define CUTOVER_PROBE_SUBPROCESS_H_

#include <functional>
#include <string>
#include <vector>

#include "core/status.h"

namespace cutover::probe {

// Forks; the child runs `work` and sends back the string it returns; the parent waits at most
// `timeout_ms`. DeadlineExceeded "<what> timed out after <n> ms" (the child is killed),
// Environment "<what> died with signal <n>" / "<what> exited with status <n>" when the child
// did not finish normally, IoError when fork or pipe failed.
Result<std::string> RunInChild(const std::string& what, const std::function<std::string()>& work,
                               int timeout_ms);

// Runs the program argv[0] (found on PATH when it has no '/') with stdin from /dev/null and
// returns its stdout and stderr; errors as RunInChild, and NotFound when it cannot be executed.
Result<std::string> RunProgram(const std::vector<std::string>& argv, int timeout_ms);

}  // namespace cutover::probe

#endif  // CUTOVER_PROBE_SUBPROCESS_H_
