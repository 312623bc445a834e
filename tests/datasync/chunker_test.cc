#include "datasync/chunker.h"

#include <bit>
#include <cstring>
#include <random>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "datasync/chunk_hasher.h"
#include "datasync/hash.h"
#include "tests/harness/test_env.h"

#include <fcntl.h>
#include <unistd.h>

namespace cutover {
namespace {

std::vector<uint8_t> RandomBytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> v(n);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t x = rng();
    std::memcpy(&v[i], &x, 8);
  }
  for (; i < n; ++i) v[i] = static_cast<uint8_t>(rng());
  return v;
}

// Chunk ends of `data`, fed in pieces of `piece` bytes.
std::vector<uint64_t> Ends(const ChunkerParams& p, const std::vector<uint8_t>& data, size_t piece) {
  Chunker c(p);
  std::vector<uint64_t> ends;
  for (size_t off = 0; off < data.size(); off += piece) {
    c.Feed(data.data() + off, std::min(piece, data.size() - off), &ends);
  }
  c.Finish(&ends);
  return ends;
}

std::vector<uint64_t> Lengths(const std::vector<uint64_t>& ends) {
  std::vector<uint64_t> out;
  uint64_t prev = 0;
  for (uint64_t e : ends) {
    out.push_back(e - prev);
    prev = e;
  }
  return out;
}

constexpr size_t k32MiB = 32 << 20;

TEST(ChunkerTest, GearTableIsPinned) {
  // The table is part of the store format: this checksum must never change (bump
  // kChunkerVersion and the store format if it must).
  const auto& t = GearTable();
  uint8_t bytes[256 * 8];
  for (size_t i = 0; i < 256; ++i) {
    for (int k = 0; k < 8; ++k) bytes[i * 8 + k] = static_cast<uint8_t>(t[i] >> (8 * k));
  }
  EXPECT_EQ(ToHex(Sha256Of(bytes, sizeof bytes)),
            "1b70ae6f768fc4d69a27e5ece76f3f656db2c85af6c911d9973da03eac460772");
  // Entry 0 computed from its definition, independently of the table code.
  uint8_t msg[] = "cutover/datasync/gear/v1";
  msg[sizeof msg - 1] = 0;  // the NUL slot becomes the index byte 0
  ChunkId d = Sha256Of(msg, sizeof msg);
  uint64_t v = 0;
  for (int k = 0; k < 8; ++k) v = (v << 8) | d[k];
  EXPECT_EQ(t[0], v);
  std::set<uint64_t> distinct(t.begin(), t.end());
  EXPECT_EQ(distinct.size(), 256u);
}

TEST(ChunkerTest, MasksAreSpreadOverTheHighBits) {
  for (int bits = 1; bits <= 48; ++bits) {
    uint64_t m = SpreadMask(bits);
    EXPECT_EQ(std::popcount(m), bits) << bits;
    EXPECT_EQ(m & 0xffff, 0u) << bits;
    EXPECT_NE(m & (uint64_t{1} << 63), 0u) << bits;
  }
  ChunkerParams p;
  EXPECT_EQ(std::popcount(p.SmallMask()), 22);
  EXPECT_EQ(std::popcount(p.LargeMask()), 18);
}

TEST(ChunkerTest, DefaultsAreValid) {
  ChunkerParams p;
  EXPECT_TRUE(p.Validate().ok());
  EXPECT_EQ(p.min_size, 512u * 1024);
  EXPECT_EQ(p.avg_size, 1024u * 1024);
  EXPECT_EQ(p.max_size, 8u * 1024 * 1024);
}

