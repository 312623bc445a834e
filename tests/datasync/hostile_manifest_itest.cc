// Crafted and large manifests against the real binary: a chunk longer than the chunker's max
// size, a manifest cut with other chunker parameters than the store's, and a zstd bomb of JSON
// whitespace are corrupt manifests (exit 2, one line) for pull, pull --dry-run, verify and ls,
// never a crash or a giant allocation; and reading a 300,000-file snapshot (ls, verify,
// pull --dry-run) stays under 200 MB of RSS. Memory figures are taken with wait4's ru_maxrss of
// the child. Not run under the sanitizers (their shadow memory makes RSS meaningless).
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <zstd.h>
#include <nlohmann/json.hpp>

#include "core/file_util.h"
#include "datasync/file_store.h"
#include "datasync/manifest.h"
#include "tests/datasync/snapshot_keys.h"
#include "tests/harness/test_env.h"

namespace cutover {
namespace {

const ChunkerParams kSmall{4096, 16384, 131072};

// RSS means nothing under AddressSanitizer (shadow memory, quarantine): those checks are skipped
// (the test of kAddressSanitizer sees clang's __has_feature as well as gcc's macro).
constexpr bool kMeasureRss = !testing::kAddressSanitizer;

struct Outcome {
  int code = -1;        // exit status, or 128 + signal
  long max_rss_kb = 0;  // the child's peak RSS
  std::string output;   // stdout and stderr
};

// Runs the cutover binary with `args` (no shell), its output in `log`; the child's peak RSS.
Outcome RunMeasured(const std::vector<std::string>& args, const std::string& log,
                    const std::string& db) {
  Outcome r;
  pid_t pid = ::fork();
  if (pid == 0) {
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::setenv("CUTOVER_DB", db.c_str(), 1);
    std::vector<char*> argv;
    std::string bin = CUTOVER_TEST_CUTOVER_BIN;
    argv.push_back(bin.data());
    std::vector<std::string> copy = args;
    for (std::string& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(bin.c_str(), argv.data());
    ::_exit(127);
  }
  int status = 0;
  struct rusage ru {};
  if (::wait4(pid, &status, 0, &ru) != pid) return r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.max_rss_kb = ru.ru_maxrss;
  r.output = ReadFile(log).value_or("");
  return r;
}

std::string Zstd(std::string_view text) {
  std::string out(ZSTD_compressBound(text.size()), '\0');
  out.resize(ZSTD_compress(out.data(), out.size(), text.data(), text.size(), 3));
  return out;
}

// The text of a manifest (one zstd frame, written streamed: no content size in its header).
std::string Unzstd(std::string_view bytes) {
  ZSTD_DCtx* d = ZSTD_createDCtx();
  std::string out, buf(1 << 16, '\0');
  ZSTD_inBuffer in{bytes.data(), bytes.size(), 0};
  while (in.pos < in.size) {
    ZSTD_outBuffer o{buf.data(), buf.size(), 0};
    if (ZSTD_isError(ZSTD_decompressStream(d, &o, &in))) break;
    out.append(buf.data(), o.pos);
  }
  ZSTD_freeDCtx(d);
  return out;
}

class HostileManifestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    src_ = dir_.Join("src");
    ASSERT_TRUE(MakeDirs(src_).ok());
    std::mt19937_64 rng(4);
    std::string big(300000, '\0');
    for (auto& c : big) c = static_cast<char>(rng());
    ASSERT_TRUE(WriteFileAtomic(src_ + "/big", big).ok());
    ASSERT_TRUE(WriteFileAtomic(src_ + "/small", "hello").ok());
    url_ = "file://" + dir_.Join("store");
    Outcome pushed = Cutover({"datasync", "push", src_, url_, "--name", "snap", "--chunk-min",
                              "4096", "--chunk-avg", "16384", "--chunk-max", "131072"});
    ASSERT_EQ(pushed.code, 0) << pushed.output;
    auto store = FileStore::Open(url_);
    ASSERT_TRUE(store.ok());
    store_ = std::move(store).value();
  }

  Outcome Cutover(const std::vector<std::string>& args) {
    return RunMeasured(args, dir_.Join("out.log"), dir_.Join("state.db"));
  }

  // The snapshot's manifest as JSON, changed by `edit`, stored as snapshot `name`.
  void Craft(const std::string& name, const std::function<void(nlohmann::json&)>& edit) {
    auto bytes = store_->Get(testing::NewestKey(*store_, "snap"));
    ASSERT_TRUE(bytes.ok());
    nlohmann::json doc = nlohmann::json::parse(Unzstd(*bytes));
    edit(doc);
    ASSERT_TRUE(store_->Put("snapshots/" + name, Zstd(doc.dump())).ok());
  }

  // pull, pull --dry-run, verify and ls all exit 2 naming `what`, quickly and in little memory.
  void ExpectCorruptEverywhere(const std::string& name, const std::string& what) {
    const std::vector<std::vector<std::string>> commands = {
        {"datasync", "pull", url_, "--name", name, dir_.Join("dest")},
        {"datasync", "pull", url_, "--name", name, dir_.Join("dest"), "--dry-run"},
        {"datasync", "verify", url_, "--name", name},
        {"datasync", "ls", url_},
    };
    for (const auto& args : commands) {
      Outcome r = Cutover(args);
      EXPECT_EQ(r.code, 2) << args[1] << ": " << r.output;
      EXPECT_NE(r.output.find(what), std::string::npos) << args[1] << ": " << r.output;
      EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
      if (kMeasureRss) {
        EXPECT_LT(r.max_rss_kb, 100 * 1024) << args[1];
      }
    }
    ASSERT_TRUE(store_->Delete("snapshots/" + name).ok());
  }

