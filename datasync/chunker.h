// FastCDC content-defined chunking for datasync.
//
// The chunker cuts a byte stream where a Gear rolling hash of the last 64 bytes matches a mask,
// so that inserting or deleting bytes moves only the cut points near the edit (FastCDC, Xia et
// al., USENIX ATC'16). It uses the paper's three techniques:
//   - cut-point skipping: no cut is looked for before min_size bytes;
//   - spread masks: the mask's one bits are spread over bits 16..63 of the 64-bit hash, so every
//     tested bit depends on a window of at least 17 bytes (bit 63 on all 64);
//   - normalized chunking, level 2: chunk lengths below avg_size are tested with a mask of
//     log2(avg)+2 bits (harder), lengths from avg_size on with log2(avg)-2 bits (easier), which
//     narrows the size distribution around avg_size. A chunk is cut at max_size regardless.
// One deliberate detail: hashing starts 64 bytes before min_size, so the hash tested at every
// candidate cut is a pure function of the 64 bytes before it. That makes cut points independent
// of how the stream is fed and lets the scan run several independent lanes at once (see
// chunker.cc); the cut points are those of a plain byte-at-a-time loop.
//
// The Gear table and the masks are part of the store format: a store's config records the
// chunker parameters, and changing the table would silently break dedup against old stores.
// GearTable() documents how the table is generated; tests pin its checksum.
//
// Thread-safety: ChunkerParams and GearTable() are immutable and safe to share. A Chunker is a
// stateful stream: one thread at a time.
#ifndef CUTOVER_DATASYNC_CHUNKER_H_
#define CUTOVER_DATASYNC_CHUNKER_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/status.h"

namespace cutover {

// Bump when the Gear table, the masks or the cut rule change: it is recorded in a store's config.
inline constexpr int kChunkerVersion = 1;

// Sizes of chunks in bytes. Validated by Make(); the defaults are valid.
struct ChunkerParams {
  uint64_t min_size = 512 * 1024;
  uint64_t avg_size = 1024 * 1024;
  uint64_t max_size = 8 * 1024 * 1024;

  // Checks 64 <= min < avg < max <= 1 GiB and avg a power of two (of at least 256 bytes).
  // InvalidArgument with a message naming the offending value otherwise.
  static Result<ChunkerParams> Make(uint64_t min_size, uint64_t avg_size, uint64_t max_size);
  Status Validate() const;

  // The two normalized masks (level 2) for this avg_size. REQUIRES: Validate().ok()
  uint64_t SmallMask() const;  // log2(avg)+2 one bits: lengths below avg_size
  uint64_t LargeMask() const;  // log2(avg)-2 one bits: lengths from avg_size on

  bool operator==(const ChunkerParams&) const = default;
};

inline constexpr uint64_t kMinChunkMinSize = 64;
inline constexpr uint64_t kMaxChunkMaxSize = uint64_t{1} << 30;

// A mask of `bits` one bits spread evenly over bits 16..63: bit positions 63 - floor(i*48/bits)
// for i in [0, bits). REQUIRES: 1 <= bits <= 48.
uint64_t SpreadMask(int bits);

// The 256 Gear values. Entry i is the first 8 bytes, read big-endian, of
// SHA-256("cutover/datasync/gear/v1" followed by the single byte i). Computed once.
const std::array<uint64_t, 256>& GearTable();

// A streaming chunker: feed buffers of any size, get the stream offsets where chunks end.
// The boundaries depend only on the bytes, never on how they were split into Feed calls.
class Chunker {
 public:
  // REQUIRES: params.Validate().ok()
  explicit Chunker(const ChunkerParams& params);

  // Consumes data[0, n) and appends to *ends the stream offset (one past the last byte) of every
  // chunk that ends inside it, in increasing order.
  void Feed(const uint8_t* data, size_t n, std::vector<uint64_t>* ends);

  // Like Feed, but stops right after the first cut: returns the bytes consumed (n when no chunk
  // ends inside data[0, n)).
  size_t FeedToCut(const uint8_t* data, size_t n, std::vector<uint64_t>* ends);

  // True between chunks: no byte of the next chunk consumed yet.
  bool at_chunk_start() const { return pos_ == 0; }

  // Consumes a whole chunk of `length` bytes without scanning it, and appends its end to *ends.
  // The caller knows where it ends: its bytes equal those of a chunk this chunker cut before
  // (at a chunk start), and cut points depend only on the bytes since the chunk's start. The
  // exception is a chunk that ended at the end of its stream, not at a cut: it may be skipped
  // only where it ends this stream too. REQUIRES: at_chunk_start(), 0 < length <= max_size.
  void SkipChunk(uint64_t length, std::vector<uint64_t>* ends);

  // Ends the stream: appends the end of the last, partial chunk if it has any bytes, and resets
  // the chunker for a new stream.
  void Finish(std::vector<uint64_t>* ends);

  // Bytes consumed so far in this stream.
  uint64_t offset() const { return offset_; }

 private:
  void StartChunk();

  ChunkerParams params_;
  uint64_t mask_s_;
  uint64_t mask_l_;
  uint64_t offset_ = 0;  // stream bytes consumed
  uint64_t pos_ = 0;     // bytes consumed in the current chunk
  uint64_t hash_ = 0;    // Gear hash of the current chunk's bytes from min_size - 64 on
};

// Scans data[0, n) with the Gear hash continuing from *hash, and returns the index of the first
// byte after which (hash & mask) == 0, or n when there is none; *hash is the hash after the last
// byte consumed (the hit, or data[n-1]). Exposed for tests and benchmarks.
size_t GearScan(const uint8_t* data, size_t n, uint64_t* hash, uint64_t mask);
// The plain byte-at-a-time loop GearScan must agree with.
size_t GearScanScalar(const uint8_t* data, size_t n, uint64_t* hash, uint64_t mask);

}  // namespace cutover

#endif  // CUTOVER_DATASYNC_CHUNKER_H_
