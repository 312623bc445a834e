// Each datasync result's document and lines (ToJson / Render beside its type), on hand-made
// results: the fields scripts read, the dry-run forms, and the words people read.
#include <gtest/gtest.h>

#include "datasync/check.h"
#include "datasync/gc.h"
#include "datasync/pull.h"
#include "datasync/push.h"
#include "datasync/shard.h"
#include "datasync/verify.h"

namespace cutover {
namespace {

PushResult Pushed() {
  PushResult r;
  r.files = 3;
  r.dirs = 1;
  r.symlinks = 1;
  r.bytes = 3000;
  r.chunks = 4;
  r.uploaded_objects = 2;
  r.uploaded_bytes = 2048;
  r.skipped = {"a/fifo (fifo)"};
  r.snapshot_id = "0123456789abcdef";
  return r;
}

TEST(PushResultDocument, RealAndDryRunAndShard) {
  PushOptions o;
  o.name = "nightly";
  nlohmann::json j = PushResultToJson(Pushed(), o, "file:///s");
  EXPECT_EQ(j["schema"], "cutover.datasync-push/1");
  EXPECT_EQ(j["id"], "0123456789abcdef");
  EXPECT_EQ(j["uploaded_bytes"], 2048);
  EXPECT_FALSE(j.contains("dry_run"));
  EXPECT_EQ(RenderPushResult(Pushed(), o, "file:///s"),
            "pushed snapshot nightly 0123456789abcdef to file:///s: 3 files, 1 dirs, 1 symlinks, "
            "3000 bytes; uploaded 2 objects (2048 bytes)\nskipped a/fifo (fifo)\n");
  o.dry_run = true;
  j = PushResultToJson(Pushed(), o, "file:///s");
  EXPECT_EQ(j["dry_run"], true);
  EXPECT_EQ(j["uploaded_objects"], 0);
  EXPECT_EQ(j["would_upload_objects"], 2);
  EXPECT_EQ(j["would_upload_bytes"], 2048);
  EXPECT_NE(RenderPushResult(Pushed(), o, "file:///s").find("would upload 2 objects"),
            std::string::npos);
  o.dry_run = false;
  o.shard = ShardSpec{2, 4};
  j = PushResultToJson(Pushed(), o, "file:///s");
  EXPECT_EQ(j["shard"], (nlohmann::json{{"index", 2}, {"count", 4}}));
  const std::string text = RenderPushResult(Pushed(), o, "file:///s");
  EXPECT_NE(text.find("pushed part 2/4 of snapshot nightly"), std::string::npos) << text;
  EXPECT_NE(text.find("cutover datasync merge file:///s --name nightly"), std::string::npos);
}

TEST(PlanDocument, SendsWhatTheDryRunCountedAndHowLong) {
  nlohmann::json j = PlanToJson(Pushed(), "/data", "file:///s", 1024);
  EXPECT_EQ(j["schema"], "cutover.datasync-plan/1");
  EXPECT_EQ(j["send_bytes"], 2048);
  EXPECT_EQ(j["dedup_bytes"], 952);
  EXPECT_EQ(j["estimated_seconds"], 2.0);
  EXPECT_EQ(RenderPlan(Pushed(), "/data", "file:///s", 1024).rfind("plan /data -> file:///s: ", 0),
            0u);
}

TEST(PullResultDocument, DeletedAndDryRunForms) {
  PullResult r;
  r.snapshot.name = "nightly";
  r.snapshot.id = "0123456789abcdef";
  r.files = 2;
  r.bytes = 10;
  r.downloaded_bytes = 6;
  r.reused_bytes = 4;
  r.deleted = {"old.txt", "gone/"};
  PullOptions o;
  o.delete_extra = true;
  nlohmann::json j = PullResultToJson(r, o, "file:///s", "/dest");
  EXPECT_EQ(j["deleted"], (nlohmann::json{"old.txt", "gone/"}));
  EXPECT_EQ(j["downloaded_bytes"], 6);
  std::string text = RenderPullResult(r, o, "file:///s", "/dest");
  EXPECT_EQ(text.rfind("deleted old.txt\ndeleted gone/\npulled snapshot nightly", 0), 0u) << text;
  EXPECT_NE(text.find("(4 of them already in /dest)"), std::string::npos);
  o.dry_run = true;
  j = PullResultToJson(r, o, "file:///s", "/dest");
  EXPECT_EQ(j["would_delete"], (nlohmann::json{"old.txt", "gone/"}));
  EXPECT_EQ(j["would_download_bytes"], 6);
  EXPECT_EQ(j["downloaded_bytes"], 0);
  text = RenderPullResult(r, o, "file:///s", "/dest");
  EXPECT_NE(text.find("would delete old.txt\n"), std::string::npos);
  EXPECT_NE(text.find("nothing was written"), std::string::npos);
}

TEST(VerifyAndGcAndMergeDocuments, NameWhatTheyFound) {
  VerifyResult v;
  v.snapshot.name = "n";
  v.snapshot.id = "id";
  v.failures = {"file a: chunk x: missing in the store"};
  EXPECT_EQ(VerifyResultToJson(v, "file:///s", "")["ok"], false);
  EXPECT_EQ(RenderVerifyResult(v, "file:///s", "").rfind("FAIL file a: chunk x", 0), 0u);

  GcResult g;
  g.unreferenced_objects = 5;
  g.missing_objects = 1;
  GcOptions go;
  go.dry_run = true;
  go.lock.stale_after = std::chrono::hours(2);
  nlohmann::json gj = GcResultToJson(g, go, "file:///s");
  EXPECT_EQ(gj["would_delete_objects"], 5);
  EXPECT_FALSE(gj.contains("deleted_objects"));
  EXPECT_EQ(gj["grace_s"], 7200);
  const std::string gt = RenderGcResult(g, go, "file:///s");
  EXPECT_EQ(gt.rfind("dry run: gc would delete 5 unreferenced objects", 0), 0u) << gt;
  EXPECT_NE(gt.find("warning: 1 objects the snapshots name are missing"), std::string::npos);

  MergeResult m;
  m.parts = 4;
  m.parts_left = {"parts/n/1-of-4: denied"};
  MergeOptions mo;
  EXPECT_EQ(MergeResultToJson(m, mo, "n", "file:///s")["parts"], 4);
  EXPECT_NE(RenderMergeResult(m, mo, "n", "file:///s").find("warning: part left: parts/n/1-of-4"),
            std::string::npos);
  mo.dry_run = true;
  EXPECT_EQ(RenderMergeResult(m, mo, "n", "file:///s").rfind("dry run: merging 4 parts", 0), 0u);
}

TEST(CheckDocument, StepsWithRatesAndTheVerdict) {
  CheckResult r;
  r.ok = false;
  r.steps = {{"put", "ok", "4 MiB", 0.5, 8e6}, {"delete", "failed", "403", 0.01, std::nullopt}};
  r.probe_key = "check/probe-1";
  r.probe_left = true;
  CheckOptions o;
  o.sample_bytes = 4 << 20;
  nlohmann::json j = CheckResultToJson(r, o, "file:///s");
  EXPECT_EQ(j["steps"][0]["bytes_per_s"], 8e6);
  EXPECT_FALSE(j["steps"][1].contains("bytes_per_s"));
  EXPECT_EQ(j["sample_bytes"], 4 << 20);
  const std::string t = RenderCheckResult(r, o, "file:///s");
  EXPECT_NE(t.find("store FAILED: file:///s refuses"), std::string::npos) << t;
  EXPECT_NE(t.find("the probe object check/probe-1 could not be removed"), std::string::npos);
}

}  // namespace
}  // namespace cutover
