// `cutover datasync ... --encrypt KEYFILE` end to end: the real binary over a file:// store (exit
// codes and exact messages of every refusal, a flipped byte, the key in no output or state file)
// and over the real servers (nginx WebDAV, s3rver S3).
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/file_util.h"
#include "core/sha256.h"
#include "datasync/encrypted_store.h"
#include "datasync/file_store.h"
#include "datasync/manifest.h"
#include "tests/datasync/snapshot_keys.h"
#include "tests/harness/servers.h"
#include "tests/harness/test_env.h"

namespace cutover {
namespace {

constexpr char kS3Secret[] = "tEsT-sEcReT-enc-9a8b7c";

std::map<std::string, std::string> Files(const std::string& root) {
  std::map<std::string, std::string> out;
  if (!std::filesystem::exists(root)) return out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
    if (e.is_regular_file()) out[e.path().string()] = ReadFile(e.path().string()).value_or("?");
  }
  return out;
}

class EncryptItest : public ::testing::Test {
 protected:
  void SetUp() override {
    src_ = dir_.Join("src");
    ASSERT_TRUE(MakeDirs(src_ + "/d").ok());
    std::mt19937_64 rng(21);
    big_.resize(3000000);  // a few chunks of the default chunker
    for (auto& c : big_) c = static_cast<char>(rng());
    ASSERT_TRUE(WriteFileAtomic(src_ + "/d/big", big_).ok());
    for (int i = 0; i < 10; ++i) {
      ASSERT_TRUE(
          WriteFileAtomic(src_ + "/s" + std::to_string(i), "small " + std::to_string(i)).ok());
    }
    key_.resize(32);
    for (auto& c : key_) c = static_cast<char>(rng());
    key_hex_ = HexEncode(
        std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(key_.data()), key_.size()));
    key_path_ = dir_.Join("key");
    ASSERT_TRUE(WriteFileAtomic(key_path_, key_hex_ + "\n", 0600).ok());
    ASSERT_EQ(::chmod(key_path_.c_str(), 0600), 0);
  }

  // Runs the binary at --log-level debug with its own state file and the S3 test credentials:
  // *out is its stdout and, after it, its stderr but for the debug lines (all of it is kept in
  // outputs_ for ExpectKeyNowhere).
  int Run(const std::string& args, std::string* out) {
    std::string err_file = dir_.Join("stderr");
    std::string cmd =
        "(env AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=" + std::string(kS3Secret) +
        " CUTOVER_DB=" + dir_.Join("state.db") + " " + CUTOVER_TEST_CUTOVER_BIN +
        " --log-level debug " + args + " 2>" + err_file + ")";
    int rc = testing::RunShell(cmd, out);
    std::string err = ReadFile(err_file).value_or("");
    outputs_ += *out + err;
    std::istringstream lines(err);
    for (std::string line; std::getline(lines, line);) {
      if (!line.starts_with("cutover debug: ")) *out += line + "\n";
    }
    return rc;
  }

  std::string Enc() const { return " --encrypt " + key_path_; }

  // The key, as hex or raw bytes (or its upper-case hex), in no output and not in the state file.
  void ExpectKeyNowhere() {
    std::string upper = key_hex_;
    for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    for (const std::string& needle : {key_hex_, upper, key_}) {
      EXPECT_EQ(outputs_.find(needle), std::string::npos) << "the key is in an output";
      EXPECT_EQ(ReadFile(dir_.Join("state.db")).value_or("").find(needle), std::string::npos)
          << "the key is in the state file";
    }
    EXPECT_EQ(outputs_.find(kS3Secret), std::string::npos);
  }

