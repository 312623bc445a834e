// The ELF reader's .gnu.version_r parsing (libraries[].glibc_needed): hand-built sections with
// their error paths, and real files cross-checked against binutils' readelf.
#include "probe/elf.h"

#include <gtest/gtest.h>

#include "core/file_system.h"
#include "core/file_util.h"
#include "probe/deep.h"
#include "tests/harness/test_env.h"

namespace cutover::probe {
namespace {

void Put16(std::string* b, size_t off, uint16_t v) { std::memcpy(b->data() + off, &v, 2); }
void Put32(std::string* b, size_t off, uint32_t v) { std::memcpy(b->data() + off, &v, 4); }

// A .dynstr and a .gnu.version_r with two Verneed entries:
//   libc.so.6: GLIBC_2.2.5, GLIBC_2.34, GLIBC_PRIVATE;  libm.so.6: GLIBC_2.29
struct Sections {
  std::string strtab;
  std::string verneed;
};
Sections TwoNeeds() {
  Sections s;
  static const char kStrtab[] =
      "\0libc.so.6\0GLIBC_2.2.5\0GLIBC_2.34\0GLIBC_PRIVATE\0libm.so.6\0GLIBC_2.29";
  s.strtab = std::string(kStrtab, sizeof(kStrtab));
  auto at = [&](const char* name) { return static_cast<uint32_t>(s.strtab.find(name)); };
  s.verneed.assign(16 + 3 * 16 + 16 + 16, '\0');
  // Verneed 0 at 0: version 1, 3 aux entries at +16, next at +64.
  Put16(&s.verneed, 0, 1);
  Put16(&s.verneed, 2, 3);
  Put32(&s.verneed, 4, at("libc.so.6"));
  Put32(&s.verneed, 8, 16);
  Put32(&s.verneed, 12, 64);
  const char* names[] = {"GLIBC_2.2.5", "GLIBC_2.34", "GLIBC_PRIVATE"};
  for (int i = 0; i < 3; ++i) {
    size_t a = 16 + 16 * i;
    Put32(&s.verneed, a + 8, at(names[i]));
    Put32(&s.verneed, a + 12, i < 2 ? 16 : 0);
  }
  // Verneed 1 at 64: one aux at +16, the last entry.
  Put16(&s.verneed, 64, 1);
  Put16(&s.verneed, 66, 1);
  Put32(&s.verneed, 68, at("libm.so.6"));
  Put32(&s.verneed, 72, 16);
  Put32(&s.verneed, 76, 0);
  Put32(&s.verneed, 80 + 8, at("GLIBC_2.29"));
  return s;
}

TEST(ElfTest, VersionNeedsAndTheHighestGlibc) {
  Sections s = TwoNeeds();
  auto needs = ParseVersionNeeds(s.verneed, 2, s.strtab);
  ASSERT_TRUE(needs.ok()) << needs.status().ToString();
  ASSERT_EQ(needs->size(), 2u);
  EXPECT_EQ((*needs)[0].file, "libc.so.6");
  EXPECT_EQ((*needs)[0].versions,
            (std::vector<std::string>{"GLIBC_2.2.5", "GLIBC_2.34", "GLIBC_PRIVATE"}));
  EXPECT_EQ((*needs)[1].file, "libm.so.6");
  EXPECT_EQ(HighestGlibcVersion(*needs), "2.34") << "2.34 > 2.29 > 2.2.5 as versions, not text";
  EXPECT_EQ(HighestGlibcVersion({{"libstdc++.so.6", {"GLIBCXX_3.4.30", "CXXABI_1.3"}}}),
            std::nullopt);
}

TEST(ElfTest, CorruptVersionNeedsAreErrorsNamingWhat) {
  Sections s = TwoNeeds();
  EXPECT_EQ(ParseVersionNeeds(s.verneed.substr(0, 40), 2, s.strtab).status().message(),
            "corrupt ELF: version need aux entry outside .gnu.version_r");
  EXPECT_EQ(ParseVersionNeeds(s.verneed, 3, s.strtab).ok(), true)
      << "a count above the chain's length stops at its end (vn_next 0)";
  EXPECT_EQ(ParseVersionNeeds(s.verneed, 2, s.strtab.substr(0, 5)).status().message(),
            "corrupt ELF: version name outside the string table");
  std::string far = s.verneed;
  Put32(&far, 76, 0xffffffc0);  // entry 1's next points far past the section
  EXPECT_EQ(ParseVersionNeeds(far, 5, s.strtab).status().message(),
            "corrupt ELF: version need 2 outside .gnu.version_r");
  EXPECT_EQ(ParseVersionNeeds("", 1, s.strtab).status().message(),
            "corrupt ELF: version need 0 outside .gnu.version_r");
}

// The highest GLIBC_ version readelf -V lists for `path`, or "" when readelf is absent.
std::string ReadelfHighestGlibc(const std::string& path) {
  std::string out;
  int rc = testing::RunShell("readelf -V --wide '" + path +
                                 "' | grep -o 'Name: GLIBC_[0-9.]*' | sed 's/Name: GLIBC_//' | "
                                 "sort -uV | tail -1",
                             &out);
  if (rc != 0) return "";
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

TEST(ElfTest, RealFilesAgreeWithReadelf) {
  std::vector<std::string> files = {testing::SourceDir() +
                                    "/tests/fixtures/binaries/libscale-sm80-ptx90.so"};
  for (const char* p :
       {"/usr/local/cuda-13.0/lib64/libcudart.so.13", "/usr/local/cuda-13.0/lib64/libnccl.so.2",
        "/lib/x86_64-linux-gnu/libstdc++.so.6"}) {
    if (RealFileSystem("/").Exists(p)) files.push_back(p);
  }
  RealFileSystem fs("/");
  for (const std::string& f : files) {
    std::string want = ReadelfHighestGlibc(f);
    if (want.empty()) GTEST_SKIP() << "readelf (binutils) is not installed";
    Result<ElfFacts> facts = ReadElfFacts(fs, f, /*archs=*/false);
    ASSERT_TRUE(facts.ok()) << facts.status().ToString();
    EXPECT_EQ(facts->glibc_needed, want) << f;
  }
}

TEST(ElfTest, PiecewiseReadsMatchTheWholeFileParse) {
  const std::string path = testing::SourceDir() + "/tests/fixtures/binaries/libscale-sm80-ptx90.so";
  Result<std::string> bytes = ReadFile(path);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  Result<ElfFile> whole = ParseElf(*bytes);
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  RealFileSystem fs("/");
  FileSource src(fs, path, bytes->size());
  Result<ElfFile> pieces = ParseElf(src);
  ASSERT_TRUE(pieces.ok()) << pieces.status().ToString();
  ASSERT_EQ(pieces->sections.size(), whole->sections.size());
  for (size_t i = 0; i < whole->sections.size(); ++i) {
    EXPECT_EQ(pieces->sections[i].name, whole->sections[i].name);
    EXPECT_EQ(pieces->sections[i].offset, whole->sections[i].offset);
    EXPECT_EQ(pieces->sections[i].link, whole->sections[i].link);
  }
  Result<ElfFacts> facts = ReadElfFacts(fs, path, /*archs=*/true);
  ASSERT_TRUE(facts.ok()) << facts.status().ToString();
  EXPECT_EQ(facts->cuda_archs, (std::vector<std::string>{"compute_90", "sm_80"}));
  EXPECT_EQ(facts->ptx_isa, "9.0");
  EXPECT_EQ(facts->glibc_needed, "2.2.5");

  FakeFileSystem fake;
  fake.AddFile("/lib/libfoo.so", "not an elf");
  EXPECT_EQ(ReadElfFacts(fake, "/lib/libfoo.so", false).status().message(),
            "/lib/libfoo.so: not an ELF file");
  fake.AddFile("/lib/libtrunc.so", bytes->substr(0, 200));
  EXPECT_EQ(ReadElfFacts(fake, "/lib/libtrunc.so", false).status().message(),
            "/lib/libtrunc.so: corrupt ELF: section table outside the file");
}

}  // namespace
}  // namespace cutover::probe
