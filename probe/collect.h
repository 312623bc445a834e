// `probe collect`: the collectors that fill a Fingerprint from a host or an image root.
//
// Every collector reads through a FileSystem (core/file_system.h), so the same code fingerprints
// the live host (RealFileSystem("/")), an unpacked image or a fixture tree (--root DIR), or an
// in-memory tree in a unit test. Only with `live` does the collection also ask NVML and the CUDA
// driver (in a child process), read the process environment and LD_LIBRARY_PATH, and run nvcc.
// Problems met (a file that cannot be read, a garbled /proc file, a missing driver) become
// findings in the CollectContext, never crashes.
//
// Thread-safety: a CollectContext is used by one thread at a time.
#ifndef CUTOVER_PROBE_COLLECT_H_
#define CUTOVER_PROBE_COLLECT_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/file_system.h"
#include "core/fingerprint.h"
#include "probe/deep.h"
#include "probe/live_driver.h"

namespace cutover::probe {

struct CollectOptions {
  // Live host: ask NVML/libcuda, use `env` for LD_LIBRARY_PATH/CUDA_HOME/site-packages hints,
  // run nvcc when a toolkit has no version file. False for --root.
  bool live = false;
  // The environment the env section and live search paths come from.
  std::map<std::string, std::string> env;
  LiveDriverOptions driver;
  // The kernel release when live and /proc/sys/kernel/osrelease is unreadable (uname), and the
  // machine ("x86_64"); empty = unknown.
  std::string uname_release;
  std::string uname_machine;
  std::string hostname;
  // The C library this process runs on (gnu_get_libc_version), used for os.glibc when live.
  std::string libc_version;
  // --deep: hashes, GPU architectures and (live only: `load` is ignored otherwise) the versions
  // the libraries report when loaded in a child process.
  DeepOptions deep;
  // Read the kernel log for Xid events (gpus[].xid_events): /dev/kmsg or /var/log/kern.log
  // when live, <root>/var/log/kern.log (if it exists) otherwise.
  bool read_kernel_log = true;
};

// What collectors share: the tree, the options, and the findings so far.
class CollectContext {
 public:
  CollectContext(const FileSystem& fs, CollectOptions options)
      : fs_(fs), options_(std::move(options)) {}

  const FileSystem& fs() const { return fs_; }
  const CollectOptions& options() const { return options_; }
  const std::vector<Finding>& findings() const { return findings_; }
  std::vector<Finding>& mutable_findings() { return findings_; }

  void AddFinding(std::string severity, std::string code, std::string message);

  // The file's content; nullopt when absent (silently) or unreadable (a "file.unreadable"
  // warning naming the path and reason).
  std::optional<std::string> ReadOptional(const std::string& path,
                                          size_t max_bytes = FileSystem::kDefaultMaxRead);
  // The directory's entries; empty when absent (silently) or unreadable (a finding).
  std::vector<std::string> ListOptional(const std::string& path);

  // Expands a pattern whose components may hold '*' and '?' (fnmatch), e.g.
  // "/usr/local/lib/python3.*/site-packages"; existing paths only, sorted.
  std::vector<std::string> Glob(const std::string& pattern);

 private:
  const FileSystem& fs_;
  CollectOptions options_;
  std::vector<Finding> findings_;
};

OsInfo CollectOs(CollectContext& ctx);
CpuInfo CollectCpu(CollectContext& ctx);
std::optional<uint64_t> CollectMemoryMib(CollectContext& ctx);

// The driver from files only: /proc/driver/nvidia/version, libcuda.so.<version> in `lib_dirs`,
// fabric manager and container toolkit packages, CDI specs.
DriverInfo CollectDriverFromFiles(CollectContext& ctx, const std::vector<std::string>& lib_dirs);

// GPUs from /proc/driver/nvidia/gpus/*/information and /sys/bus/pci/devices (NVIDIA display
// and 3D controllers), completed from the GPU table; MIG instances from the capability files
// under /proc/driver/nvidia/capabilities/gpu<minor>/mig (mig stays unknown when there are none).
std::vector<GpuInfo> CollectGpusFromFiles(CollectContext& ctx);

// GPU sharing hints (driver.sharing) from what the host can see: MIG, a vGPU profile name or
// the vGPU guest driver's licensing daemon, the MPS control daemon's pipe directory, MPS and
// NVIDIA_VISIBLE_DEVICES variables (live), and time-slicing/MPS labels written by GPU Feature
// Discovery under /etc/kubernetes/node-feature-discovery/features.d/. `s` may already hold
// NVML's virtualization mode (live).
void CollectSharing(CollectContext& ctx, const std::vector<GpuInfo>& gpus, SharingInfo* s);

// Fills what a GPU lacks (compute capability, memory, generation, name) from the GPU table.
void CompleteFromGpuTable(GpuInfo* gpu);

std::vector<ToolkitInfo> CollectToolkits(CollectContext& ctx);

// Python site-packages / dist-packages directories of the tree.
std::vector<std::string> FindSitePackages(CollectContext& ctx);

// The library search directories in order, each with its origin ("ld.so.conf", "standard",
// "LD_LIBRARY_PATH", "cuda", "pip", "extra"); deduplicated by real path; stubs/ skipped.
std::vector<std::pair<std::string, std::string>> LibrarySearchDirs(
    CollectContext& ctx, const std::vector<ToolkitInfo>& toolkits,
    const std::vector<std::string>& site_packages);

std::vector<LibraryInfo> CollectLibraries(
    CollectContext& ctx, const std::vector<std::pair<std::string, std::string>>& dirs);

std::vector<FrameworkInfo> CollectFrameworks(CollectContext& ctx,
                                             const std::vector<std::string>& site_packages);

// CUDA_*, NCCL_*, NVIDIA_*, TORCH_*, LD_LIBRARY_PATH, CUBLAS_WORKSPACE_CONFIG from
// options().env; values of secret-looking names are "[REDACTED]".
std::map<std::string, std::string> CollectEnv(CollectContext& ctx);

NetworkInfo CollectNetwork(CollectContext& ctx);

// The whole fingerprint (collection.duration_ms included).
Fingerprint Collect(const FileSystem& fs, CollectOptions options);

// The options for the live host: the process environment, uname, hostname, live = true.
CollectOptions LiveOptions();

// A readable multi-line summary of a fingerprint for people.
std::string RenderTable(const Fingerprint& fp);

}  // namespace cutover::probe

#endif  // CUTOVER_PROBE_COLLECT_H_
