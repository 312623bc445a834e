// The `cutover canary` command layer: parses arguments and calls the canary library.
#ifndef CUTOVER_CANARY_COMMAND_H_
#define CUTOVER_CANARY_COMMAND_H_

#include "core/cli.h"

namespace cutover {

// Adds `canary` and its subcommands to `root`.
void AddCanaryCommand(CLI::App& root, CommandContext& ctx);

// The "cutover.rollout-history/1" document of rollout `name` ("" = the newest) in the state file
// `db_path`, as `canary history --json` prints it; `table`, when given, gets the text form.
Result<nlohmann::json> RolloutHistory(const std::string& db_path, const std::string& name,
                                      std::string* table = nullptr);

}  // namespace cutover

#endif
