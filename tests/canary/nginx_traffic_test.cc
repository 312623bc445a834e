#include "canary/nginx_traffic.h"

#include <gtest/gtest.h>

#include "core/file_util.h"
#include "tests/harness/test_env.h"

namespace cutover::canary {
namespace {

constexpr char kFile[] =
    "# managed by the platform team\n"
    "upstream other { server 10.0.0.9:80; }\n"
    "upstream infer {\n"
    "    least_conn;   # balancing\n"
    "    server 127.0.0.1:8001 weight=5 max_fails=3;\n"
    "    server 127.0.0.1:8002 down;\n"
    "    server 127.0.0.1:8003;\n"
    "    keepalive 16;\n"
    "}\n"
    "# tail comment\n";

TEST(ParseUpstreamTest, ServersWeightsAndOtherStatements) {
  auto b = ParseUpstream(kFile, "infer");
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(UpstreamWeights(*b),
            (Weights{{"127.0.0.1:8001", 5}, {"127.0.0.1:8002", 0}, {"127.0.0.1:8003", 1}}));
  ASSERT_EQ(b->statements.size(), 5u);
  EXPECT_EQ(b->statements[0].text, "least_conn");
  EXPECT_EQ(b->statements[1].server.params, (std::vector<std::string>{"max_fails=3"}));
  EXPECT_EQ(b->statements[4].text, "keepalive 16");
  // The other block is not this one.
  auto other = ParseUpstream(kFile, "other");
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(UpstreamWeights(*other), (Weights{{"10.0.0.9:80", 1}}));
}

TEST(ParseUpstreamTest, RenderKeepsTheRestOfTheFileAndRoundTrips) {
  auto b = ParseUpstream(kFile, "infer");
  ASSERT_TRUE(b.ok());
  b->statements[1].server.weight = 0;
  b->statements[2].server.weight = 7;
  std::string text = RenderUpstream(*b);
  EXPECT_EQ(text,
            "# managed by the platform team\n"
            "upstream other { server 10.0.0.9:80; }\n"
            "upstream infer {\n"
            "    least_conn;\n"
            "    server 127.0.0.1:8001 down max_fails=3;\n"
            "    server 127.0.0.1:8002 weight=7;\n"
            "    server 127.0.0.1:8003 weight=1;\n"
            "    keepalive 16;\n"
            "}\n"
            "# tail comment\n");
  auto again = ParseUpstream(text, "infer");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(RenderUpstream(*again), text);
}

TEST(ParseUpstreamTest, BadFilesAreOneClearError) {
  struct Case {
    const char* text;
    const char* message;
  } cases[] = {
      {"upstream other { server a:1; }", "no 'upstream infer {' block"},
      {"# upstream infer { server a:1; }", "no 'upstream infer {' block"},
      {"upstream inferx { server a:1; }", "no 'upstream infer {' block"},
      {"upstream infer { server a:1;", "has no closing '}'"},
      {"upstream infer { server a:1 }", "a statement without ';'"},
      {"upstream infer { server; }", "a server line without an address"},
      {"upstream infer { server a:1 weight=0; }", "server a:1: bad weight=0"},
      {"upstream infer { server a:1 weight=x; }", "server a:1: bad weight=x"},
      {"upstream infer { server a:1 weight=99999999999; }", "bad weight=99999999999"},
      {"upstream infer { if ($x) { } }", "a nested block"},
  };
  for (const Case& c : cases) {
    auto b = ParseUpstream(c.text, "infer");
    EXPECT_EQ(b.status().code(), Code::kInvalidArgument) << c.text;
    EXPECT_NE(b.status().message().find(c.message), std::string::npos)
        << c.text << " -> " << b.status().message();
    EXPECT_EQ(b.status().message().rfind("nginx upstream file: ", 0), 0u) << b.status().message();
  }
}

class NginxTrafficTest : public ::testing::Test {
 protected:
  void SetUp() override {
    file_ = dir_.Join("upstream.conf");
    ASSERT_TRUE(WriteFileAtomic(file_, kFile).ok());
    log_ = dir_.Join("commands.log");
  }
  NginxTraffic Make(const std::string& test, const std::string& reload) {
    return NginxTraffic({.upstream_file = file_,
                         .upstream = "infer",
                         .test_command = test,
                         .reload_command = reload,
                         .timeout = std::chrono::milliseconds(5000)});
  }
  cutover::testing::TempDir dir_;
  std::string file_;
  std::string log_;
};

TEST_F(NginxTrafficTest, SetWeightsWritesTestsThenReloads) {
  NginxTraffic t = Make("echo test >> " + log_, "echo reload >> " + log_);
  ASSERT_TRUE(t.SetWeights({{"127.0.0.1:8001", 0}, {"127.0.0.1:8002", 30}}).ok());
  auto w = t.ReadWeights({"127.0.0.1:8001", "127.0.0.1:8002", "127.0.0.1:8003"});
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(*w, (Weights{{"127.0.0.1:8001", 0}, {"127.0.0.1:8002", 30}, {"127.0.0.1:8003", 1}}));
  EXPECT_EQ(ReadFile(log_).value_or(""), "test\nreload\n");
  EXPECT_EQ(t.ReadCounters().status().code(), Code::kUnimplemented);
}

TEST_F(NginxTrafficTest, FailedTestRestoresTheFileAndDoesNotReload) {
  NginxTraffic t = Make("echo 'nginx: [emerg] unknown directive' >&2; echo 'test failed'; exit 1",
                        "echo reload >> " + log_);
  Status s = t.SetWeights({{"127.0.0.1:8001", 9}});
  EXPECT_EQ(s.code(), Code::kFailedPrecondition);
  EXPECT_NE(s.message().find("nginx: test_command"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("exit status 1: nginx: [emerg] unknown directive"),
            std::string::npos)
      << s.message();
  EXPECT_EQ(ReadFile(file_).value_or(""), kFile) << "the previous file is back";
  EXPECT_EQ(ReadFile(log_).value_or(""), "") << "no reload after a failed test";
}

TEST_F(NginxTrafficTest, FailedReloadRestoresTheFile) {
  NginxTraffic t = Make("true", "exit 4");
  Status s = t.SetWeights({{"127.0.0.1:8001", 9}});
  EXPECT_NE(s.message().find("nginx: reload_command 'exit 4' failed"), std::string::npos)
      << s.message();
  EXPECT_EQ(ReadFile(file_).value_or(""), kFile);
}

TEST_F(NginxTrafficTest, UnknownServerIsRefusedBeforeAnythingIsWritten) {
  NginxTraffic t = Make("echo test >> " + log_, "echo reload >> " + log_);
  Status s = t.SetWeights({{"127.0.0.1:8001", 9}, {"127.0.0.1:9999", 1}});
  EXPECT_EQ(s.code(), Code::kFailedPrecondition);
  EXPECT_NE(s.message().find("has no server 127.0.0.1:9999"), std::string::npos) << s.message();
  EXPECT_EQ(ReadFile(file_).value_or(""), kFile);
  EXPECT_EQ(ReadFile(log_).value_or(""), "");
  EXPECT_EQ(t.ReadWeights({"127.0.0.1:9999"}).status().code(), Code::kNotFound);
  EXPECT_EQ(t.SetWeights({{"127.0.0.1:8001", -1}}).code(), Code::kInvalidArgument);
}

TEST_F(NginxTrafficTest, HangingCommandTimesOutAndRestores) {
  NginxTraffic t = NginxTraffic({.upstream_file = file_,
                                 .upstream = "infer",
                                 .test_command = "sleep 10",
                                 .reload_command = "true",
                                 .timeout = std::chrono::milliseconds(200)});
  Status s = t.SetWeights({{"127.0.0.1:8001", 9}});
  EXPECT_NE(s.message().find("timed out after 200 ms"), std::string::npos) << s.message();
  EXPECT_EQ(ReadFile(file_).value_or(""), kFile);
}

}  // namespace
}  // namespace cutover::canary
