#include "compat/cluster_suite.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "compat/cluster_rules.h"
#include "core/cli.h"
#include "core/failpoint.h"
#include "core/file_util.h"
#include "core/time_util.h"

namespace cutover {
namespace {

int OpCode(const std::string& op) {
  if (op == "all_reduce") return CUTOVER_CLUSTER_ALL_REDUCE;
  if (op == "all_gather") return CUTOVER_CLUSTER_ALL_GATHER;
  if (op == "reduce_scatter") return CUTOVER_CLUSTER_REDUCE_SCATTER;
  if (op == "alltoall") return CUTOVER_CLUSTER_ALLTOALL;
  if (op == "broadcast") return CUTOVER_CLUSTER_BROADCAST;
  if (op == "sendrecv") return CUTOVER_CLUSTER_SENDRECV;
  return -1;
}

// Buffers of one collective call: input filled per the op, output zeroed to a poison value.
struct Buffers {
  std::vector<float> send, recv;
  const float* send_ptr = nullptr;  // nullptr: in place
  uint64_t out_count = 0;           // elements of recv the op defines
};

Buffers MakeBuffers(const std::string& op, int rank, int n, uint64_t count, bool in_place) {
  Buffers b;
  const uint64_t big = count * static_cast<uint64_t>(n);
  uint64_t in_count = count, recv_count = count;
  if (op == "all_gather") recv_count = big;
  if (op == "reduce_scatter" || op == "alltoall") in_count = big;
  if (op == "alltoall") recv_count = big;
  b.out_count = recv_count;
  if (in_place && op == "reduce_scatter") recv_count = big;
  b.recv.assign(recv_count, -1.0f);
  if (op == "broadcast") {
    if (rank == 0) {
      for (uint64_t i = 0; i < count; ++i) b.recv[i] = InputValue(0, i);
    }
    return b;
  }
  if (in_place) {
    const uint64_t offset = op == "all_gather" ? static_cast<uint64_t>(rank) * count : 0;
    for (uint64_t i = 0; i < in_count; ++i) b.recv[offset + i] = InputValue(rank, i);
    return b;
  }
  b.send.resize(in_count);
  for (uint64_t i = 0; i < in_count; ++i) b.send[i] = InputValue(rank, i);
  b.send_ptr = b.send.data();
  return b;
}

// The result's elements that differ from the exact answer on this rank.
uint64_t WrongValues(const std::string& op, const Buffers& b, int rank, int n, uint64_t count) {
  uint64_t wrong = 0;
  for (uint64_t i = 0; i < b.out_count; ++i) {
    if (b.recv[i] != ExpectedValue(op, rank, n, count, i)) ++wrong;
  }
  return wrong;
}

// One row: a correctness call (sendrecv: the ring, to rank + 1 from rank - 1), then the
// transport's `warmup` untimed and `reps` timed calls.
Result<nlohmann::json> RunRow(const ClusterComm& comm, ClusterTransport& transport,
                              const ClusterOptions& o, const std::string& op, uint64_t bytes,
                              bool in_place) {
  const int n = comm.size(), r = comm.rank();
  const uint64_t count = ElementCount(op, bytes, n);
  Buffers b = MakeBuffers(op, r, n, count, in_place);
  CUTOVER_RETURN_IF_ERROR(transport.Call(OpCode(op), b.send_ptr, b.recv.data(), count, 0));
  const uint64_t mine_wrong = WrongValues(op, b, r, n, count);
  std::vector<double> wrong = {static_cast<double>(mine_wrong), mine_wrong > 0 ? 1.0 : 0.0};
  CUTOVER_RETURN_IF_ERROR(comm.AllreduceF64(wrong, CUTOVER_CLUSTER_SUM));
  CUTOVER_ASSIGN_OR_RETURN(
      std::vector<double> reps,
      transport.Time(OpCode(op), b.send_ptr, b.recv.data(), count, 0, o.warmup, o.reps));
  double mean = 0;
  for (double t : reps) mean += t;
  mean /= o.reps;
  std::vector<double> sum = {mean}, lo = {mean}, hi = {mean};
  CUTOVER_RETURN_IF_ERROR(comm.AllreduceF64(sum, CUTOVER_CLUSTER_SUM));
  CUTOVER_RETURN_IF_ERROR(comm.AllreduceF64(lo, CUTOVER_CLUSTER_MIN));
  CUTOVER_RETURN_IF_ERROR(comm.AllreduceF64(hi, CUTOVER_CLUSTER_MAX));
  CUTOVER_RETURN_IF_ERROR(comm.AllreduceF64(reps, CUTOVER_CLUSTER_SUM));
  const double avg = sum[0] / n;
  // The size nccl-tests reports: what the count covers (rounded down to whole elements).
  const uint64_t size =
      count * sizeof(float) *
      ((op == "all_gather" || op == "reduce_scatter" || op == "alltoall") ? n : 1);
  const double algbw = avg > 0 ? static_cast<double>(size) / avg / 1e9 : 0;
  nlohmann::json rep_us = nlohmann::json::array();
  for (double t : reps) rep_us.push_back(t / n * 1e6);
  return nlohmann::json{
      {"op", op},
      {"bytes", size},
      {"count", count},
      {"in_place", in_place},
      {"time_us", {{"avg", avg * 1e6}, {"min", lo[0] * 1e6}, {"max", hi[0] * 1e6}}},
      {"rep_us", rep_us},
      {"algbw_gbps", algbw},
      {"busbw_gbps", algbw * BusBandwidthFactor(op, n)},
      {"correct", wrong[0] == 0},
      {"wrong_values", static_cast<uint64_t>(wrong[0])},
      {"ranks_wrong", static_cast<int>(wrong[1])}};
}

// Times `bytes` from `from` to `to` (`to` answers with an empty message; latency mode: the
// same message back, half the round trip). Returns seconds on `from`, 0 elsewhere.
Result<double> TimeDirected(const ClusterComm& comm, ClusterTransport& transport, int from, int to,
                            std::vector<char>& buf, uint64_t bytes, bool latency) {
  const uint64_t back = latency ? bytes : 0;
  if (comm.rank() == from) {
    const double t0 = comm.Wtime();
    CUTOVER_RETURN_IF_ERROR(transport.Send(buf.data(), bytes, to));
    CUTOVER_RETURN_IF_ERROR(transport.Recv(buf.data(), back, to));
    const double dt = comm.Wtime() - t0;
    return latency ? dt / 2 : dt;
  }
  CUTOVER_RETURN_IF_ERROR(transport.Recv(buf.data(), bytes, from));
  CUTOVER_RETURN_IF_ERROR(transport.Send(buf.data(), back, from));
  return 0.0;
}

struct PassMatrices {
  std::vector<double> bw;   // n*n, GB/s, [from*n + to]
  std::vector<double> lat;  // n*n, microseconds
};

// One pass over the round-robin schedule; every rank ends with the whole matrices.
Result<PassMatrices> RunPass(const ClusterComm& comm, ClusterTransport& transport,
                             const ClusterOptions& o) {
  const int n = comm.size(), me = comm.rank();
  PassMatrices m{std::vector<double>(n * n, 0.0), std::vector<double>(n * n, 0.0)};
  std::vector<char> buf(std::max(o.pair_bytes, o.pair_small_bytes), 1);
  for (const auto& round : RoundRobinSchedule(n)) {
    for (const auto& [a, b] : round) {
      if (me != a && me != b) continue;
      for (int dir = 0; dir < 2; ++dir) {
        const int from = dir == 0 ? a : b, to = dir == 0 ? b : a;
        std::vector<double> t_bw, t_lat;
        for (int k = 0; k < o.pair_reps; ++k) {
          CUTOVER_ASSIGN_OR_RETURN(
              double t, TimeDirected(comm, transport, from, to, buf, o.pair_bytes, false));
          CUTOVER_ASSIGN_OR_RETURN(
              double l, TimeDirected(comm, transport, from, to, buf, o.pair_small_bytes, true));
          t_bw.push_back(t);
          t_lat.push_back(l);
        }
        if (me == from) {
          const double t = Median(t_bw);
          m.bw[from * n + to] = t > 0 ? static_cast<double>(o.pair_bytes) / t / 1e9 : 0;
          m.lat[from * n + to] = Median(t_lat) * 1e6;
        }
      }
    }
    CUTOVER_RETURN_IF_ERROR(comm.Barrier());
  }
  CUTOVER_RETURN_IF_ERROR(comm.AllreduceF64(m.bw, CUTOVER_CLUSTER_SUM));
  CUTOVER_RETURN_IF_ERROR(comm.AllreduceF64(m.lat, CUTOVER_CLUSTER_SUM));
  return m;
}

nlohmann::json LinksJson(const std::vector<std::pair<std::string, std::string>>& links) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [x, y] : links) out.push_back({x, y});
  return out;
}

