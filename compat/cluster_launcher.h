// Recognises the launcher of a cluster run from the environment, before MPI_Init: a rank started
// by nothing would make OpenMPI fork a singleton daemon, and N tasks of `srun` without PMIx
// would each become a world of one that never sees the others. Both are refused here, with
// the command that works.
//
// Thread-safety: pure functions of their argument.
#ifndef CUTOVER_COMPAT_CLUSTER_LAUNCHER_H_
#define CUTOVER_COMPAT_CLUSTER_LAUNCHER_H_

#include <functional>
#include <string>

#include "core/status.h"

namespace cutover {

enum class LauncherKind {
  kNone,        // no launcher variable at all
  kMpirun,      // OpenMPI's mpirun/mpiexec (OMPI_COMM_WORLD_SIZE)
  kPmix,        // a PMIx launcher: srun --mpi=pmix, prterun (PMIX_RANK)
  kSrunNoPmix,  // srun without --mpi=pmix (SLURM_PROCID but no PMIX_RANK)
};

struct Launcher {
  LauncherKind kind = LauncherKind::kNone;
  std::string name;     // "mpirun", "srun (PMIx)", "PMIx", "srun without PMIx", "none"
  int world_size = -1;  // from the launcher's variables; -1 unknown until MPI_Init
  int rank = -1;
  int local_rank = -1;    // rank among the ranks of this node; -1 unknown
  std::string node_name;  // SLURMD_NODENAME under Slurm, else "" (the host name is used)
};

// The node a rank runs on: the launcher's node name, else this host's name ("unknown" when
// gethostname fails).
std::string NodeName(const Launcher& launcher);

// Reads the launcher from `getenv` (std::getenv in production; a map in tests).
Launcher DetectLauncher(const std::function<const char*(const char*)>& getenv);

// InvalidArgument (exit 2) with one line naming the fix for kNone, kSrunNoPmix and a known
// world size of 1; Ok otherwise.
Status CheckLauncher(const Launcher& launcher);

// The line for a world of one rank, also used after MPI_Init when the environment did not say.
inline constexpr char kWorldOfOneMessage[] =
    "compat run --suite cluster: world size 1: nothing to measure across; start 2 or more "
    "ranks (mpirun -np 4 ..., srun --mpi=pmix -N 2 ...)";

}  // namespace cutover

#endif  // CUTOVER_COMPAT_CLUSTER_LAUNCHER_H_
