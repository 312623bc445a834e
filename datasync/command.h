// The `cutover datasync` command layer: parses arguments and calls the datasync library.
#ifndef CUTOVER_DATASYNC_COMMAND_H_
#define CUTOVER_DATASYNC_COMMAND_H_

#include "core/cli.h"

namespace cutover {

// Adds `datasync` and its subcommands to `root`.
void AddDatasyncCommand(CLI::App& root, CommandContext& ctx);

}  // namespace cutover

#endif
