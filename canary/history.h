// A rollout's record in the state file, read back: the row, and the whole history document
// (`canary history --json`, and the canary section of `cutover assess`).
//
// Thread-safety: each call opens its own connection to the state file.
#ifndef CUTOVER_CANARY_HISTORY_H_
#define CUTOVER_CANARY_HISTORY_H_

#include <string>

#include <nlohmann/json.hpp>

#include "canary/state.h"
#include "core/status.h"

namespace cutover::canary {

// The newest rollout named `name` ("" = the newest of all). NotFound when there is none.
Result<RolloutRow> FindRollout(RolloutStore& store, const std::string& name);

// The rollout row as the documents write it ("rollout" in status and history).
nlohmann::json RolloutJson(const RolloutRow& r);

// The "cutover.rollout-history/1" document of rollout `name` ("" = the newest) in the state file
// `db_path`, as `canary history --json` prints it; `table`, when given, gets the text form. The
// state file is never created: a missing one is an error.
Result<nlohmann::json> RolloutHistory(const std::string& db_path, const std::string& name,
                                      std::string* table = nullptr);

}  // namespace cutover::canary

#endif  // CUTOVER_CANARY_HISTORY_H_
