// Rollout hooks: the operator's HTTP endpoints or commands that a rollout consults or tells at
// fixed points (spec `hooks:`): pre_step before each weight change and confirm_promotion before
// the last step (a failure holds the rollout at its current weights, and the hook is asked again
// later), on_rollback once a rollback has ended (a failure is only logged).
//
// A `url` hook is an HTTP POST of a HookEvent as JSON ("schema": "cutover.canary-hook/1",
// Content-Type application/json); any 2xx answer passes, every other answer or a transport
// failure fails, without retries (the controller asks again at its own pace). A `command` hook
// runs with sh -c after {{name}}, {{step}} and {{weight}} are substituted; exit 0 passes.
// Both are bounded by the hook's timeout.
//
// Thread-safety: HookEventJson is pure; a HookRunner is used by one thread at a time.
#ifndef CUTOVER_CANARY_HOOKS_H_
#define CUTOVER_CANARY_HOOKS_H_

#include <cstdint>
#include <memory>
#include <string>

#include "canary/spec.h"
#include "core/status.h"

namespace cutover {
class HttpClient;
}

namespace cutover::canary {

// Bump the version in HookEventJson's schema when a field changes meaning or goes away.
struct HookEvent {
  std::string hook;     // pre_step | confirm_promotion | on_rollback
  std::string rollout;  // the spec's name
  int64_t rollout_id = 0;
  int step = 0;         // the step about to be entered (on_rollback: the step rolled back from)
  int weight = 0;       // its canary percent (on_rollback: 0)
  int from_weight = 0;  // the canary percent now
  std::string reason;   // on_rollback: why
};

// {"schema": "cutover.canary-hook/1", "hook": ..., "rollout": ..., "rollout_id": ...,
//  "step": ..., "weight": ..., "from_weight": ..., "reason": ...}
std::string HookEventJson(const HookEvent& event);

class HookRunner {
 public:
  virtual ~HookRunner() = default;
  // Runs `hook` for `event`: Ok when it passed, else FailedPrecondition "hook pre_step: ..."
  // saying what the endpoint answered or how the command ended.
  virtual Status Run(const HookSpec& hook, const HookEvent& event) = 0;
};

// POSTs with libcurl, runs commands with sh -c.
class RealHookRunner : public HookRunner {
 public:
  RealHookRunner();
  ~RealHookRunner() override;
  Status Run(const HookSpec& hook, const HookEvent& event) override;

 private:
  std::unique_ptr<HttpClient> http_;
};

}  // namespace cutover::canary

#endif  // CUTOVER_CANARY_HOOKS_H_
