#include "compat/op.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <gtest/gtest.h>

#include "compat/dtype.h"
#include "compat/philox.h"
#include "compat/runner.h"
#include "core/file_util.h"
#include "tests/harness/test_env.h"

namespace cutover {
namespace {

// A small case of `op` (odd sizes, a strided padded convolution) in its first dtype and layout.
CaseSpec Small(const std::string& op, const std::string& dtype = "",
               const std::string& layout = "") {
  const OpDescriptor* d = FindOp(op);
  std::vector<int64_t> shape = d->quick[0];
  if (op == "gemm")
    shape = {64, 48, 300};
  else if (op == "gemm_batched")
    shape = {3, 16, 12, 100};
  else if (op.rfind("conv2d", 0) == 0)
    shape = {2, 5, 9, 8, 6, 3, 3, 2, 1};
  else if (op == "sdpa")
    shape = {1, 2, 40, 16};
  else if (shape.size() == 2)
    shape = {16, 300};
  else
    shape = {1000};
  return {op, dtype.empty() ? d->dtypes[0] : dtype, shape, layout.empty() ? d->layouts[0] : layout,
          1};
}

TEST(OpTest, CaseIdIsCanonical) {
  CaseSpec c{"gemm", "fp32", {512, 512, 512}, "row-major", 1};
  EXPECT_EQ(c.Id(), "gemm/fp32/512x512x512/row-major/seed=1");
}

// Every op, dtype and layout the cpu backend runs stays within its tolerance of the float64
// truth, with normal and stress inputs (the truth is a separate, naive implementation).
TEST(OpTest, EveryCpuOpIsCloseToItsFloat64Truth) {
  for (const OpDescriptor& d : OpRegistry()) {
    if (!d.on_cpu) continue;
    for (const std::string& dtype : d.dtypes) {
      for (const std::string& layout : d.layouts) {
        for (const char* dist : {"normal", "stress"}) {
          CaseSpec c = Small(d.name, dtype, layout);
          c.dist = dist;
          Tensors in = d.make_inputs(c);
          std::vector<float> out(d.output_size(c));
          d.run_cpu(c, cpu::CpuConfig{}, in, out.data());
          Tolerance t = ToleranceFor(c.dtype, d.reduction_length(c));
          double rms = 0;
          for (size_t i = 0; i < out.size(); ++i) rms += d.truth(c, in, i) * d.truth(c, in, i);
          rms = std::sqrt(rms / out.size());
          int bad = 0;
          for (size_t i = 0; i < out.size(); i += 7) {
            double truth = d.truth(c, in, i);
            if (std::fabs(out[i] - truth) > t.atol + t.rtol * std::max(std::fabs(truth), rms) &&
                ++bad < 3) {
              ADD_FAILURE() << c.Id() << " at " << i << ": " << out[i] << " vs " << truth;
            }
          }
        }
      }
    }
  }
}

TEST(OpTest, ResultBitsDoNotDependOnThreadCount) {
  std::vector<CaseSpec> cases;
  for (const char* op : {"gemm", "softmax", "layernorm", "reduce_sum", "gemm_batched", "sdpa",
                         "conv2d_fwd", "conv2d_bwd_data", "conv2d_bwd_filter"}) {
    for (const std::string& layout : FindOp(op)->layouts) cases.push_back(Small(op, "", layout));
  }
  cases.push_back(Small("gemm", "int8"));
  cases.push_back(Small("gemm", "bf16"));
  for (const CaseSpec& c : cases) {
    const OpDescriptor* d = FindOp(c.op);
    Tensors in = d->make_inputs(c);
    std::vector<float> one(d->output_size(c)), three(one.size());
    d->run_cpu(c, cpu::CpuConfig{.threads = 1}, in, one.data());
    d->run_cpu(c, cpu::CpuConfig{.threads = 3}, in, three.data());
    EXPECT_EQ(one, three) << c.Id();
  }
}

// NCHW and NHWC are the same convolution: the NHWC kernels, given the NCHW inputs permuted,
// give the NCHW outputs permuted, bit for bit (both sum in the same order).
TEST(OpTest, ConvLayoutsAgreeBitForBit) {
  for (const char* op : {"conv2d_fwd", "conv2d_bwd_data", "conv2d_bwd_filter"}) {
    const OpDescriptor* d = FindOp(op);
    CaseSpec nchw = Small(op, "fp32", "NCHW"), nhwc = Small(op, "fp32", "NHWC");
    const cpu::ConvShape g{2, 5, 9, 8, 6, 3, 3, 2, 1};
    using L = cpu::ConvLayout;
    // Logical dims {a, b, c, d} of x (N,C,H,W), w (K,C,R,S) and y (N,K,P,Q).
    struct Dims {
      int64_t a, b, c, d;
      int64_t (*index)(const cpu::ConvShape&, L, int64_t, int64_t, int64_t, int64_t);
    };
    const Dims x{g.n, g.c, g.h, g.w, cpu::ConvXIndex}, w{g.k, g.c, g.r, g.s, cpu::ConvWIndex},
        y{g.n, g.k, g.P(), g.Q(), cpu::ConvYIndex};
    auto permute = [&g](const std::vector<float>& v, const Dims& t) {
      std::vector<float> out(v.size());
      for (int64_t a = 0; a < t.a; ++a)
        for (int64_t b = 0; b < t.b; ++b)
          for (int64_t c = 0; c < t.c; ++c)
            for (int64_t e = 0; e < t.d; ++e)
              out[t.index(g, L::kNhwc, a, b, c, e)] = v[t.index(g, L::kNchw, a, b, c, e)];
      return out;
    };
    const std::string name = op;
    const Dims& in0 = name == "conv2d_bwd_data" ? y : x;
    const Dims& in1 = name == "conv2d_bwd_filter" ? y : w;
    const Dims& out = name == "conv2d_fwd" ? y : name == "conv2d_bwd_data" ? x : w;
    Tensors a = d->make_inputs(nchw);
    Tensors b = {permute(a[0], in0), permute(a[1], in1)};
    std::vector<float> ya(d->output_size(nchw)), yb(ya.size());
    d->run_cpu(nchw, cpu::CpuConfig{}, a, ya.data());
    d->run_cpu(nhwc, cpu::CpuConfig{}, b, yb.data());
    EXPECT_EQ(permute(ya, out), yb) << op;
    for (size_t i = 0; i < ya.size(); i += 11) {
      EXPECT_DOUBLE_EQ(d->truth(nchw, a, i),
                       d->truth(nhwc, b,
                                [&] {
                                  // The same logical element's NHWC position.
                                  std::vector<float> probe(ya.size(), 0);
                                  probe[i] = 1;
                                  std::vector<float> moved = permute(probe, out);
                                  return static_cast<size_t>(
                                      std::find(moved.begin(), moved.end(), 1.0f) - moved.begin());
                                }()))
          << op << " at " << i;
    }
  }
}

TEST(OpTest, CausalAttentionFirstRowIsTheFirstValue) {
  const OpDescriptor* d = FindOp("sdpa");
  CaseSpec c = Small("sdpa", "fp32", "causal");
  Tensors in = d->make_inputs(c);
  std::vector<float> out(d->output_size(c));
  d->run_cpu(c, cpu::CpuConfig{}, in, out.data());
  const int64_t s = c.shape[2], dd = c.shape[3];
  for (int64_t h = 0; h < c.shape[1]; ++h) {
    for (int64_t e = 0; e < dd; ++e) EXPECT_EQ(out[h * s * dd + e], in[2][h * s * dd + e]);
  }
  // Full attention differs from causal on the same inputs everywhere but by chance.
  CaseSpec full = c;
  full.layout = "full";
  std::vector<float> out_full(out.size());
  d->run_cpu(full, cpu::CpuConfig{}, in, out_full.data());
  EXPECT_NE(out[0], out_full[0]);
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
  EXPECT_EQ(quick->size(), 68u);
  auto some = SuiteCases(Suite::kQuick, {"gemm"});
  ASSERT_TRUE(some.ok());
  // 3 fp32 shapes, the 5 other dtypes at the first, 3 stress cases.
  ASSERT_EQ(some->size(), 11u);
  EXPECT_EQ((*some)[10].Id(), "gemm/bf16/512x512x512/row-major/dist=stress/seed=1");
  auto conv = SuiteCases(Suite::kStandard, {"conv2d_fwd"});
  ASSERT_TRUE(conv.ok());
  EXPECT_EQ(conv->size(), 3u * 4u * 2u);  // every dtype, shape and layout beyond quick
  for (Suite s : {Suite::kQuick, Suite::kStandard, Suite::kFull}) {
    auto all = SuiteCases(s, {});
    ASSERT_TRUE(all.ok());
    std::set<std::string> ids;
    for (const CaseSpec& c : *all) EXPECT_TRUE(ids.insert(c.Id()).second) << c.Id();
  }
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
  // fp32 accumulation: a reduced-precision output's rounding dominates until n is huge.
  EXPECT_DOUBLE_EQ(ToleranceFor("fp16", 4096).rtol, 1e-3);
  EXPECT_DOUBLE_EQ(ToleranceFor("bf16", 1 << 20).rtol, 1.6e-2);
  EXPECT_DOUBLE_EQ(ToleranceFor("tf32", 4096).rtol, 1e-3);
  EXPECT_DOUBLE_EQ(ToleranceFor("fp8_e4m3", 1).rtol, 1.6e-2);
  EXPECT_DOUBLE_EQ(ToleranceFor("fp8_e4m3", 16384).rtol, 8 * 0x1p-14 * 128);
  EXPECT_EQ(ToleranceFor("int8", 4096).rtol, 0);
  EXPECT_EQ(ToleranceFor("int8", 4096).atol, 0);
}

TEST(DtypeTest, RoundingIsToNearestEvenWithEachFormatsLimits) {
  EXPECT_EQ(RoundInput(1.0f + 0x1p-11f, "fp16"), 1.0f);                       // tie: to even
  EXPECT_EQ(RoundInput(1.0f + 0x1p-10f + 0x1p-11f, "fp16"), 1.0f + 0x1p-9f);  // tie: to even
  EXPECT_EQ(RoundInput(1.0f + 0x1p-11f + 0x1p-20f, "fp16"), 1.0f + 0x1p-10f);
  EXPECT_EQ(RoundInput(65519.0f, "fp16"), 65504.0f);
  EXPECT_TRUE(std::isinf(RoundInput(65520.0f, "fp16")));
  EXPECT_EQ(RoundInput(0x1p-25f, "fp16"), 0.0f);        // half the least subnormal: even
  EXPECT_EQ(RoundInput(0x1.8p-25f, "fp16"), 0x1p-24f);  // subnormals are kept
  EXPECT_EQ(RoundInput(1.0f + 0x1p-8f, "bf16"), 1.0f);
  EXPECT_EQ(RoundInput(1.0f + 0x1.8p-8f, "bf16"), 1.0f + 0x1p-7f);
  EXPECT_EQ(RoundInput(1.0f + 0x1p-11f, "tf32"), 1.0f);
  EXPECT_EQ(RoundInput(0x1p-130f, "tf32"), 0x1p-130f);              // a subnormal, kept
  EXPECT_EQ(RoundInput(0x1p-140f, "tf32"), 0.0f);                   // below the least one, 2^-136
  EXPECT_EQ(RoundInput(0x1p-126f + 0x1p-140f, "tf32"), 0x1p-126f);  // 10 bits below 2^-126
  EXPECT_EQ(RoundInput(448.0f, "fp8_e4m3"), 448.0f);
  EXPECT_EQ(RoundInput(470.0f, "fp8_e4m3"), 448.0f);  // saturates, no infinity
  EXPECT_EQ(RoundInput(-1e6f, "fp8_e4m3"), -448.0f);
  EXPECT_EQ(RoundInput(1.0625f, "fp8_e4m3"), 1.0f);   // 3 mantissa bits: tie to even
  EXPECT_EQ(RoundInput(0x1p-10f, "fp8_e4m3"), 0.0f);  // half of 2^-9, the least subnormal
  EXPECT_EQ(RoundInput(200.0f, "int8"), 127.0f);
  EXPECT_EQ(RoundInput(-2.5f, "int8"), -2.0f);
  EXPECT_TRUE(std::isnan(RoundInput(NAN, "bf16")));
  EXPECT_EQ(OutputDtype("fp8_e4m3"), "bf16");
  EXPECT_EQ(OutputDtype("int8"), "int32");
  EXPECT_EQ(OutputDtype("tf32"), "fp32");
  EXPECT_EQ(OutputDtype("fp16"), "fp16");
}

TEST(DtypeTest, FormatPositionCountsUlps) {
  const FloatFormat h = kFp16Format;
  EXPECT_EQ(FormatPosition(1.0 + 0x1p-10, h) - FormatPosition(1.0, h), 1);
  EXPECT_EQ(FormatPosition(2.0, h) - FormatPosition(2.0 - 0x1p-10, h), 1);
  EXPECT_EQ(FormatPosition(0x1p-14, h) - FormatPosition(0x1p-14 - 0x1p-24, h), 1);
  EXPECT_EQ(FormatPosition(0x1p-24, h), 1);
  EXPECT_EQ(FormatPosition(-0.0, h), 0);
  EXPECT_EQ(FormatPosition(-1.0, h), -FormatPosition(1.0, h));
}

// Inputs of every dtype are values of that dtype, and a stress case has what it promises.
TEST(DtypeTest, InputsAreRoundedAndStressHasSubnormalsZerosAndTheCap) {
  for (const char* dtype : {"fp16", "bf16", "tf32", "fp8_e4m3", "int8"}) {
    for (const char* dist : {"normal", "uniform", "stress"}) {
      CaseSpec c{"gemm", dtype, {64, 64, 64}, "row-major", 1, dist};
      Tensors in = FindOp("gemm")->make_inputs(c);
      for (float v : in[0]) ASSERT_EQ(RoundInput(v, dtype), v) << c.Id();
      EXPECT_EQ(in, FindOp("gemm")->make_inputs(c)) << c.Id();
    }
  }
  CaseSpec c{"gemm", "fp16", {64, 64, 64}, "row-major", 1, "stress"};
  Tensors in = FindOp("gemm")->make_inputs(c);
  int zeros = 0, subnormal = 0, negative = 0;
  float largest = 0;
  for (float v : in[0]) {
    ASSERT_TRUE(std::isfinite(v));
    zeros += v == 0;
    subnormal += v != 0 && std::fabs(v) < 0x1p-14f;
    negative += v < 0;
    largest = std::max(largest, std::fabs(v));
  }
  const int n = static_cast<int>(in[0].size());
  EXPECT_GT(zeros, n / 64);
  EXPECT_GT(subnormal, n / 16);
  EXPECT_GT(negative, n / 3);
  // The cap keeps 64 products below fp16's largest value: sqrt(65504 / 256) = 15.99...
  EXPECT_EQ(largest, RoundInput(static_cast<float>(std::sqrt(65504.0 / 256)), "fp16"));
  // The uniform distribution has the normal one's mean and variance but other values.
  CaseSpec u{"gemm", "fp32", {64, 64, 64}, "row-major", 1, "uniform"};
  Tensors ui = FindOp("gemm")->make_inputs(u);
  double sum = 0, sq = 0;
  for (float v : ui[0]) sum += v, sq += double{v} * v;
  EXPECT_NEAR(sum / ui[0].size(), 0, 0.05);
  EXPECT_NEAR(sq / ui[0].size(), 1, 0.05);
  for (float v : ui[0]) ASSERT_LE(std::fabs(v), 1.7320509f);
}

TEST(OpTest, CollectivesFollowNcclTests) {
  EXPECT_DOUBLE_EQ(BusBandwidthFactor("all_reduce", 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor("all_gather", 4), 0.75);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor("reduce_scatter", 4), 0.75);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor("broadcast", 4), 1.0);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor("all_reduce", 1), 0.0);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor("gemm", 4), 0.0);
  EXPECT_EQ(CollectiveSendCount("reduce_scatter", 100, 4), 400);
  EXPECT_EQ(CollectiveRecvCount("reduce_scatter", 100, 4), 100);
  EXPECT_EQ(CollectiveRecvCount("all_gather", 100, 4), 400);
  EXPECT_EQ(CollectiveSendCount("all_gather", 100, 4), 100);
  EXPECT_DOUBLE_EQ(CollectiveAlgBytes("all_gather", "bf16", 100, 4), 800);
  EXPECT_DOUBLE_EQ(CollectiveAlgBytes("all_reduce", "fp32", 100, 4), 400);
  const std::vector<float> x0 = {1.5f, -2.0f, 0.25f};
  EXPECT_EQ(CollectiveTruth("all_reduce", "fp32", x0, 4, 2, 1), -2.0 * (1 + 2 + 3 + 4));
  // reduce_scatter: rank 1 gets block 1, scaled by (block + 1) = 2 on every rank.
  EXPECT_EQ(CollectiveTruth("reduce_scatter", "fp32", x0, 2, 1, 0), 1.5 * 2 * (1 + 2));
  EXPECT_EQ(CollectiveTruth("all_gather", "fp32", x0, 3, 0, 3 + 2), 0.25 * 2);
  EXPECT_EQ(CollectiveTruth("broadcast", "fp32", x0, 3, 2, 1), -2.0);
  EXPECT_EQ(CollectiveSendValue("bf16", {1.00390625f}, 2, 0), RoundInput(3.01171875f, "bf16"));
  for (const char* op : {"all_reduce", "all_gather", "reduce_scatter", "broadcast"}) {
    CaseResult r = RunCpuCase(*FindOp(op), {op, "fp32", {64}, "row-major", 1}, RunConfig{});
    EXPECT_EQ(r.status, "n/a") << op;
  }
}

