#include "probe/elf.h"

#include <cstring>

#include "probe/parsers.h"

namespace cutover::probe {
namespace {

constexpr uint32_t kShtNobits = 8;
constexpr uint32_t kShtGnuVerneed = 0x6ffffffe;
constexpr uint64_t kMaxSections = 1 << 16;
// Larger string tables are not read (no real .shstrtab or .dynstr comes near it).
constexpr uint64_t kMaxStringTable = 64 << 20;
constexpr uint64_t kVerneedSize = 16;
constexpr uint64_t kVernauxSize = 16;

// The NUL-terminated string at `off` of `strtab`; nullopt when `off` lies outside it.
std::optional<std::string> StringAt(std::string_view strtab, uint64_t off) {
  if (off >= strtab.size()) return std::nullopt;
  std::string_view rest = strtab.substr(off);
  return std::string(rest.substr(0, rest.find('\0')));
}

Status CorruptElf(const std::string& what) {
  return Status::InvalidArgument("corrupt ELF: " + what);
}

}  // namespace

const ElfSection* ElfFile::Find(std::string_view name) const {
  for (const ElfSection& s : sections) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

Result<ElfFile> ParseElf(std::string_view b) {
  BufferSource source(b);
  return ParseElf(source);
}

Result<ElfFile> ParseElf(ByteSource& src) {
  const uint64_t size = src.size();
  if (size < 4) return Status::InvalidArgument("not an ELF file");
  CUTOVER_ASSIGN_OR_RETURN(std::string_view magic, src.Read(0, 4));
  if (std::memcmp(magic.data(),
                  "\x7f"
                  "ELF",
                  4) != 0) {
    return Status::InvalidArgument("not an ELF file");
  }
  if (size < 64) return CorruptElf("truncated header");
  CUTOVER_ASSIGN_OR_RETURN(std::string_view hv, src.Read(0, 64));
  const std::string h(hv);
  if (h[4] != 2) return Status::InvalidArgument("unsupported ELF: not 64-bit");
  if (h[5] != 1) return Status::InvalidArgument("unsupported ELF: not little-endian");
  ElfFile elf;
  elf.type = ReadUnaligned<uint16_t>(h, 16);
  elf.machine = ReadUnaligned<uint16_t>(h, 18);
  uint64_t shoff = ReadUnaligned<uint64_t>(h, 40);
  uint16_t shentsize = ReadUnaligned<uint16_t>(h, 58);
  uint64_t shnum = ReadUnaligned<uint16_t>(h, 60);
  uint64_t shstrndx = ReadUnaligned<uint16_t>(h, 62);
  if (shoff == 0) return elf;  // no section table (stripped to program headers only)
  if (shentsize < 64) return CorruptElf("section header size too small");
  if (!RangeInside(size, shoff, shentsize)) return CorruptElf("section table outside the file");
  // Extended numbering: the real counts live in section 0.
  if (shnum == 0 || shstrndx == 0xffff) {
    CUTOVER_ASSIGN_OR_RETURN(std::string_view s0v, src.Read(shoff, 64));
    const std::string s0(s0v);
    if (shnum == 0) shnum = ReadUnaligned<uint64_t>(s0, 32);
    if (shstrndx == 0xffff) shstrndx = ReadUnaligned<uint32_t>(s0, 40);
  }
  if (shnum > kMaxSections) return CorruptElf("too many sections");
  if (!RangeInside(size, shoff, shnum * shentsize)) {
    return CorruptElf("section table outside the file");
  }
  CUTOVER_ASSIGN_OR_RETURN(std::string_view tv, src.Read(shoff, shnum * shentsize));
  const std::string table(tv);
  struct Raw {
    uint32_t name;
    uint32_t type;
    uint64_t offset;
    uint64_t size;
    uint32_t link;
    uint32_t info;
  };
  std::vector<Raw> raw;
  raw.reserve(shnum);
  for (uint64_t i = 0; i < shnum; ++i) {
    uint64_t o = i * shentsize;
    Raw r{ReadUnaligned<uint32_t>(table, o),      ReadUnaligned<uint32_t>(table, o + 4),
          ReadUnaligned<uint64_t>(table, o + 24), ReadUnaligned<uint64_t>(table, o + 32),
          ReadUnaligned<uint32_t>(table, o + 40), ReadUnaligned<uint32_t>(table, o + 44)};
    if (r.type != kShtNobits && !RangeInside(size, r.offset, r.size)) {
      return CorruptElf("section " + std::to_string(i) + " lies outside the file");
    }
    raw.push_back(r);
  }
  std::string strtab;
  if (shstrndx < shnum && raw[shstrndx].type != kShtNobits) {
    uint64_t n = std::min(raw[shstrndx].size, kMaxStringTable);
    CUTOVER_ASSIGN_OR_RETURN(std::string_view sv, src.Read(raw[shstrndx].offset, n));
    strtab = std::string(sv);
  }
  for (const Raw& r : raw) {
    ElfSection s;
    s.type = r.type;
    s.offset = r.offset;
    s.size = r.size;
    s.link = r.link;
    s.info = r.info;
    s.name = StringAt(strtab, r.name).value_or("");
    elf.sections.push_back(std::move(s));
  }
  return elf;
}

std::string_view SectionBytes(std::string_view bytes, const ElfSection& section) {
  if (section.type == kShtNobits || !RangeInside(bytes.size(), section.offset, section.size)) return {};
  return bytes.substr(section.offset, section.size);
}

Result<std::vector<ElfVersionNeed>> ParseVersionNeeds(std::string_view b, uint32_t count,
                                                      std::string_view strtab) {
  std::vector<ElfVersionNeed> out;
  // Offsets only grow (vn_next and vna_next are unsigned, 0 ends a list), so every walk ends.
  uint64_t off = 0;
  for (uint32_t i = 0; i < count; ++i) {
    if (!RangeInside(b.size(), off, kVerneedSize)) {
      return CorruptElf("version need " + std::to_string(i) + " outside .gnu.version_r");
    }
    uint16_t cnt = ReadUnaligned<uint16_t>(b, off + 2);
    uint32_t file = ReadUnaligned<uint32_t>(b, off + 4);
    uint32_t aux = ReadUnaligned<uint32_t>(b, off + 8);
    uint32_t next = ReadUnaligned<uint32_t>(b, off + 12);
    ElfVersionNeed need;
    std::optional<std::string> name = StringAt(strtab, file);
    if (!name) return CorruptElf("version need file name outside the string table");
    need.file = std::move(*name);
    uint64_t a = off + aux;
    for (uint16_t j = 0; j < cnt; ++j) {
      if (!RangeInside(b.size(), a, kVernauxSize)) {
        return CorruptElf("version need aux entry outside .gnu.version_r");
      }
      std::optional<std::string> v = StringAt(strtab, ReadUnaligned<uint32_t>(b, a + 8));
      if (!v) return CorruptElf("version name outside the string table");
      need.versions.push_back(std::move(*v));
      uint32_t anext = ReadUnaligned<uint32_t>(b, a + 12);
      if (anext == 0) break;
      a += anext;
    }
    out.push_back(std::move(need));
    if (next == 0) break;
    off += next;
  }
  return out;
}

std::optional<std::string> HighestGlibcVersion(const std::vector<ElfVersionNeed>& needs) {
  std::optional<std::string> best;
  for (const ElfVersionNeed& n : needs) {
    for (const std::string& v : n.versions) {
      if (v.rfind("GLIBC_", 0) != 0) continue;
      std::string num = v.substr(6);
      if (!IsDottedVersion(num)) continue;
      if (!best || CompareVersions(num, *best) > 0) best = num;
    }
  }
  return best;
}

Result<std::vector<ElfVersionNeed>> ReadVersionNeeds(ByteSource& src, const ElfFile& elf) {
  const ElfSection* vr = nullptr;
  for (const ElfSection& s : elf.sections) {
    if (s.type == kShtGnuVerneed) {
      vr = &s;
      break;
    }
  }
  if (vr == nullptr) return std::vector<ElfVersionNeed>{};
  if (vr->link >= elf.sections.size()) return CorruptElf(".gnu.version_r links no string table");
  const ElfSection& str = elf.sections[vr->link];
  if (vr->size > kMaxStringTable || str.type == kShtNobits) {
    return CorruptElf(".gnu.version_r or its string table unreadable");
  }
  CUTOVER_ASSIGN_OR_RETURN(std::string_view vv, src.Read(vr->offset, vr->size));
  const std::string verneed(vv);
  CUTOVER_ASSIGN_OR_RETURN(std::string_view sv,
                           src.Read(str.offset, std::min(str.size, kMaxStringTable)));
  return ParseVersionNeeds(verneed, vr->info, sv);
}

}  // namespace cutover::probe
