#include "datasync/command.h"

namespace cutover {

void AddDatasyncCommand(CLI::App& root, CommandContext& ctx) {
  CLI::App* cmd = root.add_subcommand("datasync", "Move datasets in content-defined chunks to and from dumb stores");
  cmd->require_subcommand(1);
  cmd->footer(kExitCodesHelp);
  AddNotBuilt(*cmd, ctx, "push", "Upload a directory as a snapshot");
  AddNotBuilt(*cmd, ctx, "pull", "Restore a snapshot");
  AddNotBuilt(*cmd, ctx, "verify", "Verify a snapshot");
  AddNotBuilt(*cmd, ctx, "plan", "Plan a push");
  AddNotBuilt(*cmd, ctx, "ls", "List snapshots");
  AddNotBuilt(*cmd, ctx, "gc", "Remove unreferenced chunks");
  AddNotBuilt(*cmd, ctx, "check", "Check a store's permissions and speed");
  AddNotBuilt(*cmd, ctx, "history", "List past transfers");
  AddNotBuilt(*cmd, ctx, "merge", "Publish shard parts as one snapshot");
}

}  // namespace cutover
