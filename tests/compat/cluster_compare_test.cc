// Tests of compat/cluster_compare.h: the bus bandwidth ratio per collective and regime with its
// interval, sizes on one side only, wrong results, slow-node tables, and the refusals.
#include "compat/cluster_compare.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/file_util.h"
#include "tests/harness/test_env.h"

namespace cutover {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;

Json Row(const std::string& op, uint64_t bytes, double avg_us, std::vector<double> reps,
         bool correct = true) {
  const double algbw = bytes / (avg_us * 1e-6) / 1e9;
  return {{"op", op},          {"bytes", bytes},       {"count", bytes / 4},
          {"in_place", false}, {"rep_us", reps},       {"time_us", {{"avg", avg_us}, {"min", avg_us}, {"max", avg_us}}},
          {"algbw_gbps", algbw}, {"busbw_gbps", algbw * 1.5}, {"correct", correct},
          {"wrong_values", correct ? 0 : 3}, {"ranks_wrong", correct ? 0 : 1}};
}

Json Record(std::vector<Json> rows, Json slow_nodes = Json::array()) {
  return {{"schema", "cutover.compat-cluster/1"},
          {"world_size", 4},
          {"collectives", rows},
          {"pairwise",
           {{"rule_applied", true}, {"rule_reason", ""}, {"slow_nodes", slow_nodes},
            {"slow_links", Json::array()}}}};
}

TEST(ClusterCompare, RatioPerRegimeWithAnIntervalFromTheRepetitions) {
  // Target twice as fast at 1 MiB (bandwidth-bound), equal at 1 KiB (latency-bound).
  Json src = Record({Row("all_reduce", 1024, 10, {9, 10, 11}),
                     Row("all_reduce", 1 << 20, 200, {190, 200, 210})});
  Json tgt = Record({Row("all_reduce", 1024, 10, {10, 10, 10}),
                     Row("all_reduce", 1 << 20, 100, {95, 100, 105}),
                     Row("all_reduce", 4 << 20, 300, {300})},
                    Json::array({"node3"}));
  ClusterComparison c = CompareClusterRecords(src, tgt);
  ASSERT_EQ(c.doc["collectives"].size(), 2u);
  const Json& bw = c.doc["collectives"][0];
  EXPECT_EQ(bw["regime"], "bandwidth");
  EXPECT_NEAR(bw["busbw_ratio"].get<double>(), 2.0, 1e-9);
  EXPECT_NEAR(bw["interval"][0].get<double>(), 2.0 * (190.0 / 105) / 2.0, 1e-9);
  EXPECT_NEAR(bw["interval"][1].get<double>(), 2.0 * (210.0 / 95) / 2.0, 1e-9);
  const Json& lat = c.doc["collectives"][1];
  EXPECT_EQ(lat["regime"], "latency");
  EXPECT_NEAR(lat["busbw_ratio"].get<double>(), 1.0, 1e-9);
  ASSERT_EQ(c.doc["one_side_only"].size(), 1u);
  EXPECT_EQ(c.doc["one_side_only"][0]["bytes"], 4 << 20);
  EXPECT_FALSE(c.failed);
  EXPECT_THAT(c.table, HasSubstr("target: slow nodes [\"node3\"]"));
  EXPECT_THAT(c.table, HasSubstr("1 (collective, size) rows measured on one side only"));
}

// Each side's fleet verdict of its nodes (ClusterNodeHooks::judge) is in the table and --json:
// the odd node named with the field it differs in, a node without a fingerprint listed.
TEST(ClusterCompare, EachSidesNodeFleetVerdictIsShown) {
  Json src = Record({Row("all_reduce", 1024, 10, {10})});
  Json tgt = src;
  src["fleet"] = {{"schema", "cutover.fleet/1"}, {"hosts", 4}, {"consistent", true},
                  {"groups", Json::array()}, {"unreadable", Json::array()}};
  tgt["fleet"] = Json::parse(R"({
    "schema": "cutover.fleet/1", "hosts": 4, "consistent": false,
    "groups": [{"majority": true, "hosts": [{"file": "node1"}, {"file": "node2"}]},
               {"majority": false, "hosts": [{"file": "node4"}],
                "differs": {"driver": {"value": "535.104.05", "majority": "550.54.15"}}}],
    "unreadable": [{"file": "node5", "error": "no fingerprint"}]})");
  ClusterComparison c = CompareClusterRecords(src, tgt);
  EXPECT_THAT(c.table, HasSubstr("source nodes: 4 with one stack\n"));
  EXPECT_THAT(c.table,
              HasSubstr("target nodes differ: node4 (driver 535.104.05, majority 550.54.15)\n"));
  EXPECT_THAT(c.table, HasSubstr("node node5: no fingerprint, not judged\n"));
  EXPECT_EQ(c.doc["fleet"]["target"]["consistent"], false);
  EXPECT_THAT(CompareClusterRecords(Record({}), Record({})).table,
              HasSubstr("source nodes: not judged\ntarget nodes: not judged\n"));
}

TEST(ClusterCompare, AWrongResultOnEitherSideFails) {
  Json src = Record({Row("alltoall", 4096, 10, {10})});
  Json tgt = Record({Row("alltoall", 4096, 10, {10}, /*correct=*/false)});
  ClusterComparison c = CompareClusterRecords(src, tgt);
  EXPECT_TRUE(c.failed);
  EXPECT_THAT(c.table, HasSubstr("WRONG RESULT (target): alltoall 4096 B"));
}

TEST(ClusterCompare, LoadRefusesOtherFamiliesAndBrokenRows) {
  testing::TempDir tmp;
  const std::string single = tmp.Join("single.rec"), broken = tmp.Join("broken.rec");
  ASSERT_TRUE(WriteFileAtomic(single, R"({"schema": "cutover.compat-record/1"})").ok());
  Json b = Record({Row("all_reduce", 8, 1, {1})});
  b["collectives"][0].erase("rep_us");
  ASSERT_TRUE(WriteFileAtomic(broken, b.dump()).ok());
  EXPECT_EQ(LoadClusterRecord(single).status().message(),
            single + ": not a valid cluster record: schema 'cutover.compat-record/1', this "
                     "cutover reads cutover.compat-cluster/1");
  EXPECT_EQ(LoadClusterRecord(broken).status().message(),
            broken + ": not a valid cluster record: a row without rep_us");
  EXPECT_EQ(*RecordSchema(single), "cutover.compat-record/1");
  EXPECT_TRUE(IsClusterSchema("cutover.compat-cluster/1"));
  EXPECT_FALSE(IsClusterSchema("cutover.compat-record/1"));
}

}  // namespace
}  // namespace cutover
