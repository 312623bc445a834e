#include "compat/cluster_launcher.h"

#include <unistd.h>

#include <cstdlib>

namespace cutover {
namespace {

// A non-negative integer variable, or -1 when unset or not a number.
int IntVar(const std::function<const char*(const char*)>& getenv, const char* name) {
  const char* v = getenv(name);
  if (v == nullptr || *v == '\0') return -1;
  char* end = nullptr;
  long n = std::strtol(v, &end, 10);
  if (end == v || *end != '\0' || n < 0 || n > (1 << 30)) return -1;
  return static_cast<int>(n);
}

bool Set(const std::function<const char*(const char*)>& getenv, const char* name) {
  const char* v = getenv(name);
  return v != nullptr && *v != '\0';
}

}  // namespace

std::string NodeName(const Launcher& launcher) {
  if (!launcher.node_name.empty()) return launcher.node_name;
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) != 0) return "unknown";
  return host;
}

Launcher DetectLauncher(const std::function<const char*(const char*)>& getenv) {
  Launcher l;
  const bool slurm_task = Set(getenv, "SLURM_PROCID") && Set(getenv, "SLURM_STEP_ID");
  if (const char* node = getenv("SLURMD_NODENAME"); node != nullptr) l.node_name = node;
  // mpirun first: mpirun inside an sbatch script inherits the batch step's SLURM_PROCID.
  if (Set(getenv, "OMPI_COMM_WORLD_SIZE")) {
    l.kind = LauncherKind::kMpirun;
    l.name = "mpirun";
    l.world_size = IntVar(getenv, "OMPI_COMM_WORLD_SIZE");
    l.rank = IntVar(getenv, "OMPI_COMM_WORLD_RANK");
    l.local_rank = IntVar(getenv, "OMPI_COMM_WORLD_LOCAL_RANK");
    return l;
  }
  if (Set(getenv, "PMIX_RANK")) {
    l.kind = LauncherKind::kPmix;
    l.name = slurm_task ? "srun (PMIx)" : "PMIx";
    l.rank = IntVar(getenv, "PMIX_RANK");
    if (slurm_task) {
      l.world_size = IntVar(getenv, "SLURM_STEP_NUM_TASKS");
      if (l.world_size < 0) l.world_size = IntVar(getenv, "SLURM_NTASKS");
      l.local_rank = IntVar(getenv, "SLURM_LOCALID");
    }
    return l;
  }
  if (slurm_task) {
    l.kind = LauncherKind::kSrunNoPmix;
    l.name = "srun without PMIx";
    l.rank = IntVar(getenv, "SLURM_PROCID");
    l.world_size = IntVar(getenv, "SLURM_STEP_NUM_TASKS");
    l.local_rank = IntVar(getenv, "SLURM_LOCALID");
    return l;
  }
  l.name = "none";
  return l;
}

Status CheckLauncher(const Launcher& launcher) {
  switch (launcher.kind) {
    case LauncherKind::kNone:
      return Status::InvalidArgument(
          "compat run --suite cluster: no launcher (no OMPI_COMM_WORLD_SIZE, PMIX_RANK or "
          "SLURM_PROCID in the environment): start it with `mpirun -np N cutover compat run "
          "--suite cluster ...` or `srun --mpi=pmix -N NODES cutover compat run --suite "
          "cluster ...` (OpenMPI 4)");
    case LauncherKind::kSrunNoPmix:
      return Status::InvalidArgument(
          "compat run --suite cluster: started by srun without PMIx, so every task would be a "
          "world of its own: run `srun --mpi=pmix ...` (or export SLURM_MPI_TYPE=pmix)");
    default:
      break;
  }
  if (launcher.world_size == 1) return Status::InvalidArgument(kWorldOfOneMessage);
  return Status::Ok();
}

}  // namespace cutover
