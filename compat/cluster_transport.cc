#include "compat/cluster_transport.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <system_error>

#include "compat/cluster_device_api.h"

extern char** environ;

namespace cutover {
namespace {

class MpiTransport : public ClusterTransport {
 public:
  explicit MpiTransport(const ClusterComm& comm) : comm_(comm) {}

  bool Offers(int /*op*/, bool /*in_place*/) const override { return true; }

  Status Call(int op, const float* send, float* recv, uint64_t count, int root) override {
    if (op == CUTOVER_CLUSTER_SENDRECV) {
      const int n = comm_.size(), r = comm_.rank();
      return comm_.SendRecv(send, count * sizeof(float), (r + 1) % n, recv, count * sizeof(float),
                            (r + n - 1) % n);
    }
    return comm_.Collective(op, send, recv, count, root);
  }

  Result<std::vector<double>> Time(int op, const float* send, float* recv, uint64_t count, int root,
                                   int warmup, int reps) override {
    for (int i = 0; i < warmup; ++i) CUTOVER_RETURN_IF_ERROR(Call(op, send, recv, count, root));
    // One barrier, then the timed calls back to back as nccl-tests and a plain MPI loop time
    // them (a barrier per call would add every rank's skew to every call); each call's time is
    // the difference of consecutive clock reads, so the repetitions still give an interval.
    std::vector<double> out(reps);
    CUTOVER_RETURN_IF_ERROR(comm_.Barrier());
    double last = comm_.Wtime();
    for (int i = 0; i < reps; ++i) {
      CUTOVER_RETURN_IF_ERROR(Call(op, send, recv, count, root));
      const double now = comm_.Wtime();
      out[i] = now - last;
      last = now;
    }
    return out;
  }

  Status Send(const void* buf, uint64_t bytes, int peer) override {
    return comm_.Send(buf, bytes, peer);
  }
  Status Recv(void* buf, uint64_t bytes, int peer) override { return comm_.Recv(buf, bytes, peer); }

  nlohmann::json Describe() const override {
    return {{"kind", "mpi"}, {"library", comm_.LibraryVersion()}};
  }

 private:
  const ClusterComm& comm_;
};

// A device-side return code as a Status: a watchdog abort is DeadlineExceeded, a missing op
// Unimplemented, the rest Environment (exit 3 all).
Status FromDevice(int rc, const char* err, size_t size) {
  if (rc == CUTOVER_CLUSTER_DEVICE_OK) return Status::Ok();
  std::string reason = PluginLine(err, size);
  if (reason.empty()) reason = "device call failed with code " + std::to_string(rc);
  if (rc == CUTOVER_CLUSTER_DEVICE_ERR_TIMEOUT) return Status::DeadlineExceeded(reason);
  if (rc == CUTOVER_CLUSTER_DEVICE_ERR_UNSUPPORTED) return Status::Unimplemented(reason);
  return Status::Environment(reason);
}

// The NCCL_* variables this process sees, sorted ("NCCL_ALGO=Ring").
std::map<std::string, std::string> NcclVariables() {
  std::map<std::string, std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    if (std::strncmp(*e, "NCCL_", 5) != 0) continue;
    const char* eq = std::strchr(*e, '=');
    if (eq == nullptr) continue;
    out[std::string(*e, static_cast<size_t>(eq - *e))] = eq + 1;
  }
  return out;
}

class DeviceTransport : public ClusterTransport {
 public:
  DeviceTransport(const ClusterComm& comm, const CutoverClusterDevice* table)
      : comm_(comm), t_(table) {}
  ~DeviceTransport() override {
    if (joined_) t_->destroy();
    // The library stays loaded (never dlclosed): NCCL's threads may still be unwinding.
  }

  bool Offers(int op, bool in_place) const override {
    return !(op == CUTOVER_CLUSTER_ALLTOALL && in_place);
  }

  Status Call(int op, const float* send, float* recv, uint64_t count, int root) override {
    char err[512] = {0};
    return FromDevice(t_->collective(op, send, recv, count, root, err, sizeof err), err,
                      sizeof err);
  }

  Result<std::vector<double>> Time(int op, const float* send, float* /*recv*/, uint64_t count,
                                   int root, int warmup, int reps) override {
    std::vector<double> out(reps);
    char err[512] = {0};
    // The ranks start together, as the MPI loop does; the device then times between events.
    CUTOVER_RETURN_IF_ERROR(comm_.Barrier());
    CUTOVER_RETURN_IF_ERROR(
        FromDevice(t_->time_collective(op, send == nullptr ? 1 : 0, count, root, warmup, reps,
                                       out.data(), err, sizeof err),
                   err, sizeof err));
    return out;
  }

  Status Send(const void* /*buf*/, uint64_t bytes, int peer) override {
    char err[512] = {0};
    return FromDevice(t_->send(bytes, peer, err, sizeof err), err, sizeof err);
  }
  Status Recv(void* /*buf*/, uint64_t bytes, int peer) override {
    char err[512] = {0};
    return FromDevice(t_->recv(bytes, peer, err, sizeof err), err, sizeof err);
  }

