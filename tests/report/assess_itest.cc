// `cutover assess` end to end: real fingerprints of fixture trees (probe collect --root), real
// compat records (compat run on the cpu backend), a real datasync plan, and the report rendered in
// headless Chromium (Debian's chromium) with a screenshot kept under the build tree.
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/harness/schema_check.h"
#include "tests/harness/test_env.h"

namespace cutover::testing {
namespace {

std::string Cutover() { return BinaryDir() + "/apps/cutover/cutover"; }

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

class AssessCli : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* tree : {"h100-cuda12.4", "no-driver", "a100-cuda11.8"}) {
      std::string out;
      ASSERT_EQ(RunShell(Cutover() + " probe collect --root " + SourceDir() +
                             "/tests/fixtures/hosts/" + tree + " --out " + Fp(tree) + " >/dev/null",
                         &out),
                0)
          << out;
    }
  }
  std::string Fp(const std::string& tree) { return dir_.Join(tree + ".json"); }

  // Runs assess with `args`; returns the exit status, output in *out.
  int Assess(const std::string& args, std::string* out) {
    return RunShell(Cutover() + " assess " + args + " 2>&1", out);
  }

  // Renders `report`/report.html in headless Chromium: a screenshot of `height` px to
  // `shot` (under the build tree, to be looked at), which must not be blank, with no console
  // line (the report has no script: any line is an error, a CSP violation or a failed load);
  // then the DOM Chromium built, in *dom. Skips (fails in CI) without chromium; a caller
  // returns when HasFatalFailure() or IsSkipped().
  void RenderInChromium(const std::string& report, const std::string& shot, int height,
                        std::string* dom) {
    if (RunShell("command -v chromium >/dev/null") != 0) {
      CUTOVER_SKIP_OR_FAIL("chromium is not installed (Debian package chromium)");
    }
    const std::string flags =
        "chromium --headless --no-sandbox --disable-gpu --no-first-run "
        "--disable-background-networking --enable-logging=stderr --v=0 "
        "--user-data-dir=" +
        dir_.Join("chrome-profile") + " ";
    const std::string url = "file://" + report + "/report.html";
    std::string log;
    ASSERT_EQ(RunShell("timeout 120 " + flags + "--window-size=1280," + std::to_string(height) +
                           " --screenshot=" + shot + " " + url,
                       &log),
              0)
        << log;
    struct stat st;
    ASSERT_EQ(::stat(shot.c_str(), &st), 0) << log;
    EXPECT_GT(st.st_size, 10000) << "a blank screenshot";
    EXPECT_EQ(log.find(":CONSOLE"), std::string::npos) << log;
    EXPECT_EQ(log.find("Content Security Policy"), std::string::npos) << log;
    ASSERT_EQ(RunShell("timeout 120 " + flags + "--dump-dom " + url + " 2>/dev/null", dom), 0);
  }

  TempDir dir_;
};

TEST_F(AssessCli, NoGoPairWritesFourFilesAndExitsOne) {
  std::string out, report = dir_.Join("r");
  int rc = Assess(
      "--source " + Fp("h100-cuda12.4") + " --target " + Fp("no-driver") + " --out " + report,
      &out);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("no-go"), std::string::npos) << out;
  EXPECT_NE(out.find(report + "/report.html"), std::string::npos) << out;
  for (const char* f : {"report.html", "report.md", "report.json", "junit.xml"}) {
    EXPECT_TRUE(Exists(report + "/" + f)) << f;
  }
  nlohmann::json doc = nlohmann::json::parse(Slurp(report + "/report.json"));
  EXPECT_EQ(doc["verdict"], "no-go");
  CUTOVER_EXPECT_VALID(doc, "report-2.json");
  std::string junit = Slurp(report + "/junit.xml");
  EXPECT_NE(junit.find("<failure"), std::string::npos);
}