std::vector<std::vector<double>> Square(const std::vector<double>& flat, int n) {
  std::vector<std::vector<double>> out(n, std::vector<double>(n, 0.0));
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) out[a][b] = flat[a * n + b];
  }
  return out;
}

// The matrix section: per-link medians over passes, each pass's verdict, and the verdict of the
// majority of passes (a node or link is named only when more than half the passes name it).
Result<nlohmann::json> RunPairwise(const ClusterComm& comm, ClusterTransport& transport,
                                   const ClusterOptions& o,
                                   const std::vector<std::string>& node_of) {
  const int n = comm.size();
  const double t0 = comm.Wtime();
  std::vector<std::vector<double>> lat_samples(n * n);
  std::vector<std::vector<std::vector<double>>> bw_passes;
  for (int p = 0; p < o.passes; ++p) {
    CUTOVER_ASSIGN_OR_RETURN(PassMatrices m, RunPass(comm, transport, o));
    for (int i = 0; i < n * n; ++i) lat_samples[i].push_back(m.lat[i]);
    bw_passes.push_back(Square(m.bw, n));
  }
  const PassesVerdict verdict = JudgePasses(bw_passes, node_of);
  const SlowVerdict& med = verdict.median;
  nlohmann::json passes = nlohmann::json::array();
  for (const SlowVerdict& v : verdict.passes) {
    passes.push_back({{"slow_nodes", v.slow_nodes}, {"slow_links", LinksJson(v.slow_links)}});
  }
  std::vector<double> bw(n * n), lat(n * n);
  for (int i = 0; i < n * n; ++i) {
    bw[i] = verdict.median_bw[i / n][i % n];
    lat[i] = Median(lat_samples[i]);
  }
  const nlohmann::json slow_nodes = verdict.slow_nodes, slow_links = LinksJson(verdict.slow_links);
  // Intra-node pairs apart: per node, the median of its ranks' pairs.
  nlohmann::json intra = nlohmann::json::object();
  std::map<std::string, std::vector<double>> intra_samples;
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      if (a != b && node_of[a] == node_of[b]) intra_samples[node_of[a]].push_back(bw[a * n + b]);
    }
  }
  for (const auto& [node, s] : intra_samples) intra[node] = Median(s);
  nlohmann::json node_median = nlohmann::json::object();
  for (const auto& [node, value] : med.node_median) node_median[node] = value;
  return nlohmann::json{
      {"bytes", o.pair_bytes},
      {"small_bytes", o.pair_small_bytes},
      {"reps", o.pair_reps},
      {"passes", o.passes},
      {"rounds", RoundRobinSchedule(n).size()},
      {"seconds", comm.Wtime() - t0},
      {"bw_gbps", Square(bw, n)},
      {"latency_us", Square(lat, n)},
      {"intra_node_gbps", intra},
      {"rule",
       "per node: the median bandwidth of its inter-node links (each link the median over every "
       "rank pair and both directions); slow when below the median of all nodes' medians / D. "
       "A link between two nodes that are not slow: slow when below the median of such links "
       "/ D, judged among 6 or more such links. D is 3, or exp(4 x 1.4826 x the median of "
       "log(value / median) over the values at or above the median) where that is larger "
       "(healthy values that spread widely). A node is named when the matrix of medians over the "
       "passes names it and so do more than half the passes judged alone; a link when that "
       "matrix and every pass name it. Needs 3 or more nodes."},
      {"node_divisor", med.node_divisor},
      {"link_divisor", med.link_divisor},
      {"rule_applied", med.applied},
      {"rule_reason", med.reason},
      {"node_median_gbps", node_median},
      {"reference_gbps", med.reference},
      {"pass_verdicts", passes},
      {"slow_nodes", slow_nodes},
      {"slow_links", slow_links}};
}

