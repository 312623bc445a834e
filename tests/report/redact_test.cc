#include "report/redact.h"

#include <gtest/gtest.h>

namespace cutover::report {
namespace {

nlohmann::json Doc() {
  return {
      {"hostname", "<script>gpu-node-7.corp.example"},
      {"gpus",
       {{{"uuid", "GPU-1b2c3d4e-aaaa-bbbb-cccc-1234567890ab"}, {"board_serial", "1650921008123"}}}},
      {"env",
       {{"HOSTNAME", "<script>gpu-node-7.corp.example"}, {"NCCL_SOCKET", "10.20.30.40:5000"}}},
      {"libraries", {{{"name", "cudnn"}, {"version", "9.1.0.70"}}}},
      {"message",
       "seen on <script>gpu-node-7.corp.example (GPU-1b2c3d4e-aaaa-bbbb-cccc-1234567890ab)"}};
}

TEST(RedactTest, NoOriginalValueRemains) {
  Redactor r;
  nlohmann::json doc = Doc();
  r.Learn(doc);
  r.Apply(doc);
  std::string text = doc.dump();
  EXPECT_EQ(text.find("gpu-node-7"), std::string::npos) << text;
  EXPECT_EQ(text.find("1b2c3d4e"), std::string::npos) << text;
  EXPECT_EQ(text.find("1650921008123"), std::string::npos) << text;
  EXPECT_EQ(text.find("10.20.30.40"), std::string::npos) << text;
  EXPECT_EQ(doc["hostname"], "host-1");
  EXPECT_EQ(doc["env"]["HOSTNAME"], "host-1");
  EXPECT_EQ(doc["env"]["NCCL_SOCKET"], "ip-1:5000");
  EXPECT_EQ(doc["gpus"][0]["board_serial"], "serial-1");
  // A four-part version is not an address.
  EXPECT_EQ(doc["libraries"][0]["version"], "9.1.0.70");
}

TEST(RedactTest, PseudonymsAreStableAndConsistent) {
  Redactor a, b;
  nlohmann::json x = Doc(), y = Doc();
  a.Learn(x);
  a.Apply(x);
  b.Learn(y);
  b.Apply(y);
  EXPECT_EQ(x, y);
  std::string uuid = x["gpus"][0]["uuid"];
  EXPECT_EQ(uuid.rfind("GPU-", 0), 0u);
  EXPECT_EQ(uuid.size(), 16u);
  EXPECT_NE(x["message"].get<std::string>().find(uuid), std::string::npos);
  EXPECT_EQ(a.ApplyText("ping 10.20.30.40 from <script>gpu-node-7.corp.example"),
            "ping ip-1 from host-1");
}

TEST(RedactTest, ShortLabelNotReplacedInsideWords) {
  Redactor r;
  r.Learn(nlohmann::json{{"hostname", "box"}});
  EXPECT_EQ(r.ApplyText("box sandbox box.local"), "host-1 sandbox host-1.local");
}

}  // namespace
}  // namespace cutover::report
