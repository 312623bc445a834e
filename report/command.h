// The `cutover assess` command layer: joins probe diff, compat compare, datasync plan and canary
// history into an assessment report.
#ifndef CUTOVER_REPORT_COMMAND_H_
#define CUTOVER_REPORT_COMMAND_H_

#include "core/cli.h"

namespace cutover {

// Adds `assess` to `root`.
void AddAssessCommand(CLI::App& root, CommandContext& ctx);

}  // namespace cutover

#endif
