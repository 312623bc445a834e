#include "datasync/chunker.h"

#include <bit>
#include <string>

#include <openssl/evp.h>

namespace cutover {
namespace {

std::string Num(uint64_t v) { return std::to_string(v); }

// The lanes of the fast scan. Each lane covers kLaneBytes consecutive bytes of a block; lanes
// 1..kLanes-1 first roll the 64 bytes before their start (which gives exactly the hash a
// sequential scan has there, since the hash only depends on the last 64 bytes) and then run in
// lock-step, so the CPU overlaps kLanes independent add chains instead of waiting on one.
constexpr size_t kLanes = 4;
constexpr size_t kLaneBytes = 8192;
constexpr size_t kBlockBytes = kLanes * kLaneBytes;

inline uint64_t Roll(uint64_t h, uint8_t b, const uint64_t* g) { return (h << 1) + g[b]; }

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
  size_t done = 0;
  uint64_t h[kLanes];
  h[0] = *hash;
  while (n - done >= kBlockBytes) {
    const uint8_t* p = data + done;
    for (size_t k = 1; k < kLanes; ++k) h[k] = 0;
    for (size_t i = kLaneBytes - 64; i < kLaneBytes; ++i) {
#pragma GCC unroll 8
      for (size_t k = 1; k < kLanes; ++k) h[k] = Roll(h[k], p[i + (k - 1) * kLaneBytes], g);
    }
    const uint64_t start = h[0];
    bool hit = false;
    for (size_t i = 0; i < kLaneBytes; ++i) {
      uint64_t any_zero = 0;
#pragma GCC unroll 8
      for (size_t k = 0; k < kLanes; ++k) {
        h[k] = Roll(h[k], p[i + k * kLaneBytes], g);
        any_zero |= (h[k] & mask) == 0;
      }
      if (__builtin_expect(any_zero != 0, 0)) {
        hit = true;
        break;
      }
    }
    if (hit) {
      // Some lane hit; the first hit of the block is at or before it. Rescan plainly.
      uint64_t hs = start;
      size_t idx = GearScanScalar(p, kBlockBytes, &hs, mask);
      *hash = hs;
      return done + idx;
    }
    h[0] = h[kLanes - 1];
    done += kBlockBytes;
  }
  size_t idx = GearScanScalar(data + done, n - done, &h[0], mask);
  *hash = h[0];
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
