// probe check-binary: the fatbin reader and the verdicts on objects nvcc 13.0 built
// (tests/fixtures/binaries/make.sh), against the fingerprints of the fixture trees.
#include "probe/check_binary.h"

#include <gtest/gtest.h>

#include "core/file_system.h"
#include "core/file_util.h"
#include "probe/collect.h"
#include "tests/harness/test_env.h"

namespace cutover::probe {
namespace {

std::string Bin(const std::string& name) {
  return testing::SourceDir() + "/tests/fixtures/binaries/" + name;
}

Fingerprint Fixture(const std::string& name) {
  RealFileSystem fs(testing::SourceDir() + "/tests/fixtures/hosts/" + name);
  return Collect(fs, CollectOptions{});
}

BinaryImage Read(const std::string& name) {
  Result<BinaryImage> img = ReadBinaryFile(Bin(name));
  EXPECT_TRUE(img.ok()) << img.status().ToString();
  return img.ok() ? *img : BinaryImage{};
}

TEST(CheckBinaryTest, ReadsSassAndPtxEntries) {
  BinaryImage img = Read("sm80-ptx90.o");
  ASSERT_EQ(img.entries.size(), 2u);
  EXPECT_EQ(img.sections, std::vector<std::string>{".nv_fatbin"});
  EXPECT_EQ(img.entries[0].kind, FatbinKind::kElf);
  EXPECT_EQ(img.entries[0].ArchName(), "sm_80");
  EXPECT_EQ(img.entries[1].kind, FatbinKind::kPtx);
  EXPECT_EQ(img.entries[1].ArchName(), "compute_90");
  // nvcc 13.0 writes PTX ISA 9.0.
  EXPECT_EQ(img.entries[1].ptx_major, 9u);
  EXPECT_EQ(img.entries[1].ptx_minor, 0u);
  EXPECT_EQ(CudaForPtxIsa(9, 0), "13.0");

  BinaryImage a = Read("sm90a.o");
  ASSERT_EQ(a.entries.size(), 1u);
  EXPECT_EQ(a.entries[0].variant, ArchVariant::kArchSpecific);
  EXPECT_EQ(a.entries[0].ArchName(), "sm_90a");
}

TEST(CheckBinaryTest, ArchRules) {
  FatbinEntry sass{.kind = FatbinKind::kElf, .arch = 80};
  EXPECT_TRUE(ArchRunsOn(sass, 8, 0));
  EXPECT_TRUE(ArchRunsOn(sass, 8, 6)) << "SASS runs on a higher minor of the same major";
  EXPECT_FALSE(ArchRunsOn(sass, 9, 0)) << "SASS never runs on another major";
  EXPECT_FALSE(ArchRunsOn(sass, 7, 5));
  FatbinEntry ptx{.kind = FatbinKind::kPtx, .arch = 80};
  EXPECT_TRUE(ArchRunsOn(ptx, 9, 0)) << "PTX JITs upwards";
  EXPECT_FALSE(ArchRunsOn(ptx, 7, 0));
  FatbinEntry a{.kind = FatbinKind::kElf, .arch = 90, .variant = ArchVariant::kArchSpecific};
  EXPECT_TRUE(ArchRunsOn(a, 9, 0));
  EXPECT_FALSE(ArchRunsOn(a, 10, 0));
}

const GpuVerdict& OnlyVerdict(const CheckBinaryReport& r, size_t file) {
  static const GpuVerdict kNone;
  if (file >= r.files.size() || r.files[file].gpus.empty()) return kNone;
  return r.files[file].gpus[0];
}

TEST(CheckBinaryTest, VerdictsOnTheFixtureHosts) {
  std::vector<BinaryImage> images = {Read("sm80-ptx90.o"), Read("sm90a.o")};
  // A100 (8.0): the sm_80 SASS runs; sm_90a does not.
  CheckBinaryReport a100 = CheckBinaries(images, Fixture("a100-cuda11.8"));
  EXPECT_EQ(OnlyVerdict(a100, 0).verdict, "runs");
  EXPECT_EQ(OnlyVerdict(a100, 0).via, "sass sm_80");
  EXPECT_EQ(OnlyVerdict(a100, 1).verdict, "fails");
  EXPECT_TRUE(a100.AnyFailure());
  // H100 on a CUDA 12.4 driver: PTX ISA 9.0 needs CUDA 13.0, so compute_90 cannot JIT.
  CheckBinaryReport h100 = CheckBinaries(images, Fixture("h100-cuda12.4"));
  EXPECT_EQ(OnlyVerdict(h100, 0).verdict, "fails");
  EXPECT_NE(OnlyVerdict(h100, 0).reason.find("13.0"), std::string::npos)
      << OnlyVerdict(h100, 0).reason;
  EXPECT_EQ(OnlyVerdict(h100, 1).verdict, "runs");
  // H200 on a CUDA 13.0 driver JITs it.
  CheckBinaryReport h200 = CheckBinaries({images[0]}, Fixture("h200-cuda13.0"));
  EXPECT_EQ(OnlyVerdict(h200, 0).verdict, "runs");
  EXPECT_NE(OnlyVerdict(h200, 0).via.find("JIT"), std::string::npos);
  EXPECT_FALSE(h200.AnyFailure());
  nlohmann::json doc = CheckBinaryToJson(h200);
  EXPECT_EQ(doc["schema"], kCheckBinarySchema);
  EXPECT_TRUE(doc["ok"].get<bool>());
  // V100 (7.0): neither sm_80 SASS nor compute_90 PTX.
  EXPECT_EQ(OnlyVerdict(CheckBinaries({images[0]}, Fixture("v100-cuda11.0")), 0).verdict,
            "fails");
}

TEST(CheckBinaryTest, BadFilesAreClearErrors) {
  EXPECT_FALSE(ReadBinaryImage("x.txt", "not an ELF file").ok());
  Result<std::string> bytes = ReadFile(Bin("sm80-ptx90.o"));
  ASSERT_TRUE(bytes.ok());
  // Cut the file inside its fatbin section: an error, never a crash or a half-read.
  size_t magic = bytes->find("\x50\xed\x55\xba");
  ASSERT_NE(magic, std::string::npos);
  Result<BinaryImage> cut = ReadBinaryImage("cut.o", bytes->substr(0, magic + 40));
  EXPECT_FALSE(cut.ok());
  EXPECT_NE(cut.status().message().find("cut.o"), std::string::npos) << cut.status().ToString();
  std::string garbled = *bytes;
  garbled[magic] = 'X';
  EXPECT_FALSE(ReadBinaryImage("garbled.o", garbled).ok());
  Result<BinaryImage> missing = ReadBinaryFile(Bin("absent.o"));
  EXPECT_FALSE(missing.ok());
}

TEST(CheckBinaryTest, AnElfWithoutGpuCodeHasNoEntries) {
  Result<BinaryImage> img =
      ReadBinaryFile(testing::BinaryDir() + "/apps/cutover/cutover");
  ASSERT_TRUE(img.ok()) << img.status().ToString();
  EXPECT_FALSE(img->HasGpuCode());
  EXPECT_FALSE(CheckBinaries({*img}, Fixture("h100-cuda12.4")).AnyFailure());
}

}  // namespace
}  // namespace cutover::probe