// --json alone writes the document to stdout and no file; a directory that holds a report is
// not overwritten without --force.
TEST_F(AssessCli, JsonAloneWritesNoFileAndNoReportIsOverwrittenUnasked) {
  std::string out;
  const std::string cwd = dir_.Join("cwd");
  ASSERT_EQ(RunShell("mkdir -p " + cwd), 0);
  EXPECT_EQ(RunShell("cd " + cwd + " && " + Cutover() + " assess --json --source " +
                         Fp("h100-cuda12.4") + " --target " + Fp("h100-cuda12.4") + " 2>/dev/null",
                     &out),
            0);
  nlohmann::json doc = nlohmann::json::parse(out, nullptr, false);
  ASSERT_TRUE(doc.is_object()) << out;
  EXPECT_EQ(doc["schema"], "cutover.report/2");
  EXPECT_FALSE(Exists(cwd + "/cutover-report")) << "--json alone wrote files";

  const std::string report = dir_.Join("kept");
  const std::string args =
      "--source " + Fp("h100-cuda12.4") + " --target " + Fp("h100-cuda12.4") + " --out " + report;
  ASSERT_EQ(Assess(args, &out), 0) << out;
  const std::string first = Slurp(report + "/report.json");
  EXPECT_EQ(Assess(args, &out), 2);
  EXPECT_EQ(out, "cutover: assess: " + report +
                     " already holds a report (report.json); pass --force to replace it, or name "
                     "another --out\n");
  EXPECT_EQ(Slurp(report + "/report.json"), first);
  EXPECT_EQ(Assess(args + " --force", &out), 0) << out;
  // --json with --out: both.
  EXPECT_EQ(Assess(args + " --force --json", &out), 0) << out;
  EXPECT_TRUE(nlohmann::json::parse(out, nullptr, false).is_object());
}

TEST_F(AssessCli, BadInputIsOneLineAndExitTwo) {
  std::string out;
  EXPECT_EQ(Assess("--source " + dir_.Join("absent.json") + " --target " + Fp("no-driver") +
                       " --out " + dir_.Join("r"),
                   &out),
            2);
  EXPECT_NE(out.find("absent.json"), std::string::npos) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  EXPECT_FALSE(Exists(dir_.Join("r/report.html")));

  EXPECT_EQ(Assess("--source " + Fp("h100-cuda12.4") + " --target " + Fp("no-driver") +
                       " --price source=abc --out " + dir_.Join("r"),
                   &out),
            2);
  EXPECT_NE(out.find("--price source=abc"), std::string::npos) << out;

  // A price without compat records is never dropped silently.
  EXPECT_EQ(Assess("--source " + Fp("h100-cuda12.4") + " --target " + Fp("no-driver") +
                       " --price source=2 --price target=3 --out " + dir_.Join("r"),
                   &out),
            2);
  EXPECT_EQ(out,
            "cutover: --price needs compat records (--compat SOURCE.rec TARGET.rec): the cost per "
            "unit of work is figured from their measured rates\n");

  // A compat record given where a fingerprint belongs.
  std::ofstream(dir_.Join("wrong.json")) << R"({"schema": "cutover.compat-record/1"})";
  EXPECT_EQ(Assess("--source " + dir_.Join("wrong.json") + " --target " + Fp("no-driver") +
                       " --out " + dir_.Join("r"),
                   &out),
            2);
  EXPECT_NE(out.find("wrong.json"), std::string::npos) << out;
  EXPECT_NE(out.find("not a fingerprint"), std::string::npos) << out;
}

