#include "canary/command.h"

namespace cutover {

void AddCanaryCommand(CLI::App& root, CommandContext& ctx) {
  CLI::App* cmd = root.add_subcommand(
      "canary", "Drive a gray-release cutover on a load balancer, judged by metrics");
  cmd->require_subcommand(1);
  cmd->footer(kExitCodesHelp);
  AddNotBuilt(*cmd, ctx, "start", "Run a rollout");
  AddNotBuilt(*cmd, ctx, "status", "Show a rollout's state");
  AddNotBuilt(*cmd, ctx, "pause", "Pause a rollout");
  AddNotBuilt(*cmd, ctx, "resume", "Resume a rollout");
  AddNotBuilt(*cmd, ctx, "promote", "Promote a rollout");
  AddNotBuilt(*cmd, ctx, "abort", "Abort a rollout");
  AddNotBuilt(*cmd, ctx, "history", "Show a rollout's history");
  AddNotBuilt(*cmd, ctx, "analyze", "Judge past metrics without moving traffic");
  AddNotBuilt(*cmd, ctx, "mirror", "Mirror requests and compare responses");
}

}  // namespace cutover
