// Running work that may hang (a call into a broken GPU driver, an external tool, a user's
// command) in a child process with a deadline, so the caller never hangs or crashes with it.
//
// Thread-safety: call from a single-threaded process, or accept that the forked child holds
// only the calling thread (the work must not take locks held by other threads).
#ifndef CUTOVER_CORE_SUBPROCESS_H_
#define CUTOVER_CORE_SUBPROCESS_H_

#include <functional>
#include <string>
#include <vector>

#include "core/status.h"

namespace cutover {

// Forks; the child runs `work` and sends back the string it returns; the parent waits at most
// `timeout_ms`. DeadlineExceeded "<what> timed out after <n> ms" (the child is killed),
// Environment "<what> died with signal <n>" / "<what> exited with status <n>" when the child
// did not finish normally, IoError when fork or pipe failed.
Result<std::string> RunInChild(const std::string& what, const std::function<std::string()>& work,
                               int timeout_ms);

// Runs the program argv[0] (found on PATH when it has no '/') with stdin from /dev/null and
// returns its stdout and stderr; errors as RunInChild (a non-zero exit's message ends with the
// last line it printed: "sh exited with status 1: nginx: [emerg] ..."), and NotFound when it
// cannot be executed.
Result<std::string> RunProgram(const std::vector<std::string>& argv, int timeout_ms);

// The same, but a non-zero exit is a result, not an error: its status and everything printed.
struct ProgramOutput {
  int exit_status = 0;
  std::string output;  // stdout and stderr
};
Result<ProgramOutput> RunProgramForStatus(const std::vector<std::string>& argv, int timeout_ms);

}  // namespace cutover

#endif  // CUTOVER_CORE_SUBPROCESS_H_