  // push, pull (identical tree), a re-push that uploads nothing, verify and gc, all with the key.
  void RoundTrip(const std::string& store, const std::string& flags) {
    std::string out;
    ASSERT_EQ(
        Run("datasync push " + src_ + " " + store + " --name snap --json" + flags + Enc(), &out), 0)
        << out;
    ASSERT_EQ(
        Run("datasync pull " + store + " --name snap " + dir_.Join("dest") + flags + Enc(), &out),
        0)
        << out;
    std::string diff;
    EXPECT_EQ(testing::RunShell("diff -r " + src_ + " " + dir_.Join("dest"), &diff), 0) << diff;
    ASSERT_EQ(
        Run("datasync push " + src_ + " " + store + " --name snap2 --json" + flags + Enc(), &out),
        0)
        << out;
    auto doc = nlohmann::json::parse(out, nullptr, false);
    ASSERT_FALSE(doc.is_discarded()) << out;
    EXPECT_EQ(doc["uploaded_objects"], 0);
    ASSERT_EQ(Run("datasync verify " + store + " --name snap" + flags + Enc(), &out), 0) << out;
    ASSERT_EQ(Run("datasync ls " + store + flags + Enc(), &out), 0) << out;
    EXPECT_NE(out.find("snap2"), std::string::npos) << out;
    ASSERT_EQ(Run("datasync gc " + store + " --dry-run --json" + flags + Enc(), &out), 0) << out;
    auto gc = nlohmann::json::parse(out, nullptr, false);
    ASSERT_FALSE(gc.is_discarded()) << out;
    EXPECT_EQ(gc["would_delete_objects"], 0);
    EXPECT_GT(gc["referenced_objects"].get<int>(), 2);
    // Without the key, every command is refused with the fix.
    EXPECT_EQ(Run("datasync pull " + store + " --name snap " + dir_.Join("d2") + flags, &out), 2);
    EXPECT_NE(out.find("cutover: store " + store +
                       " is encrypted: pass --encrypt KEYFILE with its key\n"),
              std::string::npos)
        << out;
    ExpectKeyNowhere();
  }

  testing::TempDir dir_;
  std::string src_;
  std::string big_;
  std::string key_;
  std::string key_hex_;
  std::string key_path_;
  std::string outputs_;
};