// Two real records of different op tables: assess refuses them (exit 2, one line) instead of
// judging cases whose inputs or meaning differ.
TEST_F(AssessCli, RefusesCompatRecordsOfAnotherOpTable) {
  std::string out;
  ASSERT_EQ(RunShell(Cutover() + " compat run --ops reduce_max --reps 2 --quiet --record " +
                         dir_.Join("a.rec") + " >/dev/null 2>&1",
                     &out),
            0)
      << out;
  nlohmann::json rec = nlohmann::json::parse(Slurp(dir_.Join("a.rec")));
  const int version = rec["op_table_version"].get<int>();
  rec["op_table_version"] = version - 1;
  std::ofstream(dir_.Join("old.rec")) << rec.dump();
  EXPECT_EQ(
      Assess("--source " + Fp("h100-cuda12.4") + " --target " + Fp("h100-cuda12.4") + " --compat " +
                 dir_.Join("old.rec") + " " + dir_.Join("a.rec") + " --out " + dir_.Join("r"),
             &out),
      2);
  EXPECT_EQ(out, "cutover: assess: --compat: " + dir_.Join("old.rec") + " has op table version " +
                     std::to_string(version - 1) + ", " + dir_.Join("a.rec") + " " +
                     std::to_string(version) +
                     ": cases of different op tables are not comparable (record both with the "
                     "same cutover)\n");
  EXPECT_FALSE(Exists(dir_.Join("r/report.html")));
}

TEST_F(AssessCli, RedactHidesHostnamesAndUuidsInEveryFile) {
  // Files-only collection finds no hostname in the fixture tree: give the target one.
  nlohmann::json fp = nlohmann::json::parse(Slurp(Fp("a100-cuda11.8")));
  fp["hostname"] = "dgx-b12.cloud.example";
  std::ofstream(Fp("a100-cuda11.8")) << fp.dump();
  std::string host = fp["hostname"];
  std::string uuid = fp["gpus"][0]["uuid"];
  std::string out, report = dir_.Join("r");
  Assess("--redact --source " + Fp("h100-cuda12.4") + " --target " + Fp("a100-cuda11.8") +
             " --out " + report,
         &out);
  EXPECT_EQ(out.find(host), std::string::npos) << out;
  for (const char* f : {"report.html", "report.md", "report.json", "junit.xml"}) {
    std::string text = Slurp(report + "/" + f);
    ASSERT_FALSE(text.empty()) << f;
    EXPECT_EQ(text.find(host), std::string::npos) << f;
    EXPECT_EQ(text.find(uuid), std::string::npos) << f;
  }
  nlohmann::json doc = nlohmann::json::parse(Slurp(report + "/report.json"));
  EXPECT_TRUE(doc["redacted"].get<bool>());
  CUTOVER_EXPECT_VALID(doc, "report-2.json");
}

