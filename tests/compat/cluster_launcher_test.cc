// Tests of compat/cluster_launcher.h: the launcher read from the environment before MPI_Init,
// and the refusals with their exact messages.
#include "compat/cluster_launcher.h"

#include <map>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cutover {
namespace {

using ::testing::HasSubstr;

Launcher Detect(const std::map<std::string, std::string>& env) {
  return DetectLauncher([&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

TEST(ClusterLauncher, MpirunFromOmpiVariables) {
  Launcher l = Detect({{"OMPI_COMM_WORLD_SIZE", "4"},
                       {"OMPI_COMM_WORLD_RANK", "2"},
                       {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
                       // mpirun inside an sbatch script inherits the batch step's variables.
                       {"SLURM_PROCID", "0"},
                       {"SLURM_STEP_ID", "4294967291"}});
  EXPECT_EQ(l.kind, LauncherKind::kMpirun);
  EXPECT_EQ(l.world_size, 4);
  EXPECT_EQ(l.rank, 2);
  EXPECT_EQ(l.local_rank, 0);
  EXPECT_TRUE(CheckLauncher(l).ok());
}

TEST(ClusterLauncher, SrunWithPmix) {
  Launcher l = Detect({{"PMIX_RANK", "5"},
                       {"SLURM_PROCID", "5"},
                       {"SLURM_STEP_ID", "0"},
                       {"SLURM_STEP_NUM_TASKS", "8"},
                       {"SLURM_LOCALID", "1"},
                       {"SLURMD_NODENAME", "gpu-07"}});
  EXPECT_EQ(l.kind, LauncherKind::kPmix);
  EXPECT_EQ(l.name, "srun (PMIx)");
  EXPECT_EQ(l.world_size, 8);
  EXPECT_EQ(l.rank, 5);
  EXPECT_EQ(l.local_rank, 1);
  EXPECT_EQ(l.node_name, "gpu-07");
  EXPECT_TRUE(CheckLauncher(l).ok());
}

TEST(ClusterLauncher, SrunWithoutPmixIsRefusedWithTheFix) {
  Launcher l = Detect({{"SLURM_PROCID", "0"}, {"SLURM_STEP_ID", "0"},
                       {"SLURM_STEP_NUM_TASKS", "4"}});
  EXPECT_EQ(l.kind, LauncherKind::kSrunNoPmix);
  Status s = CheckLauncher(l);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "compat run --suite cluster: started by srun without PMIx, so every task would be a "
            "world of its own: run `srun --mpi=pmix ...` (or export SLURM_MPI_TYPE=pmix)");
}

TEST(ClusterLauncher, NoLauncherSaysHowToStartOne) {
  Launcher l = Detect({{"HOME", "/root"}, {"SLURM_JOB_ID", "12"}});  // salloc shell, no step
  EXPECT_EQ(l.kind, LauncherKind::kNone);
  Status s = CheckLauncher(l);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("no launcher"));
  EXPECT_THAT(s.message(), HasSubstr("`mpirun -np N cutover compat run --suite cluster ...`"));
  EXPECT_THAT(s.message(), HasSubstr("`srun --mpi=pmix -N NODES"));
}

TEST(ClusterLauncher, WorldOfOneIsRefused) {
  Launcher l = Detect({{"OMPI_COMM_WORLD_SIZE", "1"}, {"OMPI_COMM_WORLD_RANK", "0"}});
  Status s = CheckLauncher(l);
  EXPECT_EQ(s.message(), kWorldOfOneMessage);
  EXPECT_THAT(s.message(), HasSubstr("world size 1: nothing to measure across"));
}

TEST(ClusterLauncher, GarbageNumbersAreUnknown) {
  Launcher l = Detect({{"OMPI_COMM_WORLD_SIZE", "four"}});
  EXPECT_EQ(l.kind, LauncherKind::kMpirun);
  EXPECT_EQ(l.world_size, -1);
  EXPECT_TRUE(CheckLauncher(l).ok());
}

}  // namespace
}  // namespace cutover
