#include "datasync/command.h"

#include <cstdio>
#include <memory>

#include "datasync/pull.h"
#include "datasync/push.h"
#include "datasync/store.h"

namespace cutover {
namespace {

struct PushArgs {
  std::string src;
  std::string store;
  std::string name;
  uint64_t min = ChunkerParams{}.min_size;
  uint64_t avg = ChunkerParams{}.avg_size;
  uint64_t max = ChunkerParams{}.max_size;
};

struct PullArgs {
  std::string store;
  std::string name;
  std::string dest;
};

Result<int> RunPush(const GlobalOptions& g, const PushArgs& a) {
  CUTOVER_ASSIGN_OR_RETURN(ChunkerParams params, ChunkerParams::Make(a.min, a.avg, a.max));
  CUTOVER_ASSIGN_OR_RETURN(std::unique_ptr<Store> store, OpenStore(a.store));
  CUTOVER_ASSIGN_OR_RETURN(PushResult r, Push(a.src, *store, PushOptions{a.name, params}));
  nlohmann::json doc = {{"schema", "cutover.datasync-push/1"},
                        {"snapshot", a.name},
                        {"store", store->Url()},
                        {"files", r.files},
                        {"dirs", r.dirs},
                        {"symlinks", r.symlinks},
                        {"bytes", r.bytes},
                        {"chunks", r.chunks},
                        {"uploaded_objects", r.uploaded_objects},
                        {"uploaded_bytes", r.uploaded_bytes},
                        {"skipped", r.skipped}};
  std::string table = "pushed snapshot " + a.name + " to " + store->Url() + ": " +
                      std::to_string(r.files) + " files, " + std::to_string(r.dirs) + " dirs, " +
                      std::to_string(r.symlinks) + " symlinks, " + std::to_string(r.bytes) +
                      " bytes; uploaded " + std::to_string(r.uploaded_objects) + " objects (" +
                      std::to_string(r.uploaded_bytes) + " bytes)\n";
  for (const std::string& s : r.skipped) table += "skipped " + s + "\n";
  CUTOVER_RETURN_IF_ERROR(EmitResult(g, doc, table));
  return 0;
}

Result<int> RunPull(const GlobalOptions& g, const PullArgs& a) {
  CUTOVER_ASSIGN_OR_RETURN(std::unique_ptr<Store> store, OpenStore(a.store));
  auto r = Pull(*store, a.name, a.dest);
  if (!r.ok() && r.status().code() == Code::kCorruption) {
    // Corrupt data in the store is a finding about the store (exit 1), not bad input.
    std::fprintf(stderr, "cutover: %s\n", r.status().message().c_str());
    return 1;
  }
  if (!r.ok()) return r.status();
  nlohmann::json doc = {{"schema", "cutover.datasync-pull/1"},
                        {"snapshot", a.name},
                        {"store", store->Url()},
                        {"dest", a.dest},
                        {"files", r->files},
                        {"dirs", r->dirs},
                        {"symlinks", r->symlinks},
                        {"bytes", r->bytes},
                        {"downloaded_bytes", r->downloaded_bytes}};
  std::string table = "pulled snapshot " + a.name + " into " + a.dest + ": " +
                      std::to_string(r->files) + " files, " + std::to_string(r->dirs) + " dirs, " +
                      std::to_string(r->symlinks) + " symlinks, " + std::to_string(r->bytes) +
                      " bytes\n";
  CUTOVER_RETURN_IF_ERROR(EmitResult(g, doc, table));
  return 0;
}

}  // namespace

void AddDatasyncCommand(CLI::App& root, CommandContext& ctx) {
  CLI::App* cmd = root.add_subcommand(
      "datasync", "Move datasets in content-defined chunks to and from dumb stores");
  cmd->require_subcommand(1);
  cmd->footer(kExitCodesHelp);

  auto push = std::make_shared<PushArgs>();
  CLI::App* p = cmd->add_subcommand("push", "Upload a directory as a snapshot (file:// stores)");
  p->add_option("SRC_DIR", push->src, "Directory to push")->required();
  p->add_option("STORE", push->store, "Store URL: file:///path")->required();
  p->add_option("--name", push->name, "Snapshot name")->required();
  p->add_option("--chunk-min", push->min, "Minimum chunk size in bytes (a new store only)");
  p->add_option("--chunk-avg", push->avg, "Average chunk size in bytes, a power of two");
  p->add_option("--chunk-max", push->max, "Maximum chunk size in bytes");
  SetCommand(p, ctx, [&ctx, push]() { return RunPush(ctx.global, *push); });

  auto pull = std::make_shared<PullArgs>();
  CLI::App* l = cmd->add_subcommand("pull", "Restore a snapshot (file:// stores)");
  l->add_option("STORE", pull->store, "Store URL: file:///path")->required();
  l->add_option("--name", pull->name, "Snapshot name")->required();
  l->add_option("DEST_DIR", pull->dest, "Directory to restore into")->required();
  SetCommand(l, ctx, [&ctx, pull]() { return RunPull(ctx.global, *pull); });

  AddNotBuilt(*cmd, ctx, "verify", "Verify a snapshot");
  AddNotBuilt(*cmd, ctx, "plan", "Plan a push");
  AddNotBuilt(*cmd, ctx, "ls", "List snapshots");
  AddNotBuilt(*cmd, ctx, "gc", "Remove unreferenced chunks");
  AddNotBuilt(*cmd, ctx, "check", "Check a store's permissions and speed");
  AddNotBuilt(*cmd, ctx, "history", "List past transfers");
  AddNotBuilt(*cmd, ctx, "merge", "Publish shard parts as one snapshot");
}

}  // namespace cutover
