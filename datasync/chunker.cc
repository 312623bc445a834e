#include "datasync/chunker.h"

#include <bit>
#include <string>

#include <openssl/evp.h>

namespace cutover {
namespace {

std::string Num(uint64_t v) { return std::to_string(v); }

// The lanes of the fast scan. A block of kLanes * L bytes is split into kLanes lanes of L
// consecutive bytes; lanes 1..kLanes-1 first roll the 64 bytes before their start (which gives
// exactly the hash a sequential scan has there, since the hash only depends on the last 64 bytes)
// and then all lanes run in lock-step, so the CPU overlaps kLanes independent add chains instead
// of waiting on one. L is a compile-time constant so that one base register addresses every lane
// and the lane hashes stay in registers. Large ranges use kLaneBytes; what is left (the end of a
// scan range, or the part of a block before a hit) uses the smaller lane sizes, so that only the
// last few hundred bytes of a range go through the plain loop. Eight lanes are as many as x86-64
// keeps in registers next to the pointer, the table and the mask; they beat four by about 8%.
constexpr size_t kLanes = 8;
constexpr size_t kLaneBytes = 8192;
constexpr size_t kMidLaneBytes = 1024;
constexpr size_t kSmallLaneBytes = 128;

inline uint64_t Roll(uint64_t h, uint8_t b, const uint64_t* g) { return (h << 1) + g[b]; }

// What ScanBlock found: the first lane-step whose hash hit, in lock-step order.
struct BlockHit {
  size_t lane;    // kLanes when no byte of the block hit
  size_t step;    // the hit's index inside its lane
  uint64_t hash;  // the hash after the hit byte, or after the block's last byte when none hit
};

// Scans p[0, kLanes * L) as kLanes lanes of L bytes, lane 0 continuing from hash h0. Stops at
// the first step at which some lane hits, reporting the lowest such lane; the lanes before it
// have then been tested up to and including that step.
template <size_t L>
BlockHit ScanBlock(const uint8_t* p, uint64_t h0, uint64_t mask, const uint64_t* g) {
  static_assert(L >= 64, "a lane must be long enough to hold its 64-byte warm-up");
  uint64_t h[kLanes];
  h[0] = h0;
  for (size_t k = 1; k < kLanes; ++k) h[k] = 0;
  for (size_t i = L - 64; i < L; ++i) {
#pragma GCC unroll 8
    for (size_t k = 1; k < kLanes; ++k) h[k] = Roll(h[k], p[(k - 1) * L + i], g);
  }
  for (size_t i = 0; i < L; ++i) {
#pragma GCC unroll 8
    for (size_t k = 0; k < kLanes; ++k) {
      h[k] = Roll(h[k], p[k * L + i], g);
      // One test-and-branch per lane-step: cheaper than collecting the tests in a flag.
      if (__builtin_expect((h[k] & mask) == 0, 0)) return {k, i, h[k]};
    }
  }
  return {kLanes, L, h[kLanes - 1]};
}

}  // namespace

uint64_t SpreadMask(int bits) {
  uint64_t mask = 0;
  for (int i = 0; i < bits; ++i) mask |= uint64_t{1} << (63 - (i * 48) / bits);
  return mask;
}

const std::array<uint64_t, 256>& GearTable() {
  static const std::array<uint64_t, 256> table = [] {
    std::array<uint64_t, 256> t{};
    static constexpr char kSeed[] = "cutover/datasync/gear/v1";
    for (int i = 0; i < 256; ++i) {
      unsigned char msg[sizeof kSeed];  // the seed without its NUL, then the byte i
      std::copy(kSeed, kSeed + sizeof kSeed - 1, msg);
      msg[sizeof kSeed - 1] = static_cast<unsigned char>(i);
      unsigned char md[32];
      unsigned int md_len = 0;
      EVP_Digest(msg, sizeof msg, md, &md_len, EVP_sha256(), nullptr);
      uint64_t v = 0;
      for (int k = 0; k < 8; ++k) v = (v << 8) | md[k];
      t[static_cast<size_t>(i)] = v;
    }
    return t;
  }();
  return table;
}

Result<ChunkerParams> ChunkerParams::Make(uint64_t min_size, uint64_t avg_size, uint64_t max_size) {
  ChunkerParams p;
  p.min_size = min_size;
  p.avg_size = avg_size;
  p.max_size = max_size;
  CUTOVER_RETURN_IF_ERROR(p.Validate());
  return p;
}

Status ChunkerParams::Validate() const {
  if (min_size < kMinChunkMinSize) {
    return Status::InvalidArgument("chunker: min size " + Num(min_size) + " is below " +
                                   Num(kMinChunkMinSize) + " bytes");
  }
  if (avg_size < 256 || !std::has_single_bit(avg_size)) {
    return Status::InvalidArgument("chunker: avg size " + Num(avg_size) +
                                   " is not a power of two of at least 256 bytes");
  }
  if (!(min_size < avg_size)) {
    return Status::InvalidArgument("chunker: min size " + Num(min_size) +
                                   " must be below avg size " + Num(avg_size));
  }
  if (!(avg_size < max_size)) {
    return Status::InvalidArgument("chunker: max size " + Num(max_size) +
                                   " must be above avg size " + Num(avg_size));
  }
  if (max_size > kMaxChunkMaxSize) {
    return Status::InvalidArgument("chunker: max size " + Num(max_size) + " is above " +
                                   Num(kMaxChunkMaxSize) + " bytes");
  }
  return Status::Ok();
}

uint64_t ChunkerParams::SmallMask() const { return SpreadMask(std::countr_zero(avg_size) + 2); }
uint64_t ChunkerParams::LargeMask() const { return SpreadMask(std::countr_zero(avg_size) - 2); }

size_t GearScanScalar(const uint8_t* data, size_t n, uint64_t* hash, uint64_t mask) {
  const uint64_t* g = GearTable().data();
  uint64_t h = *hash;
  for (size_t i = 0; i < n; ++i) {
    h = Roll(h, data[i], g);
    if ((h & mask) == 0) {
      *hash = h;
      return i;
    }
  }
  *hash = h;
  return n;
}

size_t GearScan(const uint8_t* data, size_t n, uint64_t* hash, uint64_t mask) {
  const uint64_t* g = GearTable().data();
  uint64_t h = *hash;
  size_t done = 0;
  for (;;) {
    const size_t left = n - done;
    const uint8_t* p = data + done;
    size_t lane_bytes;
    BlockHit r;
    if (left >= kLanes * kLaneBytes) {
      lane_bytes = kLaneBytes;
      r = ScanBlock<kLaneBytes>(p, h, mask, g);
    } else if (left >= kLanes * kMidLaneBytes) {
      lane_bytes = kMidLaneBytes;
      r = ScanBlock<kMidLaneBytes>(p, h, mask, g);
    } else if (left >= kLanes * kSmallLaneBytes) {
      lane_bytes = kSmallLaneBytes;
      r = ScanBlock<kSmallLaneBytes>(p, h, mask, g);
    } else {
      break;
    }
    if (r.lane == kLanes) {
      h = r.hash;
      done += kLanes * lane_bytes;
      continue;
    }
    const size_t at = r.lane * lane_bytes + r.step;  // the hit found, relative to p
    if (r.lane == 0 || r.step == lane_bytes - 1) {
      // Lane 0 continues the true hash from the block's start, so its first hit is the block's;
      // and a hit at a lane's last step comes after every byte of the lanes before it, all
      // tested without a hit.
      *hash = r.hash;
      return done + at;
    }
    // The block's first hit is at or before `at`: scan again from the block's start up to it.
    // That range is shorter than a block, so it goes to smaller lanes and ends.
    n = done + at + 1;
  }
  size_t idx = GearScanScalar(data + done, n - done, &h, mask);
  *hash = h;
  return done + idx;
}

Chunker::Chunker(const ChunkerParams& params)
    : params_(params), mask_s_(params.SmallMask()), mask_l_(params.LargeMask()) {}

void Chunker::StartChunk() {
  pos_ = 0;
  hash_ = 0;
}

void Chunker::Feed(const uint8_t* data, size_t n, std::vector<uint64_t>* ends) {
  while (n > 0) {
    size_t used = FeedToCut(data, n, ends);
    data += used;
    n -= used;
  }
}

size_t Chunker::FeedToCut(const uint8_t* data, size_t n, std::vector<uint64_t>* ends) {
  const size_t given = n;
  const uint64_t warm_start = params_.min_size - 64;
  while (n > 0) {
    if (pos_ < warm_start) {
      // Cut-point skipping: bytes before min_size - 64 never reach the hash.
      uint64_t skip = std::min<uint64_t>(warm_start - pos_, n);
      pos_ += skip;
      offset_ += skip;
      data += skip;
      n -= static_cast<size_t>(skip);
      continue;
    }
    if (pos_ < params_.min_size - 1) {
      // Warm-up: the 63 bytes before the first candidate cut are hashed but not tested.
      uint64_t take = std::min<uint64_t>(params_.min_size - 1 - pos_, n);
      const uint64_t* g = GearTable().data();
      for (uint64_t i = 0; i < take; ++i) hash_ = Roll(hash_, data[i], g);
      pos_ += take;
      offset_ += take;
      data += take;
      n -= static_cast<size_t>(take);
      continue;
    }
    // The next byte makes the chunk pos_+1 long, pos_+1 >= min_size.
    uint64_t mask;
    uint64_t limit;  // bytes that may be consumed under this mask
    if (pos_ + 1 < params_.avg_size) {
      mask = mask_s_;
      limit = params_.avg_size - 1 - pos_;
    } else {
      mask = mask_l_;
      limit = params_.max_size - pos_;
    }
    size_t take = static_cast<size_t>(std::min<uint64_t>(limit, n));
    size_t idx = GearScan(data, take, &hash_, mask);
    if (idx < take) {
      offset_ += idx + 1;
      ends->push_back(offset_);
      StartChunk();
      return given - n + idx + 1;
    }
    pos_ += take;
    offset_ += take;
    data += take;
    n -= take;
    if (pos_ == params_.max_size) {
      ends->push_back(offset_);
      StartChunk();
      return given - n;
    }
  }
  return given;
}

void Chunker::SkipChunk(uint64_t length, std::vector<uint64_t>* ends) {
  offset_ += length;
  ends->push_back(offset_);
}

void Chunker::Finish(std::vector<uint64_t>* ends) {
  if (pos_ > 0) ends->push_back(offset_);
  StartChunk();
  offset_ = 0;
}

}  // namespace cutover
