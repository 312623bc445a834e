#include "canary/hooks.h"

#include <nlohmann/json.hpp>

#include "core/http_client.h"
#include "core/subprocess.h"

namespace cutover::canary {

std::string HookEventJson(const HookEvent& e) {
  nlohmann::json j = {
      {"schema", "cutover.canary-hook/1"}, {"hook", e.hook},    {"rollout", e.rollout},
      {"rollout_id", e.rollout_id},        {"step", e.step},    {"weight", e.weight},
      {"from_weight", e.from_weight},      {"reason", e.reason}};
  return j.dump();
}

RealHookRunner::RealHookRunner()
    : http_(std::make_unique<HttpClient>(HttpClientOptions{.max_attempts = 1})) {}

RealHookRunner::~RealHookRunner() = default;

Status RealHookRunner::Run(const HookSpec& hook, const HookEvent& event) {
  const std::string prefix = "hook " + event.hook + ": ";
  if (!hook.url.empty()) {
    HttpRequest request{.method = "POST",
                        .url = hook.url,
                        .headers = {{"Content-Type", "application/json"}},
                        .body = HookEventJson(event),
                        .timeout = hook.timeout};
    Result<HttpResponse> r = http_->Send(request);
    if (!r.ok()) return Status::FailedPrecondition(prefix + r.status().message());
    if (r->status < 200 || r->status > 299) {
      std::string body = r->body.substr(0, 200);
      for (char& c : body) {
        if (c == '\n' || c == '\r') c = ' ';
      }
      return Status::FailedPrecondition(prefix + RedactUrl(hook.url) + " answered " +
                                        std::to_string(r->status) +
                                        (body.empty() ? "" : ": " + body));
    }
    return Status::Ok();
  }
  Result<std::string> command =
      RenderTemplate(hook.command, {{"name", event.rollout},
                                    {"step", std::to_string(event.step)},
                                    {"weight", std::to_string(event.weight)}});
  if (!command.ok()) return Status::FailedPrecondition(prefix + command.status().message());
  Result<std::string> out =
      RunProgram({"sh", "-c", *command}, static_cast<int>(hook.timeout.count()));
  if (!out.ok()) return Status::FailedPrecondition(prefix + out.status().message());
  return Status::Ok();
}

}  // namespace cutover::canary
