#include "compat/op.h"

#include <cmath>

#include <gtest/gtest.h>

#include "compat/runner.h"

namespace cutover {
namespace {

CaseSpec Small(const std::string& op) {
  const OpDescriptor* d = FindOp(op);
  std::vector<int64_t> shape = d->quick[0];
  if (op == "gemm")
    shape = {64, 48, 300};
  else if (shape.size() == 2)
    shape = {16, 300};
  else
    shape = {1000};
  return {op, d->dtypes[0], shape, "row-major", 1};
}

TEST(OpTest, CaseIdIsCanonical) {
  CaseSpec c{"gemm", "fp32", {512, 512, 512}, "row-major", 1};
  EXPECT_EQ(c.Id(), "gemm/fp32/512x512x512/row-major/seed=1");
}

TEST(OpTest, EveryCpuOpIsCloseToItsFloat64Truth) {
  for (const OpDescriptor& d : OpRegistry()) {
    if (!d.on_cpu) continue;
    CaseSpec c = Small(d.name);
    Tensors in = d.make_inputs(c);
    std::vector<float> out(d.output_size(c));
    d.run_cpu(c, cpu::CpuConfig{}, in, out.data());
    Tolerance t = ToleranceFor(c.dtype, d.reduction_length(c));
    double rms = 0;
    for (size_t i = 0; i < out.size(); ++i) rms += d.truth(c, in, i) * d.truth(c, in, i);
    rms = std::sqrt(rms / out.size());
    for (size_t i = 0; i < out.size(); i += 7) {
      double truth = d.truth(c, in, i);
      EXPECT_LE(std::fabs(out[i] - truth), t.atol + t.rtol * std::max(std::fabs(truth), rms))
          << d.name << " at " << i;
    }
  }
}

TEST(OpTest, ResultBitsDoNotDependOnThreadCount) {
  for (const char* op : {"gemm", "softmax", "layernorm", "reduce_sum"}) {
    const OpDescriptor* d = FindOp(op);
    CaseSpec c = Small(op);
    Tensors in = d->make_inputs(c);
    std::vector<float> one(d->output_size(c)), three(one.size());
    d->run_cpu(c, cpu::CpuConfig{.threads = 1}, in, one.data());
    d->run_cpu(c, cpu::CpuConfig{.threads = 3}, in, three.data());
    EXPECT_EQ(one, three) << op;
  }
}

TEST(OpTest, Float64AccumulationIsNoFurtherFromTruth) {
  const OpDescriptor* d = FindOp("gemm");
  CaseSpec c{"gemm", "fp32", {32, 32, 4096}, "row-major", 1};
  Tensors in = d->make_inputs(c);
  std::vector<float> f32(32 * 32), f64(32 * 32);
  d->run_cpu(c, cpu::CpuConfig{}, in, f32.data());
  d->run_cpu(c, cpu::CpuConfig{.fp64_accumulate = true}, in, f64.data());
  double e32 = 0, e64 = 0;
  for (size_t i = 0; i < f32.size(); ++i) {
    e32 += std::fabs(f32[i] - d->truth(c, in, i));
    e64 += std::fabs(f64[i] - d->truth(c, in, i));
  }
  EXPECT_LT(e64, e32);
  EXPECT_NE(f32, f64);
}

TEST(OpTest, SuitesAndErrors) {
  auto quick = SuiteCases(Suite::kQuick, {});
  ASSERT_TRUE(quick.ok());
  EXPECT_EQ(quick->size(), 13u);
  auto some = SuiteCases(Suite::kQuick, {"gemm"});
  ASSERT_TRUE(some.ok());
  EXPECT_EQ(some->size(), 3u);
  EXPECT_EQ(SuiteCases(Suite::kQuick, {"conv9"}).status().message(),
            "unknown op 'conv9' (see cutover compat list)");
  EXPECT_EQ(ParseSuite("huge").status().message(),
            "unknown suite 'huge' (use quick, standard, full)");
}

TEST(OpTest, ToleranceStartsAtPyTorchDefaultsAndGrowsWithReduction) {
  EXPECT_DOUBLE_EQ(ToleranceFor("fp32", 1).rtol, 1.3e-6);
  EXPECT_DOUBLE_EQ(ToleranceFor("fp32", 1).atol, 1e-5);
  EXPECT_DOUBLE_EQ(ToleranceFor("fp16", 1).rtol, 1e-3);
  EXPECT_DOUBLE_EQ(ToleranceFor("bf16", 1).rtol, 1.6e-2);
  EXPECT_DOUBLE_EQ(ToleranceFor("fp32", 1024).rtol, 8 * 0x1p-24 * 32);
}

TEST(RunnerTest, SamplePositionsAreSeededAndInRange) {
  CaseSpec c{"gemm", "fp32", {512, 512, 512}, "row-major", 1};
  auto a = SamplePositions(c, 512 * 512, 100);
  EXPECT_EQ(a, SamplePositions(c, 512 * 512, 100));
  for (uint64_t p : a) EXPECT_LT(p, 512u * 512u);
  c.seed = 2;
  EXPECT_NE(a, SamplePositions(c, 512 * 512, 100));
  EXPECT_EQ(SamplePositions(c, 3, 100), (std::vector<uint64_t>{0, 1, 2}));
}

TEST(RunnerTest, NotApplicableOnCpu) {
  const OpDescriptor* d = FindOp("h2d_copy");
  CaseResult r = RunCpuCase(*d, {"h2d_copy", "u8", {64}, "row-major", 1}, RunConfig{});
  EXPECT_EQ(r.status, "n/a");
  EXPECT_EQ(r.error, "h2d_copy has no meaning on the cpu backend");
}

}  // namespace
}  // namespace cutover
