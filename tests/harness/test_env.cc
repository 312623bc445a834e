#include "tests/harness/test_env.h"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sys/wait.h>

namespace cutover::testing {

bool InCi() {
  const char* ci = std::getenv("CI");
  if (ci == nullptr) return false;
  std::string v(ci);
  return v == "true" || v == "1" || v == "TRUE" || v == "True";
}

std::string SourceDir() {
  const char* d = std::getenv("CUTOVER_SOURCE_DIR");
  return d != nullptr ? d : ".";
}

std::string BinaryDir() {
  const char* d = std::getenv("CUTOVER_BINARY_DIR");
  return d != nullptr ? d : ".";
}

TempDir::TempDir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string base = (tmp != nullptr && *tmp != '\0') ? tmp : "/tmp";
  std::string templ = base + "/cutover-test-XXXXXX";
  char* made = ::mkdtemp(templ.data());
  if (made == nullptr) {
    ADD_FAILURE() << "mkdtemp failed under " << base;
  }
  path_ = templ;
}

TempDir::~TempDir() {
  std::error_code ec;
  // Make everything writable first: tests create read-only files and directories.
  for (auto it = std::filesystem::recursive_directory_iterator(
           path_, std::filesystem::directory_options::skip_permission_denied, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_directory(ec) && !it->is_symlink(ec)) {
      std::filesystem::permissions(it->path(), std::filesystem::perms::owner_all,
                                   std::filesystem::perm_options::add, ec);
    }
  }
  std::filesystem::remove_all(path_, ec);
}

int RunShell(const std::string& cmd, std::string* output) {
  std::string full = cmd + " 2>&1";
  FILE* p = ::popen(full.c_str(), "r");
  if (p == nullptr) return -1;
  std::array<char, 4096> buf;
  std::string out;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  int status = ::pclose(p);
  if (output != nullptr) *output = std::move(out);
  if (status == -1) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace cutover::testing
