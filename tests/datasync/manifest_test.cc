#include "datasync/manifest.h"

#include <string>

#include <gtest/gtest.h>
#include <zstd.h>
#include <nlohmann/json.hpp>

namespace cutover {
namespace {

using nlohmann::json;

std::string Zstd(const std::string& text) {
  std::string out(ZSTD_compressBound(text.size()), '\0');
  size_t n = ZSTD_compress(out.data(), out.size(), text.data(), text.size(), 1);
  out.resize(n);
  return out;
}

ChunkId IdOf(const std::string& s) { return Sha256Of(s); }

Manifest Sample() {
  Manifest m;
  m.name = "nightly";
  m.created_ns = 1700000000123456789;
  m.chunker = ChunkerParams{};
  Entry dir{"data", EntryType::kDir, 0755, 0, 1700000000000000001, "", {}};
  Entry big{"data/a.bin", EntryType::kFile, 0644, 15, -5, "", {}};
  big.chunks.push_back(ChunkRef{IdOf("x"), 10, false, {}, 0});
  big.chunks.push_back(ChunkRef{IdOf("y"), 5, false, {}, 0});
  Entry small{"data/small", EntryType::kFile, 0600, 9, 42, "", {}};
  small.chunks.push_back(ChunkRef{IdOf("z"), 9, true, IdOf("pack"), 1024});
  Entry empty{"data/empty", EntryType::kFile, 04755, 0, 43, "", {}};
  Entry link{"latest", EntryType::kSymlink, 0777, 0, 44, "data/a.bin", {}};
  Entry odd{"data/caf\xe9", EntryType::kFile, 0644, 0, 45, "", {}};  // Latin-1, not UTF-8
  Entry odd_link{"odd", EntryType::kSymlink, 0777, 0, 46, "\xff\xfe", {}};
  m.entries = {dir, big, small, empty, link, odd, odd_link};
  return m;
}

// The text in an encoded manifest (one zstd frame, written streamed: no content size).
std::string Unzstd(const std::string& frame) {
  ZSTD_DCtx* d = ZSTD_createDCtx();
  std::string out;
  ZSTD_inBuffer in{frame.data(), frame.size(), 0};
  char buf[1 << 16];
  while (in.pos < in.size) {
    ZSTD_outBuffer o{buf, sizeof buf, 0};
    size_t r = ZSTD_decompressStream(d, &o, &in);
    EXPECT_FALSE(ZSTD_isError(r));
    if (ZSTD_isError(r)) break;
    out.append(buf, o.pos);
  }
  ZSTD_freeDCtx(d);
  return out;
}

// The JSON of Sample() as EncodeManifest writes it, for tests that break one field.
json SampleJson() {
  auto enc = EncodeManifest(Sample());
  EXPECT_TRUE(enc.ok());
  return json::parse(Unzstd(*enc));
}

Status DecodeJson(const json& j) { return DecodeManifest(Zstd(j.dump())).status(); }

TEST(ManifestTest, RoundTrips) {
  Manifest m = Sample();
  auto enc = EncodeManifest(m);
  ASSERT_TRUE(enc.ok()) << enc.status().ToString();
  auto dec = DecodeManifest(*enc);
  ASSERT_TRUE(dec.ok()) << dec.status().ToString();
  EXPECT_EQ(*dec, m);
}

// The manifest is streamed entry by entry: its text must still be exactly the compact,
// key-sorted dump of the whole document (so a manifest's bytes do not depend on how it was
// written), with a shard block too.
TEST(ManifestTest, StreamedTextIsTheWholeDocumentsDump) {
  Manifest m = Sample();
  for (int with_shard = 0; with_shard < 2; ++with_shard) {
    if (with_shard == 1) m.shard = ShardInfo{1, 4, 7, IdOf("tree")};
    auto enc = EncodeManifest(m);
    ASSERT_TRUE(enc.ok()) << enc.status().ToString();
    const std::string text = Unzstd(*enc);
    EXPECT_EQ(json::parse(text).dump(), text);
    auto dec = DecodeManifest(*enc);
    ASSERT_TRUE(dec.ok()) << dec.status().ToString();
    EXPECT_EQ(*dec, m);
  }
  Manifest none = Sample();
  none.entries.clear();
  auto enc = EncodeManifest(none);
  ASSERT_TRUE(enc.ok());
  EXPECT_EQ(json::parse(Unzstd(*enc))["entries"], json::array());
}

// The writer a push uses gives the bytes EncodeManifest gives for entries in walk order, and
// refuses entries out of order or below a file or symlink (what the whole-manifest check finds).
TEST(ManifestTest, WriterInWalkOrderMatchesEncodeAndRefusesDisorder) {
  Manifest m;
  m.name = "n";
  m.chunker = ChunkerParams{4096, 16384, 131072};
  m.entries = {Entry{"a", EntryType::kDir, 0755, 0, 1, "", {}},
               Entry{"a/b", EntryType::kFile, 0644, 0, 2, "", {}},
               Entry{"a/c", EntryType::kSymlink, 0777, 0, 3, "b", {}},
               Entry{"a.txt", EntryType::kFile, 0644, 0, 4, "", {}}};
  auto w = ManifestWriter::Begin(m);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  for (const Entry& e : m.entries) ASSERT_TRUE((*w)->Add(e).ok()) << e.path;
  auto streamed = (*w)->Finish();
  ASSERT_TRUE(streamed.ok());
  auto whole = EncodeManifest(m);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(Unzstd(*streamed), Unzstd(*whole));

  auto w2 = ManifestWriter::Begin(m);
  ASSERT_TRUE(w2.ok());
  ASSERT_TRUE((*w2)->Add(m.entries[1]).ok());
  Status back = (*w2)->Add(m.entries[0]);
  EXPECT_EQ(back.ToString(),
            "invalid_argument: manifest entry 1: path \"a\" comes after \"a/b\" (entries must be "
            "in walk order)");
  auto w3 = ManifestWriter::Begin(m);
  ASSERT_TRUE(w3.ok());
  ASSERT_TRUE((*w3)->Add(m.entries[2]).ok());  // a/c, a symlink
  Status below = (*w3)->Add(Entry{"a/c/x", EntryType::kFile, 0644, 0, 5, "", {}});
  EXPECT_EQ(below.ToString(),
            "invalid_argument: manifest entry 1: parent \"a/c\" of \"a/c/x\" is a symlink, not a "
            "directory");
  auto w4 = ManifestWriter::Begin(m);
  ASSERT_TRUE(w4.ok());
  EXPECT_FALSE((*w4)->Add(Entry{"../x", EntryType::kFile, 0644, 0, 5, "", {}}).ok());
  m.shard = ShardInfo{1, 2, 1, IdOf("tree")};  // a tree of 1 entry cannot hold 2
  auto w5 = ManifestWriter::Begin(m);
  ASSERT_TRUE(w5.ok());
  ASSERT_TRUE((*w5)->Add(m.entries[0]).ok());
  ASSERT_TRUE((*w5)->Add(m.entries[1]).ok());
  EXPECT_FALSE((*w5)->Finish().ok());
}

TEST(ManifestTest, WritesTheDocumentedLayout) {
  json j = SampleJson();
  EXPECT_EQ(j["format"], 1);
  EXPECT_EQ(j["hash"], "sha256");
  EXPECT_EQ(j["chunker"]["avg"], 1048576);
  EXPECT_EQ(j["chunker"]["version"], kChunkerVersion);
  EXPECT_EQ(j["entries"][1]["chunks"][0]["id"], ToHex(IdOf("x")));
  EXPECT_EQ(j["entries"][1]["chunks"][0].contains("pack"), false);
  EXPECT_EQ(j["entries"][2]["chunks"][0]["pack"], ToHex(IdOf("pack")));
  EXPECT_EQ(j["entries"][2]["chunks"][0]["off"], 1024);
  EXPECT_EQ(j["entries"][4]["target"], "data/a.bin");
  EXPECT_EQ(j["entries"][5]["path_hex"], "646174612f636166e9");
  EXPECT_EQ(j["entries"][5].contains("path"), false);
  EXPECT_EQ(j["entries"][6]["target_hex"], "fffe");
  EXPECT_EQ(j["entries"][0].contains("size"), false);
}

TEST(ManifestTest, RefusesUnsafePaths) {
  struct Case {
    std::string path;
    std::string message;
  };
  const Case cases[] = {
      {"/etc/passwd", "manifest entry 1: path \"/etc/passwd\" is absolute"},
      {"..", "manifest entry 1: path \"..\" has a \"..\" component"},
      {"data/../../x", "manifest entry 1: path \"data/../../x\" has a \"..\" component"},
      {"a//b", "manifest entry 1: path \"a//b\" has an empty component"},
      {"a/", "manifest entry 1: path \"a/\" has an empty component"},
      {"./a", "manifest entry 1: path \"./a\" has a \".\" component"},
      {"", "manifest entry 1: path is empty"},
      {std::string("a\0b", 3), "manifest entry 1: path contains a NUL byte"},
      {"data", "manifest entry 1: path \"data\" repeats entry 0"},
  };
  for (const Case& c : cases) {
    json j = SampleJson();
    j["entries"][1]["path"] = c.path;
    Status s = DecodeJson(j);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << c.message;
    EXPECT_EQ(s.message(), c.message);
    // Encoding refuses the same manifest with the same words.
    Manifest m = Sample();
    m.entries[1].path = c.path;
    EXPECT_EQ(EncodeManifest(m).status().message(), c.message);
  }
  json j = SampleJson();
  j["entries"][1]["path_hex"] = "2f78";  // "/x"
  j["entries"][1].erase("path");
  EXPECT_EQ(DecodeJson(j).message(), "manifest entry 1: path \"/x\" is absolute");
}

TEST(ManifestTest, RefusesEntriesBelowASymlinkOrFile) {
  json j = SampleJson();
  j["entries"].push_back(
      {{"path", "latest/evil"}, {"type", "dir"}, {"mode", 0755}, {"mtime_ns", 1}});
  EXPECT_EQ(DecodeJson(j).message(),
            "manifest entry 7: parent \"latest\" of \"latest/evil\" is a symlink, not a "
            "directory");
  // The order of entries does not matter.
  json k = SampleJson();
  k["entries"].insert(
      k["entries"].begin(),
      json{{"path", "data/a.bin/x"}, {"type", "dir"}, {"mode", 0755}, {"mtime_ns", 1}});
  EXPECT_EQ(DecodeJson(k).message(),
            "manifest entry 0: parent \"data/a.bin\" of \"data/a.bin/x\" is a file, not a "
            "directory");
}

TEST(ManifestTest, RefusesBadFields) {
  struct Case {
    const char* pointer;
    json value;  // null: erase the field
    std::string message;
  };
  const Case cases[] = {
      {"/format", 2, "manifest: format 2 is newer than this cutover reads (1)"},
      {"/format", 0, "manifest: format 0 is not valid"},
      {"/format", "1", "manifest: \"format\" is not an integer"},
      {"/format", nullptr, "manifest: no \"format\" field"},
      {"/hash", "blake3", "manifest: hash \"blake3\" is not \"sha256\""},
      {"/chunker/version", 2, "manifest: chunker version 2 is not 1"},
      {"/chunker/avg", 1000,
       "manifest: chunker: avg size 1000 is not a power of two of at least 256 bytes"},
      {"/entries", nullptr, "manifest: no \"entries\" array"},
      {"/entries/1/type", "fifo", "manifest entry 1: unknown type \"fifo\""},
      {"/entries/1/mode", 0xffff, "manifest entry 1: mode 65535 has bits outside 07777"},
      {"/entries/1/mode", -1, "manifest entry 1: \"mode\" is not a non-negative integer"},
      {"/entries/1/size", 16, "manifest entry 1: chunk lengths sum to 15, size is 16"},
      {"/entries/1/mtime_ns", "x", "manifest entry 1: \"mtime_ns\" is not an integer"},
      {"/entries/1/chunks", nullptr, "manifest entry 1: no \"chunks\" field"},
      {"/entries/1/chunks/0/len", 0, "manifest entry 1: chunk 0 is empty"},
      {"/entries/1/chunks/0/len", uint64_t{1} << 40,
       "manifest entry 1: chunk 0 length 1099511627776 is above the chunker's max size 8388608"},
      {"/entries/2/chunks/0/len", 8388609,
       "manifest entry 2: chunk 0 length 8388609 is above the chunker's max size 8388608"},
      {"/entries/1/chunks/0/id", "zz",
       "manifest entry 1 chunk 0: \"id\": bad chunk id: 2 characters, want 64"},
      {"/entries/2/chunks/0/off", nullptr, "manifest entry 2 chunk 0: no \"off\" field"},
      {"/entries/0/size", 3, "manifest entry 0: a dir has a \"size\" field"},
      {"/entries/0/target", "x", "manifest entry 0: a dir has a symlink target"},
      {"/entries/4/target", "", "manifest entry 4: symlink target is empty"},
      {"/entries/4/target", std::string("a\0b", 3),
       "manifest entry 4: symlink target contains a NUL byte"},
      {"/entries/4/path_hex", "61", "manifest entry 4: both \"path\" and \"path_hex\" are present"},
      {"/entries/5/path_hex", "6G", "manifest entry 5: \"path_hex\" is not lower-case hex"},
      {"/entries/3", 7, "manifest entry 3: not an object"},
  };
  for (const Case& c : cases) {
    json j = SampleJson();
    json::json_pointer ptr(c.pointer);
    if (c.value.is_null()) {
      j[ptr.parent_pointer()].erase(ptr.back());
    } else {
      j[ptr] = c.value;
    }
    Status s = DecodeJson(j);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << c.pointer;
    EXPECT_EQ(s.message(), c.message) << c.pointer;
  }
}

// The streaming reader hands over every entry in order and gives the header; text beyond what
// the entries read so far can take (whitespace, a zstd bomb) is refused as soon as it passes
// the cap, and "chunker" must come before "entries" (as every writer puts it).
TEST(ManifestTest, ReadsAsAStreamWithTheTextCappedByItsEntries) {
  auto enc = EncodeManifest(Sample());
  ASSERT_TRUE(enc.ok());
  std::vector<std::string> paths;
  auto header = ReadManifest(*enc, [&paths](Entry&& e) {
    paths.push_back(e.path);
    return Status::Ok();
  });
  ASSERT_TRUE(header.ok()) << header.status().ToString();
  EXPECT_TRUE(header->entries.empty());
  EXPECT_EQ(header->name, "nightly");
  EXPECT_EQ(paths.size(), Sample().entries.size());
  // on_entry's error stops the read and is returned.
  auto stopped = ReadManifest(*enc, [](Entry&&) { return Status::Aborted("enough"); });
  EXPECT_EQ(stopped.status().message(), "enough");

  const std::string head =
      R"({"chunker":{"avg":1048576,"max":8388608,"min":524288,"version":1},"created_ns":0,)"
      R"("entries":[)";
  const std::string tail = R"(],"format":1,"hash":"sha256","name":"x"})";
  EXPECT_EQ(DecodeManifest(Zstd(head + std::string(2 << 20, ' ') + tail)).status().message(),
            "manifest: larger than 1048576 bytes (what 0 entries and chunks can take)");
  EXPECT_TRUE(DecodeManifest(Zstd(head + std::string(1 << 19, ' ') + tail)).ok());
  json late = SampleJson();
  std::string text = late.dump();
  // "entries" before "chunker": moved by hand, since dump() sorts the keys.
  const std::string chunker = text.substr(text.find("\"chunker\":"),
                                          text.find("\"created_ns\"") - text.find("\"chunker\":"));
  text.erase(text.find(chunker), chunker.size());
  text.insert(text.size() - 1, "," + chunker.substr(0, chunker.size() - 1));
  EXPECT_EQ(DecodeManifest(Zstd(text)).status().message(),
            "manifest: no \"chunker\" before \"entries\"");
}

TEST(ManifestTest, RefusesCorruptBytes) {
  EXPECT_EQ(DecodeManifest("").status().message(), "manifest: not zstd data");
  EXPECT_EQ(DecodeManifest("{\"format\": 1}").status().message(), "manifest: not zstd data");
  auto enc = EncodeManifest(Sample());
  ASSERT_TRUE(enc.ok());
  std::string truncated = enc->substr(0, enc->size() - 5);
  Status t = DecodeManifest(truncated).status();
  EXPECT_EQ(t.code(), Code::kCorruption);
  EXPECT_EQ(t.message().rfind("manifest: corrupt zstd data: ", 0), 0u) << t.message();
  std::string flipped = *enc;
  flipped[flipped.size() / 2] ^= 0x55;
  Status f = DecodeManifest(flipped).status();
  EXPECT_FALSE(f.ok());
  EXPECT_EQ(DecodeManifest(*enc + "x").status().message(),
            "manifest: corrupt zstd data: trailing bytes after the frame");
  Status nj = DecodeManifest(Zstd("{not json")).status();
  EXPECT_EQ(nj.code(), Code::kCorruption);
  EXPECT_EQ(nj.message(), "manifest: not JSON");
  EXPECT_EQ(DecodeManifest(Zstd("[1]")).status().message(), "manifest: not a JSON object");
}

}  // namespace
}  // namespace cutover