// The whole report: compat records from real runs, a datasync plan, prices; then Chromium.
TEST_F(AssessCli, FullReportRendersInChromiumWithoutErrors) {
  if (testing::kAddressSanitizer) {
    GTEST_SKIP() << "a headless Chromium run: once, in the plain build, not again under the "
                    "sanitizers (it timed out there; the report code it renders is tested there)";
  }
  std::string out;
  for (const char* side : {"src", "dst"}) {
    ASSERT_EQ(RunShell(Cutover() + " compat run --ops gemm,copy,softmax --reps 3 --record " +
                       dir_.Join(std::string(side) + ".rec") + " >/dev/null 2>&1"),
              0);
  }
  ASSERT_EQ(RunShell("mkdir -p " + dir_.Join("data") + " && head -c 3000000 /dev/urandom > " +
                     dir_.Join("data/a.bin") + " && cp " + dir_.Join("data/a.bin") + " " +
                     dir_.Join("data/b.bin")),
            0);
  // Its own state file: never the user's ~/.local/share/cutover/cutover.db.
  ASSERT_EQ(RunShell(Cutover() + " --db " + dir_.Join("state.db") + " datasync plan " +
                         dir_.Join("data") + " file://" + dir_.Join("store") + " --json > " +
                         dir_.Join("plan.json"),
                     &out),
            0)
      << out;
  nlohmann::json plan = nlohmann::json::parse(Slurp(dir_.Join("plan.json")));
  CUTOVER_EXPECT_VALID(plan, "datasync-plan-1.json");
  // Two identical 3 MB files: the second is deduplicated away.
  EXPECT_EQ(plan["bytes"], 6000000);
  EXPECT_LE(plan["send_bytes"].get<uint64_t>(), 3000000u + 4096u);
  std::string report = dir_.Join("report");
  int rc = Assess("--source " + Fp("h100-cuda12.4") + " --target " + Fp("h100-cuda12.4") +
                      " --compat " + dir_.Join("src.rec") + " " + dir_.Join("dst.rec") +
                      " --datasync " + dir_.Join("plan.json") +
                      " --price source=2.10 --price target=3.40 --out " + report,
                  &out);
  EXPECT_TRUE(rc == 0 || rc == 1) << out;
  nlohmann::json doc = nlohmann::json::parse(Slurp(report + "/report.json"));
  CUTOVER_EXPECT_VALID(doc, "report-2.json");
  ASSERT_TRUE(doc["compat"].is_object());
  EXPECT_GE(doc["compat"]["cases"].size(), 3u);
  EXPECT_TRUE(doc["cost"].is_object());
  EXPECT_TRUE(doc["datasync"].is_object());
  std::string md = Slurp(report + "/report.md");
  EXPECT_NE(md.find("**Verdict: "), std::string::npos);
  EXPECT_NE(md.find("| gemm/"), std::string::npos) << md;
  EXPECT_NE(md.find("## Data migration"), std::string::npos) << md;
  EXPECT_NE(md.find("## Performance per cost"), std::string::npos) << md;

  std::string dom;
  RenderInChromium(report, BinaryDir() + "/tests/report/assess-report.png", 2400, &dom);
  if (HasFatalFailure() || IsSkipped()) return;
  EXPECT_NE(dom.find("id=\"verdict\""), std::string::npos);
  EXPECT_NE(dom.find(doc["verdict"].get<std::string>()), std::string::npos);
  EXPECT_NE(dom.find("<svg"), std::string::npos);
  EXPECT_NE(dom.find("id=\"chart-speed\""), std::string::npos);
  EXPECT_NE(dom.find("id=\"chart-error\""), std::string::npos);
  EXPECT_NE(dom.find("id=\"chart-ceiling\""), std::string::npos);
}

