// The report's cluster section on two real cluster records (tests/fixtures/cluster/: the cpu
// cluster suite on the 4 namespaced nodes of compat/cluster_netns_itest.sh, unshaped and with
// node4's link at 50 Mbit/s, fabric "netns-veth"), and variants of them edited here: the
// verdict rules, the floors (probe/fabric_floors.h), the renderings and the report's schema.
#include "report/cluster_section.h"

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "compat/cluster_compare.h"
#include "core/file_system.h"
#include "core/json.h"
#include "probe/collect.h"
#include "report/assess.h"
#include "tests/harness/schema_check.h"
#include "tests/harness/test_env.h"

namespace cutover::report {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

json Record(const std::string& name) {
  Result<json> r =
      LoadClusterRecord(testing::SourceDir() + "/tests/fixtures/cluster/" + name + ".rec");
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : json();
}

probe::FabricFloors Floors(const std::string& rows) {
  Result<probe::FabricFloors> f = probe::ParseFabricFloors(
      R"({"schema": "cutover.fabric-floors/1", "version": 1, "floors": [)" + rows + "]}", "floors");
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  return f.ok() ? *f : probe::FabricFloors{};
}

std::vector<std::string> Codes(const std::vector<ReportFinding>& findings,
                               const std::string& severity) {
  std::vector<std::string> out;
  for (const ReportFinding& f : findings) {
    if (f.severity == severity) out.push_back(f.code);
  }
  return out;
}

TEST(ClusterSection, TheShapedTargetsSlowNodeIsARiskAndItsBusBandwidthSlower) {
  std::vector<ReportFinding> findings;
  ClusterSection c = AssessCluster(Record("unshaped"), Record("shaped"), {}, &findings);
  EXPECT_TRUE(Codes(findings, "blocker").empty());
  EXPECT_THAT(Codes(findings, "warning"),
              ::testing::UnorderedElementsAre("cluster.slow_node", "cluster.slower"));
  for (const ReportFinding& f : findings) {
    if (f.code == "cluster.slow_node") {
      EXPECT_THAT(f.message, HasSubstr(": node4"));
    }
    EXPECT_EQ(f.component, "cluster");
    EXPECT_FALSE(f.fix.empty()) << f.code;
  }
  EXPECT_EQ(c.compare["schema"], "cutover.compat-cluster-compare/1");
  // The same move the other way: the slow node is the source's, a note, not a risk.
  findings.clear();
  AssessCluster(Record("shaped"), Record("unshaped"), {}, &findings);
  EXPECT_THAT(Codes(findings, "info"), ::testing::ElementsAre("cluster.slow_node"));
  EXPECT_TRUE(Codes(findings, "warning").empty());
}

TEST(ClusterSection, AWrongResultIsABlockerAndInconsistentNodesARisk) {
  json target = Record("unshaped");
  target["collectives"][0]["correct"] = false;
  target["collectives"][0]["wrong_values"] = 3;
  target["fleet"]["consistent"] = false;
  std::vector<ReportFinding> findings;
  AssessCluster(Record("unshaped"), target, {}, &findings);
  EXPECT_THAT(Codes(findings, "blocker"), ::testing::ElementsAre("cluster.wrong_result"));
  EXPECT_THAT(findings[0].message, HasSubstr("gave a wrong result on the target"));
  EXPECT_THAT(Codes(findings, "warning"), ::testing::Contains("cluster.inconsistent_nodes"));
}

TEST(ClusterSection, EachSideIsHeldOnlyAgainstFloorsOfItsOwnKey) {
  const json rec = Record("unshaped");
  ASSERT_GT(rec["options"]["max_bytes"].get<uint64_t>(), 0u);
  probe::FabricFloors floors = Floors(
      R"({"fabric": "netns-veth", "collective": "all_reduce", "scope": "inter-node", "nodes": 4,
          "bytes": 4194304, "busbw_gbps": 1000, "source": "far above"},
         {"fabric": "netns-veth", "collective": "all_reduce", "scope": "inter-node", "nodes": 4,
          "bytes": 4194304, "busbw_gbps": 0.0001, "source": "far below"},
         {"fabric": "netns-veth", "collective": "all_reduce", "scope": "inter-node", "nodes": 4,
          "bytes": 1073741824, "busbw_gbps": 1, "source": "never reached"},
         {"fabric": "netns-veth", "collective": "all_reduce", "scope": "inter-node", "nodes": 8,
          "bytes": 4194304, "busbw_gbps": 1, "source": "another node count"},
         {"fabric": "netns-veth", "collective": "all_reduce", "scope": "inter-node", "nodes": 4,
          "average_over": {"min_bytes": 1048576, "max_bytes": 4194304, "factor": 4},
          "busbw_gbps": 0.0001, "source": "the run's own sweep"},
         {"fabric": "netns-veth", "collective": "all_reduce", "scope": "inter-node", "nodes": 4,
          "average_over": {"min_bytes": 1024, "max_bytes": 8589934592, "factor": 2},
          "busbw_gbps": 1, "source": "another sweep"},
         {"fabric": "ib-ndr-400", "collective": "all_reduce", "scope": "inter-node", "nodes": 4,
          "bytes": 4194304, "busbw_gbps": 1, "source": "another fabric"})");
  std::vector<ReportFinding> findings;
  json no_fabric = rec;
  no_fabric["fabric"] = nullptr;
  ClusterSection c = AssessCluster(rec, no_fabric, floors, &findings);
  ASSERT_EQ(c.floors.size(), 3u);  // the source's: two at 4 MiB and the average
  for (const FloorCheck& f : c.floors) EXPECT_EQ(f.side, "source");
  EXPECT_TRUE(c.floors[0].below);
  EXPECT_FALSE(c.floors[1].below);
  EXPECT_DOUBLE_EQ(c.floors[0].measured_gbps, c.floors[1].measured_gbps);
  EXPECT_GT(c.floors[0].measured_gbps, 0);
  EXPECT_TRUE(c.floors[2].floor.average_over.has_value());
  EXPECT_FALSE(c.floors[2].below);
  EXPECT_THAT(Codes(findings, "warning"), ::testing::Contains("cluster.below_floor"));
  const std::string notes = ::testing::PrintToString(c.notes);
  EXPECT_THAT(notes, HasSubstr("never reached that size (largest 4.0 MiB)"));
  EXPECT_THAT(notes, HasSubstr("this run had 4 nodes"));
  EXPECT_THAT(notes, HasSubstr("the run swept 1.0 MiB..4.0 MiB by 4"));
  EXPECT_THAT(notes, HasSubstr("target: no fabric recorded (compat run --fabric NAME)"));
  EXPECT_THAT(notes, ::testing::Not(HasSubstr("another fabric")));
}