// One row of the run's table.
std::string RowLine(const std::string& label, const nlohmann::json& row, bool in_place) {
  char line[256];
  std::snprintf(line, sizeof(line), "%-15s %12llu %8s %12.2f %12.2f %12.2f %10.3f %10.3f %s\n",
                label.c_str(), static_cast<unsigned long long>(row["bytes"].get<uint64_t>()),
                in_place ? "in" : "out", row["time_us"]["avg"].get<double>(),
                row["time_us"]["min"].get<double>(), row["time_us"]["max"].get<double>(),
                row["algbw_gbps"].get<double>(), row["busbw_gbps"].get<double>(),
                row["correct"].get<bool>() ? "ok" : "WRONG");
  return line;
}

}  // namespace

std::string ClusterOptionsLine(const ClusterOptions& o) {
  std::string ops;
  for (const std::string& op : o.ops) ops += (ops.empty() ? "" : ",") + op;
  return "backend=" + o.backend + " ops=" + ops + " b=" + std::to_string(o.min_bytes) +
         " e=" + std::to_string(o.max_bytes) + " f=" + std::to_string(o.step_factor) +
         " warmup=" + std::to_string(o.warmup) + " reps=" + std::to_string(o.reps) +
         " pair_bytes=" + std::to_string(o.pair_bytes) +
         " pair_reps=" + std::to_string(o.pair_reps) + " passes=" + std::to_string(o.passes) +
         " timeout=" + std::to_string(o.timeout_s);
}

