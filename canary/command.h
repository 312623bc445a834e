// The `cutover canary` command layer: parses arguments and calls the canary library.
#ifndef CUTOVER_CANARY_COMMAND_H_
#define CUTOVER_CANARY_COMMAND_H_

#include "core/cli.h"

namespace cutover {

// Adds `canary` and its subcommands to `root`.
void AddCanaryCommand(CLI::App& root, CommandContext& ctx);

}  // namespace cutover

#endif
