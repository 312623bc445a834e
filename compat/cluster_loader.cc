#include "compat/cluster_loader.h"

#include <dlfcn.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

namespace cutover {
namespace {

// The Status of a plugin call: Ok for CUTOVER_CLUSTER_OK, else Environment with its reason.
Status FromCall(int rc, const char* what, const char* err, size_t size) {
  if (rc == CUTOVER_CLUSTER_OK) return Status::Ok();
  std::string reason = PluginLine(err, size);
  if (reason.empty()) reason = std::string(what) + " failed with code " + std::to_string(rc);
  return Status::Environment("MPI: " + reason);
}

}  // namespace

std::string PluginLine(const char* buf, size_t size) {
  std::string text;
  for (size_t i = 0; i < size && buf[i] != '\0'; ++i) {
    text += (buf[i] == '\n' || buf[i] == '\r' || buf[i] == '\t') ? ' ' : buf[i];
  }
  return text;
}

LoaderOptions MpiLoaderOptions() {
  LoaderOptions o;
  o.env_var = kMpiPluginEnvVar;
  o.file_name = kMpiPluginFileName;
  return o;
}

ClusterComm::ClusterComm(ClusterComm&& other) noexcept
    : handle_(other.handle_),
      table_(other.table_),
      path_(std::move(other.path_)),
      initialized_(other.initialized_),
      rank_(other.rank_),
      size_(other.size_) {
  other.handle_ = nullptr;
  other.initialized_ = false;
}

ClusterComm::~ClusterComm() {
  if (initialized_ && table_ != nullptr) table_->finalize();
}

std::string ClusterComm::build_info() const {
  return table_->build_info != nullptr ? table_->build_info : "";
}

std::string ClusterComm::LibraryVersion() const {
  char buf[256] = {0};
  table_->library_version(buf, sizeof(buf));
  return PluginLine(buf, sizeof(buf));
}

Status ClusterComm::Init() {
  char err[512] = {0};
  CUTOVER_RETURN_IF_ERROR(FromCall(table_->init(err, sizeof(err)), "MPI_Init", err, sizeof(err)));
  initialized_ = true;
  rank_ = table_->rank();
  size_ = table_->size();
  return Status::Ok();
}

void ClusterComm::AbortJob(int code) const {
  table_->abort_job(code);
  std::_Exit(code);
}

Status ClusterComm::Barrier() const {
  char err[512] = {0};
  return FromCall(table_->barrier(err, sizeof(err)), "MPI_Barrier", err, sizeof(err));
}

Status ClusterComm::Collective(int op, const float* send, float* recv, uint64_t count,
                               int root) const {
  char err[512] = {0};
  return FromCall(table_->collective(op, send, recv, count, root, err, sizeof(err)), "collective",
                  err, sizeof(err));
}

Status ClusterComm::Send(const void* buf, uint64_t bytes, int peer) const {
  char err[512] = {0};
  return FromCall(table_->send(buf, bytes, peer, err, sizeof(err)), "MPI_Send", err, sizeof(err));
}

Status ClusterComm::Recv(void* buf, uint64_t bytes, int peer) const {
  char err[512] = {0};
  return FromCall(table_->recv(buf, bytes, peer, err, sizeof(err)), "MPI_Recv", err, sizeof(err));
}

Status ClusterComm::SendRecv(const void* send, uint64_t send_bytes, int dest, void* recv,
                             uint64_t recv_bytes, int source) const {
  char err[512] = {0};
  return FromCall(
      table_->sendrecv(send, send_bytes, dest, recv, recv_bytes, source, err, sizeof(err)),
      "MPI_Sendrecv", err, sizeof(err));
}

Status ClusterComm::AllgatherBytes(const void* send, uint64_t bytes, void* recv) const {
  char err[512] = {0};
  return FromCall(table_->allgather_bytes(send, bytes, recv, err, sizeof(err)), "MPI_Allgather",
                  err, sizeof(err));
}

Status ClusterComm::AllreduceF64(std::vector<double>& values, int reduction) const {
  char err[512] = {0};
  return FromCall(table_->allreduce_f64(values.data(), values.data(), values.size(), reduction, err,
                                        sizeof(err)),
                  "MPI_Allreduce", err, sizeof(err));
}

Result<std::vector<std::string>> ClusterComm::AllgatherStrings(const std::string& mine) const {
  std::vector<double> longest = {static_cast<double>(mine.size())};
  CUTOVER_RETURN_IF_ERROR(AllreduceF64(longest, CUTOVER_CLUSTER_MAX));
  const size_t block = static_cast<size_t>(longest[0]) + 8;
  // Each block: 8 bytes of length, then the text padded with zeros.
  std::string send(block, '\0');
  const uint64_t len = mine.size();
  std::copy_n(reinterpret_cast<const char*>(&len), 8, send.begin());
  std::copy(mine.begin(), mine.end(), send.begin() + 8);
  std::string all(block * static_cast<size_t>(size_), '\0');
  CUTOVER_RETURN_IF_ERROR(AllgatherBytes(send.data(), block, all.data()));
  std::vector<std::string> out;
  for (int r = 0; r < size_; ++r) {
    const char* p = all.data() + static_cast<size_t>(r) * block;
    uint64_t n = 0;
    std::copy_n(p, 8, reinterpret_cast<char*>(&n));
    out.emplace_back(p + 8, std::min<uint64_t>(n, block - 8));
  }
  return out;
}

Result<ClusterComm> LoadMpiPlugin(const LoaderOptions& options) {
  std::vector<std::string> candidates = CudaPluginCandidates(options);
  std::string tried;
  for (const std::string& c : candidates) {
    std::error_code ec;
    if (std::filesystem::exists(c, ec)) return LoadClusterPluginFile(c);
    tried += (tried.empty() ? "" : ", ") + c;
  }
  if (tried.empty()) tried = "nothing (cannot read /proc/self/exe)";
  return Status::Environment("MPI plugin not found: tried " + tried + " (set " + options.env_var +
                             " to its path; it is built when OpenMPI 4's libopenmpi-dev is "
                             "installed)");
}

Result<ClusterComm> LoadClusterPluginFile(const std::string& path) {
  ::dlerror();
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (handle == nullptr) {
    const char* e = ::dlerror();
    std::string text = e != nullptr ? e : "unknown dlerror";
    return Status::Environment("cannot load MPI plugin: " + PluginLine(text.c_str(), text.size()));
  }
  auto refuse = [&](const std::string& why) {
    ::dlclose(handle);
    return Status::Environment("MPI plugin " + path + " refused: " + why);
  };
  void* sym = ::dlsym(handle, CUTOVER_CLUSTER_PLUGIN_ENTRY_NAME);
  if (sym == nullptr) {
    return refuse("no entry point " CUTOVER_CLUSTER_PLUGIN_ENTRY_NAME " (not a cutover plugin)");
  }
  const CutoverClusterPlugin* t =
      reinterpret_cast<CutoverClusterPluginEntryFn>(sym)(CUTOVER_CLUSTER_PLUGIN_ABI);
  if (t == nullptr) return refuse("its entry point returned no plugin table");
  if (t->abi != CUTOVER_CLUSTER_PLUGIN_ABI) {
    return refuse("plugin ABI " + std::to_string(t->abi) + ", this cutover speaks " +
                  std::to_string(CUTOVER_CLUSTER_PLUGIN_ABI));
  }
  if (t->struct_size < sizeof(CutoverClusterPlugin)) {
    return refuse("plugin table is " + std::to_string(t->struct_size) + " bytes, ABI " +
                  std::to_string(CUTOVER_CLUSTER_PLUGIN_ABI) + " needs " +
                  std::to_string(sizeof(CutoverClusterPlugin)));
  }
  const bool complete = t->init && t->finalize && t->abort_job && t->rank && t->size &&
                        t->library_version && t->wtime && t->barrier && t->collective && t->send &&
                        t->recv && t->sendrecv && t->allgather_bytes && t->allreduce_f64;
  if (!complete) return refuse("plugin table has a null function");
  return ClusterComm(handle, t, path);
}

}  // namespace cutover
