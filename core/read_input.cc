#include "core/read_input.h"

#include "core/file_util.h"

namespace cutover {

Result<std::string> ReadInput(const std::string& path) {
  // /dev/stdin reads a pipe, a redirected file or a terminal alike, through ReadFile's loop.
  return ReadFile(path == "-" ? std::string("/dev/stdin") : path);
}

}  // namespace cutover
