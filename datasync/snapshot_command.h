// `cutover datasync ls | snapshots | forget | diff`: the commands that read and thin out a store's
// snapshot series (datasync/snapshots.h). Parses arguments and prints; the work is the library's.
#ifndef CUTOVER_DATASYNC_SNAPSHOT_COMMAND_H_
#define CUTOVER_DATASYNC_SNAPSHOT_COMMAND_H_

#include "core/cli.h"

namespace cutover {

// Adds ls, snapshots, forget and diff to the `datasync` command.
void AddSnapshotCommands(CLI::App& datasync, CommandContext& ctx);

}  // namespace cutover

#endif  // CUTOVER_DATASYNC_SNAPSHOT_COMMAND_H_
