// The `cutover probe` command layer: parses arguments and calls the probe library.
#ifndef CUTOVER_PROBE_COMMAND_H_
#define CUTOVER_PROBE_COMMAND_H_

#include "core/cli.h"

namespace cutover {

// Adds `probe` and its subcommands to `root`.
void AddProbeCommand(CLI::App& root, CommandContext& ctx);

}  // namespace cutover

#endif
