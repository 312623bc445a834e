// Logging with levels, to stderr, where everything that looks like a secret is redacted before it
// is written: Authorization/Cookie/token headers, NAME=value pairs whose NAME ends in _KEY,
// _SECRET, _TOKEN or contains PASSWORD/PASSWD, and passwords in URLs (scheme://user:pw@host).
//
//   CUTOVER_LOG(kInfo) << "PUT " << url << " -> " << code;
//
// Thread-safety: all functions are thread-safe; each message is written with one write(2).
#ifndef CUTOVER_CORE_LOG_H_
#define CUTOVER_CORE_LOG_H_

#include <functional>
#include <sstream>
#include <string>
#include <string_view>

namespace cutover {

enum class LogLevel { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

// "error" | "warn" | "info" | "debug"; anything else gives kWarn.
LogLevel ParseLogLevel(std::string_view name);
void SetLogLevel(LogLevel level);
bool LogEnabled(LogLevel level);

// Writes "cutover <level>: <Redact(message)>\n" to the sink (stderr unless replaced).
void Log(LogLevel level, std::string_view message);

// Replaces the sink (tests capture output with this); nullptr restores stderr.
void SetLogSink(std::function<void(std::string_view line)> sink);

// Returns `text` with every secret-looking value replaced by "[REDACTED]".
std::string Redact(std::string_view text);

// True when an environment variable or header of this name carries a secret by its name
// (*_KEY, *_SECRET, *_TOKEN, *PASSWORD*, *PASSWD*, *CREDENTIAL*, Authorization, Cookie, ...).
bool IsSecretName(std::string_view name);

namespace internal {
class LogMessage {
 public:
  explicit LogMessage(LogLevel level) : level_(level) {}
  ~LogMessage() { Log(level_, stream_.str()); }
  std::ostringstream& stream() { return stream_; }

 private:
  LogLevel level_;
  std::ostringstream stream_;
};
}  // namespace internal

}  // namespace cutover

#define CUTOVER_LOG(level)                                          \
  if (!::cutover::LogEnabled(::cutover::LogLevel::level)) {         \
  } else                                                            \
    ::cutover::internal::LogMessage(::cutover::LogLevel::level).stream()

#endif  // CUTOVER_CORE_LOG_H_
