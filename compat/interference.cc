#include "compat/interference.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <sstream>
#include <string>

#include <sys/resource.h>

namespace cutover {
namespace {

int64_t RusageInvoluntary() {
  struct rusage u;
  return ::getrusage(RUSAGE_SELF, &u) == 0 ? static_cast<int64_t>(u.ru_nivcsw) : -1;
}

// The "cpu " line of /proc/stat: user nice system idle iowait irq softirq steal (jiffies).
bool ParseStat(const std::string& text, uint64_t* steal, uint64_t* total) {
  if (text.rfind("cpu ", 0) != 0) return false;
  std::istringstream in(text.substr(4, text.find('\n') - 4));
  uint64_t v[8] = {0};
  for (int i = 0; i < 8; ++i) {
    if (!(in >> v[i])) return false;  // kernels since 2.6.11 give all eight
  }
  *steal = v[7];
  *total = 0;
  for (uint64_t x : v) *total += x;
  return true;
}

}  // namespace

InterferenceSampler::InterferenceSampler(const FileSystem& fs, std::function<int64_t()> involuntary)
    : fs_(fs), involuntary_(involuntary ? std::move(involuntary) : RusageInvoluntary) {}

HostSample InterferenceSampler::Sample(bool with_frequency) const {
  HostSample s;
  s.t_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  if (Result<std::string> stat = fs_.ReadFile("/proc/stat", 4096); stat.ok()) {
    s.have_stat = ParseStat(*stat, &s.steal, &s.total);
  }
  s.involuntary = involuntary_();
  if (!with_frequency) return s;
  Result<std::vector<std::string>> cpus = fs_.ListDir("/sys/devices/system/cpu");
  if (cpus.ok()) {
    for (const std::string& name : *cpus) {
      if (name.rfind("cpu", 0) != 0 || name.size() < 4 || !std::isdigit(name[3])) continue;
      Result<std::string> f =
          fs_.ReadFile("/sys/devices/system/cpu/" + name + "/cpufreq/scaling_cur_freq", 64);
      if (!f.ok()) continue;
      const double mhz = std::strtod(f->c_str(), nullptr) / 1000.0;
      if (!(mhz > 0)) continue;
      s.mhz_min = s.mhz_min < 0 ? mhz : std::min(s.mhz_min, mhz);
      s.mhz_max = std::max(s.mhz_max, mhz);
    }
  }
  return s;
}

void InterferenceSampler::Accumulate(const HostSample& a, const HostSample& b, Interference* f,
                                     uint64_t* steal, uint64_t* total) {
  f->measured = true;
  f->wall_s += std::max(0.0, b.t_s - a.t_s);
  if (a.have_stat && b.have_stat && b.total >= a.total && b.steal >= a.steal) {
    *steal += b.steal - a.steal;
    *total += b.total - a.total;
  }
  f->steal_share =
      *total > 0 ? static_cast<double>(*steal) / static_cast<double>(*total) : f->steal_share;
  if (a.involuntary >= 0 && b.involuntary >= a.involuntary) {
    f->involuntary_switches =
        std::max<int64_t>(0, f->involuntary_switches) + (b.involuntary - a.involuntary);
  }
  for (const HostSample* s : {&a, &b}) {
    if (s->mhz_min <= 0) continue;
    f->cpu_mhz_min = f->cpu_mhz_min < 0 ? s->mhz_min : std::min(f->cpu_mhz_min, s->mhz_min);
    f->cpu_mhz_max = std::max(f->cpu_mhz_max, s->mhz_max);
  }
}

}  // namespace cutover
