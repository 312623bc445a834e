// Encrypted stores (--encrypt) over a file:// store: key files, the object format, what the
// store's bytes reveal, the config's key check, and push/pull/verify/gc through the decorator.
#include "datasync/encrypted_store.h"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/file_util.h"
#include "core/sha256.h"
#include "datasync/file_store.h"
#include "datasync/gc.h"
#include "datasync/manifest.h"
#include "datasync/pull.h"
#include "datasync/push.h"
#include "datasync/store_config.h"
#include "datasync/verify.h"
#include "tests/datasync/snapshot_keys.h"
#include "tests/datasync/test_store.h"
#include "tests/datasync/tree.h"
#include "tests/harness/test_env.h"

namespace cutover {
namespace {

const ChunkerParams kParams{4096, 16384, 131072};

std::string Random(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  return testing::RandomBytes(rng, n);
}

// Every file under `root`, by path relative to it.
std::map<std::string, std::string> Files(const std::string& root) {
  std::map<std::string, std::string> out;
  if (!std::filesystem::exists(root)) return out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
    if (!e.is_regular_file()) continue;
    out[e.path().string().substr(root.size())] = ReadFile(e.path().string()).value_or("?");
  }
  return out;
}

class EncryptedStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = dir_.Join("store");
    url_ = "file://" + root_;
    key_path_ = WriteKey("key", Random(32, 1));
  }

  std::string WriteKey(const std::string& name, const std::string& bytes, mode_t mode = 0600) {
    std::string path = dir_.Join(name);
    EXPECT_TRUE(WriteFileAtomic(path, bytes, mode).ok());
    EXPECT_EQ(::chmod(path.c_str(), mode), 0);
    return path;
  }

  std::unique_ptr<Store> Plain() {
    auto s = FileStore::Open(url_);
    EXPECT_TRUE(s.ok());
    return std::move(*s);
  }

  std::unique_ptr<Store> Encrypted(const std::string& key_path) {
    auto key = EncryptionKey::FromFile(key_path);
    EXPECT_TRUE(key.ok()) << key.status().message();
    return EncryptStore(Plain(), *key);
  }

  // Two 200 KiB files (several chunks each) and 30 small files (packed).
  std::string MakeTree(const std::string& name, uint64_t seed) {
    std::string src = dir_.Join(name);
    EXPECT_TRUE(MakeDirs(src + "/small").ok());
    EXPECT_TRUE(WriteFileAtomic(src + "/big1", Random(200 << 10, seed)).ok());
    EXPECT_TRUE(WriteFileAtomic(src + "/big2", Random(200 << 10, seed + 1)).ok());
    for (int i = 0; i < 30; ++i) {
      EXPECT_TRUE(
          WriteFileAtomic(src + "/small/f" + std::to_string(i), Random(500 + i, seed * 1000 + i))
              .ok());
    }
    return src;
  }

  Result<PushResult> PushTo(Store& store, const std::string& src, const std::string& name) {
    PushOptions o;
    o.name = name;
    o.chunker = kParams;
    o.jobs = 4;
    return Push(src, store, o);
  }

  testing::TempDir dir_;
  std::string root_;
  std::string url_;
  std::string key_path_;
};

TEST_F(EncryptedStoreTest, KeyFileTakesRawOrHexBytesAndBothGiveTheSameKey) {
  std::string raw = Random(32, 7);
  std::string hex =
      HexEncode(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(raw.data()), raw.size()));
  auto a = EncryptionKey::FromFile(WriteKey("raw", raw));
  auto b = EncryptionKey::FromFile(WriteKey("hex", hex));
  auto c = EncryptionKey::FromFile(WriteKey("hexnl", hex + "\n", 0400));
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_TRUE(b.ok()) << b.status().message();
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(a->key_check(), b->key_check());
  EXPECT_EQ(a->key_check(), c->key_check());
  EXPECT_EQ(a->key_check().size(), 32u);
  EXPECT_EQ(a->cipher_key(), c->cipher_key());
  EXPECT_EQ(a->name_key(), c->name_key());
  // The sub-keys are distinct and none is the master key or holds the key check.
  EXPECT_NE(a->cipher_key(), a->name_key());
  EXPECT_NE(std::string(reinterpret_cast<const char*>(a->cipher_key().data()), 32), raw);
  EXPECT_EQ(hex.find(a->key_check()), std::string::npos);
  auto other = EncryptionKey::FromFile(WriteKey("other", Random(32, 8)));
  ASSERT_TRUE(other.ok());
  EXPECT_NE(other->key_check(), a->key_check());
}

