#include "probe/command.h"

#include <sys/stat.h>

#include <climits>
#include <cstdlib>
#include <memory>

#include "core/file_system.h"
#include "core/fingerprint.h"
#include "probe/collect.h"

namespace cutover {
namespace {

struct CollectFlags {
  std::string root = "/";
  std::string format = "table";
};

void AddCollect(CLI::App& probe, CommandContext& ctx) {
  auto flags = std::make_shared<CollectFlags>();
  CLI::App* sub = probe.add_subcommand(
      "collect",
      "Fingerprint this host (NVML, CUDA driver, /proc, /sys, libraries) or, with --root, an "
      "image or a mounted root (files only)");
  sub->add_option("--root", flags->root,
                  "Read this directory as the root of the host (an unpacked image, a chroot, a "
                  "fixture); files only, no live queries")
      ->type_name("DIR");
  sub->add_option("--format", flags->format, "table (default) or json")
      ->check(CLI::IsMember({"table", "json"}));
  SetCommand(sub, ctx, [flags, &ctx]() -> Result<int> {
    std::string root = flags->root.empty() ? "/" : flags->root;
    bool live = root == "/";
    if (!live) {
      char buf[PATH_MAX];
      struct stat st;
      if (::realpath(root.c_str(), buf) == nullptr || ::stat(buf, &st) != 0 ||
          !S_ISDIR(st.st_mode)) {
        return Status::InvalidArgument("--root " + root + ": not a directory");
      }
      root = buf;
      live = root == "/";
    }
    probe::CollectOptions options;
    if (live) options = probe::LiveOptions();
    RealFileSystem fs(root);
    Fingerprint fp = probe::Collect(fs, std::move(options));
    GlobalOptions g = ctx.global;
    if (flags->format == "json") g.json = true;
    nlohmann::json doc = FingerprintToJson(fp);
    CUTOVER_RETURN_IF_ERROR(EmitResult(g, doc, probe::RenderTable(fp)));
    return 0;
  });
}

}  // namespace

void AddProbeCommand(CLI::App& root, CommandContext& ctx) {
  CLI::App* cmd = root.add_subcommand(
      "probe", "Fingerprint the driver, CUDA and library stacks and GPUs of a host or an image");
  cmd->require_subcommand(1);
  cmd->footer(kExitCodesHelp);
  AddCollect(*cmd, ctx);
  AddNotBuilt(*cmd, ctx, "diff", "Diff two fingerprints into blockers and warnings");
  AddNotBuilt(*cmd, ctx, "fleet", "Check a fleet of fingerprints for consistency");
  AddNotBuilt(*cmd, ctx, "health", "Judge each GPU's health");
  AddNotBuilt(*cmd, ctx, "check-binary", "Check a binary's embedded GPU code against a target");
  AddNotBuilt(*cmd, ctx, "check", "Check a fingerprint against a policy");
}

}  // namespace cutover
