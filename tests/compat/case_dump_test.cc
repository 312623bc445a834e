// Case IDs read back, .npy bytes, and the files a dump writes (compat/case_dump.h).
#include "compat/case_dump.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "compat/runner.h"
#include "core/file_util.h"
#include "tests/harness/test_env.h"

namespace cutover {
namespace {

TEST(CaseDumpTest, CaseIdsReadBack) {
  for (const char* id : {"gemm/fp32/512x512x512/row-major/seed=1",
                         "gemm/fp16/256x256x256/row-major/dist=stress/seed=1",
                         "conv2d_bwd_filter/bf16/2x32x28x28x32x3x3x1x1/NHWC/seed=7",
                         "sdpa/fp32/1x4x512x64/causal/seed=18446744073709551615"}) {
    Result<CaseSpec> s = ParseCaseId(id);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_EQ(s->Id(), id);
  }
  Result<CaseSpec> s = ParseCaseId("gemm/fp16/256x256x256/row-major/dist=stress/seed=1");
  EXPECT_EQ(s->dist, "stress");
  EXPECT_EQ(s->shape, (std::vector<int64_t>{256, 256, 256}));
}

TEST(CaseDumpTest, BadCaseIdsSayWhy) {
  auto msg = [](const char* id) { return ParseCaseId(id).status().message(); };
  EXPECT_EQ(msg("gemm/fp32"), "compat: bad case ID 'gemm/fp32': expected "
                              "op/dtype/AxBxC/layout[/dist=D]/seed=N (cutover compat list --json)");
  EXPECT_EQ(msg("matmul/fp32/1x1x1/row-major/seed=1"),
            "compat: bad case ID 'matmul/fp32/1x1x1/row-major/seed=1': unknown op 'matmul' (see "
            "cutover compat list)");
  EXPECT_EQ(msg("softmax/fp16/4x4/row-major/seed=1"),
            "compat: bad case ID 'softmax/fp16/4x4/row-major/seed=1': softmax has no dtype 'fp16'");
  EXPECT_EQ(msg("gemm/fp32/4x0x4/row-major/seed=1"),
            "compat: bad case ID 'gemm/fp32/4x0x4/row-major/seed=1': shape '4x0x4' is not "
            "positive integers joined by 'x'");
  EXPECT_EQ(msg("gemm/fp32/4x4/row-major/seed=1"),
            "compat: bad case ID 'gemm/fp32/4x4/row-major/seed=1': gemm takes 3 dimensions (M x "
            "N x K)");
  EXPECT_EQ(msg("gemm/fp32/4x4x4/NCHW/seed=1"),
            "compat: bad case ID 'gemm/fp32/4x4x4/NCHW/seed=1': gemm has no layout 'NCHW'");
  EXPECT_EQ(msg("gemm/fp32/4x4x4/row-major/dist=wild/seed=1"),
            "compat: bad case ID 'gemm/fp32/4x4x4/row-major/dist=wild/seed=1': unknown input "
            "distribution 'wild' (use normal, uniform, stress)");
  EXPECT_EQ(msg("gemm/fp32/4x4x4/row-major/seed=x"),
            "compat: bad case ID 'gemm/fp32/4x4x4/row-major/seed=x': expected seed=N at the end");
  EXPECT_EQ(msg("gemm/fp32/4x4x4/row-major/dist=normal/seed=1"),
            "compat: bad case ID 'gemm/fp32/4x4x4/row-major/dist=normal/seed=1': not canonical "
            "(the ID reads back as gemm/fp32/4x4x4/row-major/seed=1)");
}

TEST(CaseDumpTest, NpyBytesAreNumpyFormat10) {
  const float v[3] = {1.0f, -2.5f, 3.0f};
  const std::string b = NpyBytes("<f4", v, 3);
  ASSERT_EQ(b.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  const size_t header_len =
      static_cast<unsigned char>(b[8]) | (static_cast<unsigned char>(b[9]) << 8);
  EXPECT_EQ((10 + header_len) % 64, 0u);
  const std::string header = b.substr(10, header_len);
  EXPECT_EQ(header.rfind("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 0), 0u);
  EXPECT_EQ(header.back(), '\n');
  ASSERT_EQ(b.size(), 10 + header_len + sizeof(v));
  EXPECT_EQ(std::memcmp(b.data() + 10 + header_len, v, sizeof(v)), 0);
  const int64_t i[1] = {42};
  EXPECT_EQ(NpyBytes("<i8", i, 1).size() % 64, 8u);
}

TEST(CaseDumpTest, DumpWritesInputsTruthCaseAndReplayScript) {
  testing::TempDir tmp;
  const std::string dir = tmp.Join("dump");
  const CaseSpec spec{"layernorm", "fp32", {4, 64}, "row-major", 3};
  ASSERT_TRUE(DumpCases(dir, {spec}, 16).ok());
  const std::string cdir = dir + "/layernorm+fp32+4x64+row-major+seed=3";
  for (const char* f : {"in0.npy", "in1.npy", "in2.npy", "truth_index.npy", "truth.npy"}) {
    EXPECT_TRUE(std::filesystem::exists(cdir + "/" + f)) << f;
  }
  EXPECT_FALSE(std::filesystem::exists(cdir + "/out.npy"));
  Result<std::string> text = ReadFile(cdir + "/case.json");
  ASSERT_TRUE(text.ok());
  nlohmann::json c = nlohmann::json::parse(*text);
  EXPECT_EQ(c["id"], spec.Id());
  EXPECT_EQ(c["inputs"], 3);
  EXPECT_EQ(c["has_output"], false);
  EXPECT_EQ(c["output_count"], 256);
  const Tolerance tol = ToleranceFor("fp32", 64);
  EXPECT_EQ(c["rtol"], tol.rtol);
  // 16 sampled positions: 8-byte values after a 128-byte header.
  EXPECT_EQ(std::filesystem::file_size(cdir + "/truth.npy"), 128u + 16 * 8);
  Result<std::string> script = ReadFile(dir + "/replay.py");
  ASSERT_TRUE(script.ok());
  EXPECT_EQ(script->rfind("#!/usr/bin/env python3\n", 0), 0u);
  EXPECT_NE(script->find("def run_conv("), std::string::npos);
}

TEST(CaseDumpTest, RunDumpAddsTheBackendOutput) {
  testing::TempDir tmp;
  const std::string dir = tmp.Join("rundump");
  RunConfig cfg;
  cfg.reps = 1;
  cfg.dump_dir = dir;
  const CaseSpec spec{"gelu", "fp32", {100}, "row-major", 1};
  CaseResult r = RunCpuCase(*FindOp("gelu"), spec, cfg);
  ASSERT_EQ(r.status, "ok") << r.error;
  const std::string out = dir + "/gelu+fp32+100+row-major+seed=1/out.npy";
  ASSERT_TRUE(std::filesystem::exists(out));
  EXPECT_EQ(std::filesystem::file_size(out), 128u + 100 * 4);
  // A directory that cannot be written makes the case an error naming it.
  cfg.dump_dir = "/proc/cutover-no-such-dir";
  CaseResult bad = RunCpuCase(*FindOp("gelu"), spec, cfg);
  EXPECT_EQ(bad.status, "error");
  EXPECT_NE(bad.error.find("/proc/cutover-no-such-dir"), std::string::npos) << bad.error;
}

}  // namespace
}  // namespace cutover
