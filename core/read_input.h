// Reading a file named on the command line, where `-` means standard input (`--policy -`,
// `canary lint -`, `assess --source -`), the convention of every cutover command.
//
// Thread-safety: safe to call from any thread; standard input is read by one caller at most.
#ifndef CUTOVER_CORE_READ_INPUT_H_
#define CUTOVER_CORE_READ_INPUT_H_

#include <string>

#include "core/status.h"

namespace cutover {

// core/file_util.h ReadFile, except that "-" reads standard input to its end.
Result<std::string> ReadInput(const std::string& path);

}  // namespace cutover

#endif  // CUTOVER_CORE_READ_INPUT_H_