TEST(ChunkerTest, RejectsBadParams) {
  struct Case {
    uint64_t min, avg, max;
    const char* message;
  };
  const Case cases[] = {
      {32, 1024, 4096, "chunker: min size 32 is below 64 bytes"},
      {512, 1000, 4096, "chunker: avg size 1000 is not a power of two of at least 256 bytes"},
      {64, 128, 4096, "chunker: avg size 128 is not a power of two of at least 256 bytes"},
      {1024, 1024, 4096, "chunker: min size 1024 must be below avg size 1024"},
      {512, 1024, 1024, "chunker: max size 1024 must be above avg size 1024"},
      {512, 1024, (uint64_t{1} << 30) + 1,
       "chunker: max size 1073741825 is above 1073741824 bytes"},
  };
  for (const Case& c : cases) {
    auto r = ChunkerParams::Make(c.min, c.avg, c.max);
    ASSERT_FALSE(r.ok()) << c.message;
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
    EXPECT_EQ(r.status().message(), c.message);
  }
  EXPECT_TRUE(ChunkerParams::Make(64, 256, 257).ok());
}

TEST(ChunkerTest, FastScanAgreesWithPlainLoop) {
  auto data = RandomBytes(300000, 7);
  for (int bits : {4, 10, 13, 15, 18, 22}) {
    uint64_t mask = SpreadMask(bits);
    for (size_t start : {0, 1, 100, 40000}) {
      for (uint64_t h0 : {uint64_t{0}, uint64_t{0x1234567890abcdef}}) {
        size_t off = start;
        int hits = 0;
        while (off < data.size() && hits < 50) {
          uint64_t ha = h0, hb = h0;
          size_t a = GearScan(data.data() + off, data.size() - off, &ha, mask);
          size_t b = GearScanScalar(data.data() + off, data.size() - off, &hb, mask);
          ASSERT_EQ(a, b) << "bits " << bits << " off " << off;
          ASSERT_EQ(ha, hb) << "bits " << bits << " off " << off;
          off += a + 1;
          ++hits;
        }
      }
    }
  }
}

// A 64-byte window whose Gear hash hits `mask`. The hash after a byte depends only on the 64
// bytes ending there, so the window planted anywhere makes that position a hit.
std::vector<uint8_t> HitWindow(uint64_t mask, uint64_t seed) {
  auto pool = RandomBytes(64 << 20, seed);
  uint64_t h = 0;
  size_t off = 0;
  while (off < pool.size()) {
    size_t at = off + GearScanScalar(pool.data() + off, pool.size() - off, &h, mask);
    if (at >= 63 && at < pool.size()) return {pool.begin() + (at - 63), pool.begin() + at + 1};
    off = at + 1;
  }
  ADD_FAILURE() << "no window hits mask " << mask;
  return std::vector<uint8_t>(64);
}

// Changes bytes of `data` until a plain scan from hash 0 finds no hit in it.
void ScrubHits(std::vector<uint8_t>* data, uint64_t mask) {
  for (int fixes = 0; fixes < 100000; ++fixes) {
    uint64_t h = 0;
    size_t at = GearScanScalar(data->data(), data->size(), &h, mask);
    if (at == data->size()) return;
    (*data)[at] = static_cast<uint8_t>((*data)[at] + 1);
  }
  ADD_FAILURE() << "could not scrub hits of mask " << mask;
}

