#include "probe/command.h"

namespace cutover {

void AddProbeCommand(CLI::App& root, CommandContext& ctx) {
  CLI::App* cmd = root.add_subcommand("probe", "Fingerprint the driver, CUDA and library stacks and GPUs of a host or an image");
  cmd->require_subcommand(1);
  cmd->footer(kExitCodesHelp);
  AddNotBuilt(*cmd, ctx, "collect", "Fingerprint this host or an image root");
  AddNotBuilt(*cmd, ctx, "diff", "Diff two fingerprints into blockers and warnings");
  AddNotBuilt(*cmd, ctx, "fleet", "Check a fleet of fingerprints for consistency");
  AddNotBuilt(*cmd, ctx, "health", "Judge each GPU's health");
  AddNotBuilt(*cmd, ctx, "check-binary", "Check a binary's embedded GPU code against a target");
  AddNotBuilt(*cmd, ctx, "check", "Check a fingerprint against a policy");
}

}  // namespace cutover