  nlohmann::json Describe() const override { return describe_; }

  std::string SecondPassAlgo() const override { return second_algo_; }

  Status Reopen(const std::string& algo) override {
    if (joined_) t_->destroy();
    joined_ = false;
    return Join(algo);
  }

  // Rank 0's unique id to every rank (MPI is the bootstrap, as nccl-tests does it), then every
  // rank joins on device_ with `algo` ("" NCCL's choice); agreed across ranks.
  Status Join(const std::string& algo) {
    const int me = comm_.rank(), n = comm_.size();
    char err[512] = {0};
    std::vector<uint8_t> id(CUTOVER_CLUSTER_DEVICE_ID_BYTES, 0);
    Status st =
        me == 0 ? FromDevice(t_->unique_id(id.data(), id.size(), err, sizeof err), err, sizeof err)
                : Status::Ok();
    CUTOVER_RETURN_IF_ERROR(AgreeOnStatus(comm_, st));
    std::vector<uint8_t> all(id.size() * static_cast<size_t>(n));
    CUTOVER_RETURN_IF_ERROR(comm_.AllgatherBytes(id.data(), id.size(), all.data()));
    std::copy_n(all.begin(), id.size(), id.begin());
    st = FromDevice(t_->init_rank(id.data(), id.size(), n, me, device_, timeout_s_,
                                  algo.empty() ? nullptr : algo.c_str(), err, sizeof err),
                    err, sizeof err);
    if (st.ok()) joined_ = true;
    return AgreeOnStatus(comm_, st);
  }

  const CutoverClusterDevice& table() const { return *t_; }
  void set_device(int device, double timeout_s) {
    device_ = device;
    timeout_s_ = timeout_s;
  }
  void set_second_algo(std::string algo) { second_algo_ = std::move(algo); }
  void set_describe(nlohmann::json d) { describe_ = std::move(d); }

 private:
  const ClusterComm& comm_;
  const CutoverClusterDevice* t_;
  bool joined_ = false;
  int device_ = 0;
  double timeout_s_ = 600;
  std::string second_algo_;
  nlohmann::json describe_;
};

// dlopens the first existing candidate and checks its device table.
Result<std::unique_ptr<DeviceTransport>> LoadDevice(const ClusterComm& comm,
                                                    const LoaderOptions& options) {
  std::string tried, path;
  for (const std::string& c : CudaPluginCandidates(options)) {
    std::error_code ec;
    if (std::filesystem::exists(c, ec)) {
      path = c;
      break;
    }
    tried += (tried.empty() ? "" : ", ") + c;
  }
  if (path.empty()) {
    return Status::Environment("CUDA plugin not found: tried " +
                               (tried.empty() ? std::string("nothing") : tried) + " (set " +
                               options.env_var + " to its path)");
  }
  ::dlerror();
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* e = ::dlerror();
    const std::string text = e != nullptr ? e : "unknown dlerror";
    return Status::Environment("cannot load the CUDA plugin: " +
                               PluginLine(text.c_str(), text.size()));
  }
  auto refuse = [&](const std::string& why) {
    ::dlclose(handle);
    return Status::Environment("CUDA plugin " + path + " refused for a cluster run: " + why);
  };
  void* sym = ::dlsym(handle, CUTOVER_CLUSTER_DEVICE_ENTRY_NAME);
  if (sym == nullptr) {
    return refuse("no entry point " CUTOVER_CLUSTER_DEVICE_ENTRY_NAME
                  " (a plugin built before the cluster suite had a device side)");
  }
  const CutoverClusterDevice* t =
      reinterpret_cast<CutoverClusterDeviceEntryFn>(sym)(CUTOVER_CLUSTER_DEVICE_ABI);
  if (t == nullptr) return refuse("its entry point returned no table");
  if (t->abi != CUTOVER_CLUSTER_DEVICE_ABI) {
    return refuse("device ABI " + std::to_string(t->abi) + ", this cutover speaks " +
                  std::to_string(CUTOVER_CLUSTER_DEVICE_ABI));
  }
  if (t->struct_size < sizeof(CutoverClusterDevice)) {
    return refuse("its table is " + std::to_string(t->struct_size) + " bytes, ABI " +
                  std::to_string(CUTOVER_CLUSTER_DEVICE_ABI) + " needs " +
                  std::to_string(sizeof(CutoverClusterDevice)));
  }
  const bool complete = t->library_version && t->device_count && t->device_name && t->unique_id &&
                        t->init_rank && t->destroy && t->collective && t->time_collective &&
                        t->send && t->recv;
  if (!complete) return refuse("its table has a null function");
  return std::make_unique<DeviceTransport>(comm, t);
}

}  // namespace

std::unique_ptr<ClusterTransport> MakeMpiTransport(const ClusterComm& comm) {
  return std::make_unique<MpiTransport>(comm);
}