// The fast scan splits a range into blocks of 8 lanes of a few sizes (128 bytes and some larger
// multiples of it) and rescans part of a block when a later lane hits first. Plant hits right at
// and beside those edges, alone and in pairs where the later hit in the stream is met first by the
// lanes, and check the fast scan against the plain loop, hash included.
TEST(ChunkerTest, FastScanAgreesWithPlainLoopAtLaneEdges) {
  const size_t kSize = 3 * 65536 + 4096;
  std::mt19937_64 rng(12);
  for (int bits : {8, 13, 18, 22}) {
    const uint64_t mask = SpreadMask(bits);
    const std::vector<uint8_t> window = HitWindow(mask, 100 + static_cast<uint64_t>(bits));
    ASSERT_EQ(window.size(), 64u);
    std::vector<uint8_t> clean = RandomBytes(kSize, 200 + static_cast<uint64_t>(bits));
    ScrubHits(&clean, mask);
    auto plant = [&](std::vector<uint8_t>* d, size_t at) {
      std::copy(window.begin(), window.end(), d->begin() + static_cast<long>(at - 63));
    };
    auto check = [&](const std::vector<uint8_t>& d, size_t n, uint64_t h0, size_t want,
                     int* exact) {
      uint64_t ha = h0, hb = h0;
      size_t a = GearScan(d.data(), n, &ha, mask);
      size_t b = GearScanScalar(d.data(), n, &hb, mask);
      ASSERT_EQ(a, b) << "bits " << bits << " want " << want << " n " << n;
      ASSERT_EQ(ha, hb) << "bits " << bits << " want " << want << " n " << n;
      ASSERT_LE(b, want) << "bits " << bits << " n " << n;  // the planted hit is found
      *exact += b == want;
    };
    // One hit at or beside each edge of every lane size, the range ending at or after it.
    int cases = 0, exact = 0;
    for (size_t unit : {128, 1024, 8192, 65536}) {
      for (size_t edge = unit; edge + 128 < kSize && edge <= 16 * unit; edge += unit) {
        for (size_t at : {edge - 1, edge, edge + 1, edge + 63, edge + 64, edge + 127}) {
          std::vector<uint8_t> d = clean;
          plant(&d, at);
          // Ranges ending at the hit, just after it, at the end of the 8-lane block of `unit`
          // lanes around it (so that those lanes are the ones that meet it), and further on.
          const size_t block_end = (at / (8 * unit) + 1) * (8 * unit);
          for (size_t n : {at + 1, at + 2, block_end, at + 1 + rng() % 70000}) {
            n = std::min(n, d.size());
            for (uint64_t h0 : {uint64_t{0}, uint64_t{0xfedcba9876543210}}) {
              ASSERT_NO_FATAL_FAILURE(check(d, n, h0, at, &exact));
              ++cases;
            }
          }
        }
      }
    }
    EXPECT_GE(exact * 2, cases) << "bits " << bits << ": planted hits mostly not first";
    // Two hits: the first in the stream at a later step of its lane than the second.
    cases = exact = 0;
    for (size_t unit : {128, 1024, 8192}) {
      for (int t = 0; t < 40; ++t) {
        size_t lane1 = rng() % 7, lane2 = lane1 + 1 + rng() % (7 - lane1);
        size_t step2 = rng() % (unit / 2);
        size_t step1 = step2 + 1 + rng() % (unit - step2 - 1);
        if (t % 4 == 0) step1 = unit - 1;  // the first hit on its lane's last byte
        if (t % 4 == 1) step1 = unit - 1, step2 = unit - 2;  // ... just after the second's step
        size_t first = lane1 * unit + step1, second = lane2 * unit + step2;
        if (first < 63 || second < first + 64) continue;  // the windows must not overlap
        std::vector<uint8_t> d = clean;
        plant(&d, first);
        plant(&d, second);
        ASSERT_NO_FATAL_FAILURE(check(d, d.size(), 0, first, &exact));
        ++cases;
      }
    }
    EXPECT_GT(cases, 60) << bits;
    EXPECT_GE(exact * 2, cases) << "bits " << bits << ": planted hits mostly not first";
  }
}

TEST(ChunkerTest, SizesStayWithinBoundsAndAverageNearTarget) {
  auto data = RandomBytes(k32MiB, 1);
  for (const ChunkerParams& p : {ChunkerParams{}, ChunkerParams{2048, 8192, 65536}}) {
    auto lengths = Lengths(Ends(p, data, 1 << 20));
    ASSERT_GE(lengths.size(), 2u);
    uint64_t total = 0;
    for (size_t i = 0; i < lengths.size(); ++i) {
      total += lengths[i];
      if (i + 1 < lengths.size()) {
        EXPECT_GE(lengths[i], p.min_size) << i;
        EXPECT_LE(lengths[i], p.max_size) << i;
      }
    }
    EXPECT_EQ(total, data.size());
    // Expected mean with min = avg/2 and normalization level 2 (see the header): about 1.19 avg.
    double mean = static_cast<double>(data.size()) / static_cast<double>(lengths.size());
    double ratio = mean / static_cast<double>(p.avg_size);
    EXPECT_GT(ratio, 0.95) << p.avg_size;
    EXPECT_LT(ratio, 1.45) << p.avg_size;
  }
  // With many chunks the estimate is tight.
  ChunkerParams small{2048, 8192, 65536};
  double mean =
      static_cast<double>(data.size()) / static_cast<double>(Ends(small, data, 1 << 20).size());
  EXPECT_NEAR(mean / 8192.0, 1.19, 0.05);
}