Status CheckClusterOptions(const ClusterOptions& o) {
  for (const std::string& op : o.ops) {
    const auto& all = ClusterCollectives();
    if (std::find(all.begin(), all.end(), op) == all.end()) {
      return Status::InvalidArgument("compat run --suite cluster: unknown collective '" + op +
                                     "' (all_reduce, all_gather, reduce_scatter, alltoall, "
                                     "broadcast, sendrecv)");
    }
  }
  if (!(o.timeout_s > 0)) {
    return Status::InvalidArgument("compat run --suite cluster: --timeout must be above 0 s");
  }
  if (o.max_bytes > (1ull << 31) - 1) {
    return Status::InvalidArgument("compat run --suite cluster: --max-bytes above 2 GiB - 1");
  }
  return SweepSizes(o.min_bytes, o.max_bytes, o.step_factor).status();
}

std::string ClusterFleetLine(const nlohmann::json& record) {
  if (!record.contains("fleet") || !record["fleet"].is_object()) return "nodes: not judged\n";
  const nlohmann::json& f = record["fleet"];
  std::string out;
  if (f.value("consistent", false)) {
    out = "nodes: " + std::to_string(f.value("hosts", 0)) + " with one stack\n";
  } else {
    out = "nodes differ:";
    const nlohmann::json groups = f.value("groups", nlohmann::json::array());
    for (const nlohmann::json& g : groups) {
      if (g.value("majority", false)) continue;
      std::string names, fields;
      const nlohmann::json hosts = g.value("hosts", nlohmann::json::array());
      for (const nlohmann::json& h : hosts) {
        names += (names.empty() ? "" : ", ") + h.value("file", std::string("?"));
      }
      // Held here: items() of a temporary would outlive the temporary.
      const nlohmann::json differs = g.value("differs", nlohmann::json::object());
      for (const auto& [field, d] : differs.items()) {
        fields += (fields.empty() ? "" : "; ") + field + " " + d.value("value", std::string("?")) +
                  ", majority " + d.value("majority", std::string("?"));
      }
      out += " " + names + " (" + fields + ")";
    }
    out += "\n";
  }
  const nlohmann::json unreadable = f.value("unreadable", nlohmann::json::array());
  for (const nlohmann::json& u : unreadable) {
    out += "node " + u.value("file", std::string("?")) + ": " + u.value("error", std::string("?")) +
           ", not judged\n";
  }
  return out;
}

