// GPU sharing hints (driver.sharing) from what a host can see: MIG, vGPU names and the guest
// driver's daemon, MPS, the environment, and GPU Feature Discovery's labels.
#include <gtest/gtest.h>

#include "core/file_system.h"
#include "probe/collect.h"

namespace cutover::probe {
namespace {

TEST(CollectGpuTest, SharingHintsFromFilesEnvironmentAndLabels) {
  FakeFileSystem fs;
  fs.AddFile("/usr/bin/nvidia-gridd", "");
  fs.AddDir("/tmp/nvidia-mps");
  fs.AddFile("/etc/kubernetes/node-feature-discovery/features.d/gfd",
             "nvidia.com/cuda.driver.major=550\n"
             "nvidia.com/gpu.replicas=4\n"
             "nvidia.com/gpu.sharing-strategy=time-slicing\n");
  CollectOptions o;
  o.live = true;
  o.env = {{"CUDA_MPS_PIPE_DIRECTORY", "/run/mps"}, {"NVIDIA_VISIBLE_DEVICES", "all"}};
  CollectContext ctx(fs, o);
  std::vector<GpuInfo> gpus(2);
  gpus[0].name = "GRID A100-40C";
  gpus[1].mig.enabled = true;
  SharingInfo s;
  CollectSharing(ctx, gpus, &s);
  EXPECT_EQ(s.virtualization_mode, "vgpu");
  EXPECT_EQ(s.hints, (std::vector<std::string>{
                         "mig", "vgpu_profile_name", "vgpu_guest_driver:/usr/bin/nvidia-gridd",
                         "mps_pipe_dir:/tmp/nvidia-mps", "env:CUDA_MPS_PIPE_DIRECTORY=/run/mps",
                         "env:NVIDIA_VISIBLE_DEVICES=all", "gfd:gpu.replicas=4",
                         "gfd:gpu.sharing-strategy=time-slicing"}));
}

TEST(CollectGpuTest, NoSharingOnABareHostAndNvmlsModeIsKept) {
  FakeFileSystem fs;
  fs.AddFile("/etc/kubernetes/node-feature-discovery/features.d/gfd",
             "nvidia.com/gpu.replicas=1\nnvidia.com/gpu.sharing-strategy=none\n");
  CollectOptions o;
  o.env = {{"NVIDIA_VISIBLE_DEVICES", "all"}};  // not live: the environment is not this host's
  CollectContext ctx(fs, o);
  std::vector<GpuInfo> gpus(1);
  gpus[0].name = "NVIDIA H100 80GB HBM3";  // not a vGPU profile name
  gpus[0].mig.enabled = false;
  SharingInfo s;
  s.virtualization_mode = "passthrough";  // what NVML said, live
  CollectSharing(ctx, gpus, &s);
  EXPECT_EQ(s.virtualization_mode, "passthrough");
  EXPECT_TRUE(s.hints.empty()) << s.hints.front();
}

}  // namespace
}  // namespace cutover::probe