TEST(ChunkerTest, BoundariesDoNotDependOnHowTheStreamIsFed) {
  auto data = RandomBytes(k32MiB, 2);
  ChunkerParams p;
  auto ref = Ends(p, data, 1 << 20);
  EXPECT_EQ(Ends(p, data, 1), ref);
  EXPECT_EQ(Ends(p, data, 4096 + 17), ref);
  EXPECT_EQ(Ends(p, data, data.size()), ref);
  ChunkerParams small{256, 1024, 8192};
  std::vector<uint8_t> part(data.begin(), data.begin() + (4 << 20));
  auto ref_small = Ends(small, part, 1 << 20);
  EXPECT_GT(ref_small.size(), 3000u);
  EXPECT_EQ(Ends(small, part, 1), ref_small);
  EXPECT_EQ(Ends(small, part, 333), ref_small);
}

// FeedToCut stops right after each cut; fed that way, and with every other chunk skipped by
// its known length, the chunker cuts exactly where Feed does.
TEST(ChunkerTest, FeedToCutAndSkipChunkCutWhereFeedDoes) {
  ChunkerParams small{256, 1024, 8192};
  auto data = RandomBytes(2 << 20, 5);
  auto ref = Ends(small, data, 1 << 20);
  ASSERT_GT(ref.size(), 1000u);
  for (size_t piece : {size_t{1000}, size_t{100000}, data.size()}) {
    Chunker c(small);
    std::vector<uint64_t> ends;
    size_t skipped = 0;
    for (size_t off = 0; off < data.size();) {
      std::vector<uint64_t> one;
      if (c.at_chunk_start() && ends.size() % 2 == 1 && ends.size() < ref.size() - 1) {
        const uint64_t length = ref[ends.size()] - off;  // the next chunk, known from `ref`
        c.SkipChunk(length, &one);
        ASSERT_EQ(one.size(), 1u);
        off += length;
        ++skipped;
      } else {
        size_t n = std::min(piece, data.size() - off);
        size_t used = c.FeedToCut(data.data() + off, n, &one);
        ASSERT_GT(used, 0u);
        ASSERT_LE(used, n);
        ASSERT_LE(one.size(), 1u);
        if (!one.empty()) {
          EXPECT_EQ(one[0], off + used);  // it stopped right after the cut
        }
        off += used;
      }
      ends.insert(ends.end(), one.begin(), one.end());
    }
    c.Finish(&ends);
    EXPECT_EQ(ends, ref) << "piece " << piece;
    EXPECT_GT(skipped, ref.size() / 3);
  }
}

TEST(ChunkerTest, InsertingNearTheStartChangesOnlyTheFirstChunks) {
  auto data = RandomBytes(k32MiB, 3);
  ChunkerParams p;
  auto chunk_ids = [&](const std::vector<uint8_t>& d) {
    ChunkHasher h(p);
    std::vector<Chunk> chunks;
    h.Feed(d.data(), d.size(), &chunks);
    h.Finish(&chunks);
    std::vector<std::string> ids;
    for (const Chunk& c : chunks) ids.push_back(ToHex(c.id));
    return ids;
  };
  auto before = chunk_ids(data);
  ASSERT_GE(before.size(), 20u);
  for (size_t at : {size_t{0}, size_t{1000}, size_t{700000}}) {
    std::vector<uint8_t> edited = data;
    std::vector<uint8_t> ins = RandomBytes(100, 4 + at);
    edited.insert(edited.begin() + static_cast<long>(at), ins.begin(), ins.end());
    auto after = chunk_ids(edited);
    std::set<std::string> old(before.begin(), before.end());
    size_t changed = 0;
    for (const auto& id : after) changed += old.count(id) == 0;
    EXPECT_GE(changed, 1u) << at;
    EXPECT_LE(changed, 2u) << at;
    EXPECT_EQ(after.size(), before.size()) << at;
  }
}

