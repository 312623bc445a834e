#include "compat/command.h"

namespace cutover {

void AddCompatCommand(CLI::App& root, CommandContext& ctx) {
  CLI::App* cmd = root.add_subcommand("compat", "Run framework kernels on source and target and compare numerics and speed");
  cmd->require_subcommand(1);
  cmd->footer(kExitCodesHelp);
  AddNotBuilt(*cmd, ctx, "list", "List the ops, dtypes and suites");
  AddNotBuilt(*cmd, ctx, "run", "Run a suite and write a record");
  AddNotBuilt(*cmd, ctx, "compare", "Compare two records");
}

}  // namespace cutover
