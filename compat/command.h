// The `cutover compat` command layer: parses arguments and calls the compat library.
#ifndef CUTOVER_COMPAT_COMMAND_H_
#define CUTOVER_COMPAT_COMMAND_H_

#include "core/cli.h"

namespace cutover {

// Adds `compat` and its subcommands to `root`.
void AddCompatCommand(CLI::App& root, CommandContext& ctx);

}  // namespace cutover

#endif
