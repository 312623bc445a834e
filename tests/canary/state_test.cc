// The rollout store's lease: taken in one transaction, refused while it binds, taken over once
// stale, and a fence that stops every write of a store whose lease moved on.
#include "canary/state.h"

#include <gtest/gtest.h>

#include "tests/harness/test_env.h"

namespace cutover::canary {
namespace {

ProcessIdentity Other(int64_t pid) {
  ProcessIdentity p = SelfIdentity();
  p.pid = pid;
  return p;
}

HolderVerdict Alive(const ProcessIdentity&) { return {HolderState::kAlive, ""}; }

class LeaseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto a = RolloutStore::Open(dir_.Join("s.db"));
    auto b = RolloutStore::Open(dir_.Join("s.db"));
    ASSERT_TRUE(a.ok() && b.ok());
    a_.emplace(std::move(*a));
    b_.emplace(std::move(*b));
  }
  cutover::testing::TempDir dir_;
  std::optional<RolloutStore> a_, b_;
  const double t0_ = 1'800'000'000.0;
};

TEST_F(LeaseTest, JudgeLeaseGoesStaleAfterThreeMissedBeats) {
  LeaseRow l;
  l.holder = Other(77);
  l.beat_seconds = 1;
  l.beat_at = t0_;
  EXPECT_TRUE(JudgeLease(l, t0_ + 3.0, Alive).binds);
  LeaseVerdict stale = JudgeLease(l, t0_ + 3.5, Alive);
  EXPECT_FALSE(stale.binds);
  EXPECT_EQ(stale.why, "no heartbeat for 3.5 s (beats every 1.0 s)");
  LeaseVerdict gone = JudgeLease(l, t0_ + 0.1, [](const ProcessIdentity&) {
    return HolderVerdict{HolderState::kGone, "pid 77 is not running"};
  });
  EXPECT_FALSE(gone.binds);
  EXPECT_EQ(gone.why, "pid 77 is not running");
  l.holder.pid = 0;
  EXPECT_EQ(JudgeLease(l, t0_, Alive).why, "released");
}

TEST_F(LeaseTest, SecondTakeIsRefusedNamingTheHolder) {
  auto first = a_->TakeLease("web", SelfIdentity(), 1, t0_);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->generation, 1);
  EXPECT_FALSE(first->taken_over.has_value());
  auto second = b_->TakeLease("web", Other(99), 1, t0_ + 1.25);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(second.status().message(), "rollout web is driven by another controller: pid " +
                                           std::to_string(SelfIdentity().pid) + " on host " +
                                           SelfIdentity().host + ", last beat 1.2 s ago");
  // Another name is another lease.
  EXPECT_TRUE(b_->TakeLease("api", Other(99), 1, t0_).ok());
}

TEST_F(LeaseTest, StaleLeaseIsTakenOverAndTheOldHolderIsFencedOut) {
  ASSERT_TRUE(a_->TakeLease("web", SelfIdentity(), 1, t0_).ok());
  a_->SetFence("web", 1);
  int64_t id = a_->CreateRollout("web", "w.yaml", "", t0_).value();
  ASSERT_TRUE(a_->BeatLease("web", 1, t0_ + 1).ok());
  // Three beats missed after t0 + 1: stale at t0 + 4.
  EXPECT_FALSE(b_->TakeLease("web", Other(99), 1, t0_ + 3.9).ok());
  auto take = b_->TakeLease("web", Other(99), 1, t0_ + 4.5);
  ASSERT_TRUE(take.ok()) << take.status().ToString();
  EXPECT_EQ(take->generation, 2);
  ASSERT_TRUE(take->taken_over.has_value());
  EXPECT_EQ(take->taken_over->holder.pid, SelfIdentity().pid);
  EXPECT_EQ(take->stale_because, "no heartbeat for 3.5 s (beats every 1.0 s)");

  // The old holder's beat and every write of its store now fail, and change nothing.
  Status beat = a_->BeatLease("web", 1, t0_ + 5);
  EXPECT_EQ(beat.code(), Code::kAborted);
  EXPECT_EQ(beat.message().rfind("lost the lease of rollout web (generation 1) to pid 99 on host " +
                                     SelfIdentity().host + ", last beat ",
                                 0),
            0u)
      << beat.message();
  EXPECT_NE(beat.message().find(", generation 2; this controller writes nothing more"),
            std::string::npos)
      << beat.message();
  Status ev = a_->AddEvent(id, "step", "moved", t0_ + 5);
  EXPECT_EQ(ev.code(), Code::kAborted);
  EXPECT_EQ(a_->SetStatus(id, "rolling-back", "x", t0_ + 5).code(), Code::kAborted);
  bool ran = false;
  Status fenced = a_->Fenced([&] {
    ran = true;
    return Status::Ok();
  });
  EXPECT_EQ(fenced.code(), Code::kAborted);
  EXPECT_FALSE(ran) << "a fenced action never runs once the lease is lost";
  EXPECT_TRUE(b_->Events(id)->empty());
  EXPECT_EQ(b_->GetRollout(id)->status, "running");
  // The new holder writes.
  b_->SetFence("web", 2);
  EXPECT_TRUE(b_->AddEvent(id, "lease", "taken over", t0_ + 5).ok());
}

TEST_F(LeaseTest, ReleasedLeaseIsFreeAndAReleaseOfAnOldGenerationDoesNothing) {
  ASSERT_TRUE(a_->TakeLease("web", SelfIdentity(), 1, t0_).ok());
  ASSERT_TRUE(a_->ReleaseLease("web", 1, t0_ + 1).ok());
  auto take = b_->TakeLease("web", Other(99), 1, t0_ + 1.1);
  ASSERT_TRUE(take.ok());
  EXPECT_FALSE(take->taken_over.has_value()) << "a released lease is free, not taken over";
  ASSERT_TRUE(a_->ReleaseLease("web", 1, t0_ + 2).ok());
  auto lease = b_->GetLease("web").value();
  ASSERT_TRUE(lease.has_value());
  EXPECT_EQ(lease->holder.pid, 99);
  EXPECT_EQ(lease->generation, 2);
}

}  // namespace
}  // namespace cutover::canary
