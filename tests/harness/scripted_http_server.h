// A scripted HTTP/1.1 server on 127.0.0.1 for tests: one thread with poll(), keep-alive, and
// answers taken from a queue of scripted responses or from a handler, including faults (a delay
// before the answer, closing without an answer, a TCP reset, a head or a body cut short). It records every
// request and counts connections, so tests can assert what a client sent and how.
//
//   ScriptedHttpServer server;
//   ASSERT_TRUE(server.Start().ok());
//   server.Enqueue({.status = 503});
//   server.Enqueue({.status = 200, .body = "ok"});
//   ... client.Send({.url = server.Url("/x")}) ...
//   EXPECT_EQ(server.request_count(), 2u);
//
// The answer to each request is the front of the queue, else the handler's, else a 404.
// Requests: Content-Length and chunked bodies, "Expect: 100-continue" (answered with 100). A
// connection whose first bytes are not an HTTP request line (a TLS ClientHello) gets a 400 and is
// closed. Delays do not hold up other connections. A client that closes (or half-closes) its end
// is dropped at once, even while its answer waits out a delay.
//
// Thread-safety: every public method may be called from any thread while the server runs; the
// handler runs on the server thread.
#ifndef CUTOVER_TESTS_HARNESS_SCRIPTED_HTTP_SERVER_H_
#define CUTOVER_TESTS_HARNESS_SCRIPTED_HTTP_SERVER_H_

#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "core/status.h"

namespace cutover::testing {

struct ScriptedResponse {
  enum class Action {
    kAnswer,               // send the response
    kCloseWithoutAnswer,   // close the connection, sending nothing
    kReset,                // abort the connection with a TCP RST
    kPartialBodyThenClose,  // send the head (full Content-Length) and `partial_bytes` of the body
    kPartialHeadThenClose   // send only the first `partial_bytes` of the head, then close
  };
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;  // Content-Length is added if absent
  std::string body;
  std::chrono::milliseconds delay{0};  // wait before acting
  Action action = Action::kAnswer;
  size_t partial_bytes = 0;
  bool close_after = false;  // send "Connection: close" and close after answering
};

struct RecordedRequest {
  std::string method;
  std::string target;  // path and query as sent
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  int connection_id = 0;  // 1-based, in accept order

  // The first header named `name` (case-insensitive), or nullopt.
  std::optional<std::string> Header(std::string_view name) const;
};

class ScriptedHttpServer {
 public:
  using Handler = std::function<ScriptedResponse(const RecordedRequest&)>;

  ScriptedHttpServer() = default;
  ~ScriptedHttpServer();  // stops the server
  ScriptedHttpServer(const ScriptedHttpServer&) = delete;
  ScriptedHttpServer& operator=(const ScriptedHttpServer&) = delete;

  // Binds 127.0.0.1:`port` (0: the kernel picks) and starts the server thread.
  Status Start(int port = 0);
  // Closes every connection and joins the thread. Idempotent.
  void Stop();

  int port() const { return port_; }
  // "http://127.0.0.1:<port>" + path.
  std::string Url(std::string_view path = "/") const;

  void Enqueue(ScriptedResponse response);
  void SetHandler(Handler handler);

  std::vector<RecordedRequest> requests() const;
  size_t request_count() const;
  int connections_accepted() const;
  int open_connections() const;
  int max_open_connections() const;  // the most connections open at once
  // Forgets requests and connection counts (open connections stay open and counted).
  void ClearRecords();

 private:
  struct Conn;
  void Loop();
  ScriptedResponse Choose(const RecordedRequest& request);

  int listen_fd_ = -1;
  int wake_fd_ = -1;
  int port_ = 0;
  std::thread thread_;

  mutable std::mutex mu_;
  std::deque<ScriptedResponse> queue_;
  Handler handler_;
  std::vector<RecordedRequest> requests_;
  int accepted_ = 0;
  int open_ = 0;
  int max_open_ = 0;
};

}  // namespace cutover::testing

#endif  // CUTOVER_TESTS_HARNESS_SCRIPTED_HTTP_SERVER_H_
