#include "probe/elf.h"

#include <cstring>

namespace cutover::probe {
namespace {

constexpr uint32_t kShtNobits = 8;
constexpr uint64_t kMaxSections = 1 << 16;



}  // namespace

const ElfSection* ElfFile::Find(std::string_view name) const {
  for (const ElfSection& s : sections) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

Result<ElfFile> ParseElf(std::string_view b) {
  if (b.size() < 4 || std::memcmp(b.data(), "\x7f" "ELF", 4) != 0) {
    return Status::InvalidArgument("not an ELF file");
  }
  if (b.size() < 64) return Status::InvalidArgument("corrupt ELF: truncated header");
  if (b[4] != 2) return Status::InvalidArgument("unsupported ELF: not 64-bit");
  if (b[5] != 1) return Status::InvalidArgument("unsupported ELF: not little-endian");
  ElfFile elf;
  elf.type = ReadUnaligned<uint16_t>(b, 16);
  elf.machine = ReadUnaligned<uint16_t>(b, 18);
  uint64_t shoff = ReadUnaligned<uint64_t>(b, 40);
  uint16_t shentsize = ReadUnaligned<uint16_t>(b, 58);
  uint64_t shnum = ReadUnaligned<uint16_t>(b, 60);
  uint64_t shstrndx = ReadUnaligned<uint16_t>(b, 62);
  if (shoff == 0) return elf;  // no section table (stripped to program headers only)
  if (shentsize < 64) return Status::InvalidArgument("corrupt ELF: section header size too small");
  if (!RangeInside(b.size(), shoff, shentsize)) {
    return Status::InvalidArgument("corrupt ELF: section table outside the file");
  }
  // Extended numbering: the real counts live in section 0.
  if (shnum == 0) shnum = ReadUnaligned<uint64_t>(b, shoff + 32);
  if (shstrndx == 0xffff) shstrndx = ReadUnaligned<uint32_t>(b, shoff + 40);
  if (shnum > kMaxSections) return Status::InvalidArgument("corrupt ELF: too many sections");
  if (!RangeInside(b.size(), shoff, shnum * shentsize)) {
    return Status::InvalidArgument("corrupt ELF: section table outside the file");
  }
  struct Raw {
    uint32_t name;
    uint32_t type;
    uint64_t offset;
    uint64_t size;
  };
  std::vector<Raw> raw;
  raw.reserve(shnum);
  for (uint64_t i = 0; i < shnum; ++i) {
    uint64_t h = shoff + i * shentsize;
    Raw r{ReadUnaligned<uint32_t>(b, h), ReadUnaligned<uint32_t>(b, h + 4), ReadUnaligned<uint64_t>(b, h + 24),
          ReadUnaligned<uint64_t>(b, h + 32)};
    if (r.type != kShtNobits && !RangeInside(b.size(), r.offset, r.size)) {
      return Status::InvalidArgument("corrupt ELF: section " + std::to_string(i) +
                                     " lies outside the file");
    }
    raw.push_back(r);
  }
  std::string_view strtab;
  if (shstrndx < shnum && raw[shstrndx].type != kShtNobits) {
    strtab = b.substr(raw[shstrndx].offset, raw[shstrndx].size);
  }
  for (const Raw& r : raw) {
    ElfSection s;
    s.type = r.type;
    s.offset = r.offset;
    s.size = r.size;
    if (r.name < strtab.size()) {
      std::string_view rest = strtab.substr(r.name);
      s.name = std::string(rest.substr(0, rest.find('\0')));
    }
    elf.sections.push_back(std::move(s));
  }
  return elf;
}

std::string_view SectionBytes(std::string_view bytes, const ElfSection& section) {
  if (section.type == kShtNobits || !RangeInside(bytes.size(), section.offset, section.size)) return {};
  return bytes.substr(section.offset, section.size);
}

}  // namespace cutover::probe
