// Small file helpers every tool uses. Writes to a final name are atomic: the data goes to a
// temporary file in the same directory, is fsynced, renamed over the final name, and the
// directory is fsynced, so a crash leaves either the old file or the new one, never a mix.
//
// Thread-safety: safe to call concurrently on distinct paths.
#ifndef CUTOVER_CORE_FILE_UTIL_H_
#define CUTOVER_CORE_FILE_UTIL_H_

#include <string>
#include <string_view>
#include <sys/types.h>

#include "core/status.h"

namespace cutover {

// Reads the whole file. NotFound when it does not exist, IoError on other failures.
Result<std::string> ReadFile(const std::string& path);

// Atomically replaces `path` with `data`, created with `mode` (before umask).
Status WriteFileAtomic(const std::string& path, std::string_view data, mode_t mode = 0644);

// Creates `dir` and its parents (like mkdir -p) with `mode`.
Status MakeDirs(const std::string& dir, mode_t mode = 0755);

// Expands a leading "~/" with $HOME.
std::string ExpandHome(const std::string& path);

}  // namespace cutover

#endif  // CUTOVER_CORE_FILE_UTIL_H_