TEST_F(EncryptItest, FileStoreRefusalsAreExactAndWriteNothing) {
  const std::string root = dir_.Join("store");
  const std::string store = "file://" + root;
  RoundTrip(store, "");
  // The store's files hold no part of the big file and not its SHA-256.
  const std::string sha = ToHex(Sha256Of(big_));
  for (const auto& [path, bytes] : Files(root)) {
    EXPECT_EQ(bytes.find(big_.substr(1000, 64)), std::string::npos) << path;
    EXPECT_EQ(bytes.find(sha), std::string::npos) << path;
  }

  const auto before = Files(root);
  std::string out;
  // Without --encrypt.
  EXPECT_EQ(Run("datasync push " + src_ + " " + store + " --name x", &out), 2);
  EXPECT_EQ(out,
            "cutover: store " + store + " is encrypted: pass --encrypt KEYFILE with its key\n");
  // Another key.
  std::string other = dir_.Join("other");
  ASSERT_TRUE(WriteFileAtomic(other, std::string(64, 'c'), 0600).ok());
  EXPECT_EQ(Run("datasync push " + src_ + " " + store + " --name x --encrypt " + other, &out), 2);
  EXPECT_EQ(out, "cutover: the key in " + other + " is not the key of store " + store + "\n");
  EXPECT_EQ(Run("datasync gc " + store + " --encrypt " + other, &out), 2);
  EXPECT_EQ(out, "cutover: the key in " + other + " is not the key of store " + store + "\n");
  // A key file that is missing, too open, or not a key.
  EXPECT_EQ(
      Run("datasync push " + src_ + " " + store + " --name x --encrypt " + dir_.Join("no"), &out),
      2);
  EXPECT_EQ(out,
            "cutover: --encrypt " + dir_.Join("no") + ": cannot open: No such file or directory\n");
  ASSERT_EQ(::chmod(other.c_str(), 0644), 0);
  EXPECT_EQ(
      Run("datasync pull " + store + " --name snap " + dir_.Join("d3") + " --encrypt " + other,
          &out),
      2);
  EXPECT_EQ(out, "cutover: --encrypt " + other +
                     ": group or others may access it (mode 0644); run chmod 600 " + other + "\n");
  std::string bad = dir_.Join("bad");
  ASSERT_TRUE(WriteFileAtomic(bad, "secret-ish\n", 0600).ok());
  EXPECT_EQ(Run("datasync verify " + store + " --name snap --encrypt " + bad, &out), 2);
  EXPECT_EQ(out, "cutover: --encrypt " + bad +
                     ": not a key: 11 bytes (expected 32 random bytes or 64 hex digits; make one "
                     "with: head -c 32 /dev/urandom > FILE)\n");
  EXPECT_EQ(Files(root), before);
  EXPECT_FALSE(std::filesystem::exists(dir_.Join("d3")));

  // A plain store with --encrypt.
  const std::string plain = "file://" + dir_.Join("plain");
  ASSERT_EQ(Run("datasync push " + src_ + " " + plain + " --name p", &out), 0) << out;
  const auto plain_before = Files(dir_.Join("plain"));
  EXPECT_EQ(Run("datasync push " + src_ + " " + plain + " --name q" + Enc(), &out), 2);
  EXPECT_EQ(out, "cutover: store " + plain +
                     " is not encrypted: drop --encrypt (only a new store can be encrypted)\n");
  EXPECT_EQ(Files(dir_.Join("plain")), plain_before);

  // A flipped byte in an encrypted chunk: pull exits 1 naming file and chunk, verify exits 1.
  auto key = EncryptionKey::FromFile(key_path_);
  ASSERT_TRUE(key.ok());
  auto fs = FileStore::Open(store);
  ASSERT_TRUE(fs.ok());
  auto enc = EncryptStore(std::move(*fs), *key);
  auto m = DecodeManifest(*enc->Get(testing::NewestKey(*enc, "snap")));
  ASSERT_TRUE(m.ok());
  ChunkId victim{};
  for (const Entry& e : m->entries) {
    if (e.path == "d/big") victim = e.chunks[0].id;
  }
  const std::string victim_key = enc->Names().Chunk(victim);
  std::string bytes = *ReadFile(root + "/" + victim_key);
  bytes[100] ^= 1;
  ASSERT_TRUE(WriteFileAtomic(root + "/" + victim_key, bytes).ok());
  EXPECT_EQ(Run("datasync pull " + store + " --name snap " + dir_.Join("d4") + Enc(), &out), 1);
  EXPECT_NE(out.find("cutover: pull: 1 entry not restored: file d/big: chunk " + ToHex(victim) +
                     ": corrupt or not encrypted with this key: " + victim_key + "\n"),
            std::string::npos)
      << out;
  EXPECT_EQ(Run("datasync verify " + store + " --name snap" + Enc(), &out), 1);
  EXPECT_NE(
      out.find("FAIL file d/big: chunk " + ToHex(victim) +
               ": corrupt in the store: corrupt or not encrypted with this key: " + victim_key),
      std::string::npos)
      << out;
  ExpectKeyNowhere();
}

TEST_F(EncryptItest, WebDavRoundTrip) {
  testing::NginxDav dav;
  Status s = dav.Start();
  if (s.code() == Code::kEnvironment) CUTOVER_SKIP_OR_FAIL(s.message());
  ASSERT_TRUE(s.ok()) << s.ToString();
  RoundTrip(dav.url() + "/enc", "");
  const std::string sha = ToHex(Sha256Of(big_));
  int n = 0;
  for (const auto& [path, bytes] : Files(dav.root())) {
    ++n;
    EXPECT_EQ(bytes.find(big_.substr(1000, 64)), std::string::npos) << path;
    EXPECT_EQ(path.find(sha), std::string::npos) << path;
  }
  EXPECT_GT(n, 3);
}

TEST_F(EncryptItest, S3RoundTrip) {
  testing::S3rver s3;
  Status s = s3.Start();
  if (s.code() == Code::kEnvironment) CUTOVER_SKIP_OR_FAIL(s.message());
  ASSERT_TRUE(s.ok()) << s.ToString();
  RoundTrip("s3://" + s3.bucket() + "/enc", " --s3-endpoint " + s3.url());
}

}  // namespace
}  // namespace cutover
