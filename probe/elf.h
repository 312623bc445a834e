// A bounds-checked reader for the section table of ELF64 little-endian files (executables,
// shared libraries, relocatable objects), enough to find named sections such as .nv_fatbin, and
// to read the symbol versions a file needs (.gnu.version_r). It reads the bytes it is given and
// nothing else; every offset is checked before use. A ByteSource lets it read a large file
// piece by piece (headers and the sections asked for only), not all at once.
//
// Thread-safety: the functions are pure; an ElfFile is immutable once built; a ByteSource is
// used by one thread at a time.
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

// Random access to the bytes of one file (or buffer).
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual uint64_t size() const = 0;
  // Exactly `len` bytes at `off`, valid until the next Read. REQUIRES: RangeInside(size(), off,
  // len). IoError when the underlying file cannot be read.
  virtual Result<std::string_view> Read(uint64_t off, uint64_t len) = 0;
};

// A ByteSource over bytes in memory (not owned; they must outlive it).
class BufferSource : public ByteSource {
 public:
  explicit BufferSource(std::string_view bytes) : bytes_(bytes) {}
  uint64_t size() const override { return bytes_.size(); }
  Result<std::string_view> Read(uint64_t off, uint64_t len) override {
    return bytes_.substr(off, len);
  }

 private:
  std::string_view bytes_;
};

struct ElfSection {
  std::string name;
  uint32_t type = 0;      // SHT_*
  uint64_t offset = 0;    // in the file; checked to lie inside it unless type is SHT_NOBITS
  uint64_t size = 0;
  uint32_t link = 0;  // sh_link: the string table of .gnu.version_r and .dynsym
  uint32_t info = 0;  // sh_info: the entry count of .gnu.version_r
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

// The same, reading only the header, the section table and the section names from `source`.
// IoError from the source is passed on.
Result<ElfFile> ParseElf(ByteSource& source);

// The bytes of `section` inside `bytes` (the buffer ParseElf read); empty for SHT_NOBITS.
std::string_view SectionBytes(std::string_view bytes, const ElfSection& section);

// One Elf64_Verneed entry of .gnu.version_r: a needed file and the versions needed of it.
struct ElfVersionNeed {
  std::string file;                   // "libc.so.6"
  std::vector<std::string> versions;  // "GLIBC_2.34", "GLIBC_2.2.5"
};

// Parses the `count` Verneed entries (sh_info of .gnu.version_r) of `verneed`, whose names live
// in `strtab` (the section sh_link names, .dynstr). InvalidArgument "corrupt ELF: ..." when an
// entry, its auxiliary list or a name lies outside its buffer.
Result<std::vector<ElfVersionNeed>> ParseVersionNeeds(std::string_view verneed, uint32_t count,
                                                      std::string_view strtab);

// The highest "GLIBC_x.y[.z]" version among `needs` as "x.y[.z]" ("2.34"); nullopt when there
// is none (GLIBC_PRIVATE and other non-numeric versions are ignored).
std::optional<std::string> HighestGlibcVersion(const std::vector<ElfVersionNeed>& needs);

// Reads .gnu.version_r (and its string table) of an ELF parsed from `source`. An ELF without
// the section yields no needs.
Result<std::vector<ElfVersionNeed>> ReadVersionNeeds(ByteSource& source, const ElfFile& elf);

}  // namespace cutover::probe

#endif  // CUTOVER_PROBE_ELF_H_
