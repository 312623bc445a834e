// probe fleet: the stack read from real fixture fingerprints, grouping, outliers, bad files.
#include "probe/fleet.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "core/file_system.h"
#include "core/file_util.h"
#include "core/fingerprint.h"
#include "core/json.h"
#include "probe/collect.h"
#include "tests/harness/schema_check.h"
#include "tests/harness/test_env.h"

namespace cutover::probe {
namespace {

std::string FixtureJson(const std::string& name, const std::string& hostname) {
  RealFileSystem fs(testing::SourceDir() + "/tests/fixtures/hosts/" + name);
  Result<Fingerprint> fp = Collect(fs, CollectOptions{});
  EXPECT_TRUE(fp.ok()) << fp.status().ToString();
  nlohmann::json doc = FingerprintToJson(*fp);
  doc["hostname"] = hostname;
  return DumpJson(doc, 2);
}

size_t Field(const std::string& name) {
  const auto& f = FleetFields();
  return static_cast<size_t>(std::find(f.begin(), f.end(), name) - f.begin());
}

TEST(FleetTest, StackOfARealFingerprintMatchesItsDocument) {
  std::string text = FixtureJson("h100-cuda12.4", "node-a");
  nlohmann::json doc = nlohmann::json::parse(text);
  auto h = ReadFleetHost(text, "a.json");
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  ASSERT_EQ(h->stack.size(), FleetFields().size());
  EXPECT_EQ(h->hostname, "node-a");
  EXPECT_EQ(h->stack[Field("driver")], doc["driver"]["version"]);
  EXPECT_EQ(h->stack[Field("driver_cuda")], doc["driver"]["cuda_version"]);
  EXPECT_EQ(h->stack[Field("kernel")], doc["os"]["kernel"]);
  EXPECT_EQ(h->stack[Field("os")],
            doc["os"]["id"].get<std::string>() + " " + doc["os"]["version_id"].get<std::string>());
  EXPECT_EQ(h->stack[Field("gpus")],
            std::to_string(doc["gpus"].size()) + "x " + doc["gpus"][0]["name"].get<std::string>());
  EXPECT_EQ(h->stack[Field("cuda_toolkit")], doc["cuda"]["toolkits"][0]["version"]);
  std::string cudnn = "-";
  for (const auto& lib : doc["libraries"]) {
    if (lib["name"] == "cudnn") cudnn = lib["version"];
  }
  EXPECT_EQ(h->stack[Field("cudnn")], cudnn);
  EXPECT_NE(cudnn, "-") << "the fixture has a cuDNN";
}

TEST(FleetTest, TwoCopiesOfOneLibraryAreBothShown) {
  auto h = ReadFleetHost(FixtureJson("two-cudnn", "n"), "n.json");
  ASSERT_TRUE(h.ok());
  EXPECT_NE(h->stack[Field("cudnn")].find(", "), std::string::npos) << h->stack[Field("cudnn")];
}

TEST(FleetTest, GroupsHostsNamesOutliersAndListsBadFiles) {
  testing::TempDir dir;
  std::string same = FixtureJson("h100-cuda12.4", "x");
  nlohmann::json base = nlohmann::json::parse(same);
  std::vector<std::string> files;
  auto write = [&](const std::string& rel, const std::string& text) {
    std::string path = dir.Join(rel);
    ASSERT_TRUE(MakeDirs(path.substr(0, path.rfind('/'))).ok());
    ASSERT_TRUE(WriteFileAtomic(path, text).ok());
  };
  for (int i = 0; i < 3; ++i) {
    nlohmann::json d = base;
    d["hostname"] = "good-" + std::to_string(i);
    write("rack1/good-" + std::to_string(i) + ".json", d.dump());
  }
  nlohmann::json odd = base;
  odd["hostname"] = "odd";
  odd["driver"]["version"] = "535.104.05";
  write("rack2/odd.json", odd.dump());
  write("rack2/broken.json", "{\"schema\": \"cutover.fingerprint/1\",\n  \"os\": [");
  write("rack2/diff.json", "{\"schema\": \"cutover.diff/1\"}");
  write("rack2/notes.txt", "not json, not listed");

  auto found = FleetFiles({dir.path()});
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  ASSERT_EQ(found->size(), 6u);
  FleetReport r = AnalyzeFleet(*found, 2);
  EXPECT_FALSE(r.consistent());
  ASSERT_EQ(r.groups.size(), 2u);
  EXPECT_EQ(r.groups[0].hosts.size(), 3u);
  ASSERT_EQ(r.groups[1].hosts.size(), 1u);
  EXPECT_EQ(r.hosts[r.groups[1].hosts[0]].hostname, "odd");
  ASSERT_EQ(r.groups[1].differs.size(), 1u);
  EXPECT_EQ(FleetFields()[r.groups[1].differs[0]], "driver");
  ASSERT_EQ(r.unreadable.size(), 2u);
  EXPECT_NE(r.unreadable[0].error.find("broken.json: line 2"), std::string::npos)
      << r.unreadable[0].error;
  EXPECT_NE(r.unreadable[1].error.find("schema cutover.diff/1, expected cutover.fingerprint"),
            std::string::npos)
      << r.unreadable[1].error;

  nlohmann::json j = FleetToJson(r);
  CUTOVER_EXPECT_VALID(j, "fleet-1.json");
  EXPECT_EQ(j["groups"][1]["differs"]["driver"]["value"], "535.104.05");
  EXPECT_EQ(j["groups"][1]["differs"]["driver"]["majority"], base["driver"]["version"]);
  std::string table = RenderFleetTable(r, 2);
  EXPECT_NE(table.find("fleet: 4 hosts, 2 stacks: NOT consistent"), std::string::npos) << table;
  EXPECT_NE(table.find("good-0, good-1 and 1 more"), std::string::npos) << table;
  EXPECT_NE(table.find("driver\t535.104.05\t(majority: "), std::string::npos) << table;

  // The three good hosts alone are consistent.
  std::vector<std::string> good(found->begin(), found->begin() + 3);
  FleetReport ok = AnalyzeFleet(good, 1);
  EXPECT_TRUE(ok.consistent());
  EXPECT_TRUE(ok.unreadable.empty());
  CUTOVER_EXPECT_VALID(FleetToJson(ok), "fleet-1.json");
}

// A cluster record's nodes (compat run --suite cluster) judged as a fleet: named by node name,
// the odd node and its field named, a node with no fingerprint listed as unreadable.
TEST(FleetTest, ClusterNodesAreJudgedByTheirFingerprints) {
  nlohmann::json base = nlohmann::json::parse(FixtureJson("h100-cuda12.4", "x"));
  nlohmann::json odd = base;
  odd["driver"]["version"] = "535.104.05";
  nlohmann::json nodes = nlohmann::json::array();
  for (int i = 1; i <= 3; ++i) {
    nodes.push_back({{"name", "node" + std::to_string(i)},
                     {"ranks", {2 * i - 2, 2 * i - 1}},
                     {"fingerprint", base}});
  }
  nodes.push_back({{"name", "node4"}, {"ranks", {6, 7}}, {"fingerprint", odd}});
  nodes.push_back({{"name", "node5"}, {"ranks", {8}}});
  nlohmann::json j = JudgeClusterNodes(nodes);
  CUTOVER_EXPECT_VALID(j, "fleet-1.json");
  EXPECT_FALSE(j["consistent"].get<bool>());
  ASSERT_EQ(j["groups"].size(), 2u);
  EXPECT_EQ(j["groups"][0]["count"], 3);
  EXPECT_EQ(j["groups"][1]["hosts"][0]["file"], "node4");
  EXPECT_EQ(j["groups"][1]["differs"]["driver"]["value"], "535.104.05");
  ASSERT_EQ(j["unreadable"].size(), 1u);
  EXPECT_EQ(j["unreadable"][0]["file"], "node5");

  nodes.erase(nodes.begin() + 3, nodes.end());
  EXPECT_TRUE(JudgeClusterNodes(nodes)["consistent"].get<bool>());
}

TEST(FleetTest, MissingPathsAndEmptyDirectoriesAreBadInput) {
  testing::TempDir dir;
  EXPECT_EQ(FleetFiles({dir.Join("nope")}).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(FleetFiles({dir.path()}).status().message(), dir.path() + ": no *.json files in it");
}

TEST(FleetTest, HostileDocumentsAreRefusedNotCrashedOn) {
  std::string deep(100000, '[');
  EXPECT_EQ(ReadFleetHost(deep, "deep.json").status().code(), Code::kInvalidArgument);
  EXPECT_FALSE(ReadFleetHost("", "empty.json").ok());
  EXPECT_FALSE(ReadFleetHost("[1,2]", "array.json").ok());
  EXPECT_FALSE(ReadFleetHost("{\"schema\": 7}", "num.json").ok());
  // Odd but valid: values of the wrong type are taken as text, nothing else breaks.
  auto h = ReadFleetHost(
      R"({"schema":"cutover.fingerprint/1","driver":{"version":550},"gpus":[{"name":null}],)"
      R"("libraries":[{"name":"nccl-net-x"},{"version":"1"},7]})",
      "odd.json");
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(h->stack[Field("driver")], "550");
  EXPECT_EQ(h->stack[Field("gpus")], "1x -");
  EXPECT_EQ(h->stack[Field("nccl_plugins")], "nccl-net-x -");
}

}  // namespace
}  // namespace cutover::probe