TEST(ClusterSection, TheBuiltInFloorsParseAndEveryRowNamesItsSource) {
  const probe::FabricFloors& floors = probe::BuiltinFabricFloors();
  ASSERT_FALSE(floors.floors.empty());
  for (const probe::FabricFloor& f : floors.floors) {
    EXPECT_FALSE(f.source.empty()) << f.fabric;
    EXPECT_NE(f.bytes.has_value(), f.average_over.has_value()) << f.fabric;
  }
  for (const auto& [rows, message] : std::vector<std::pair<std::string, std::string>>{
           {R"({"fabric": "x", "collective": "all_reduce", "scope": "both", "nodes": 2,
                "bytes": 8, "busbw_gbps": 1, "source": "s"})",
            "floors: /floors/0/scope: expected intra-node or inter-node, got 'both'"},
           {R"({"fabric": "x", "collective": "all_reduce", "scope": "inter-node", "nodes": 2,
                "bytes": 8, "average_over": {"min_bytes": 8, "max_bytes": 8, "factor": 2},
                "busbw_gbps": 1, "source": "s"})",
            "floors: /floors/0: give exactly one of \"bytes\" and \"average_over\""},
           {R"({"fabric": "x", "collective": "all_reduce", "scope": "inter-node", "nodes": 2,
                "bytes": 8, "busbw_gbps": 1})",
            "floors: /floors/0/source: missing"},
           {R"({"fabric": "x", "collective": "all_reduce", "scope": "intra-node", "nodes": 2,
                "bytes": 8, "busbw_gbps": 1, "source": "s"})",
            "floors: /floors/0/nodes: intra-node means 1 node, inter-node 2 or more"},
           {R"({"fabric": "x", "collective": "all_reduce", "scope": "inter-node", "nodes": 2,
                "bytes": 8, "busbw_gbps": -1, "source": "s"})",
            "floors: /floors/0/busbw_gbps: expected a number above 0"}}) {
    Result<probe::FabricFloors> f = probe::ParseFabricFloors(
        R"({"schema": "cutover.fabric-floors/1", "version": 1, "floors": [)" + rows + "]}",
        "floors");
    ASSERT_FALSE(f.ok()) << rows;
    EXPECT_EQ(f.status().message(), message);
  }
}

