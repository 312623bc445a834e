// Status and Result<T>: the one error vocabulary of cutover.
//
// Functions that can fail return a Status (or a Result<T> holding either a value or a Status)
// instead of throwing. Exceptions thrown by third-party libraries (nlohmann-json, yaml-cpp, CLI11)
// are caught in the adapter that calls them and turned into a Status there.
//
// Every Code maps to one process exit code (ExitCodeFor), the same across all tools:
//   0 ok; 1 findings (not an error: commands return it themselves); 2 usage or bad input;
//   3 environment (a server unreachable, a required library absent, an I/O failure).
//
// Thread-safety: Status and Result are values; distinct objects may be used from distinct threads.
#ifndef CUTOVER_CORE_STATUS_H_
#define CUTOVER_CORE_STATUS_H_

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace cutover {

enum class Code {
  kOk = 0,
  kInvalidArgument,     // bad flag, malformed or schema-invalid input: exit 2
  kNotFound,            // a named input (file, snapshot, record) does not exist: exit 2
  kUnimplemented,       // a command or feature not built yet: exit 2
  kCorruption,          // stored data fails its checks (hash, format): exit 2
  kFailedPrecondition,  // state forbids the call (store config mismatch, lock held): exit 2
  kUnavailable,         // a server unreachable or answering errors after retries: exit 3
  kIoError,             // a local file system error: exit 3
  kEnvironment,         // a required library or tool absent or broken: exit 3
  kDeadlineExceeded,    // a timeout: exit 3
  kAborted,             // interrupted (signal, user abort): exit 3
  kInternal,            // a bug: exit 3
};

// Returns the stable lower-case name of `code` ("invalid_argument", ...).
std::string_view CodeName(Code code);

class [[nodiscard]] Status {
 public:
  // An OK status.
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string m) { return {Code::kInvalidArgument, std::move(m)}; }
  static Status NotFound(std::string m) { return {Code::kNotFound, std::move(m)}; }
  static Status Unimplemented(std::string m) { return {Code::kUnimplemented, std::move(m)}; }
  static Status Corruption(std::string m) { return {Code::kCorruption, std::move(m)}; }
  static Status FailedPrecondition(std::string m) {
    return {Code::kFailedPrecondition, std::move(m)};
  }
  static Status Unavailable(std::string m) { return {Code::kUnavailable, std::move(m)}; }
  static Status IoError(std::string m) { return {Code::kIoError, std::move(m)}; }
  static Status Environment(std::string m) { return {Code::kEnvironment, std::move(m)}; }
  static Status DeadlineExceeded(std::string m) {
    return {Code::kDeadlineExceeded, std::move(m)};
  }
  static Status Aborted(std::string m) { return {Code::kAborted, std::move(m)}; }
  static Status Internal(std::string m) { return {Code::kInternal, std::move(m)}; }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

  // "ok", or "<code name>: <message>".
  std::string ToString() const;

  // Returns a copy whose message is "<context>: <message>"; an OK status stays OK.
  Status WithContext(std::string_view context) const;

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

// The process exit code for a failed operation (2 or 3, see the header comment); 0 when ok.
int ExitCodeFor(const Status& status);

// Result<T> holds a T or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  // REQUIRES: !status.ok()
  Result(Status status) : v_(std::move(status)) {  // NOLINT: implicit by design
    if (std::get<Status>(v_).ok()) v_ = Status::Internal("Result constructed from an OK status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  // The error, or OK when a value is held.
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(v_); }

  // REQUIRES: ok()
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  // By value, so `for (auto& x : F().value())` does not iterate a destroyed temporary.
  T value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  T value_or(T fallback) const { return ok() ? std::get<T>(v_) : std::move(fallback); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace cutover

#define CUTOVER_CONCAT_INNER_(a, b) a##b
#define CUTOVER_CONCAT_(a, b) CUTOVER_CONCAT_INNER_(a, b)

// Returns from the enclosing function when `expr` (a Status) is not OK.
#define CUTOVER_RETURN_IF_ERROR(expr)                       \
  do {                                                      \
    ::cutover::Status cutover_status_ = (expr);             \
    if (!cutover_status_.ok()) return cutover_status_;      \
  } while (0)

// `lhs = value of expr` (a Result<T>), or returns its Status from the enclosing function.
#define CUTOVER_ASSIGN_OR_RETURN(lhs, expr) \
  CUTOVER_ASSIGN_OR_RETURN_IMPL_(CUTOVER_CONCAT_(cutover_result_, __LINE__), lhs, expr)
#define CUTOVER_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                    \
  if (!tmp.ok()) return tmp.status();                   \
  lhs = std::move(tmp).value()

#endif  // CUTOVER_CORE_STATUS_H_
