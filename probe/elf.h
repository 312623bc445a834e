// A bounds-checked reader for the section table of ELF64 little-endian files (executables,
// shared libraries, relocatable objects), enough to find named sections such as .nv_fatbin.
// It reads the bytes it is given and nothing else; every offset is checked before use.
//
// Thread-safety: the functions are pure; an ElfFile is immutable once built.
#ifndef CUTOVER_PROBE_ELF_H_
#define CUTOVER_PROBE_ELF_H_

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace cutover::probe {

// A little-endian T at byte `off` of `b` (unaligned). REQUIRES: RangeInside(b.size(), off, sizeof(T)).
template <typename T>
T ReadUnaligned(std::string_view b, uint64_t off) {
  T v;
  std::memcpy(&v, b.data() + off, sizeof(T));
  return v;
}

// True when [off, off + len) lies inside a buffer of `size` bytes (no overflow).
inline bool RangeInside(uint64_t size, uint64_t off, uint64_t len) {
  return off <= size && len <= size - off;
}

struct ElfSection {
  std::string name;
  uint32_t type = 0;      // SHT_*
  uint64_t offset = 0;    // in the file; checked to lie inside it unless type is SHT_NOBITS
  uint64_t size = 0;
};

struct ElfFile {
  uint16_t type = 0;      // ET_EXEC = 2, ET_DYN = 3, ET_REL = 1
  uint16_t machine = 0;   // EM_X86_64 = 62, EM_AARCH64 = 183
  std::vector<ElfSection> sections;

  // The first section named `name`, or nullptr.
  const ElfSection* Find(std::string_view name) const;
};

// Parses the ELF header and section headers of `bytes`. InvalidArgument "not an ELF file" when
// the magic is absent, "unsupported ELF: ..." for 32-bit or big-endian files, and
// "corrupt ELF: ..." (naming the field) when a header or table lies outside the file.
Result<ElfFile> ParseElf(std::string_view bytes);

// The bytes of `section` inside `bytes` (the buffer ParseElf read); empty for SHT_NOBITS.
std::string_view SectionBytes(std::string_view bytes, const ElfSection& section);

}  // namespace cutover::probe

#endif  // CUTOVER_PROBE_ELF_H_