Result<ClusterRunResult> RunClusterSuite(const ClusterComm& comm, ClusterTransport& transport,
                                         const ClusterOptions& o, const Launcher& launcher,
                                         const ClusterNodeHooks& hooks,
                                         const std::function<void(const std::string&)>& progress) {
  const int n = comm.size(), me = comm.rank();
  // Every rank must run the same suite: compare each rank's options with rank 0's.
  CUTOVER_ASSIGN_OR_RETURN(std::vector<std::string> lines,
                           comm.AllgatherStrings(ClusterOptionsLine(o)));
  for (int r = 1; r < n; ++r) {
    if (lines[r] != lines[0]) {
      return Status::InvalidArgument("compat run --suite cluster: rank " + std::to_string(r) +
                                     " has other options than rank 0 (" + lines[r] + " vs " +
                                     lines[0] + ")");
    }
  }
  const std::string my_node = NodeName(launcher);
  CUTOVER_ASSIGN_OR_RETURN(std::vector<std::string> node_of, comm.AllgatherStrings(my_node));
  // One fingerprint per node, from its lowest rank.
  std::string my_fp;
  const bool first_on_node =
      std::find(node_of.begin(), node_of.end(), my_node) - node_of.begin() == me;
  if (hooks.fingerprint && first_on_node) {
    Result<nlohmann::json> fp = hooks.fingerprint();
    my_fp = fp.ok() ? fp->dump() : nlohmann::json{{"error", fp.status().message()}}.dump();
  }
  CUTOVER_ASSIGN_OR_RETURN(std::vector<std::string> fps, comm.AllgatherStrings(my_fp));
  CUTOVER_ASSIGN_OR_RETURN(std::vector<uint64_t> sizes,
                           SweepSizes(o.min_bytes, o.max_bytes, o.step_factor));
  const std::vector<std::string>& ops = o.ops.empty() ? ClusterCollectives() : o.ops;

  nlohmann::json rec;
  nlohmann::json nodes = nlohmann::json::array();
  std::set<std::string> seen;
  for (int r = 0; r < n; ++r) {
    if (!seen.insert(node_of[r]).second) continue;
    nlohmann::json ranks = nlohmann::json::array();
    for (int q = 0; q < n; ++q) {
      if (node_of[q] == node_of[r]) ranks.push_back(q);
    }
    nlohmann::json node = {{"name", node_of[r]}, {"ranks", ranks}};
    if (!fps[r].empty()) node["fingerprint"] = nlohmann::json::parse(fps[r], nullptr, false);
    nodes.push_back(node);
  }
  rec["schema"] = std::string(kClusterRecordFamily) + "/" + std::to_string(kClusterRecordVersion);
  rec["complete"] = false;
  rec["created_at"] = NowRfc3339Utc();
  rec["cutover_version"] = std::string(CutoverVersion());
  rec["backend"] = o.backend;
  rec["launcher"] = launcher.name;
  rec["mpi"] = {{"library", comm.LibraryVersion()}, {"plugin", comm.build_info()}};
  rec["transport"] = transport.Describe();
  rec["world_size"] = n;
  rec["fabric"] = o.fabric.empty() ? nlohmann::json(nullptr) : nlohmann::json(o.fabric);
  rec["options"] = {
      {"min_bytes", o.min_bytes}, {"max_bytes", o.max_bytes}, {"step_factor", o.step_factor},
      {"warmup", o.warmup},       {"reps", o.reps},           {"ops", ops}};
  rec["rank_nodes"] = node_of;
  rec["nodes"] = nodes;
  if (me == 0 && hooks.judge && nodes.size() > 1) rec["fleet"] = hooks.judge(nodes);
  rec["collectives"] = nlohmann::json::array();
  auto write = [&]() -> Status {
    if (me != 0 || o.record_path.empty()) return Status::Ok();
    return WriteFileAtomic(o.record_path, rec.dump(1) + "\n");
  };
  CUTOVER_RETURN_IF_ERROR(write());
  std::string table = "cluster suite: " + std::to_string(n) + " ranks on " +
                      std::to_string(nodes.size()) + " node(s), " + comm.LibraryVersion() +
                      ", launcher " + launcher.name + "\n" +
                      (rec.contains("fleet") ? ClusterFleetLine(rec) : std::string());
  char line[256];
  std::snprintf(line, sizeof(line), "%-15s %12s %8s %12s %12s %12s %10s %10s %s\n", "op", "bytes",
                "place", "avg us", "min us", "max us", "algbw GB/s", "busbw GB/s", "check");
  table += line;
  for (uint64_t bytes : sizes) {
    for (const std::string& op : ops) {
      if (ElementCount(op, bytes, n) == 0) continue;
      for (bool in_place : {false, true}) {
        if ((op == "broadcast" && !in_place) || (op == "sendrecv" && in_place)) continue;
        if (!transport.Offers(OpCode(op), in_place)) continue;
        CUTOVER_ASSIGN_OR_RETURN(nlohmann::json row,
                                 RunRow(comm, transport, o, op, bytes, in_place));
        const std::string row_line = RowLine(op, row, in_place);
        table += row_line;
        if (me == 0 && progress) progress(row_line);
        rec["collectives"].push_back(std::move(row));
      }
    }
    CUTOVER_RETURN_IF_ERROR(write());
    // After a size is written: the crash test kills one rank here (tests/compat).
    CUTOVER_FAILPOINT("compat.cluster.size_written");
  }
  // The second pass (NCCL on two nodes): all_reduce again on a communicator with that algorithm.
  const std::string algo = transport.SecondPassAlgo();
  if (!algo.empty() && std::find(ops.begin(), ops.end(), "all_reduce") != ops.end()) {
    CUTOVER_RETURN_IF_ERROR(transport.Reopen(algo));
    rec["ring_all_reduce"] = {{"algo", algo}, {"collectives", nlohmann::json::array()}};
    for (uint64_t bytes : sizes) {
      if (ElementCount("all_reduce", bytes, n) == 0) continue;
      for (bool in_place : {false, true}) {
        CUTOVER_ASSIGN_OR_RETURN(nlohmann::json row,
                                 RunRow(comm, transport, o, "all_reduce", bytes, in_place));
        const std::string row_line = RowLine("all_reduce/" + algo, row, in_place);
        table += row_line;
        if (me == 0 && progress) progress(row_line);
        rec["ring_all_reduce"]["collectives"].push_back(std::move(row));
      }
      CUTOVER_RETURN_IF_ERROR(write());
    }
  }
  if (o.passes > 0) {
    CUTOVER_ASSIGN_OR_RETURN(rec["pairwise"], RunPairwise(comm, transport, o, node_of));
    const nlohmann::json& p = rec["pairwise"];
    table += "pairwise matrix: " + std::to_string(p["rounds"].get<int>()) + " rounds x " +
             std::to_string(o.passes) + " passes in " +
             std::to_string(static_cast<int>(p["seconds"].get<double>() + 0.5)) + " s; ";
    table +=
        p["rule_applied"].get<bool>()
            ? "slow nodes: " + p["slow_nodes"].dump() + ", slow links: " + p["slow_links"].dump()
            : "rule not applied: " + p["rule_reason"].get<std::string>();
    table += "\n";
  }
  rec["complete"] = true;
  rec["finished_at"] = NowRfc3339Utc();
  CUTOVER_RETURN_IF_ERROR(write());
  ClusterRunResult out;
  for (const nlohmann::json& row : rec["collectives"]) {
    if (!row["correct"].get<bool>()) out.all_correct = false;
  }
  if (rec.contains("ring_all_reduce")) {
    for (const nlohmann::json& row : rec["ring_all_reduce"]["collectives"]) {
      if (!row["correct"].get<bool>()) out.all_correct = false;
    }
  }
  if (me == 0) {
    out.record = std::move(rec);
    out.table = std::move(table);
  }
  return out;
}

}  // namespace cutover
