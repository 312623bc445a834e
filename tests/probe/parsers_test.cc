#include "probe/parsers.h"

#include <gtest/gtest.h>

namespace cutover::probe {
namespace {

TEST(ParsersTest, NvidiaProcVersionProprietaryAndOpen) {
  auto p = ParseNvidiaProcVersion(
      "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.14  Thu Feb 22 01:44:30 UTC 2024\n"
      "GCC version:  gcc version 12.3.0\n");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->version, "550.54.14");
  EXPECT_EQ(p->flavor, "proprietary");
  auto o = ParseNvidiaProcVersion(
      "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.65.06  Release Build  "
      "(dvs-builder@U16)  Sun Jul 27 06:54:38 UTC 2025\n");
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->version, "580.65.06");
  EXPECT_EQ(o->flavor, "open");
}

TEST(ParsersTest, NvidiaProcVersionGarbageIsAnErrorWithTheReason) {
  EXPECT_EQ(ParseNvidiaProcVersion("").status().message(), "no NVRM version line");
  EXPECT_EQ(ParseNvidiaProcVersion("\xff\x00garbage").status().message(), "no NVRM version line");
  EXPECT_EQ(
      ParseNvidiaProcVersion("NVRM version: NVIDIA UNIX x86_64 Kernel Mod").status().message(),
      "no version number in the NVRM line");
}

TEST(ParsersTest, OsReleaseUnquotesAndSkipsJunk) {
  auto kv =
      ParseOsRelease("# c\nID=ubuntu\nVERSION_ID=\"22.04\"\nPRETTY_NAME='Ubuntu 22'\njunk\n=x\n");
  EXPECT_EQ(kv.at("ID"), "ubuntu");
  EXPECT_EQ(kv.at("VERSION_ID"), "22.04");
  EXPECT_EQ(kv.at("PRETTY_NAME"), "Ubuntu 22");
  EXPECT_EQ(kv.size(), 3u);
}

TEST(ParsersTest, CpuInfoMemInfoAndPcie) {
  CpuSummary c =
      ParseCpuInfo("processor\t: 0\nmodel name\t: X\n\nprocessor\t: 1\nmodel name\t: X\n");
  EXPECT_EQ(c.logical_cpus, 2);
  EXPECT_EQ(c.model, "X");
  EXPECT_EQ(ParseMemTotalMib("MemTotal:       24683548 kB\n"), 24105u);
  EXPECT_EQ(ParseMemTotalMib("MemTot"), std::nullopt);
  EXPECT_EQ(ParseMemTotalMib("MemTotal: lots kB"), std::nullopt);
  EXPECT_EQ(PcieGenFromSpeed("32.0 GT/s PCIe\n"), 5);
  EXPECT_EQ(PcieGenFromSpeed("8 GT/s"), 3);
  EXPECT_EQ(PcieGenFromSpeed("2.5 GT/s"), 1);
  EXPECT_EQ(PcieGenFromSpeed("Unknown"), std::nullopt);
  EXPECT_EQ(ParseInteger("16\n"), 16);
  EXPECT_EQ(ParseInteger("16x"), std::nullopt);
  EXPECT_EQ(ParseHex("0x10de\n"), 0x10deu);
  EXPECT_EQ(ParseHex("0x"), std::nullopt);
}

TEST(ParsersTest, Headers) {
  EXPECT_EQ(
      ParseCudnnHeader("#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 1\n#define CUDNN_PATCHLEVEL 0\n"
                       "#define CUDNN_VERSION (CUDNN_MAJOR * 10000)\n"),
      "9.1.0");
  EXPECT_EQ(ParseNcclHeader("#define NCCL_MAJOR 2\n#define NCCL_MINOR 21\n#define NCCL_PATCH 5\n"),
            "2.21.5");
  EXPECT_EQ(ParseCublasHeader("#define CUBLAS_VER_MAJOR 12\n#define CUBLAS_VER_MINOR 4\n"
                              "#define CUBLAS_VER_PATCH 5\n"),
            "12.4.5");
  EXPECT_EQ(ParseCudaHeader("#define CUDA_VERSION 12040\n"), "12.4");
  EXPECT_EQ(ParseCudaHeader("#define CUDA_VERSION 13000\n"), "13.0");
  EXPECT_EQ(ParseCudnnHeader("#define CUDNN_MAJOR 9\n#define CUDNN_MIN"), std::nullopt);
  EXPECT_EQ(HeaderDefine("#define CUDNN_MAJORX 3\n", "CUDNN_MAJOR"), std::nullopt);
}

