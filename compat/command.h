// The `cutover compat` command layer: parses arguments and calls the compat library.
#ifndef CUTOVER_COMPAT_COMMAND_H_
#define CUTOVER_COMPAT_COMMAND_H_

#include "compat/cluster_suite.h"
#include "core/cli.h"

namespace cutover {

// Adds `compat` and its subcommands to `root`. `node_hooks`, handed in by the apps layer (compat
// does not include probe), collect each node's fingerprint for `run --suite cluster` and judge
// them as a fleet (compat/cluster_suite.h); an empty fingerprint hook: the minimal fingerprint
// compat makes itself (or --fingerprint FILE).
void AddCompatCommand(CLI::App& root, CommandContext& ctx, ClusterNodeHooks node_hooks = {});

}  // namespace cutover

#endif
