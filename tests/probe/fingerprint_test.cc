// Tests of core/fingerprint (owned by probe).
#include "core/fingerprint.h"

#include <gtest/gtest.h>

namespace cutover {
namespace {

TEST(FingerprintTest, RoundTripKeepsNullsAndValues) {
  Fingerprint fp;
  fp.os.id = "ubuntu";
  fp.memory_mib = 1024;
  fp.driver.status = "ok";
  fp.driver.version = "550.54.14";
  GpuInfo g;
  g.index = 0;
  g.name = "NVIDIA H100 80GB HBM3";
  g.ecc.aggregate_uncorrected = 2;
  g.nvlink_active = {true, false};
  g.source = "nvml";
  fp.gpus.push_back(g);
  fp.env["CUDA_VISIBLE_DEVICES"] = "0";
  fp.collection.findings.push_back({"warning", "x.y", "m"});
  nlohmann::json doc = FingerprintToJson(fp);
  EXPECT_EQ(doc["schema"], "cutover.fingerprint/1");
  EXPECT_TRUE(doc["os"]["kernel"].is_null());
  EXPECT_EQ(doc["gpus"][0]["ecc"]["aggregate_uncorrected"], 2);
  Result<Fingerprint> back = ParseFingerprint(doc.dump());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(FingerprintToJson(*back), doc);
}

TEST(FingerprintTest, ErrorsNameTheProblem) {
  EXPECT_EQ(ParseFingerprint("[").status().message(), "fingerprint: not valid JSON");
  EXPECT_EQ(ParseFingerprint("[]").status().message(), "fingerprint: expected a JSON object");
  EXPECT_EQ(ParseFingerprint("{}").status().message(),
            "fingerprint: no \"schema\" field (expected \"cutover.fingerprint/1\")");
  EXPECT_EQ(ParseFingerprint(R"({"schema": "cutover.fingerprint/2"})").status().message(),
            "fingerprint schema \"cutover.fingerprint/2\" is not one this cutover reads (it reads "
            "\"cutover.fingerprint/1\"; a newer cutover may)");
  EXPECT_EQ(ParseFingerprint(R"({"schema": "cutover.diff/1"})").status().message(),
            "not a fingerprint: schema is \"cutover.diff/1\"");
  EXPECT_EQ(ParseFingerprint(R"({"schema": "cutover.fingerprint/1", "gpus": [{"index": "0"}]})")
                .status()
                .message(),
            "fingerprint field gpus[0].index: expected an integer");
  EXPECT_EQ(ParseFingerprint(R"({"schema": "cutover.fingerprint/1", "memory_mib": -1})")
                .status()
                .message(),
            "fingerprint field memory_mib: expected a non-negative integer");
}

}  // namespace
}  // namespace cutover
