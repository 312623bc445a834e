// A reader for NVIDIA fatbin containers (the .nv_fatbin / __nv_relfatbin sections nvcc embeds):
// one or more containers, each a 16-byte header (magic 0xBA55ED50, version, header size, body
// size) followed by entries, each with its own header naming its kind (PTX or ELF/SASS), target
// architecture, PTX ISA version and flags (64-bit, compressed, arch- or family-specific). Only
// entry headers are read; payloads (often compressed) are skipped, never decompressed.
//
// Layout learned from nvcc 13.0 builds (tests/fixtures/binaries/make.sh builds the fixtures that check it):
//   entry +0 u16 kind, +4 u32 header size, +8 u64 payload size, +16 u32 compressed size,
//   +24 u16 minor, +26 u16 major (the PTX ISA version for PTX entries), +28 u32 arch (90 = sm_90),
//   +40 u64 flags, +48 u64 uncompressed size.
//
// Thread-safety: pure functions.
#ifndef CUTOVER_PROBE_FATBIN_H_
#define CUTOVER_PROBE_FATBIN_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "probe/elf.h"

namespace cutover::probe {

inline constexpr uint32_t kFatbinMagic = 0xBA55ED50;

enum class FatbinKind { kPtx = 1, kElf = 2 };

// Entry flag bits.
inline constexpr uint64_t kFatbinFlag64Bit = 0x1;
inline constexpr uint64_t kFatbinFlagCompressedLz4 = 0x2000;   // CUDA 11.x/12.x compression
inline constexpr uint64_t kFatbinFlagCompressedZstd = 0x8000;  // CUDA 12.8+/13 compression
inline constexpr uint64_t kFatbinFlagArchSpecific = 0x100000;  // sm_90a, sm_100a
inline constexpr uint64_t kFatbinFlagFamily = 0x200000;        // sm_100f, sm_120f

enum class ArchVariant { kPlain, kArchSpecific, kFamily };

struct FatbinEntry {
  FatbinKind kind = FatbinKind::kElf;
  unsigned arch = 0;       // 90 for sm_90 / compute_90; major = arch / 10, minor = arch % 10
  ArchVariant variant = ArchVariant::kPlain;
  unsigned ptx_major = 0;  // PTX ISA version (PTX entries only)
  unsigned ptx_minor = 0;
  uint64_t flags = 0;
  bool compressed = false;
  uint64_t payload_size = 0;  // bytes stored in the container

  // "sm_90a" for SASS, "compute_90a" for PTX.
  std::string ArchName() const;
};

// Parses every container in `section` (the concatenation nvcc writes). InvalidArgument
// "corrupt fatbin: ..." (with the byte offset) on a bad magic, a header or entry that runs past
// the end, or an entry of unknown kind. Zero padding between containers is skipped.
Result<std::vector<FatbinEntry>> ParseFatbin(std::string_view section);

// The same for the `size` bytes at `base` of `source` (a section of a large file), reading the
// container and entry headers only, never the payloads.
Result<std::vector<FatbinEntry>> ParseFatbin(ByteSource& source, uint64_t base, uint64_t size);

}  // namespace cutover::probe

#endif  // CUTOVER_PROBE_FATBIN_H_