TEST_F(EncryptedStoreTest, BadKeyFilesAreOneLineErrorsThatNeverEchoTheContent) {
  auto msg = [](const Result<EncryptionKey>& r) {
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
    return r.status().message();
  };
  std::string p = WriteKey("short", "0123456789abcdef\n");
  EXPECT_EQ(msg(EncryptionKey::FromFile(p)),
            "--encrypt " + p +
                ": not a key: 17 bytes (expected 32 random bytes or 64 hex digits; make one "
                "with: head -c 32 /dev/urandom > FILE)");
  p = WriteKey("nothex", std::string(63, 'a') + "g");
  EXPECT_EQ(msg(EncryptionKey::FromFile(p)),
            "--encrypt " + p +
                ": not a key: 64 characters, but not all hex digits (expected 32 random bytes or "
                "64 hex digits)");
  p = WriteKey("zero", std::string(32, '\0'));
  EXPECT_EQ(msg(EncryptionKey::FromFile(p)),
            "--encrypt " + p +
                ": not a key: all zero bytes (make one with: head -c 32 /dev/urandom > FILE)");
  p = WriteKey("long", std::string(4096, 'a'));
  EXPECT_EQ(msg(EncryptionKey::FromFile(p)),
            "--encrypt " + p +
                ": not a key: over 66 bytes (expected 32 random bytes or 64 hex digits; make one "
                "with: head -c 32 /dev/urandom > FILE)");
  p = WriteKey("open", Random(32, 3), 0640);
  EXPECT_EQ(msg(EncryptionKey::FromFile(p)), "--encrypt " + p +
                                                 ": group or others may access it (mode 0640); "
                                                 "run chmod 600 " +
                                                 p);
  p = dir_.Join("missing");
  EXPECT_EQ(msg(EncryptionKey::FromFile(p)),
            "--encrypt " + p + ": cannot open: No such file or directory");
  EXPECT_EQ(msg(EncryptionKey::FromFile(dir_.path())),
            "--encrypt " + dir_.path() + ": not a regular file");
  // A FIFO (opening it would block until a writer came) and a character device are refused
  // before they are opened, at once.
  p = dir_.Join("fifo");
  ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0);
  EXPECT_EQ(msg(EncryptionKey::FromFile(p)), "--encrypt " + p + ": not a regular file");
  EXPECT_EQ(msg(EncryptionKey::FromFile("/dev/zero")), "--encrypt /dev/zero: not a regular file");
}

TEST_F(EncryptedStoreTest, SealedObjectsOpenOnlyUnderTheirKeyAndObjectKey) {
  auto key = EncryptionKey::FromFile(key_path_);
  ASSERT_TRUE(key.ok());
  std::string plain = Random(100000, 4);
  auto sealed = SealObject(key->cipher_key(), "chunks/aa/bb/x", plain);
  ASSERT_TRUE(sealed.ok());
  EXPECT_EQ(sealed->size(), plain.size() + kEncryptionOverhead);
  EXPECT_EQ(sealed->find(plain.substr(0, 32)), std::string::npos);
  auto again = SealObject(key->cipher_key(), "chunks/aa/bb/x", plain);
  EXPECT_NE(*sealed, *again);  // a fresh nonce each time
  auto opened = OpenObject(key->cipher_key(), "chunks/aa/bb/x", *sealed);
  ASSERT_TRUE(opened.ok());
  EXPECT_EQ(*opened, plain);

  auto refused = [&](const std::array<uint8_t, 32>& k, std::string_view aad, std::string_view s) {
    auto r = OpenObject(k, aad, s);
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), Code::kCorruption);
    EXPECT_EQ(r.status().message(), "corrupt or not encrypted with this key: " + std::string(aad));
  };
  refused(key->cipher_key(), "chunks/aa/bb/y", *sealed);  // moved to another key
  refused(key->name_key(), "chunks/aa/bb/x", *sealed);    // another key
  for (size_t at : {size_t{0}, size_t{12}, sealed->size() / 2, sealed->size() - 1}) {
    std::string flipped = *sealed;
    flipped[at] ^= 0x01;
    refused(key->cipher_key(), "chunks/aa/bb/x", flipped);
  }
  refused(key->cipher_key(), "chunks/aa/bb/x", sealed->substr(0, 27));
  refused(key->cipher_key(), "chunks/aa/bb/x", plain);  // never encrypted
  auto empty = SealObject(key->cipher_key(), "k", "");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*OpenObject(key->cipher_key(), "k", *empty), "");
}

