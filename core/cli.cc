#include "core/cli.h"

#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "core/file_util.h"

#ifndef CUTOVER_VERSION
#define CUTOVER_VERSION "0.0.0"
#endif

namespace cutover {

const char kExitCodesHelp[] =
    "\nExit codes:\n"
    "  0  ok\n"
    "  1  the command did its job and found a problem (blocker, regression, unhealthy GPU,\n"
    "     failed policy, no-go, verify failure, corrupt chunk, rollback)\n"
    "  2  usage or bad input (bad arguments, malformed or schema-invalid input files,\n"
    "     unsafe manifest entries, a command not built yet)\n"
    "  3  environment (a server unreachable, a required library absent, an I/O error)\n";

const char kNotBuiltGroup[] = "Not built yet";

std::string_view NotBuiltCommand(const CLI::App& root) {
  const CLI::App* app = &root;
  for (;;) {
    auto subs = app->get_subcommands();
    if (subs.empty()) break;
    app = subs.front();
  }
  if (app != &root && app->get_group() == kNotBuiltGroup) return app->get_name();
  return {};
}

std::string_view CutoverVersion() { return CUTOVER_VERSION; }

void SetCommand(CLI::App* sub, CommandContext& ctx, CommandFn fn) {
  sub->footer(kExitCodesHelp);
  sub->callback([&ctx, fn = std::move(fn)] { ctx.run = fn; });
}

CLI::App* AddNotBuilt(CLI::App& parent, CommandContext& ctx, const std::string& name,
                      const std::string& description) {
  CLI::App* sub = parent.add_subcommand(name, description);
  sub->group(kNotBuiltGroup);
  sub->allow_extras();
  std::string full = parent.get_name() + " " + name;
  SetCommand(sub, ctx, [full]() -> Result<int> {
    return Status::Unimplemented("cutover " + full + " is not built yet");
  });
  return sub;
}

Status EmitResult(const GlobalOptions& g, const nlohmann::json& doc, std::string_view table) {
  if (!g.out.empty()) {
    CUTOVER_RETURN_IF_ERROR(WriteFileAtomic(g.out, doc.dump(2) + "\n"));
  }
  if (g.json) {
    std::string text = doc.dump(2);
    text += '\n';
    std::fwrite(text.data(), 1, text.size(), stdout);
  } else if (!table.empty()) {
    std::fwrite(table.data(), 1, table.size(), stdout);
    if (table.back() != '\n') std::fputc('\n', stdout);
  }
  std::fflush(stdout);
  return Status::Ok();
}

std::string ResolveDbPath(const GlobalOptions& g) {
  if (!g.db.empty()) return g.db;
  const char* env = std::getenv("CUTOVER_DB");
  if (env != nullptr && *env != '\0') return env;
  return ExpandHome("~/.local/share/cutover/cutover.db");
}

}  // namespace cutover