TEST(OpTest, CaseIdNamesTheDistributionUnlessNormal) {
  CaseSpec c{"gemm", "fp16", {8, 8, 8}, "row-major", 1, "stress"};
  EXPECT_EQ(c.Id(), "gemm/fp16/8x8x8/row-major/dist=stress/seed=1");
  c.dist = "normal";
  EXPECT_EQ(c.Id(), "gemm/fp16/8x8x8/row-major/seed=1");
  EXPECT_TRUE(ParseDist("uniform").ok());
  EXPECT_EQ(ParseDist("cauchy").message(),
            "unknown input distribution 'cauchy' (use normal, uniform, stress)");
}

// docs/compat.md lists the quick suite's cases between two markers: it must be the registry's.
TEST(OpTest, DocsListTheQuickSuite) {
  auto text = ReadFile(testing::SourceDir() + "/docs/compat.md");
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  const std::string begin = "<!-- quick-suite-begin -->\n```\n",
                    end = "```\n<!-- quick-suite-end -->";
  const size_t b = text->find(begin), e = text->find(end);
  ASSERT_NE(b, std::string::npos);
  ASSERT_NE(e, std::string::npos);
  std::string want;
  auto quick = SuiteCases(Suite::kQuick, {});
  ASSERT_TRUE(quick.ok());
  for (const CaseSpec& c : *quick) {
    want += c.Id() + (FindOp(c.op)->on_cpu ? "" : "  (n/a on cpu)") + "\n";
  }
  EXPECT_EQ(text->substr(b + begin.size(), e - b - begin.size()), want)
      << "regenerate the list in docs/compat.md from `cutover compat list` (the quick suite "
         "lines, without their indent)";
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