TEST_F(EncryptedStoreTest, PushPullRoundTripAndTheStoreHoldsNoPlaintextNorContentHash) {
  std::string src = MakeTree("src", 1);
  auto store = Encrypted(key_path_);
  auto pushed = PushTo(*store, src, "snap");
  ASSERT_TRUE(pushed.ok()) << pushed.status().message();
  EXPECT_GT(pushed->uploaded_objects, 4u);

  std::string dest = dir_.Join("dest");
  auto pulled = Pull(*store, "snap", dest, {});
  ASSERT_TRUE(pulled.ok()) << pulled.status().message();
  EXPECT_EQ(testing::Tree(dest), testing::Tree(src));

  // The config says encrypted, with the key's check, and is the one plaintext object.
  auto files = Files(root_);
  ASSERT_EQ(files.count("/config"), 1u);
  EXPECT_NE(files["/config"].find("\"encryption\":true"), std::string::npos) << files["/config"];
  auto key = EncryptionKey::FromFile(key_path_);
  EXPECT_NE(files["/config"].find("\"key_check\":\"" + key->key_check() + "\""), std::string::npos);

  // Needles: every chunk's and pack's SHA-256 (raw and hex), the start of every chunk's bytes,
  // every small file's bytes, and the files' names.
  auto m = DecodeManifest(*store->Get(testing::NewestKey(*store, "snap")));
  ASSERT_TRUE(m.ok()) << m.status().message();
  std::vector<std::string> needles;
  int chunks = 0, packed = 0;
  for (const Entry& e : m->entries) {
    if (e.type != EntryType::kFile) continue;
    needles.push_back(e.path);  // "big1", "small/f3": unlikely in random bytes by chance
    std::string content = *ReadFile(src + "/" + e.path);
    uint64_t at = 0;
    for (const ChunkRef& c : e.chunks) {
      needles.push_back(ToHex(c.id));
      needles.push_back(std::string(reinterpret_cast<const char*>(c.id.data()), c.id.size()));
      needles.push_back(content.substr(at, 64));
      if (c.packed) {
        ++packed;
        needles.push_back(ToHex(c.pack));
        needles.push_back(std::string(reinterpret_cast<const char*>(c.pack.data()), 32));
      } else {
        ++chunks;
        at += c.length;
      }
    }
  }
  EXPECT_GT(chunks, 4);
  EXPECT_EQ(packed, 30);
  for (const auto& [path, bytes] : files) {
    for (const std::string& n : needles) {
      EXPECT_EQ(path.find(n), std::string::npos) << path;
      EXPECT_EQ(bytes.find(n), std::string::npos) << path << " holds a needle";
    }
  }

  // Dedup under one key: the same tree again uploads nothing.
  auto again = PushTo(*store, src, "snap2");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->uploaded_objects, 0u);
  EXPECT_EQ(Files(root_).size(), files.size() + 1);  // only the new manifest
}

