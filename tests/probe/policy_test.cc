// Policies (probe check): constraint syntax, the parser's errors, and each requirement on the
// fingerprints of the fixture trees.
#include "probe/policy.h"

#include <gtest/gtest.h>

#include "core/file_system.h"
#include "probe/collect.h"
#include "tests/harness/test_env.h"

namespace cutover::probe {
namespace {

Fingerprint Fixture(const std::string& name) {
  RealFileSystem fs(testing::SourceDir() + "/tests/fixtures/hosts/" + name);
  return Collect(fs, CollectOptions{});
}

bool Holds(const std::string& constraint, const std::string& version) {
  Result<VersionConstraint> c = ParseVersionConstraint(constraint);
  EXPECT_TRUE(c.ok()) << constraint << ": " << c.status().ToString();
  return c.ok() && c->Matches(version);
}

TEST(VersionConstraintTest, ClausesAndPrefixes) {
  EXPECT_TRUE(Holds(">=12.4", "12.4.1"));
  EXPECT_TRUE(Holds(">=12.4", "12.10"));
  EXPECT_FALSE(Holds(">=12.4", "12.3.2"));
  EXPECT_TRUE(Holds(">=2.21,<3", "2.21.5"));
  EXPECT_FALSE(Holds(">=2.21,<3", "3.0"));
  EXPECT_TRUE(Holds("9.x", "9.1.0"));
  EXPECT_TRUE(Holds("9.*", "9"));
  EXPECT_FALSE(Holds("9.x", "8.9.7"));
  EXPECT_FALSE(Holds("9.x", "19.0"));
  EXPECT_TRUE(Holds("12.4", "12.4.1"));
  EXPECT_FALSE(Holds("12.4", "12.40"));
  EXPECT_TRUE(Holds("==9.1.0", "9.1"));
  EXPECT_TRUE(Holds("!=2.19.3", "2.19.4"));
  EXPECT_TRUE(Holds(">2.3", "2.4.0+cu124")) << "local version labels are ignored";
  EXPECT_FALSE(Holds(">=1", "unknown"));
  for (const char* bad : {"", ">=", "twelve", ">=12.4,", "~12.4", "12..4"}) {
    EXPECT_FALSE(ParseVersionConstraint(bad).ok()) << bad;
  }
}

TEST(PolicyParseTest, ErrorsNameFileLineAndKey) {
  Result<Policy> p = ParsePolicy(
      "apiVersion: cutover/v1\nkind: ProbePolicy\nrequirements:\n  cuda_tookit: \">=12.4\"\n"
      "  libraries:\n    cudnn: \"nine\"\n",
      "p.yaml");
  ASSERT_FALSE(p.ok());
  const std::string m = p.status().message();
  EXPECT_NE(m.find("p.yaml:4:3: requirements.cuda_tookit: unknown key"), std::string::npos) << m;
  EXPECT_NE(m.find("p.yaml:6:12: requirements.libraries.cudnn:"), std::string::npos) << m;

  EXPECT_FALSE(ParsePolicy("apiVersion: cutover/v2\nkind: ProbePolicy\nrequirements: {glibc: "
                           "\">=2\"}\n",
                           "p.yaml")
                   .ok());
  EXPECT_FALSE(ParsePolicy("[1, 2", "p.yaml").ok());
  EXPECT_FALSE(ParsePolicy("apiVersion: cutover/v1\nkind: ProbePolicy\nrequirements:\n  "
                           "node_driver: \"300.1\"\n",
                           "p.yaml")
                   .ok())
      << "older than every driver branch";
}

Policy MustParse(const std::string& requirements) {
  Result<Policy> p = ParsePolicy(
      "apiVersion: cutover/v1\nkind: ProbePolicy\nname: t\nrequirements:\n" + requirements, "t");
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return p.ok() ? *p : Policy{};
}

const PolicyCheck* Find(const PolicyReport& r, const std::string& req) {
  for (const PolicyCheck& c : r.checks) {
    if (c.requirement == req) return &c;
  }
  return nullptr;
}

TEST(PolicyCheckTest, AGoodImagePassesEveryRequirement) {
  Policy p = MustParse(
      "  cuda_toolkit: \">=12.4\"\n  glibc: \">=2.31\"\n  driver: \">=550\"\n"
      "  node_driver: \"550.54.14\"\n  libraries: {cudnn: \"9.x\", nccl: \">=2.21\"}\n"
      "  frameworks: {torch: \">=2.3\"}\n  framework_cuda_matches_image: true\n"
      "  single_copy: [cudnn, nccl]\n");
  PolicyReport r = CheckPolicy(p, Fixture("h100-cuda12.4"));
  EXPECT_FALSE(r.failed()) << RenderPolicyTable(r);
  EXPECT_EQ(r.Count("pass"), static_cast<int>(r.checks.size())) << RenderPolicyTable(r);
  EXPECT_GE(r.checks.size(), 9u);
  JunitReport j = PolicyJunit(r);
  ASSERT_EQ(j.suites.size(), 1u);
  EXPECT_EQ(j.suites[0].cases.size(), r.checks.size());
}

TEST(PolicyCheckTest, TooOldStackFailsWithTheFoundVersions) {
  Policy p = MustParse(
      "  cuda_toolkit: \">=12.4\"\n  libraries: {nccl: \">=2.21\"}\n"
      "  node_driver: \"520.61.05\"\n");
  PolicyReport r = CheckPolicy(p, Fixture("h100-cuda12.4"));
  EXPECT_TRUE(r.failed());
  const PolicyCheck* nd = Find(r, "node_driver");
  ASSERT_NE(nd, nullptr);
  // Driver 520 supports CUDA 11.8: a 12.4 toolkit and torch built for 12.4 cannot run.
  EXPECT_EQ(nd->outcome, "fail") << nd->message;
  EXPECT_NE(nd->message.find("11.8"), std::string::npos) << nd->message;

  PolicyReport old = CheckPolicy(p, Fixture("a100-cuda11.8"));
  const PolicyCheck* tk = Find(old, "cuda_toolkit");
  ASSERT_NE(tk, nullptr);
  EXPECT_EQ(tk->outcome, "fail");
  EXPECT_NE(tk->found.find("11.8"), std::string::npos) << tk->found;
}

TEST(PolicyCheckTest, NewerMinorThanTheDriverIsAWarning) {
  Policy p = MustParse("  node_driver: \"535.104.05\"\n");  // CUDA 12.2
  PolicyReport r = CheckPolicy(p, Fixture("h100-cuda12.4"));
  const PolicyCheck* nd = Find(r, "node_driver");
  ASSERT_NE(nd, nullptr);
  EXPECT_EQ(nd->outcome, "warn") << nd->message;
  EXPECT_NE(nd->message.find("minor-version compatibility"), std::string::npos);
  EXPECT_FALSE(r.failed());
}

TEST(PolicyCheckTest, SecondCudnnOnTheLoaderPathFails) {
  Policy p = MustParse("  single_copy: [cudnn]\n  libraries: {cudnn: \"9.x\"}\n");
  PolicyReport r = CheckPolicy(p, Fixture("two-cudnn"));
  const PolicyCheck* sc = Find(r, "single_copy.cudnn");
  ASSERT_NE(sc, nullptr);
  EXPECT_EQ(sc->outcome, "fail") << sc->message;
  EXPECT_NE(sc->message.find("copies of libcudnn"), std::string::npos) << sc->message;
  EXPECT_TRUE(r.failed());
}

TEST(PolicyCheckTest, MissingPartsFailAndSayWhy) {
  Policy p = MustParse("  driver: \">=550\"\n  libraries: {nccl: \">=2.21\"}\n"
                       "  frameworks: {jax: \">=0.4\"}\n");
  PolicyReport r = CheckPolicy(p, Fixture("no-driver"));
  EXPECT_EQ(Find(r, "driver")->outcome, "fail");
  EXPECT_NE(Find(r, "driver")->message.find("node_driver"), std::string::npos)
      << "an image root has no driver: the message points to node_driver";
  EXPECT_EQ(Find(r, "frameworks.jax")->found, "not found");
  nlohmann::json doc = PolicyReportToJson(r, Fixture("no-driver"));
  EXPECT_EQ(doc["schema"], "cutover.policy-check/1");
  EXPECT_FALSE(doc["passed"].get<bool>());
  EXPECT_EQ(doc["summary"]["fail"].get<int>(), r.Count("fail"));
}

TEST(PolicyCheckTest, TheDocumentedExamplePolicyParsesAndPasses) {
  Result<Policy> p = LoadPolicy(testing::SourceDir() + "/docs/policy-example.yaml");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->name, "training-image");
  PolicyReport r = CheckPolicy(*p, Fixture("h100-cuda12.4"));
  EXPECT_FALSE(r.failed()) << RenderPolicyTable(r);
  EXPECT_TRUE(CheckPolicy(*p, Fixture("a100-cuda11.8")).failed());
}

}  // namespace
}  // namespace cutover::probe
