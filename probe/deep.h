// What `probe collect` reads inside the GPU libraries it finds, beyond names and headers:
//   always     glibc_needed: the highest GLIBC_x.y its ELF .gnu.version_r needs;
//   --deep     sha256 of the real file (cached by device, inode, size and mtime in
//              $XDG_CACHE_HOME/cutover/ or ~/.cache/cutover/, written atomically), cuda_archs
//              (the SASS and PTX its .nv_fatbin embeds), and on the live host loaded_version:
//              the version the library itself reports when loaded (dlopen of the exact file)
//              in a child process with a deadline, so a library that crashes or hangs when
//              loaded is a finding, not a crash of the probe. With --root the image's libraries
//              are read as files only and never loaded (that would run the image's code here).
//
// Thread-safety: InspectLibraries forks (when loading); call it from the main thread.
#ifndef CUTOVER_PROBE_DEEP_H_
#define CUTOVER_PROBE_DEEP_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/file_system.h"
#include "core/fingerprint.h"
#include "core/status.h"
#include "probe/elf.h"

namespace cutover::probe {

class CollectContext;

// A ByteSource over one file of a FileSystem, read through ReadAt in windows of 1 MiB (or the
// length asked for), so a parser that walks headers of a 0.5 GB library reads little of it.
class FileSource : public ByteSource {
 public:
  // REQUIRES: `size` is the file's size (FileSystem::Stat).
  FileSource(const FileSystem& fs, std::string path, uint64_t size)
      : fs_(fs), path_(std::move(path)), size_(size) {}
  uint64_t size() const override { return size_; }
  // IoError "<path>: short read at <off>" when the file is shorter than when it was sized.
  Result<std::string_view> Read(uint64_t off, uint64_t len) override;
  uint64_t bytes_read() const { return bytes_read_; }

 private:
  const FileSystem& fs_;
  std::string path_;
  uint64_t size_;
  std::string window_;
  uint64_t window_off_ = 0;
  uint64_t bytes_read_ = 0;
};

// The SHA-256 hashes of files by (device, inode, size, mtime), kept in
// <dir>/sha256-cache.json ("schema": "cutover.hash-cache/1"; bump on an incompatible change).
class HashCache {
 public:
  // The cache directory for `env`: $XDG_CACHE_HOME/cutover when set and absolute, else
  // $HOME/.cache/cutover; "" when neither is set.
  static std::string DefaultDir(const std::map<std::string, std::string>& env);

  // Reads <dir>/sha256-cache.json. A missing file is an empty cache; an unreadable or corrupt
  // one is an empty cache and a "deep.hash_cache_corrupt" warning in *findings (the hashes are
  // computed again and the file rewritten).
  static HashCache Load(const std::string& dir, std::vector<Finding>* findings);

  std::string path() const;
  std::optional<std::string> Find(const FileInfo& info);
  void Put(const FileInfo& info, std::string hex);
  // Writes the file atomically (temporary name, fsync, rename), creating the directory; only
  // the entries used in this run are kept, so the file does not grow without bound.
  Status Save() const;

 private:
  static std::string Key(const FileInfo& info);
  std::string dir_;
  std::map<std::string, std::string> entries_;  // every entry read
  std::map<std::string, std::string> used_;     // the entries found or put in this run
  bool dirty_ = false;
};

// The version the library `name` (a LibraryInfo name: "cudnn", "cublasLt", "nccl", ...) at
// `path` reports when loaded in a child process: cudnnGetVersion, ncclGetVersion,
// cublas(Lt)GetProperty, cudaRuntimeGetVersion, nvrtcVersion, cufft/cusparseGetProperty,
// getInferLib*Version. nullopt when the library has no version call (cuDNN's sub-libraries, NCCL
// net plugins). Environment "<path>: <why>" when it cannot be loaded, the call is missing or
// fails, and RunInChild's errors when the child crashes or passes `timeout_ms`.
Result<std::optional<std::string>> LoadedLibraryVersion(const std::string& name,
                                                        const std::string& path, int timeout_ms);

// The SHA-256 (hex) of the whole file at `path`, read in pieces; adds the bytes read to
// *bytes.
Result<std::string> HashFile(const FileSystem& fs, const std::string& path, uint64_t* bytes);

// The GPU code a fatbin embeds as sorted, deduplicated arch names ("compute_90", "sm_90a").
struct ElfFacts {
  std::optional<std::string> glibc_needed;
  std::vector<std::string> cuda_archs;
  std::optional<std::string> ptx_isa;  // the newest PTX ISA of its PTX entries ("9.0")
};

// Reads the ELF headers, .gnu.version_r and (when `archs`) the .nv_fatbin headers of the file
// at `path`. InvalidArgument/IoError naming the path when it is not a readable ELF file.
Result<ElfFacts> ReadElfFacts(const FileSystem& fs, const std::string& path, bool archs);

struct DeepOptions {
  bool enabled = false;  // --deep
  bool load = false;     // also load each library in a child (live host only)
  int load_timeout_ms = 20000;
  std::string cache_dir;  // "" = no hash cache
};

// Fills glibc_needed of every library and, when `deep.enabled`, sha256, cuda_archs and (when
// `deep.load`) loaded_version; problems become findings of `ctx`. Returns what --deep did
// (nullopt without --deep).
std::optional<DeepInfo> InspectLibraries(CollectContext& ctx, const DeepOptions& deep,
                                         std::vector<LibraryInfo>* libraries);

}  // namespace cutover::probe

#endif  // CUTOVER_PROBE_DEEP_H_