TEST(ClusterSection, TheReportShowsItInEveryRenderingAndMatchesItsSchema) {
  AssessInputs in;
  RealFileSystem fs(testing::SourceDir() + "/tests/fixtures/hosts/h100-cuda12.4");
  in.source = in.target = probe::Collect(fs, probe::CollectOptions{});
  json target = Record("shaped");
  // A slow link too, between two nodes that are not slow, to see it marked on the heat map.
  target["pairwise"]["slow_links"] = json::array({json::array({"node1", "node2"})});
  in.cluster_source = Record("unshaped");
  in.cluster_target = target;
  in.input_paths = {{"source", "a.json"},
                    {"target", "b.json"},
                    {"cluster source", "u.rec"},
                    {"cluster target", "s.rec"}};
  in.generated_at = "2026-12-07T00:00:00Z";
  Result<Assessment> a = Assess(std::move(in));
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->verdict, "go-with-risks");
  ASSERT_TRUE(a->cluster.has_value());
  json doc = AssessmentToJson(*a);
  CUTOVER_EXPECT_VALID(doc, "report-2.json");
  EXPECT_EQ(doc["cluster"]["target_world_size"], 4);
  bool covered = false;
  for (const json& c : doc["coverage"]) {
    if (c["area"] == "cluster") covered = c["assessed"].get<bool>();
  }
  EXPECT_TRUE(covered);
  const std::string md = RenderMarkdown(*a);
  EXPECT_THAT(md, HasSubstr("## Cluster"));
  EXPECT_THAT(md, HasSubstr("| all_reduce | bandwidth |"));
  EXPECT_THAT(md, HasSubstr("target pairwise matrix: slow nodes node4, slow links node1-node2"));
  const std::string html = RenderHtml(*a);
  EXPECT_THAT(html, HasSubstr("id=\"chart-cluster-busbw\""));
  const std::string target_map = html.substr(html.find("id=\"heatmap-target\""));
  EXPECT_THAT(target_map, HasSubstr("stroke=\"#b3261e\""));
  EXPECT_THAT(target_map, HasSubstr("(node1) to 1 (node2): "));
  EXPECT_THAT(target_map, HasSubstr("fill=\"#b3261e\">node4"));
  const std::string source_map =
      html.substr(html.find("id=\"heatmap-source\""),
                  html.find("id=\"heatmap-target\"") - html.find("id=\"heatmap-source\""));
  EXPECT_THAT(source_map, ::testing::Not(HasSubstr("#b3261e")));
  // JUnit: the warnings are there as passed cases with their text.
  std::string xml = AssessmentJunit(*a).ToXml();
  EXPECT_THAT(xml, HasSubstr("cluster.slow_node"));
}

TEST(ClusterSection, OneRecordAloneOrASingleNodeRecordIsRefused) {
  AssessInputs in;
  in.cluster_source = Record("unshaped");
  Result<Assessment> a = Assess(std::move(in));
  ASSERT_FALSE(a.ok());
  EXPECT_THAT(a.status().message(), HasSubstr("--cluster needs two records"));
  // A hand-edited record is refused naming what is wrong, never thrown on.
  for (const auto& [edit, message] :
       std::vector<std::pair<std::function<void(json&)>, std::string>>{
           {[](json& r) { r["collectives"][0]["busbw_gbps"] = "x"; },
            "a row without a finite busbw_gbps >= 0"},
           {[](json& r) { r["collectives"][0]["rep_us"] = json::array({"1"}); },
            "a rep_us that is not a finite number >= 0"},
           {[](json& r) { r["pairwise"]["bw_gbps"][1] = json::array({1}); },
            "pairwise bw_gbps is not world_size x world_size"},
           {[](json& r) {
              r["pairwise"]["slow_links"] = json::array({json::array({1, 2})});
            },
            "a slow link that is not two names"},
           {[](json& r) { r["rank_nodes"] = json::array({"a"}); },
            "rank_nodes does not name world_size ranks"},
           {[](json& r) { r["fleet"]["groups"] = json::array({7}); },
            "a fleet group is not an object"},
           {[](json& r) { r["options"]["max_bytes"] = -1; },
            "options.max_bytes is not an unsigned integer"}}) {
    json bad = Record("unshaped");
    edit(bad);
    Result<json> r = CheckClusterRecord(bad, "bad.rec");
    ASSERT_FALSE(r.ok()) << message;
    EXPECT_EQ(r.status().message(), "bad.rec: not a valid cluster record: " + message);
  }
  json single = {{"schema", "cutover.compat-record/3"}};
  Result<json> r = CheckClusterRecord(single, "one.rec");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(),
              HasSubstr("one.rec: not a valid cluster record: schema 'cutover.compat-record/3'"));
}

}  // namespace
}  // namespace cutover::report