  testing::TempDir dir_;
  std::string src_, url_;
  std::unique_ptr<FileStore> store_;
};

TEST_F(HostileManifestTest, AChunkLongerThanTheChunkersMaxIsACorruptManifest) {
  for (uint64_t len : {uint64_t{1} << 40, uint64_t{3} << 30, uint64_t{131073}}) {
    Craft("evil", [len](nlohmann::json& doc) {
      for (auto& e : doc["entries"]) {
        if (e["path"] == "big") {
          const uint64_t first = e["chunks"][0]["len"].get<uint64_t>();
          e["chunks"][0]["len"] = len;
          e["size"] = e["size"].get<uint64_t>() - first + len;
        }
      }
    });
    ExpectCorruptEverywhere("evil", "manifest entry 0: chunk 0 length " + std::to_string(len) +
                                        " is above the chunker's max size 131072");
  }
  // A manifest claiming a larger max size than the store's is refused too.
  Craft("evil", [](nlohmann::json& doc) { doc["chunker"]["max"] = uint64_t{1} << 30; });
  ExpectCorruptEverywhere("evil",
                          "manifest: chunker min/avg/max 4096/16384/1073741824 is not the store's "
                          "(4096/16384/131072)");
}

TEST_F(HostileManifestTest, AZstdBombOfWhitespaceIsRefusedInLittleMemory) {
  // 1 GiB of whitespace inside the entries array, compressed to a few tens of KB.
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  std::string out, piece(1 << 20, ' ');
  std::string buf(ZSTD_CStreamOutSize(), '\0');
  auto feed = [&](std::string_view text, ZSTD_EndDirective mode) {
    ZSTD_inBuffer in{text.data(), text.size(), 0};
    for (;;) {
      ZSTD_outBuffer o{buf.data(), buf.size(), 0};
      size_t left = ZSTD_compressStream2(cctx, &o, &in, mode);
      out.append(buf.data(), o.pos);
      if (mode == ZSTD_e_end ? left == 0 : in.pos == in.size) break;
    }
  };
  feed(R"({"chunker":{"avg":16384,"max":131072,"min":4096,"version":1},"created_ns":0,"entries":[)",
       ZSTD_e_continue);
  for (int i = 0; i < 1024; ++i) feed(piece, ZSTD_e_continue);
  feed(R"(],"format":1,"hash":"sha256","name":"bomb"})", ZSTD_e_end);
  ZSTD_freeCCtx(cctx);
  ASSERT_LT(out.size(), 1u << 20);
  ASSERT_TRUE(store_->Put("snapshots/bomb", out).ok());
  ExpectCorruptEverywhere("bomb", "manifest: larger than 1048576 bytes (what 0 entries and chunks");
}

// A 300,000-file snapshot (one small chunk, packed, shared by every file) is listed, verified
// and planned by pull --dry-run in under 200 MB.
TEST_F(HostileManifestTest, A300000FileSnapshotIsReadInUnder200MB) {
  if (!kMeasureRss) GTEST_SKIP() << "a memory test: not under the sanitizers";
  auto bytes = store_->Get(testing::NewestKey(*store_, "snap"));
  ASSERT_TRUE(bytes.ok());
  auto m = DecodeManifest(*bytes);
  ASSERT_TRUE(m.ok());
  ChunkRef hello;
  for (const Entry& e : m->entries) {
    if (e.path == "small") hello = e.chunks.at(0);
  }
  ASSERT_TRUE(hello.packed);
  Manifest header;
  header.name = "many";
  header.chunker = kSmall;
  auto w = ManifestWriter::Begin(header);
  ASSERT_TRUE(w.ok());
  char path[64];
  for (int d = 0; d < 300; ++d) {
    std::snprintf(path, sizeof path, "directory-%03d", d);
    ASSERT_TRUE((*w)->Add(Entry{path, EntryType::kDir, 0755, 0, 1700000000000000000, "", {}}).ok());
    for (int f = 0; f < 1000; ++f) {
      std::snprintf(path, sizeof path, "directory-%03d/a-file-named-%06d.bin", d, f);
      ASSERT_TRUE(
          (*w)->Add(Entry{path, EntryType::kFile, 0644, 5, 1700000000000000000, "", {hello}}).ok());
    }
  }
  auto encoded = (*w)->Finish();
  ASSERT_TRUE(encoded.ok());
  ASSERT_TRUE(store_->Put("snapshots/many", *encoded).ok());
  const std::vector<std::vector<std::string>> commands = {
      {"datasync", "ls", url_},
      {"datasync", "verify", url_, "--name", "many"},
      {"datasync", "pull", url_, "--name", "many", dir_.Join("dest"), "--dry-run"},
  };
  for (const auto& args : commands) {
    Outcome r = Cutover(args);
    EXPECT_EQ(r.code, 0) << r.output;
    EXPECT_LT(r.max_rss_kb, 200 * 1024) << args[1];
    std::printf("%s of 300,000 files: peak RSS %ld MB\n", args[1].c_str(), r.max_rss_kb / 1024);
  }
}

}  // namespace
}  // namespace cutover