// --cost: the cost and stability sections in every output, the chart beside report.md, the
// redacted report without the file's supplier, and the refusals (exit 2, nothing written).
TEST_F(AssessCli, CostAndStabilitySectionsRenderInChromium) {
  for (const char* side : {"src", "dst"}) {
    ASSERT_EQ(RunShell(Cutover() + " compat run --ops softmax,reduce_max --reps 30 --record " +
                       dir_.Join(std::string(side) + ".rec") + " >/dev/null 2>&1"),
              0);
  }
  std::string cost = Slurp(SourceDir() + "/examples/cost.yaml");
  const size_t from = cost.find("workload:"), to = cost.find("\nsource:");
  ASSERT_NE(from, std::string::npos);
  cost.replace(from, to - from, "workload:\n  softmax: 3\n  reduce_max: 1\n");
  std::ofstream(dir_.Join("cost.yaml")) << cost;
  const std::string common = "--source " + Fp("h100-cuda12.4") + " --target " +
                             Fp("h100-cuda12.4") + " --compat " + dir_.Join("src.rec") + " " +
                             dir_.Join("dst.rec") + " --cost " + dir_.Join("cost.yaml");
  std::string out, report = dir_.Join("report");
  int rc = Assess(common + " --out " + report, &out);
  EXPECT_TRUE(rc == 0 || rc == 1) << out;
  nlohmann::json doc = nlohmann::json::parse(Slurp(report + "/report.json"));
  CUTOVER_EXPECT_VALID(doc, "report-2.json");
  ASSERT_TRUE(doc["cost_model"].is_object());
  EXPECT_EQ(doc["cost_model"]["options"].size(), 4u);  // self-built + 3 managed
  EXPECT_EQ(doc["cost_model"]["target"]["supplier"], "Example GPU Cloud");
  EXPECT_NE(doc["compat"]["stability"]["verdict"], "not assessed");
  std::string md = Slurp(report + "/report.md");
  EXPECT_NE(md.find("## Cost per unit of work"), std::string::npos) << md;
  EXPECT_NE(md.find("## Stability"), std::string::npos) << md;
  EXPECT_NE(md.find("](cost-chart.svg)"), std::string::npos) << md;
  std::string svg = Slurp(report + "/cost-chart.svg");
  EXPECT_EQ(svg.rfind("<svg xmlns=", 0), 0u) << svg.substr(0, 200);

  // Redacted: no supplier or side name in any file.
  std::string redacted = dir_.Join("redacted");
  Assess(common + " --redact --out " + redacted, &out);
  for (const char* f : {"report.html", "report.md", "report.json", "junit.xml", "cost-chart.svg"}) {
    std::string text = Slurp(redacted + "/" + f);
    ASSERT_FALSE(text.empty()) << f;
    EXPECT_EQ(text.find("Example GPU Cloud"), std::string::npos) << f;
    EXPECT_EQ(text.find("on-prem H100"), std::string::npos) << f;
  }

  // Refusals: exit 2, one line per problem, nothing written.
  EXPECT_EQ(Assess(common + " --price source=2 --out " + dir_.Join("r2"), &out), 2);
  EXPECT_EQ(out,
            "cutover: assess: --cost and --price cannot be used together: the cost file "
            "prices each side\n");
  EXPECT_EQ(Assess("--source " + Fp("h100-cuda12.4") + " --target " + Fp("h100-cuda12.4") +
                       " --cost " + dir_.Join("cost.yaml") + " --out " + dir_.Join("r2"),
                   &out),
            2);
  EXPECT_NE(out.find("--cost needs --compat SRC DST"), std::string::npos) << out;
  std::string bad = cost;
  bad.replace(bad.find("utilization: 0.7"), 16, "utilization: 0");
  std::ofstream(dir_.Join("bad.yaml")) << bad;
  EXPECT_EQ(Assess("--source " + Fp("h100-cuda12.4") + " --target " + Fp("h100-cuda12.4") +
                       " --compat " + dir_.Join("src.rec") + " " + dir_.Join("dst.rec") +
                       " --cost " + dir_.Join("bad.yaml") + " --out " + dir_.Join("r2"),
                   &out),
            2);
  EXPECT_NE(out.find(dir_.Join("bad.yaml") + ":"), std::string::npos) << out;
  EXPECT_NE(out.find(": utilization: must be in (0, 1], got 0"), std::string::npos) << out;
  EXPECT_FALSE(Exists(dir_.Join("r2/report.html")));

  if (testing::kAddressSanitizer) {
    GTEST_SKIP() << "everything above ran; the headless Chromium part runs once, in the plain "
                    "build, not again under the sanitizers";
  }
  std::string dom;
  RenderInChromium(report, BinaryDir() + "/tests/report/assess-cost-report.png", 4000, &dom);
  if (HasFatalFailure() || IsSkipped()) return;
  EXPECT_NE(dom.find("id=\"chart-cost\""), std::string::npos);
  EXPECT_NE(dom.find("class=\"crossing\""), std::string::npos);
  EXPECT_NE(dom.find("id=\"chart-stability\""), std::string::npos);
  // No chart wider than the page's 1100 px column (less its padding): nothing overflows.
  for (size_t at = 0; (at = dom.find("<svg", at)) != std::string::npos; ++at) {
    const size_t w = dom.find("width=\"", at);
    ASSERT_NE(w, std::string::npos);
    EXPECT_LE(std::stod(dom.substr(w + 7, 12)), 1052.0) << dom.substr(at, 200);
  }
}

}  // namespace
}  // namespace cutover::testing
