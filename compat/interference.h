// What the host does beside a timed case, to explain a spread (compat/stability.h): the host's
// CPU steal time (/proc/stat: time a hypervisor gave this VM's CPUs to another guest), this
// process's involuntary context switches (getrusage, all threads: another runnable task took our
// CPU), and the CPUs' current frequency (/sys/devices/system/cpu/cpu*/cpufreq/scaling_cur_freq).
// Files are read through a FileSystem rooted at --root (default /), so tests feed fixtures.
//
// Thread-safety: a sampler is used by one thread.
#ifndef CUTOVER_COMPAT_INTERFERENCE_H_
#define CUTOVER_COMPAT_INTERFERENCE_H_

#include <cstdint>
#include <functional>

#include "compat/record.h"
#include "core/file_system.h"

namespace cutover {

struct HostSample {
  double t_s = 0;  // steady clock
  bool have_stat = false;
  uint64_t steal = 0, total = 0;  // jiffies of all CPUs (/proc/stat "cpu" line)
  int64_t involuntary = -1;       // this process's involuntary context switches
  double mhz_min = -1, mhz_max = -1;
};

class InterferenceSampler {
 public:
  // `involuntary` returns the process's involuntary context switches (-1 unknown); empty: the
  // real one (getrusage RUSAGE_SELF).
  explicit InterferenceSampler(const FileSystem& fs,
                               std::function<int64_t()> involuntary = nullptr);

  // The frequency costs a file read per CPU: `with_frequency` false skips it (a sample per case
  // window; the soak reads the frequency once per round).
  HostSample Sample(bool with_frequency = true) const;

  // Adds the window from `a` to `b` to `f` (accumulated over a case's windows: wall time,
  // steal jiffies against all jiffies, involuntary switches, frequency range) and marks it
  // measured. `steal` and `total` keep the running jiffy sums the share is computed from.
  static void Accumulate(const HostSample& a, const HostSample& b, Interference* f, uint64_t* steal,
                         uint64_t* total);

 private:
  const FileSystem& fs_;
  std::function<int64_t()> involuntary_;
};

}  // namespace cutover

#endif  // CUTOVER_COMPAT_INTERFERENCE_H_
