// Tests of compat/backends/cuda/rotation.h: the input copies a timed CUDA case rotates through.
#include "compat/backends/cuda/rotation.h"

#include <gtest/gtest.h>

namespace cutover::cuda_backend {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

TEST(RotationCopies, TotalExceedsTheL2Cache) {
  // An H100's 50 MiB L2: 8 MiB of inputs need 7 copies (56 MiB), 32 MiB need 2.
  EXPECT_EQ(RotationCopies(8 * kMiB, 50 * kMiB, 64), 7);
  EXPECT_EQ(RotationCopies(32 * kMiB, 50 * kMiB, 64), 2);
  // Exactly the L2 size is not above it.
  EXPECT_EQ(RotationCopies(25 * kMiB, 50 * kMiB, 64), 3);
  for (size_t set : {size_t{1000}, 3 * kMiB, 49 * kMiB}) {
    const int n = RotationCopies(set, 50 * kMiB, 1 << 20);
    EXPECT_GT(n * set, 50 * kMiB) << set;
    EXPECT_LE((n - 1) * set, 50 * kMiB) << set;
  }
}

TEST(RotationCopies, LargeInputsNeedOneCopy) {
  EXPECT_EQ(RotationCopies(256 * kMiB, 50 * kMiB, 64), 1);
  EXPECT_EQ(RotationCopies(51 * kMiB, 50 * kMiB, 64), 1);
}

TEST(RotationCopies, ClampedToTheCapAndToOne) {
  EXPECT_EQ(RotationCopies(16, 50 * kMiB, 64), 64);
  EXPECT_EQ(RotationCopies(0, 50 * kMiB, 64), 1);
  EXPECT_EQ(RotationCopies(4 * kMiB, 0, 64), 1);
}

}  // namespace
}  // namespace cutover::cuda_backend