TEST(ChunkerTest, HasherIdsAreTheSha256OfEachChunk) {
  auto data = RandomBytes(6 << 20, 5);
  ChunkerParams p{4096, 16384, 131072};
  ChunkHasher h(p);
  std::vector<Chunk> chunks;
  for (size_t off = 0; off < data.size(); off += 100003) {
    h.Feed(data.data() + off, std::min<size_t>(100003, data.size() - off), &chunks);
  }
  h.Finish(&chunks);
  auto ends = Ends(p, data, 1 << 20);
  ASSERT_EQ(chunks.size(), ends.size());
  uint64_t off = 0;
  for (size_t i = 0; i < chunks.size(); ++i) {
    EXPECT_EQ(chunks[i].offset, off);
    EXPECT_EQ(chunks[i].offset + chunks[i].length, ends[i]);
    EXPECT_EQ(chunks[i].id, Sha256Of(data.data() + off, chunks[i].length)) << i;
    off = ends[i];
  }
}

TEST(ChunkerTest, ChunkFileMatchesInMemoryChunking) {
  testing::TempDir dir;
  auto data = RandomBytes((9 << 20) + 12345, 6);
  std::string path = dir.Join("f");
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, data.data(), data.size()), static_cast<ssize_t>(data.size()));
  ::close(fd);
  ChunkerParams p;
  auto r = ChunkFile(path, p);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto ends = Ends(p, data, 1 << 20);
  ASSERT_EQ(r->size(), ends.size());
  for (size_t i = 0; i < ends.size(); ++i) EXPECT_EQ((*r)[i].offset + (*r)[i].length, ends[i]);

  auto empty = dir.Join("empty");
  ::close(::open(empty.c_str(), O_WRONLY | O_CREAT, 0644));
  auto e = ChunkFile(empty, p);
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(e->empty());

  auto missing = ChunkFile(dir.Join("missing"), p);
  EXPECT_EQ(missing.status().code(), Code::kNotFound);
  EXPECT_EQ(missing.status().message(),
            "cannot open " + dir.Join("missing") + ": No such file or directory");
}

// The AVX2 body of FastDigestOf (where the CPU has it) gives the portable digest, for every
// length around the vector block sizes and at unaligned starts; the digest of no bytes is
// XXH3-128's published value.
TEST(FastDigestTest, EveryBodyGivesTheSameXxh3) {
  auto data = RandomBytes((1 << 20) + 64, 3);
  for (size_t off : {size_t{0}, size_t{1}, size_t{7}, size_t{33}}) {
    for (size_t n = 0; n <= 1100; ++n) {
      ASSERT_EQ(FastDigestOf(data.data() + off, n), FastDigestPortable(data.data() + off, n))
          << "offset " << off << " length " << n;
    }
    for (size_t n : {size_t{4095}, size_t{65536}, size_t{1} << 20}) {
      ASSERT_EQ(FastDigestOf(data.data() + off, n), FastDigestPortable(data.data() + off, n));
    }
  }
  const FastDigest empty = FastDigestOf("", 0);
  uint64_t low = 0, high = 0;
  std::memcpy(&low, empty.data(), 8);
  std::memcpy(&high, empty.data() + 8, 8);
  EXPECT_EQ(low, 0x6001C324468D497Full);
  EXPECT_EQ(high, 0x99AA06D3014798D8ull);
}

TEST(ChunkIdTest, HexRoundTripAndErrors) {
  ChunkId id = Sha256Of("abc");
  EXPECT_EQ(ToHex(id), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  auto back = ParseChunkId(ToHex(id));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, id);
  EXPECT_EQ(ParseChunkId("abc").status().message(), "bad chunk id: 3 characters, want 64");
  std::string upper = ToHex(id);
  upper[5] = 'A';
  EXPECT_EQ(ParseChunkId(upper).status().message(),
            "bad chunk id: not lower-case hex at character 5");
}

}  // namespace
}  // namespace cutover
