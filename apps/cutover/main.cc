// cutover: the dispatcher. Parses the command line with CLI11, runs the selected command, and
// turns its outcome into the exit code documented in every --help.
#include <cstdio>
#include <string>

#include "canary/command.h"
#include "compat/command.h"
#include "core/cli.h"
#include "core/log.h"
#include "datasync/command.h"
#include "probe/collect.h"
#include "probe/command.h"
#include "probe/fleet.h"
#include "report/command.h"

int main(int argc, char** argv) {
  using namespace cutover;
  CommandContext ctx;
  CLI::App app{
      "cutover: tells whether a GPU workload can move between GPU environments, moves its data, "
      "and drives the traffic cutover safely.",
      "cutover"};
  app.set_version_flag("--version", std::string("cutover ") + std::string(CutoverVersion()));
  app.footer(kExitCodesHelp);
  app.require_subcommand(1);
  GlobalOptions& g = ctx.global;
  app.add_flag("--json", g.json, "Print the final result document as JSON instead of a table")
      ->configurable(false);
  app.add_option("--out", g.out, "Also write the result document to FILE")->type_name("FILE");
  app.add_flag("-q,--quiet", g.quiet, "No progress output");
  app.add_option("--progress", g.progress,
                 "Progress on stderr: auto (a bar on a terminal, periodic lines otherwise), bar, "
                 "plain, json (one event per line), none")
      ->check(CLI::IsMember({"auto", "bar", "plain", "json", "none"}));
  app.add_option("--db", g.db, "SQLite state file (default $CUTOVER_DB or "
                               "~/.local/share/cutover/cutover.db; probe collect stores only "
                               "with --db or $CUTOVER_DB)")
      ->type_name("FILE");
  app.add_option("--log-level", g.log_level, "error|warn|info|debug")
      ->check(CLI::IsMember({"error", "warn", "info", "debug"}));
  // Global options may appear after the subcommand too.
  app.fallthrough();

  AddProbeCommand(app, ctx);
  // compat's cluster suite stores each node's fingerprint; compat does not include probe, so the
  // collector and the fleet judge of the nodes are handed in here, where both are visible.
  AddCompatCommand(app, ctx,
                   {.fingerprint = []() -> Result<nlohmann::json> {
                      return FingerprintToJson(
                          probe::Collect(RealFileSystem("/"), probe::LiveOptions()));
                    },
                    .judge = probe::JudgeClusterNodes});
  AddDatasyncCommand(app, ctx);
  AddCanaryCommand(app, ctx);
  AddAssessCommand(app, ctx);
  AddNumberChecks(&app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (std::string unknown = UnknownCommandMessage(app, argc, argv); !unknown.empty()) {
      std::fprintf(stderr, "cutover: %s\n", unknown.c_str());
      return 2;
    }
    if (std::string_view name = NotBuiltCommand(app); !name.empty()) {
      std::fprintf(stderr, "cutover: '%.*s' is not built yet\n", static_cast<int>(name.size()),
                   name.data());
      return 2;
    }
    std::fprintf(stderr, "cutover: %s\n", e.what());
    std::fprintf(stderr, "Run with --help for usage.\n");
    return 2;
  }
  SetLogLevel(ParseLogLevel(g.log_level));
  if (!ctx.run) {
    std::fprintf(stderr, "cutover: no command given; run with --help for usage.\n");
    return 2;
  }
  Result<int> rc = ctx.run();
  if (!rc.ok()) {
    std::fprintf(stderr, "cutover: %s\n", rc.status().message().c_str());
    return ExitCodeFor(rc.status());
  }
  return *rc;
}
