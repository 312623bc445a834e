#include "canary/haproxy_traffic.h"

#include <random>

#include <gtest/gtest.h>

namespace cutover::canary {
namespace {

// Trimmed from HAProxy 2.6's `show stat` (the real header has 100+ columns).
constexpr char kStat[] =
    "# pxname,svname,qcur,qmax,scur,smax,slim,stot,bin,bout,dreq,dresp,ereq,econ,eresp,wretr,"
    "wredis,status,weight,act,bck,chkfail,chkdown,lastchg,downtime,qlimit,pid,iid,sid,throttle,"
    "lbtot,tracked,type,rate,rate_lim,rate_max,check_status,check_code,check_duration,hrsp_1xx,"
    "hrsp_2xx,hrsp_3xx,hrsp_4xx,hrsp_5xx,hrsp_other,\n"
    "main,FRONTEND,,,0,1,262132,12,0,0,0,0,0,,,,,OPEN,,,,,,,,,1,2,0,,,,0,0,0,1,,,,0,10,0,0,2,0,\n"
    "infer,s1,0,0,0,1,,9,0,0,,0,,0,0,0,0,no check,1,1,0,,,5,,,1,3,1,,9,,2,0,,1,,,,0,8,0,0,1,0,\r\n"
    "infer,d1,0,0,0,0,,3,0,0,,0,,0,0,0,0,UP 1/3,0,1,0,,,5,,,1,3,2,,0,,2,0,,0,,,,0,2,0,0,1,0,\n"
    "infer,BACKEND,0,0,0,1,26214,12,0,0,0,0,,0,0,0,0,UP,1,1,0,,0,5,0,,1,3,0,,9,,1,0,,1,,,,0,10,0,"
    "0,2,0,\n"
    "\n";

TEST(ParseShowStatTest, ColumnsByName) {
  auto rows = ParseShowStat(kStat);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 4u);
  EXPECT_EQ((*rows)[1].proxy, "infer");
  EXPECT_EQ((*rows)[1].server, "s1");
  EXPECT_EQ((*rows)[1].counters.responses, 9);
  EXPECT_EQ((*rows)[1].counters.errors_5xx, 1);
  EXPECT_EQ((*rows)[1].counters.sessions, 9);
  EXPECT_EQ((*rows)[1].counters.status, "no check");
  EXPECT_EQ((*rows)[2].counters.status, "UP 1/3");
  EXPECT_EQ((*rows)[2].counters.responses, 3);
}

TEST(ParseShowStatTest, OtherColumnOrderAndShortRows) {
  auto rows = ParseShowStat("# svname,pxname,hrsp_5xx,hrsp_2xx\nd1,infer,4,6\nx\n,\nd2,infer,zz\n");
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 3u);  // "x" has no pxname field; "," has two empty fields
  EXPECT_EQ((*rows)[0].server, "d1");
  EXPECT_EQ((*rows)[0].counters.responses, 10);
  EXPECT_EQ((*rows)[2].counters.errors_5xx, 0) << "non-numeric reads 0";
}

TEST(ParseShowStatTest, Errors) {
  EXPECT_EQ(ParseShowStat("").status().message(), "show stat: no '# pxname,svname,...' header");
  EXPECT_EQ(ParseShowStat("# a,b\n").status().message(),
            "show stat: header names no pxname and svname columns");
  EXPECT_EQ(ParseShowStat("infer,s1\n").status().message(),
            "show stat: a row before the '# pxname,svname,...' header");
}

TEST(ParseShowStatTest, RandomInputNeverCrashes) {
  std::mt19937_64 rng(7);
  const std::string alphabet = "#,\n\r 0123456789-pxnamesvhrsp_5xx";
  std::string base = kStat;
  for (int i = 0; i < 3000; ++i) {
    std::string s = base;
    int edits = static_cast<int>(rng() % 20);
    for (int e = 0; e < edits && !s.empty(); ++e) {
      size_t at = rng() % s.size();
      switch (rng() % 3) {
        case 0:
          s[at] = alphabet[rng() % alphabet.size()];
          break;
        case 1:
          s.erase(at, rng() % 30);
          break;
        default:
          s.insert(at, 1, alphabet[rng() % alphabet.size()]);
      }
    }
    auto r = ParseShowStat(s);
    if (r.ok()) {
      for (const StatRow& row : *r) EXPECT_GE(row.counters.responses, 0);
    }
  }
}

TEST(ParseGetWeightTest, RepliesAndErrors) {
  EXPECT_EQ(*ParseGetWeight("30 (initial 0)\n\n"), 30);
  EXPECT_EQ(*ParseGetWeight("\n1 (initial 0)\n"), 1);
  EXPECT_EQ(*ParseGetWeight("256"), 256);
  EXPECT_EQ(ParseGetWeight("No such server.\n\n").status().message(),
            "haproxy: get weight: unexpected reply 'No such server.'");
  EXPECT_FALSE(ParseGetWeight("").ok());
  EXPECT_FALSE(ParseGetWeight("99999 (initial 1)").ok());
  EXPECT_FALSE(ParseGetWeight("881 (initial 1)").ok()) << "above HAProxy's 256";
  EXPECT_EQ(ParseGetWeight("oops\nsecond line").status().message(),
            "haproxy: get weight: unexpected reply 'oops'");
}

TEST(ParseShowInfoTest, Fields) {
  auto f = ParseShowInfo("Name: HAProxy\nPid: 29809\nUptime_sec: 29\nnoise\n");
  EXPECT_EQ(f.at("Pid"), "29809");
  EXPECT_EQ(f.at("Uptime_sec"), "29");
  EXPECT_EQ(f.count("noise"), 0u);
}

TEST(HaproxyTrafficTest, UnreachableSocketIsUnavailable) {
  HaproxyTraffic t({.socket = "/nonexistent/admin.sock", .backend = "infer"});
  auto r = t.ReadWeights({"s1"});
  EXPECT_EQ(r.status().code(), Code::kUnavailable);
  EXPECT_EQ(r.status().message(),
            "haproxy runtime API /nonexistent/admin.sock: connect: No such file or directory");
}

TEST(HaproxyTrafficTest, OutOfRangeWeightSendsNothing) {
  HaproxyTraffic t({.socket = "/nonexistent/admin.sock", .backend = "infer"});
  EXPECT_EQ(t.SetWeights({{"d1", 257}}).message(),
            "haproxy: weight for d1 must be 0..256, got 257");
}

}  // namespace
}  // namespace cutover::canary