TEST(ParsersTest, ToolkitVersionFiles) {
  EXPECT_EQ(ParseToolkitVersionJson(R"({"cuda": {"name": "CUDA SDK", "version": "12.4.1"}})"),
            "12.4.1");
  EXPECT_EQ(ParseToolkitVersionJson(R"({"cuda": {"name": "CUDA SDK", "vers)"), std::nullopt);
  EXPECT_EQ(ParseToolkitVersionJson(R"({"cuda": {"version": 12}})"), std::nullopt);
  EXPECT_EQ(ParseToolkitVersionTxt("CUDA Version 11.0.228\n"), "11.0.228");
  EXPECT_EQ(ParseToolkitVersionTxt("CUDA Version \n"), std::nullopt);
  EXPECT_EQ(ParseNvccVersion("Cuda compilation tools, release 12.4, V12.4.131\nBuild cuda_12.4"),
            "12.4.131");
}

TEST(ParsersTest, LibraryAndWheelNames) {
  auto l = ParseLibraryFileName("libcudnn_ops.so.9.1.0");
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->stem, "cudnn_ops");
  EXPECT_EQ(l->version, "9.1.0");
  EXPECT_EQ(ParseLibraryFileName("libnccl-net.so")->stem, "nccl-net");
  EXPECT_EQ(ParseLibraryFileName("libnccl-net.so")->version, "");
  EXPECT_FALSE(ParseLibraryFileName("libcudnn.so.9.1.0.bak").has_value());
  EXPECT_FALSE(ParseLibraryFileName("cudnn.so").has_value());
  auto d = ParseDistInfoName("nvidia_cudnn_cu12-9.1.0.70.dist-info");
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->name, "nvidia_cudnn_cu12");
  EXPECT_EQ(d->version, "9.1.0.70");
  EXPECT_FALSE(ParseDistInfoName("torch.dist-info").has_value());
}

TEST(ParsersTest, EggInfoNames) {
  auto debian = ParseEggInfoName("torch-1.13.0a0+gitunknown.egg-info");
  ASSERT_TRUE(debian.has_value());
  EXPECT_EQ(debian->name, "torch");
  EXPECT_EQ(debian->version, "1.13.0a0+gitunknown");
  auto tagged = ParseEggInfoName("Jax_Lib-0.4.30-py3.11.egg-info");
  ASSERT_TRUE(tagged.has_value());
  EXPECT_EQ(tagged->name, "jax_lib");
  EXPECT_EQ(tagged->version, "0.4.30");
  EXPECT_FALSE(ParseEggInfoName("torch.egg-info").has_value());
  EXPECT_FALSE(ParseEggInfoName("torch-1.13.dist-info").has_value());
  EXPECT_FALSE(ParseDistInfoName("torch-1.13.egg-info").has_value());
}

TEST(ParsersTest, PythonMetadataAndVersionFiles) {
  PythonMetadata m = ParsePythonMetadata(
      "Metadata-Version: 2.1\nName: torch\nVersion: 2.4.0\nRequires-Dist: "
      "nvidia-cudnn-cu12==9.1.0.70; "
      "platform_system == \"Linux\"\n\nVersion: 0.0\n");
  EXPECT_EQ(m.name, "torch");
  EXPECT_EQ(m.version, "2.4.0");
  ASSERT_EQ(m.requires_dist.size(), 1u);
  EXPECT_EQ(RequirementVersion(m.requires_dist[0]), "9.1.0.70");
  EXPECT_EQ(RequirementName(m.requires_dist[0]), "nvidia_cudnn_cu12");
  EXPECT_EQ(RequirementVersion("nvidia-cudnn-cu12 (==8.9.2.26)"), "8.9.2.26");
  EXPECT_EQ(RequirementVersion("filelock"), std::nullopt);
  EXPECT_EQ(PythonStringValue("cuda: Optional[str] = '12.4'\n", "cuda"), "12.4");
  EXPECT_EQ(PythonStringValue("cuda = \"11.8\"\n", "cuda"), "11.8");
  EXPECT_EQ(PythonStringValue("hip = None\ncuda = None\n", "cuda"), std::nullopt);
  EXPECT_EQ(PythonStringValue("is_cuda = True\ncuda_x = '1'\n", "cuda"), std::nullopt);
  EXPECT_EQ(PythonStringValue("build_info = {'cuda_version': '12.2', 'cudnn_version': '8'}",
                              "cudnn_version"),
            "8");
  EXPECT_EQ(CudaFromLocalVersion("2.3.0+cu121"), "12.1");
  EXPECT_EQ(CudaFromLocalVersion("2.1.0+cu118"), "11.8");
  EXPECT_EQ(CudaFromLocalVersion("2.9.0+cu130"), "13.0");
  EXPECT_EQ(CudaFromLocalVersion("2.3.0"), std::nullopt);
}

TEST(ParsersTest, GlibcModulesDpkgAndVersions) {
  EXPECT_EQ(
      GlibcVersionFromLibc("xxGNU C Library (Debian GLIBC 2.36-9) stable release version 2.36."),
      "2.36");
  EXPECT_EQ(GlibcVersionFromLibc("GNU C Library"), std::nullopt);
  EXPECT_EQ(GlibcVersionFromFileName("libc-2.31.so"), "2.31");
  EXPECT_EQ(GlibcVersionFromFileName("libc.so.6"), std::nullopt);
  EXPECT_EQ(ParseProcModules("nvidia_peermem 16384 0 - Live 0x0\nnvidia 1 2\n"),
            (std::vector<std::string>{"nvidia_peermem", "nvidia"}));
  auto v = DpkgVersions(
      "Package: nvidia-fabricmanager-550\nStatus: install ok installed\nVersion: 550.54.14-1\n\n"
      "Package: nvidia-fabricmanager-535\nStatus: deinstall ok config-files\nVersion: 535.1-1\n",
      "nvidia-fabricmanager");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v.at("nvidia-fabricmanager-550"), "550.54.14");
  EXPECT_LT(CompareVersions("12.9", "12.10"), 0);
  EXPECT_EQ(CompareVersions("12.4", "12.4.0"), 0);
  EXPECT_EQ(VersionPrefix("12.4.1", 2), "12.4");
  EXPECT_EQ(VersionPrefix("9", 2), "9");
}

}  // namespace
}  // namespace cutover::probe
