#include "core/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>

namespace cutover {
namespace {

int64_t NowMs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

void WriteAll(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    off += static_cast<size_t>(n);
  }
}

constexpr int kExecFailed = 127;

// ": <the last non-empty line of out>" (at most 200 bytes), or "" when there is none.
std::string LastLine(const std::string& out) {
  size_t end = out.find_last_not_of("\r\n \t");
  if (end == std::string::npos) return "";
  size_t start = out.rfind('\n', end);
  start = start == std::string::npos ? 0 : start + 1;
  std::string line = out.substr(start, std::min<size_t>(end + 1 - start, 200));
  return ": " + line;
}

// Forks and runs `child` (which must end with _exit) with its stdout on a pipe; collects the
// output until EOF or the deadline.
Result<std::string> ForkAndCollect(const std::string& what, const std::function<void(int)>& child,
                                   int timeout_ms, int* exit_status) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    return Status::IoError(what + ": pipe: " + std::strerror(errno));
  pid_t pid = ::fork();
  if (pid < 0) {
    int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    return Status::IoError(what + ": fork: " + std::strerror(err));
  }
  if (pid == 0) {
    ::close(fds[0]);
    child(fds[1]);
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string out;
  int64_t deadline = NowMs() + timeout_ms;
  bool timed_out = false;
  char buf[16384];
  for (;;) {
    int64_t left = deadline - NowMs();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    struct pollfd p = {fds[0], POLLIN, 0};
    int rc = ::poll(&p, 1, static_cast<int>(left));
    if (rc < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (rc == 0) {
      timed_out = true;
      break;
    }
    ssize_t n = ::read(fds[0], buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    return Status::DeadlineExceeded(what + " timed out after " + std::to_string(timeout_ms) +
                                    " ms");
  }
  if (WIFSIGNALED(status)) {
    return Status::Environment(what + " died with signal " + std::to_string(WTERMSIG(status)));
  }
  *exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

}  // namespace

Result<std::string> RunInChild(const std::string& what, const std::function<std::string()>& work,
                               int timeout_ms) {
  int exit_status = 0;
  auto out = ForkAndCollect(
      what, [&](int fd) { WriteAll(fd, work()); }, timeout_ms, &exit_status);
  if (!out.ok()) return out;
  if (exit_status != 0) {
    return Status::Environment(what + " exited with status " + std::to_string(exit_status));
  }
  return out;
}

Result<ProgramOutput> RunProgramForStatus(const std::vector<std::string>& argv, int timeout_ms) {
  if (argv.empty()) return Status::InvalidArgument("RunProgram: empty argv");
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  ProgramOutput result;
  auto out = ForkAndCollect(
      argv[0],
      [&](int fd) {
        int devnull = ::open("/dev/null", O_RDONLY);
        if (devnull >= 0) ::dup2(devnull, 0);
        ::dup2(fd, 1);
        ::dup2(fd, 2);
        ::execvp(args[0], args.data());
        ::_exit(kExecFailed);
      },
      timeout_ms, &result.exit_status);
  if (!out.ok()) return out.status();
  if (result.exit_status == kExecFailed) return Status::NotFound(argv[0] + ": cannot be executed");
  result.output = std::move(*out);
  return result;
}

Result<std::string> RunProgram(const std::vector<std::string>& argv, int timeout_ms) {
  CUTOVER_ASSIGN_OR_RETURN(ProgramOutput r, RunProgramForStatus(argv, timeout_ms));
  if (r.exit_status != 0) {
    return Status::Environment(argv[0] + " exited with status " + std::to_string(r.exit_status) +
                               LastLine(r.output));
  }
  return std::move(r.output);
}

}  // namespace cutover
