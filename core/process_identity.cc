#include "core/process_identity.h"

#include <unistd.h>

#include <charconv>
#include <climits>
#include <string_view>
#include <vector>

namespace cutover {
namespace {

// /proc/PID/stat: "pid (comm) state ppid ... starttime ...". comm may hold spaces and ')', so the
// fields are counted from the last ')'. Returns the state letter and field 22 (starttime).
Result<std::pair<char, uint64_t>> ParseStat(std::string_view text, const std::string& path) {
  size_t close = text.rfind(')');
  if (close == std::string_view::npos) {
    return Status::InvalidArgument(path + ": no ')' after the command name");
  }
  std::vector<std::string_view> fields;  // fields[0] is field 3 (state)
  std::string_view rest = text.substr(close + 1);
  size_t i = 0;
  while (i < rest.size() && fields.size() < 20) {
    while (i < rest.size() && (rest[i] == ' ' || rest[i] == '\n')) ++i;
    size_t start = i;
    while (i < rest.size() && rest[i] != ' ' && rest[i] != '\n') ++i;
    if (i > start) fields.push_back(rest.substr(start, i - start));
  }
  if (fields.size() < 20 || fields[0].size() != 1) {
    return Status::InvalidArgument(path + ": fewer than 22 fields");
  }
  uint64_t start_ticks = 0;
  std::string_view s = fields[19];
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), start_ticks);
  if (ec != std::errc() || p != s.data() + s.size()) {
    return Status::InvalidArgument(path + ": start time is not a number");
  }
  return std::make_pair(fields[0][0], start_ticks);
}

// The state letter and start time of process `pid`; NotFound when it does not exist.
Result<std::pair<char, uint64_t>> ReadStat(const FileSystem& fs, int64_t pid) {
  std::string path = "/proc/" + std::to_string(pid) + "/stat";
  auto text = fs.ReadFile(path, 4096);
  if (!text.ok()) {
    if (text.status().code() == Code::kNotFound)
      return Status::NotFound(path + ": no such process");
    return text.status();
  }
  return ParseStat(*text, path);
}

std::string ReadBootId(const FileSystem& fs) {
  auto id = fs.ReadFile("/proc/sys/kernel/random/boot_id", 256);
  if (!id.ok()) return "";
  std::string s = std::move(id).value();
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

Result<ProcessIdentity> IdentifyProcess(const FileSystem& fs, int64_t pid, std::string host) {
  CUTOVER_ASSIGN_OR_RETURN(auto stat, ReadStat(fs, pid));
  ProcessIdentity id;
  id.pid = pid;
  id.start_ticks = stat.second;
  id.boot_id = ReadBootId(fs);
  id.host = std::move(host);
  return id;
}

std::string ThisHostName() {
  char name[HOST_NAME_MAX + 1] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "";
  return name;
}

const ProcessIdentity& SelfIdentity() {
  static const ProcessIdentity self = [] {
    RealFileSystem fs("/");
    auto id = IdentifyProcess(fs, getpid(), ThisHostName());
    if (id.ok()) return std::move(id).value();
    ProcessIdentity partial;  // no /proc: a pid and a host, never judged gone by pid alone
    partial.pid = getpid();
    partial.host = ThisHostName();
    return partial;
  }();
  return self;
}

HolderVerdict JudgeHolder(const FileSystem& fs, const std::string& this_host,
                          const ProcessIdentity& holder) {
  std::string pid = std::to_string(holder.pid);
  if (holder.host.empty() || holder.host != this_host) {
    return {HolderState::kUnknown, "holder runs on host '" + holder.host + "', not this one"};
  }
  if (holder.pid <= 0 || holder.boot_id.empty() || holder.start_ticks == 0) {
    return {HolderState::kUnknown, "holder's identity lacks a start time or boot id"};
  }
  std::string boot_id = ReadBootId(fs);
  if (boot_id.empty()) return {HolderState::kUnknown, "this host's boot id cannot be read"};
  if (boot_id != holder.boot_id) return {HolderState::kGone, "host rebooted since"};
  auto now = ReadStat(fs, holder.pid);
  if (!now.ok()) {
    if (now.status().code() == Code::kNotFound) {
      return {HolderState::kGone, "pid " + pid + " is not running"};
    }
    return {HolderState::kUnknown, now.status().message()};
  }
  if (now->second != holder.start_ticks) {
    return {HolderState::kGone, "pid " + pid + " now belongs to another process"};
  }
  // A zombie has exited and only waits for its parent to reap it.
  if (now->first == 'Z' || now->first == 'X') {
    return {HolderState::kGone, "pid " + pid + " is not running (exited, not yet reaped)"};
  }
  return {HolderState::kAlive, ""};
}

HolderVerdict JudgeHolder(const ProcessIdentity& holder) {
  static const RealFileSystem fs("/");
  return JudgeHolder(fs, ThisHostName(), holder);
}

}  // namespace cutover
