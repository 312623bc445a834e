#include "core/junit.h"

#include <gtest/gtest.h>

#include "core/file_util.h"
#include "tests/harness/test_env.h"

namespace cutover {
namespace {

JunitReport Sample() {
  JunitReport r{.name = "cutover <compat>"};
  JunitSuite& gemm =
      r.suites.emplace_back(JunitSuite{.name = "gemm", .timestamp = "2026-12-02T10:00:00Z"});
  gemm.cases.push_back({.classname = "gemm.fp16", .name = "4096x4096", .time_s = 0.125});
  gemm.cases.push_back({.classname = "gemm.fp32",
                        .name = "a&b \"q\" 'x'",
                        .time_s = 1.5,
                        .outcome = JunitOutcome::kFailed,
                        .message = "max ulp 9 > 4\nsecond line",
                        .text = "tile 3: <bad> \x1b[31mred\x1b[0m & more",
                        .system_out = "log \xff\xfe tail"});
  gemm.cases.push_back({.classname = "gemm.tf32",
                        .name = "skip",
                        .outcome = JunitOutcome::kSkipped,
                        .message = "no GPU"});
  JunitSuite& nccl = r.suites.emplace_back(JunitSuite{.name = "nccl"});
  nccl.cases.push_back({.classname = "nccl",
                        .name = "allreduce",
                        .time_s = 2,
                        .outcome = JunitOutcome::kError,
                        .message = "libnccl.so.2 missing"});
  return r;
}

TEST(XmlEscapeTest, EscapesAndReplaces) {
  EXPECT_EQ(XmlEscape("a&b<c>d\"e'f"), "a&amp;b&lt;c&gt;d&quot;e&apos;f");
  EXPECT_EQ(XmlEscape("tab\tnl\n"), "tab\tnl\n");
  EXPECT_EQ(XmlEscape("tab\tnl\ncr\r", true), "tab&#9;nl&#10;cr&#13;");
  EXPECT_EQ(XmlEscape(std::string("nul\0bell\x07", 9)),
            "nul\xef\xbf\xbd"
            "bell\xef\xbf\xbd");
  // Invalid UTF-8: a lone continuation byte, a truncated sequence, an overlong '/', a surrogate.
  EXPECT_EQ(XmlEscape("\x80"), "\xef\xbf\xbd");
  EXPECT_EQ(XmlEscape("\xe2\x82"), "\xef\xbf\xbd\xef\xbf\xbd");
  EXPECT_EQ(XmlEscape("\xc0\xaf"), "\xef\xbf\xbd\xef\xbf\xbd");
  EXPECT_EQ(XmlEscape("\xed\xa0\x80"), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
  EXPECT_EQ(XmlEscape("\xef\xbf\xbe"), "\xef\xbf\xbd");  // U+FFFE is not an XML character
  // Valid multi-byte text passes through.
  EXPECT_EQ(XmlEscape("µs → 𝛑"), "µs → 𝛑");
}

TEST(JunitReportTest, CountsAndStructure) {
  std::string xml = Sample().ToXml();
  EXPECT_NE(xml.find("<testsuites name=\"cutover &lt;compat&gt;\" tests=\"4\" failures=\"1\" "
                     "errors=\"1\" skipped=\"1\" time=\"3.625\">"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<testsuite name=\"gemm\" tests=\"3\" failures=\"1\" errors=\"0\" "
                     "skipped=\"1\" time=\"1.625\" timestamp=\"2026-12-02T10:00:00Z\">"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<testcase classname=\"gemm.fp16\" name=\"4096x4096\" time=\"0.125\"/>"),
            std::string::npos);
  EXPECT_NE(xml.find("name=\"a&amp;b &quot;q&quot; &apos;x&apos;\""), std::string::npos);
  EXPECT_NE(xml.find("<failure message=\"max ulp 9 &gt; 4&#10;second line\">tile 3: &lt;bad&gt; "
                     "\xef\xbf\xbd[31mred\xef\xbf\xbd[0m &amp; more</failure>"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<system-out>log \xef\xbf\xbd\xef\xbf\xbd tail</system-out>"),
            std::string::npos);
  EXPECT_NE(xml.find("<skipped message=\"no GPU\"/>"), std::string::npos);
  EXPECT_NE(xml.find("<error message=\"libnccl.so.2 missing\"/>"), std::string::npos);
  EXPECT_EQ(JunitReport{}.ToXml(),
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"\" tests=\"0\" "
            "failures=\"0\" errors=\"0\" skipped=\"0\" time=\"0.000\">\n</testsuites>\n");
}

TEST(JunitReportTest, WrittenFileParsesAsXml) {
  testing::TempDir dir;
  const std::string path = dir.Join("report.xml");
  ASSERT_TRUE(Sample().WriteFile(path).ok());
  auto back = ReadFile(path);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, Sample().ToXml());

  // Check with every XML parser present (xmllint and Python's minidom); at least one is needed.
  std::string out;
  int parsers = 0;
  if (testing::RunShell("command -v xmllint", &out) == 0) {
    ++parsers;
    EXPECT_EQ(testing::RunShell("xmllint --noout '" + path + "'", &out), 0) << out;
  }
  if (testing::RunShell("command -v python3", &out) == 0) {
    ++parsers;
    EXPECT_EQ(testing::RunShell("python3 -c 'import sys, xml.dom.minidom as m; "
                                "d = m.parse(sys.argv[1]); "
                                "assert len(d.getElementsByTagName(\"testcase\")) == 4' '" +
                                    path + "'",
                                &out),
              0)
        << out;
  }
  if (parsers == 0) {
    CUTOVER_SKIP_OR_FAIL("neither xmllint nor python3 is installed to check the XML");
  }
}

TEST(JunitReportTest, WriteFileReportsErrors) {
  EXPECT_FALSE(Sample().WriteFile("/nonexistent-dir/report.xml").ok());
}

}  // namespace
}  // namespace cutover