int LocalRankOf(int rank, const std::vector<std::string>& node_of, int launcher_local_rank) {
  if (launcher_local_rank >= 0) return launcher_local_rank;
  int local = 0;
  for (int r = 0; r < rank && r < static_cast<int>(node_of.size()); ++r) {
    if (node_of[r] == node_of[rank]) ++local;
  }
  return local;
}

Status AgreeOnStatus(const ClusterComm& comm, const Status& mine) {
  const std::string line =
      mine.ok() ? std::string()
                : std::to_string(static_cast<int>(mine.code())) + " " + mine.message();
  CUTOVER_ASSIGN_OR_RETURN(std::vector<std::string> all, comm.AllgatherStrings(line));
  for (size_t r = 0; r < all.size(); ++r) {
    if (all[r].empty()) continue;
    const size_t space = all[r].find(' ');
    const int code = std::atoi(all[r].substr(0, space).c_str());
    return Status(static_cast<Code>(code),
                  "rank " + std::to_string(r) + ": " + all[r].substr(space + 1));
  }
  return Status::Ok();
}

Result<std::unique_ptr<ClusterTransport>> OpenDeviceTransport(const ClusterComm& comm,
                                                              const Launcher& launcher,
                                                              double timeout_s,
                                                              const LoaderOptions& options) {
  const int me = comm.rank(), n = comm.size();
  Result<std::unique_ptr<DeviceTransport>> loaded = LoadDevice(comm, options);
  CUTOVER_RETURN_IF_ERROR(AgreeOnStatus(comm, loaded.status()));
  std::unique_ptr<DeviceTransport> dev = std::move(*loaded);
  const CutoverClusterDevice& t = dev->table();
  char err[512] = {0};

  // This rank's device: its local rank, which the node must have.
  const std::string my_node = NodeName(launcher);
  CUTOVER_ASSIGN_OR_RETURN(std::vector<std::string> node_of, comm.AllgatherStrings(my_node));
  const int local = LocalRankOf(me, node_of, launcher.local_rank);
  int devices = 0;
  Status st = FromDevice(t.device_count(&devices, err, sizeof err), err, sizeof err);
  if (st.ok() && local >= devices) {
    st = Status::InvalidArgument(
        "compat run --suite cluster: local rank " + std::to_string(local) + " on node " + my_node +
        ", which has " + std::to_string(devices) +
        " GPU(s): start at most one rank per GPU (--ntasks-per-node, mpirun --map-by "
        "ppr:GPUS:node)");
  }
  CUTOVER_RETURN_IF_ERROR(AgreeOnStatus(comm, st));
  char name[512] = {0};
  st = FromDevice(t.device_name(local, name, sizeof name, err, sizeof err), err, sizeof err);
  CUTOVER_RETURN_IF_ERROR(AgreeOnStatus(comm, st));

  dev->set_device(local, timeout_s);
  CUTOVER_RETURN_IF_ERROR(dev->Join(""));

  // The record: the library, the variables that steer NCCL (rank 0's, and which ranks differ),
  // each rank's device.
  char version[128] = {0};
  t.library_version(version, sizeof version);
  nlohmann::json vars = nlohmann::json::object();
  for (const auto& [k, v] : NcclVariables()) vars[k] = v;
  CUTOVER_ASSIGN_OR_RETURN(std::vector<std::string> var_lines, comm.AllgatherStrings(vars.dump()));
  nlohmann::json differ = nlohmann::json::array();
  for (int r = 1; r < n; ++r) {
    if (var_lines[r] != var_lines[0]) differ.push_back(r);
  }
  const std::string mine_line = std::to_string(local) + " " + PluginLine(name, sizeof name);
  CUTOVER_ASSIGN_OR_RETURN(std::vector<std::string> devs, comm.AllgatherStrings(mine_line));
  nlohmann::json rank_devices = nlohmann::json::array();
  for (int r = 0; r < n; ++r) {
    const size_t space = devs[r].find(' ');
    rank_devices.push_back({{"rank", r},
                            {"node", node_of[r]},
                            {"device", std::atoi(devs[r].substr(0, space).c_str())},
                            {"name", space == std::string::npos ? "" : devs[r].substr(space + 1)}});
  }
  nlohmann::json d = {{"kind", "nccl"},
                      {"library", PluginLine(version, sizeof version)},
                      {"plugin", t.build_info != nullptr ? t.build_info : ""},
                      {"timeout_s", timeout_s},
                      {"env", nlohmann::json::parse(var_lines[0], nullptr, false)},
                      {"env_differs_on_ranks", differ},
                      {"devices", rank_devices}};
  std::vector<std::string> nodes = node_of;
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  if (nodes.size() == 2 && !vars.contains("NCCL_ALGO")) {
    d["note"] =
        "two nodes: NCCL may choose its tree algorithm for all_reduce, whose bus bandwidth can "
        "exceed what the fabric carries; all_reduce is measured again on a communicator with "
        "NCCL_ALGO=Ring (ring_all_reduce)";
    dev->set_second_algo("Ring");
  }
  dev->set_describe(std::move(d));
  return std::unique_ptr<ClusterTransport>(std::move(dev));
}

}  // namespace cutover
