// The host-side pieces of the cluster suite's cuda path that need no MPI: which device a rank
// takes, where a collective's data lies in device memory (NCCL's in-place rule), and the
// watchdog's bounded wait. The whole path runs under mpirun in cluster_device_itest.sh.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "compat/backends/cluster_layout.h"
#include "compat/backends/poll_deadline.h"
#include "compat/cluster_transport.h"

namespace cutover {
namespace {

TEST(LocalRankOf, TheLaunchersLocalRankWins) {
  EXPECT_EQ(LocalRankOf(5, {"a", "a", "b", "b", "a", "b"}, 3), 3);
  EXPECT_EQ(LocalRankOf(0, {"a"}, 0), 0);
}

TEST(LocalRankOf, ElseTheIndexAmongTheRanksOfItsNode) {
  const std::vector<std::string> nodes = {"a", "b", "a", "b", "a", "c"};
  EXPECT_EQ(LocalRankOf(0, nodes, -1), 0);
  EXPECT_EQ(LocalRankOf(1, nodes, -1), 0);
  EXPECT_EQ(LocalRankOf(2, nodes, -1), 1);
  EXPECT_EQ(LocalRankOf(3, nodes, -1), 1);
  EXPECT_EQ(LocalRankOf(4, nodes, -1), 2);
  EXPECT_EQ(LocalRankOf(5, nodes, -1), 0);
}

TEST(CollectiveLayout, OutOfPlaceBuffersFollowNcclTestsCounts) {
  // 4 ranks, count 10, rank 2.
  const CollectiveLayout ar = LayoutOf(CUTOVER_CLUSTER_ALL_REDUCE, 10, 4, 2, false);
  EXPECT_TRUE(ar.valid);
  EXPECT_EQ(ar.send_elems, 10u);
  EXPECT_EQ(ar.recv_elems, 10u);
  EXPECT_EQ(ar.result_elems, 10u);
  const CollectiveLayout ag = LayoutOf(CUTOVER_CLUSTER_ALL_GATHER, 10, 4, 2, false);
  EXPECT_EQ(ag.send_elems, 10u);
  EXPECT_EQ(ag.recv_elems, 40u);
  EXPECT_EQ(ag.result_elems, 40u);
  const CollectiveLayout rs = LayoutOf(CUTOVER_CLUSTER_REDUCE_SCATTER, 10, 4, 2, false);
  EXPECT_EQ(rs.send_elems, 40u);
  EXPECT_EQ(rs.recv_elems, 10u);
  EXPECT_EQ(rs.result_elems, 10u);
  EXPECT_EQ(rs.result_offset, 0u);
  const CollectiveLayout a2a = LayoutOf(CUTOVER_CLUSTER_ALLTOALL, 10, 4, 2, false);
  EXPECT_EQ(a2a.send_elems, 40u);
  EXPECT_EQ(a2a.recv_elems, 40u);
  const CollectiveLayout sr = LayoutOf(CUTOVER_CLUSTER_SENDRECV, 10, 4, 2, false);
  EXPECT_EQ(sr.send_elems, 10u);
  EXPECT_EQ(sr.recv_elems, 10u);
}

TEST(CollectiveLayout, InPlaceUsesNcclsBlocksAndReturnsMpisLayout) {
  const CollectiveLayout ag = LayoutOf(CUTOVER_CLUSTER_ALL_GATHER, 10, 4, 2, true);
  EXPECT_TRUE(ag.in_place);
  EXPECT_EQ(ag.send_elems, 0u);
  EXPECT_EQ(ag.recv_elems, 40u);
  EXPECT_EQ(ag.op_send_offset, 20u);  // the input is block `rank` of the receive buffer
  EXPECT_EQ(ag.result_offset, 0u);
  EXPECT_EQ(ag.result_elems, 40u);
  const CollectiveLayout rs = LayoutOf(CUTOVER_CLUSTER_REDUCE_SCATTER, 10, 4, 2, true);
  EXPECT_EQ(rs.recv_elems, 40u);
  EXPECT_EQ(rs.op_send_offset, 0u);
  EXPECT_EQ(rs.op_recv_offset, 20u);  // NCCL writes block `rank`...
  EXPECT_EQ(rs.result_offset, 20u);   // ...which goes back to the host's recv[0..count)
  EXPECT_EQ(rs.result_elems, 10u);
  // Broadcast is in place whatever the caller says.
  const CollectiveLayout bc = LayoutOf(CUTOVER_CLUSTER_BROADCAST, 10, 4, 2, false);
  EXPECT_TRUE(bc.in_place);
  EXPECT_EQ(bc.send_elems, 0u);
  EXPECT_EQ(bc.recv_elems, 10u);
}

TEST(CollectiveLayout, UnknownOpsAndRanksAreInvalid) {
  EXPECT_FALSE(LayoutOf(-1, 10, 4, 0, false).valid);
  EXPECT_FALSE(LayoutOf(CUTOVER_CLUSTER_SENDRECV + 1, 10, 4, 0, false).valid);
  EXPECT_FALSE(LayoutOf(CUTOVER_CLUSTER_ALL_REDUCE, 10, 4, 4, false).valid);
  EXPECT_FALSE(LayoutOf(CUTOVER_CLUSTER_ALL_REDUCE, 10, 0, 0, false).valid);
}

TEST(PollWithDeadline, DoneAndFailedEndTheWait) {
  int calls = 0;
  EXPECT_EQ(
      PollWithDeadline([&] { return ++calls == 3 ? PollStep::kDone : PollStep::kPending; }, 5.0),
      PollOutcome::kDone);
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(PollWithDeadline([] { return PollStep::kFailed; }, 5.0), PollOutcome::kFailed);
}

TEST(PollWithDeadline, AHungStepTimesOutWithinItsBound) {
  const auto t0 = std::chrono::steady_clock::now();
  int calls = 0;
  EXPECT_EQ(PollWithDeadline(
                [&] {
                  ++calls;
                  return PollStep::kPending;
                },
                0.2),
            PollOutcome::kTimedOut);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(took, 0.2);
  EXPECT_LT(took, 2.0);
  // It slept between polls after the spin: far fewer calls than a busy loop would make.
  EXPECT_LT(calls, 200000);
  EXPECT_GT(calls, 1);
}

}  // namespace
}  // namespace cutover
