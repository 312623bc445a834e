// The `cutover compat` command layer: parses arguments and calls the compat library.
#ifndef CUTOVER_COMPAT_COMMAND_H_
#define CUTOVER_COMPAT_COMMAND_H_

#include "compat/cluster_suite.h"
#include "core/cli.h"

namespace cutover {

// Adds `compat` and its subcommands to `root`. `node_fingerprint`, handed in by the apps layer
// (compat does not include probe), collects one node's fingerprint for `run --suite cluster`;
// empty: the minimal fingerprint compat makes itself (or --fingerprint FILE).
void AddCompatCommand(CLI::App& root, CommandContext& ctx, NodeFingerprintFn node_fingerprint = {});

}  // namespace cutover

#endif
