#include "core/status.h"

namespace cutover {

std::string_view CodeName(Code code) {
  switch (code) {
    case Code::kOk: return "ok";
    case Code::kInvalidArgument: return "invalid_argument";
    case Code::kNotFound: return "not_found";
    case Code::kUnimplemented: return "unimplemented";
    case Code::kCorruption: return "corruption";
    case Code::kFailedPrecondition: return "failed_precondition";
    case Code::kUnavailable: return "unavailable";
    case Code::kIoError: return "io_error";
    case Code::kEnvironment: return "environment";
    case Code::kDeadlineExceeded: return "deadline_exceeded";
    case Code::kAborted: return "aborted";
    case Code::kInternal: return "internal";
  }
  return "unknown";
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  std::string out(CodeName(code_));
  out += ": ";
  out += message_;
  return out;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  std::string m(context);
  m += ": ";
  m += message_;
  return Status(code_, std::move(m));
}

int ExitCodeFor(const Status& status) {
  switch (status.code()) {
    case Code::kOk: return 0;
    case Code::kInvalidArgument:
    case Code::kNotFound:
    case Code::kUnimplemented:
    case Code::kCorruption:
    case Code::kFailedPrecondition: return 2;
    case Code::kUnavailable:
    case Code::kIoError:
    case Code::kEnvironment:
    case Code::kDeadlineExceeded:
    case Code::kAborted:
    case Code::kInternal: return 3;
  }
  return 3;
}

}  // namespace cutover
