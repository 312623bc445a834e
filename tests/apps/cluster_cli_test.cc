// Tests of `cutover compat run --suite cluster` before MPI is loaded: the binary links no MPI,
// and a run without a launcher, under srun without PMIx, with a world of one, with bad options or
// without the plugin is refused with one line and the documented exit code.
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/file_util.h"
#include "core/subprocess.h"
#include "tests/harness/test_env.h"

namespace cutover {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kCutover[] = CUTOVER_TEST_CUTOVER_BIN;

// `env -u <every launcher variable> EXTRA... cutover compat run --suite cluster ARGS...`.
ProgramOutput RunCluster(const std::vector<std::string>& extra_env,
                         const std::vector<std::string>& args = {"--record", "/tmp/unused.rec"}) {
  std::vector<std::string> argv = {"env"};
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "PMIX_RANK",
                        "SLURM_PROCID", "SLURM_STEP_ID", "SLURM_STEP_NUM_TASKS"}) {
    argv.push_back("-u");
    argv.push_back(v);
  }
  argv.insert(argv.end(), extra_env.begin(), extra_env.end());
  argv.insert(argv.end(), {kCutover, "compat", "run", "--suite", "cluster"});
  argv.insert(argv.end(), args.begin(), args.end());
  Result<ProgramOutput> r = RunProgramForStatus(argv, 30000);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.value_or(ProgramOutput{-1, ""});
}

TEST(ClusterCli, TheBinaryLinksNoMpi) {
  Result<std::string> out = RunProgram({"readelf", "-d", kCutover}, 30000);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_THAT(*out, HasSubstr("libc.so.6"));
  EXPECT_THAT(*out, Not(HasSubstr("libmpi")));
  EXPECT_THAT(*out, Not(HasSubstr("libopen-")));
}

TEST(ClusterCli, WithoutALauncherSaysHowToStartOne) {
  ProgramOutput r = RunCluster({});
  EXPECT_EQ(r.exit_status, 2) << r.output;
  EXPECT_EQ(r.output,
            "cutover: compat run --suite cluster: no launcher (no OMPI_COMM_WORLD_SIZE, "
            "PMIX_RANK or SLURM_PROCID in the environment): start it with `mpirun -np N cutover "
            "compat run --suite cluster ...` or `srun --mpi=pmix -N NODES cutover compat run "
            "--suite cluster ...` (OpenMPI 4)\n");
}

TEST(ClusterCli, SrunWithoutPmixIsRefusedWithTheFix) {
  ProgramOutput r = RunCluster({"SLURM_PROCID=1", "SLURM_STEP_ID=0", "SLURM_STEP_NUM_TASKS=4"});
  EXPECT_EQ(r.exit_status, 2) << r.output;
  EXPECT_EQ(r.output,
            "cutover: compat run --suite cluster: started by srun without PMIx, so every task "
            "would be a world of its own: run `srun --mpi=pmix ...` (or export "
            "SLURM_MPI_TYPE=pmix)\n");
}

TEST(ClusterCli, AWorldOfOneHasNothingToMeasure) {
  ProgramOutput r = RunCluster({"OMPI_COMM_WORLD_SIZE=1", "OMPI_COMM_WORLD_RANK=0"});
  EXPECT_EQ(r.exit_status, 2) << r.output;
  EXPECT_EQ(r.output,
            "cutover: compat run --suite cluster: world size 1: nothing to measure across; start "
            "2 or more ranks (mpirun -np 4 ..., srun --mpi=pmix -N 2 ...)\n");
}

TEST(ClusterCli, WithoutThePluginExitsThree) {
  ProgramOutput r =
      RunCluster({"OMPI_COMM_WORLD_SIZE=2", "CUTOVER_MPI_PLUGIN=/nonexistent/libmpi_plugin.so"});
  EXPECT_EQ(r.exit_status, 3) << r.output;
  EXPECT_THAT(r.output, HasSubstr("cutover: MPI plugin not found: tried "
                                  "/nonexistent/libmpi_plugin.so (set CUTOVER_MPI_PLUGIN"));
}

TEST(ClusterCli, BadOptionsAreRefusedBeforeMpi) {
  ProgramOutput r = RunCluster({}, {"--record", "x.rec", "--ops", "gemm"});
  EXPECT_EQ(r.exit_status, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("compat run --suite cluster: unknown collective 'gemm'"));
  r = RunCluster({}, {"--record", "x.rec", "-b", "1MiB", "-e", "8"});
  EXPECT_EQ(r.exit_status, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("--max-bytes 8 is below --min-bytes 1048576"));
  r = RunCluster({}, {});
  EXPECT_EQ(r.exit_status, 2) << r.output;
  EXPECT_EQ(r.output, "cutover: --record is required\nRun with --help for usage.\n");
}

TEST(ClusterCli, CompareRefusesAClusterRecordWithASingleNodeOne) {
  testing::TempDir tmp;
  const std::string cluster = tmp.Join("cluster.rec"), single = tmp.Join("single.rec");
  ASSERT_TRUE(WriteFileAtomic(cluster, R"({"schema": "cutover.compat-cluster/1"})").ok());
  ASSERT_TRUE(WriteFileAtomic(single, R"({"schema": "cutover.compat-record/1"})").ok());
  Result<ProgramOutput> r =
      RunProgramForStatus({kCutover, "compat", "compare", single, cluster}, 30000);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_status, 2) << r->output;
  EXPECT_EQ(r->output, "cutover: compat compare: " + cluster +
                           " is a cluster record (cutover.compat-cluster/1) and " + single +
                           " is not (cutover.compat-record/1): a cluster run compares only with "
                           "another cluster run\n");
}

}  // namespace
}  // namespace cutover