TEST_F(EncryptedStoreTest, MismatchedKeysAreRefusedAndWriteNothing) {
  std::string src = MakeTree("src", 2);
  ASSERT_TRUE(PushTo(*Encrypted(key_path_), src, "snap").ok());
  auto before = Files(root_);

  // Without the key, with another key, and a plain store with a key.
  auto plain = Plain();
  auto r = ReadStoreConfig(*plain);
  EXPECT_EQ(r.status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(r.status().message(),
            "store " + url_ + " is encrypted: pass --encrypt KEYFILE with its key");
  auto pushed = PushTo(*plain, src, "other");
  EXPECT_EQ(pushed.status().message(), r.status().message());

  std::string other = WriteKey("other", Random(32, 99));
  auto wrong = Encrypted(other);
  r = ReadStoreConfig(*wrong);
  EXPECT_EQ(r.status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(r.status().message(), "the key in " + other + " is not the key of store " + url_);
  pushed = PushTo(*wrong, src, "other");
  EXPECT_EQ(pushed.status().message(), r.status().message());
  EXPECT_EQ(Files(root_), before);

  std::string plain_root = dir_.Join("plain");
  auto p = FileStore::Open("file://" + plain_root);
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE(PushTo(**p, src, "snap").ok());
  auto plain_before = Files(plain_root);
  auto key = EncryptionKey::FromFile(key_path_);
  auto keyed = EncryptStore(std::move(*p), *key);
  pushed = PushTo(*keyed, src, "snap2");
  EXPECT_EQ(pushed.status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(pushed.status().message(),
            "store file://" + plain_root +
                " is not encrypted: drop --encrypt (only a new store can be encrypted)");
  EXPECT_EQ(Files(plain_root), plain_before);
}

TEST_F(EncryptedStoreTest, FlippedBytesAreFoundByPullAndVerify) {
  std::string src = MakeTree("src", 3);
  auto store = Encrypted(key_path_);
  ASSERT_TRUE(PushTo(*store, src, "snap").ok());
  auto m = DecodeManifest(*store->Get(testing::NewestKey(*store, "snap")));
  ASSERT_TRUE(m.ok());
  const Entry* big = nullptr;
  const Entry* small = nullptr;
  for (const Entry& e : m->entries) {
    if (e.path == "big1") big = &e;
    if (e.path == "small/f3") small = &e;
  }
  ASSERT_NE(big, nullptr);
  ASSERT_NE(small, nullptr);
  ASSERT_TRUE(small->chunks[0].packed);
  const std::string chunk_key = store->Names().Chunk(big->chunks[1].id);
  const std::string pack_key = store->Names().Pack(small->chunks[0].pack);
  for (const std::string& key : {chunk_key, pack_key}) {
    std::string path = root_ + "/" + key;
    std::string bytes = *ReadFile(path);
    bytes[bytes.size() / 2] ^= 0x20;
    ASSERT_TRUE(WriteFileAtomic(path, bytes).ok());
  }

  auto pulled = Pull(*Encrypted(key_path_), "snap", dir_.Join("dest"), {});
  ASSERT_FALSE(pulled.ok());
  EXPECT_EQ(pulled.status().code(), Code::kCorruption);
  // Every damaged file is named (the others are restored): the big file first, then each small
  // file of the damaged pack.
  const std::string chunk_msg =
      "pull: 31 entries not restored: file big1: chunk " + ToHex(big->chunks[1].id) +
      ": corrupt or not encrypted with this key: " + chunk_key + "; file small/f0: chunk ";
  EXPECT_EQ(pulled.status().message().rfind(chunk_msg, 0), 0u) << pulled.status().message();
  EXPECT_NE(pulled.status().message().find(": corrupt or not encrypted with this key: " + pack_key +
                                           "; "),
            std::string::npos);

  auto v = Verify(*Encrypted(key_path_), "snap", "", 4);
  ASSERT_TRUE(v.ok()) << v.status().message();
  // The damaged chunk, and every small file of the damaged pack.
  EXPECT_EQ(std::count(
                v->failures.begin(), v->failures.end(),
                "file big1: chunk " + ToHex(big->chunks[1].id) +
                    ": corrupt in the store: corrupt or not encrypted with this key: " + chunk_key),
            1);
  EXPECT_EQ(
      std::count(v->failures.begin(), v->failures.end(),
                 "file small/f3: chunk " + ToHex(small->chunks[0].id) +
                     ": corrupt in the store: corrupt or not encrypted with this key: " + pack_key),
      1);
}

TEST_F(EncryptedStoreTest, ObjectMovedToAnotherKeyDoesNotDecrypt) {
  std::string src = MakeTree("src", 4);
  auto store = Encrypted(key_path_);
  ASSERT_TRUE(PushTo(*store, src, "snap").ok());
  auto m = DecodeManifest(*store->Get(testing::NewestKey(*store, "snap")));
  ASSERT_TRUE(m.ok());
  const Entry* big = nullptr;
  for (const Entry& e : m->entries) {
    if (e.path == "big2") big = &e;
  }
  ASSERT_NE(big, nullptr);
  // Put chunk 0's (authentic) ciphertext where chunk 1 belongs.
  std::string from = root_ + "/" + store->Names().Chunk(big->chunks[0].id);
  std::string to = root_ + "/" + store->Names().Chunk(big->chunks[1].id);
  ASSERT_TRUE(WriteFileAtomic(to, *ReadFile(from)).ok());
  auto got = store->Get(store->Names().Chunk(big->chunks[1].id));
  EXPECT_EQ(got.status().code(), Code::kCorruption);
}

TEST_F(EncryptedStoreTest, GcKeepsWhatSnapshotsReferenceAndDeletesTheRest) {
  auto store = Encrypted(key_path_);
  ASSERT_TRUE(PushTo(*store, MakeTree("a", 5), "keep").ok());
  auto gone = PushTo(*store, MakeTree("b", 6), "drop");
  ASSERT_TRUE(gone.ok());
  // An object in the store's naming domain that no snapshot references.
  ChunkId orphan = Sha256Of("nobody's chunk");
  ASSERT_TRUE(store->Put(store->Names().Chunk(orphan), "orphan").ok());
  ASSERT_TRUE(store->Delete(testing::NewestKey(*store, "drop")).ok());

  auto r = CollectGarbage(*store, {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->snapshots, 1u);
  EXPECT_EQ(r->unreferenced_objects, gone->uploaded_objects + 1);
  EXPECT_EQ(r->missing_objects, 0u);
  EXPECT_EQ(r->foreign_objects, 0u);
  EXPECT_FALSE(*store->Exists(store->Names().Chunk(orphan)));

  auto v = Verify(*store, "keep", "", 4);
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_TRUE(v->failures.empty()) << v->failures.front();
  std::string dest = dir_.Join("dest");
  ASSERT_TRUE(Pull(*store, "keep", dest, {}).ok());
  EXPECT_EQ(testing::Tree(dest), testing::Tree(dir_.Join("a")));

  // A second gc finds nothing to delete.
  r = CollectGarbage(*store, {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->unreferenced_objects, 0u);
}

TEST_F(EncryptedStoreTest, PullFetchesEachPackOnceAndSizesArePlaintext) {
  std::string src = MakeTree("src", 7);
  ASSERT_TRUE(PushTo(*Encrypted(key_path_), src, "snap").ok());
  auto key = EncryptionKey::FromFile(key_path_);
  auto counting = std::make_unique<TestStore>(Plain());
  TestStore* c = counting.get();
  auto reads = [c] { return c->Count("get", "packs/") + c->Count("range", "packs/"); };
  auto store = EncryptStore(std::move(counting), *key);
  int packs = 0;
  ASSERT_TRUE(store
                  ->List("packs/",
                         [&](std::string_view k, uint64_t size) {
                           ++packs;
                           auto head = store->Head(k);
                           EXPECT_TRUE(head.ok());
                           EXPECT_EQ(*head, size);
                           EXPECT_EQ(store->Get(k)->size(), size);
                           return Status::Ok();
                         })
                  .ok());
  ASSERT_GE(packs, 1);
  int before = reads();
  PullOptions o;
  o.jobs = 8;
  ASSERT_TRUE(Pull(*store, "snap", dir_.Join("dest"), o).ok());
  EXPECT_EQ(reads() - before, packs);  // 30 small files, one fetch per pack
  EXPECT_EQ(testing::Tree(dir_.Join("dest")), testing::Tree(src));
}

}  // namespace
}  // namespace cutover
