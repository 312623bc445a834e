#include "compat/command.h"

#include <cstdio>
#include <memory>
#include <string>

#include "compat/backend_loader.h"

namespace cutover {
namespace {

constexpr char kRunHelp[] =
    "Run a suite and write a record. Built so far: --backend cuda loads the CUDA backend plugin "
    "(libcutover_compat_cuda.so next to this binary, in ../lib/cutover/, or $CUTOVER_CUDA_PLUGIN), "
    "checks every device with a kernel, prints the devices and library versions, then exits 2 "
    "because running suites is not built yet; with no usable driver or device it exits 3 with "
    "the reason. --backend cpu is not built yet (exit 2).";

struct RunOptions {
  std::string backend = "cuda";
};

std::string FormatDevice(const BackendDevice& d) {
  char mem[32];
  std::snprintf(mem, sizeof(mem), "%.1f GiB",
                static_cast<double>(d.total_memory) / (1024.0 * 1024.0 * 1024.0));
  return "  device " + std::to_string(d.ordinal) + ": " + d.name + ", compute capability " +
         std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor) + ", " + mem + ", " +
         std::to_string(d.sm_count) + " SMs, PCI " +
         (d.pci_bus_id.empty() ? std::string("unknown") : d.pci_bus_id) + "\n";
}

Result<int> RunCuda() {
  CUTOVER_ASSIGN_OR_RETURN(LoadedBackend cuda, LoadCudaBackend(LoaderOptions{}));
  CUTOVER_RETURN_IF_ERROR(cuda.Init().WithContext("CUDA backend"));
  CUTOVER_ASSIGN_OR_RETURN(BackendLibraryVersions versions, cuda.LibraryVersions());
  std::string out = "CUDA backend: " + cuda.path() + "\n";
  out += "  build: " + cuda.build_info() + "\n";
  out += "  libraries: " + versions.ToString() + "\n";
  for (int i = 0; i < cuda.DeviceCount(); ++i) {
    CUTOVER_ASSIGN_OR_RETURN(BackendDevice d, cuda.Device(i));
    out += FormatDevice(d);
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
  return Status::Unimplemented("running compat suites is not built yet");
}

}  // namespace

void AddCompatCommand(CLI::App& root, CommandContext& ctx) {
  CLI::App* cmd = root.add_subcommand(
      "compat", "Run framework kernels on source and target and compare numerics and speed");
  cmd->require_subcommand(1);
  cmd->footer(kExitCodesHelp);
  AddNotBuilt(*cmd, ctx, "list", "List the ops, dtypes and suites");

  auto opts = std::make_shared<RunOptions>();
  CLI::App* run = cmd->add_subcommand("run", kRunHelp);
  run->add_option("--backend", opts->backend, "cuda (default) or cpu")
      ->check(CLI::IsMember({"cuda", "cpu"}));
  SetCommand(run, ctx, [opts]() -> Result<int> {
    if (opts->backend == "cpu") {
      return Status::Unimplemented("cutover compat run --backend cpu is not built yet");
    }
    return RunCuda();
  });

  AddNotBuilt(*cmd, ctx, "compare", "Compare two records");
}

}  // namespace cutover
