// The cpu backend's choice of implementation (compat/cpu_kernels.h): library kernels where the
// build has them, agreeing with the float64 truth within the op's tolerance; our kernels
// ("reference") everywhere else. Tests of a library skip, saying so, in a build without it
// (CUTOVER_CPU_LIBS=OFF, the sanitizer build), where the reference path is checked instead.
#include "compat/cpu_kernels.h"

#include <gtest/gtest.h>

#include <cmath>

#include "compat/backends/cpu/cpu_libs.h"
#include "compat/compare.h"
#include "compat/runner.h"

namespace cutover {
namespace {

cpu::CpuConfig Threads(int n) { return cpu::CpuConfig{.threads = n}; }

// Every sampled output of `r` within the op's tolerance of the float64 truth.
void ExpectWithinTolerance(const CaseResult& r) {
  ASSERT_EQ(r.status, "ok") << r.id << ": " << r.error;
  const Tolerance tol = ToleranceFor(r.spec.dtype, r.reduction_length);
  ASSERT_FALSE(r.sample_index.empty());
  for (size_t i = 0; i < r.sample_index.size(); ++i) {
    const double t = r.sample_truth[i], v = r.sample_value[i];
    ASSERT_LE(std::abs(v - t), tol.atol + tol.rtol * std::abs(t))
        << r.id << " [" << r.implementation << "] at " << r.sample_index[i];
  }
}

CaseResult RunOne(const CaseSpec& c, bool reference_only = false) {
  RunConfig cfg;
  cfg.reps = 1;
  cfg.samples = 512;
  cfg.reference_only = reference_only;
  return RunCpuCase(*FindOp(c.op), c, cfg);
}

TEST(CpuKernelsTest, Fp32GemmRunsThroughTheBlasWhenBuiltIn) {
  const CaseSpec c{"gemm", "fp32", {96, 80, 300}, "row-major", 3};
  CaseResult r = RunOne(c);
  ExpectWithinTolerance(r);
  const cpu::LibraryInfo blas = cpu::BlasInfo();
  if (!blas.available) {
    EXPECT_EQ(r.implementation, "reference");  // the build without libraries
    GTEST_SKIP() << "built without OpenBLAS: the gemm ran on the reference path";
  }
  EXPECT_EQ(r.implementation, "OpenBLAS " + blas.version + " (" + blas.detail + ", 2 threads)");
  EXPECT_EQ(r.implementation.rfind("OpenBLAS 0.", 0), 0u) << r.implementation;
}

// --threads reaches OpenBLAS itself (its own count, read back from the library), both ways, not
// only the implementation's label.
TEST(CpuKernelsTest, OpenBlasRunsWithTheThreadsAsked) {
  if (!cpu::BlasInfo().available) {
    GTEST_SKIP() << "built without OpenBLAS: no library thread count to check";
  }
  const OpDescriptor& op = *FindOp("gemm");
  const CaseSpec c{"gemm", "fp32", {64, 64, 64}, "row-major", 1};
  for (int threads : {1, 2, 1}) {
    const CpuKernel k = SelectCpuKernel(op, c, {.threads = threads}, false);
    EXPECT_EQ(cpu::BlasThreads(), threads);
    EXPECT_NE(k.implementation.find(threads == 1 ? "1 thread)" : "2 threads)"), std::string::npos)
        << k.implementation;
  }
}

TEST(CpuKernelsTest, ReferenceBackendAndFp64AccumulateUseOurKernels) {
  const CaseSpec c{"gemm", "fp32", {32, 32, 64}, "row-major", 1};
  EXPECT_EQ(RunOne(c, /*reference_only=*/true).implementation, "reference");
  const OpDescriptor& op = *FindOp("gemm");
  EXPECT_EQ(SelectCpuKernel(op, c, {.threads = 2, .fp64_accumulate = true}, false).implementation,
            "reference");
  // An op with no library counterpart keeps our kernel on the cpu backend too.
  EXPECT_EQ(RunOne({"layernorm", "fp32", {8, 64}, "row-major", 1}).implementation, "reference");
  EXPECT_EQ(RunOne({"gemm", "fp16", {16, 16, 32}, "row-major", 1}).implementation, "reference");
}

TEST(CpuKernelsTest, ConvolutionsRunThroughOneDnnWithinTolerance) {
  const cpu::LibraryInfo dnnl = cpu::DnnlInfo();
  for (const char* op : {"conv2d_fwd", "conv2d_bwd_data", "conv2d_bwd_filter"}) {
    for (const char* layout : {"NCHW", "NHWC"}) {
      for (std::vector<int64_t> shape : {std::vector<int64_t>{2, 8, 9, 9, 6, 3, 3, 1, 1},
                                         std::vector<int64_t>{2, 8, 14, 14, 8, 1, 1, 2, 0},
                                         std::vector<int64_t>{1, 3, 17, 17, 4, 7, 7, 2, 3}}) {
        CaseResult r = RunOne({op, "fp32", shape, layout, 1});
        ExpectWithinTolerance(r);
        if (dnnl.available) {
          EXPECT_EQ(r.implementation.rfind("oneDNN " + dnnl.version + " (", 0), 0u)
              << r.implementation;
        } else {
          EXPECT_EQ(r.implementation, "reference");
        }
      }
    }
  }
  if (!dnnl.available)
    GTEST_SKIP() << "built without oneDNN: convolutions ran on the reference path";
}

TEST(CpuKernelsTest, Bf16AndBatchedMatmulThroughOneDnnWhereTheCpuHasIt) {
  for (const CaseSpec& c :
       {CaseSpec{"gemm", "bf16", {64, 48, 256}, "row-major", 2},
        CaseSpec{"gemm_batched", "fp32", {3, 16, 24, 40}, "row-major", 2},
        CaseSpec{"gemm_batched", "bf16", {3, 16, 24, 40}, "row-major", 2},
        CaseSpec{"conv2d_fwd", "bf16", {2, 8, 9, 9, 6, 3, 3, 1, 1}, "NHWC", 2}}) {
    CaseResult r = RunOne(c);
    ExpectWithinTolerance(r);
    const bool lib = cpu::DnnlInfo().available && (c.dtype == "fp32" || cpu::DnnlHasNativeBf16());
    EXPECT_EQ(r.implementation.rfind(lib ? "oneDNN " : "reference", 0), 0u)
        << c.Id() << ": " << r.implementation;
  }
}

TEST(CpuKernelsTest, CalibrationGemmComesFromTheBlas) {
  Calibration cal = CalibrateCpu(Threads(2));
  EXPECT_GT(cal.gemm_gflops, 0);
  const cpu::LibraryInfo blas = cpu::BlasInfo();
  EXPECT_EQ(cal.gemm_implementation,
            blas.available ? "OpenBLAS " + blas.version + " (" + blas.detail + ", 2 threads)"
                           : "reference");
  EXPECT_EQ(CalibrateCpu(Threads(1), /*reference_only=*/true).gemm_implementation, "reference");
}

TEST(CpuKernelsTest, CompareNamesAChangeOfImplementationAsASetupDifference) {
  CaseResult a = RunOne({"gemm", "fp32", {16, 16, 32}, "row-major", 1}, true);
  CaseResult b = a;
  b.implementation = "OpenBLAS 0.3.21 (core Zen, 2 threads)";
  CaseResult n = RunOne({"layernorm", "fp32", {8, 64}, "row-major", 1}, true);
  CompatRecord src{.backend = "reference", .suite = "quick", .accumulate = "fp32"};
  CompatRecord dst{.backend = "cpu", .suite = "quick", .accumulate = "fp32"};
  src.cases = {a, n};
  dst.cases = {b, n};
  std::vector<SetupDifference> d = ImplementationDifferences(src, dst);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].text,
            "implementation reference vs OpenBLAS 0.3.21 (core Zen, 2 threads) (gemm/fp32)");
  EXPECT_TRUE(d[0].Explains("gemm", "fp32"));
  EXPECT_FALSE(d[0].Explains("gemm", "bf16"));
  EXPECT_FALSE(d[0].Explains("gemm_batched", "fp32"));
  EXPECT_FALSE(d[0].Explains("layernorm", "fp32"));
  std::vector<std::string> notes;
  std::vector<SetupDifference> all = SetupDifferences(src, dst, &notes);
  bool listed = false;
  for (const SetupDifference& s : all) listed |= s.text == d[0].text;
  EXPECT_TRUE(listed);
  // Records that name no implementation (cuda, older records) add nothing.
  b.implementation.clear();
  dst.cases = {b, n};
  EXPECT_TRUE(ImplementationDifferences(src, dst).empty());
}

}  // namespace
}  // namespace cutover
