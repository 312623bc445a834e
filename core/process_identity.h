// Who holds a lock or a lease, named so that a reused pid never passes for the holder.
//
// A pid alone is not an identity: after the holder dies the kernel hands its pid to a new process,
// and after a reboot every pid starts over. A ProcessIdentity adds the process's start time (in
// clock ticks since boot, field 22 of /proc/PID/stat), the kernel's boot id and the host name, so
// a holder on this host can be judged gone at once instead of after a timeout:
//   - another host:                        kUnknown (judge by heartbeat age instead);
//   - this host, another boot id:          kGone ("host rebooted since");
//   - no /proc/PID, or a zombie:           kGone ("pid N is not running");
//   - /proc/PID with another start time:   kGone ("pid N now belongs to another process");
//   - otherwise:                           kAlive.
// An identity with an empty boot id or a zero start time (an older writer) is never judged gone
// by pid alone: kUnknown.
//
// Used by datasync's store locks and the canary controller's lease.
// Thread-safety: the functions are safe to call from several threads.
#ifndef CUTOVER_CORE_PROCESS_IDENTITY_H_
#define CUTOVER_CORE_PROCESS_IDENTITY_H_

#include <cstdint>
#include <string>

#include "core/file_system.h"
#include "core/status.h"

namespace cutover {

struct ProcessIdentity {
  int64_t pid = 0;
  uint64_t start_ticks = 0;  // clock ticks after boot at which the process started
  std::string boot_id;       // /proc/sys/kernel/random/boot_id, without the newline
  std::string host;          // the host name (UTS namespace) the process ran under
};

// The identity of process `pid` as `fs` shows it (/proc/PID/stat and
// /proc/sys/kernel/random/boot_id), named under `host`. NotFound when /proc/PID/stat does not
// exist; InvalidArgument when it cannot be parsed.
Result<ProcessIdentity> IdentifyProcess(const FileSystem& fs, int64_t pid, std::string host);

// This process on the live host (computed once).
const ProcessIdentity& SelfIdentity();

// This host's name (gethostname), "" when it cannot be read.
std::string ThisHostName();

enum class HolderState { kAlive, kGone, kUnknown };

struct HolderVerdict {
  HolderState state = HolderState::kUnknown;
  std::string
      reason;  // why kGone or kUnknown, for a message ("pid 4242 is not running"); "" if alive
};

// Whether `holder` still runs, judged from `fs` (this host's /proc) by a caller on `this_host`.
HolderVerdict JudgeHolder(const FileSystem& fs, const std::string& this_host,
                          const ProcessIdentity& holder);

// The same on the live host.
HolderVerdict JudgeHolder(const ProcessIdentity& holder);

}  // namespace cutover

#endif  // CUTOVER_CORE_PROCESS_IDENTITY_H_
