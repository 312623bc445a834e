#include "probe/fatbin.h"

#include <cstring>

#include "probe/elf.h"

namespace cutover::probe {
namespace {

constexpr size_t kContainerHeaderSize = 16;
constexpr size_t kMinEntryHeaderSize = 64;



Status Corrupt(const std::string& what, uint64_t off) {
  return Status::InvalidArgument("corrupt fatbin: " + what + " at offset " + std::to_string(off));
}

}  // namespace

std::string FatbinEntry::ArchName() const {
  std::string name = (kind == FatbinKind::kPtx ? "compute_" : "sm_") + std::to_string(arch);
  if (variant == ArchVariant::kArchSpecific) name += 'a';
  if (variant == ArchVariant::kFamily) name += 'f';
  return name;
}

Result<std::vector<FatbinEntry>> ParseFatbin(std::string_view b) {
  BufferSource source(b);
  return ParseFatbin(source, 0, b.size());
}

Result<std::vector<FatbinEntry>> ParseFatbin(ByteSource& src, uint64_t base, uint64_t size) {
  if (!RangeInside(src.size(), base, size)) return Corrupt("section outside the file", 0);
  std::vector<FatbinEntry> entries;
  uint64_t pos = 0;
  while (pos < size) {
    // Containers are 8-byte aligned; the gaps (and the section's tail) are zero.
    if (size - pos < kContainerHeaderSize) {
      CUTOVER_ASSIGN_OR_RETURN(std::string_view tail, src.Read(base + pos, size - pos));
      for (char c : tail) {
        if (c != 0) return Corrupt("truncated container header", pos);
      }
      break;
    }
    CUTOVER_ASSIGN_OR_RETURN(std::string_view hv, src.Read(base + pos, kContainerHeaderSize));
    const std::string h(hv);
    uint32_t magic = ReadUnaligned<uint32_t>(h, 0);
    if (magic == 0) {
      pos += 8;
      continue;
    }
    if (magic != kFatbinMagic) return Corrupt("bad magic", pos);
    uint16_t header_size = ReadUnaligned<uint16_t>(h, 6);
    uint64_t body_size = ReadUnaligned<uint64_t>(h, 8);
    if (header_size < kContainerHeaderSize) return Corrupt("container header too small", pos);
    if (!RangeInside(size, pos, header_size) || !RangeInside(size, pos + header_size, body_size)) {
      return Corrupt("container runs past the end", pos);
    }
    uint64_t e = pos + header_size;
    uint64_t end = e + body_size;
    while (e < end) {
      if (end - e < kMinEntryHeaderSize) return Corrupt("truncated entry header", e);
      CUTOVER_ASSIGN_OR_RETURN(std::string_view ev, src.Read(base + e, kMinEntryHeaderSize));
      const std::string eh(ev);
      uint16_t kind = ReadUnaligned<uint16_t>(eh, 0);
      uint32_t entry_header = ReadUnaligned<uint32_t>(eh, 4);
      uint64_t payload = ReadUnaligned<uint64_t>(eh, 8);
      if (kind != 1 && kind != 2) return Corrupt("unknown entry kind " + std::to_string(kind), e);
      if (entry_header < kMinEntryHeaderSize || !RangeInside(end, e, entry_header) ||
          !RangeInside(end, e + entry_header, payload)) {
        return Corrupt("entry runs past its container", e);
      }
      FatbinEntry entry;
      entry.kind = static_cast<FatbinKind>(kind);
      entry.arch = ReadUnaligned<uint32_t>(eh, 28);
      entry.flags = ReadUnaligned<uint64_t>(eh, 40);
      entry.payload_size = payload;
      entry.compressed =
          (entry.flags & (kFatbinFlagCompressedLz4 | kFatbinFlagCompressedZstd)) != 0;
      if (entry.flags & kFatbinFlagArchSpecific) {
        entry.variant = ArchVariant::kArchSpecific;
      } else if (entry.flags & kFatbinFlagFamily) {
        entry.variant = ArchVariant::kFamily;
      }
      if (entry.kind == FatbinKind::kPtx) {
        entry.ptx_minor = ReadUnaligned<uint16_t>(eh, 24);
        entry.ptx_major = ReadUnaligned<uint16_t>(eh, 26);
      }
      if (entry.arch == 0 || entry.arch > 10000) {
        return Corrupt("bad architecture " + std::to_string(entry.arch), e);
      }
      entries.push_back(entry);
      e += entry_header + payload;
    }
    pos = end;
  }
  return entries;
}

}  // namespace cutover::probe
