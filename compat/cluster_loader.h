// Finds, loads and checks the MPI cluster plugin (compat/cluster_api.h) for a cluster run, and
// wraps its table in calls that return Status. The plugin is opened with RTLD_GLOBAL: OpenMPI
// dlopens its own components, which resolve libmpi's symbols from the global scope.
//
//   CUTOVER_ASSIGN_OR_RETURN(ClusterComm comm, LoadMpiPlugin(LoaderOptions{...}));
//   CUTOVER_RETURN_IF_ERROR(comm.Init());
//
// Thread-safety: a ClusterComm is used from one thread (MPI_THREAD_SINGLE).
#ifndef CUTOVER_COMPAT_CLUSTER_LOADER_H_
#define CUTOVER_COMPAT_CLUSTER_LOADER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "compat/backend_loader.h"
#include "compat/cluster_api.h"
#include "core/status.h"

namespace cutover {

inline constexpr char kMpiPluginFileName[] = "libcutover_compat_mpi.so";
inline constexpr char kMpiPluginEnvVar[] = "CUTOVER_MPI_PLUGIN";

// A plugin's NUL-terminated text buffer of capacity `size` as one line (newlines and tabs become
// spaces), for messages: the MPI plugin's and the CUDA plugin's device side alike.
std::string PluginLine(const char* buf, size_t size);

// LoaderOptions for the MPI plugin: <exe dir>/, <exe dir>/../lib/cutover/, or $CUTOVER_MPI_PLUGIN.
LoaderOptions MpiLoaderOptions();

// A loaded cluster plugin. Move-only; the destructor finalizes MPI when Init succeeded. The
// library stays loaded until exit (OpenMPI cannot be unloaded and loaded again).
class ClusterComm {
 public:
  ClusterComm(ClusterComm&& other) noexcept;
  ClusterComm& operator=(ClusterComm&&) = delete;
  ClusterComm(const ClusterComm&) = delete;
  ClusterComm& operator=(const ClusterComm&) = delete;
  ~ClusterComm();

  const std::string& path() const { return path_; }
  std::string build_info() const;
  std::string LibraryVersion() const;

  // MPI_Init. Environment with MPI's reason on failure. REQUIRES: called once.
  Status Init();
  int rank() const { return rank_; }
  int size() const { return size_; }
  double Wtime() const { return table_->wtime(); }
  // Ends every rank now (MPI_Abort); does not return.
  [[noreturn]] void AbortJob(int code) const;

  Status Barrier() const;
  Status Collective(int op, const float* send, float* recv, uint64_t count, int root) const;
  Status Send(const void* buf, uint64_t bytes, int peer) const;
  Status Recv(void* buf, uint64_t bytes, int peer) const;
  Status SendRecv(const void* send, uint64_t send_bytes, int dest, void* recv, uint64_t recv_bytes,
                  int source) const;
  Status AllgatherBytes(const void* send, uint64_t bytes, void* recv) const;
  // In place over `values` on every rank.
  Status AllreduceF64(std::vector<double>& values, int reduction) const;
  // Every rank's string, in rank order (lengths may differ).
  Result<std::vector<std::string>> AllgatherStrings(const std::string& mine) const;

  const CutoverClusterPlugin& table() const { return *table_; }

 private:
  friend Result<ClusterComm> LoadClusterPluginFile(const std::string& path);
  ClusterComm(void* handle, const CutoverClusterPlugin* table, std::string path)
      : handle_(handle), table_(table), path_(std::move(path)) {}

  void* handle_ = nullptr;
  const CutoverClusterPlugin* table_ = nullptr;
  std::string path_;
  bool initialized_ = false;
  int rank_ = -1, size_ = 0;
};

// Loads the first existing candidate of `options` (see MpiLoaderOptions). Environment when none
// exists ("MPI plugin not found: tried A, B (...)") or the one found fails to load or check.
Result<ClusterComm> LoadMpiPlugin(const LoaderOptions& options);

// dlopen(RTLD_NOW | RTLD_GLOBAL) of `path` and the checks of the entry point and table.
Result<ClusterComm> LoadClusterPluginFile(const std::string& path);

}  // namespace cutover

#endif  // CUTOVER_COMPAT_CLUSTER_LOADER_H_
