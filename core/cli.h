// The command-line layer shared by every tool: global options, the exit-code text every --help
// shows, and the way a subcommand hands its work to the dispatcher in apps/cutover.
//
// A tool registers its subcommands with Add<Tool>Command(CLI::App&, CommandContext&). When CLI11
// selects a subcommand, its callback stores the work in `ctx.run`; main() runs it after parsing and
// turns the outcome into the exit code: the int it returns (0 ok, 1 findings) or, for a failed
// Status, ExitCodeFor(status) with a one-line error on stderr.
//
// Thread-safety: used from the main thread only.
#ifndef CUTOVER_CORE_CLI_H_
#define CUTOVER_CORE_CLI_H_

#include <functional>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "core/status.h"

namespace cutover {

// Options every command accepts (set on the root app, inherited by subcommands).
struct GlobalOptions {
  bool json = false;           // --json: print the final result document instead of a table
  std::string out;             // --out FILE: also write the result document to FILE (atomically)
  bool quiet = false;          // --quiet: no progress, only the result
  std::string progress;        // --progress=json: progress events on stderr
  std::string db;              // --db FILE (or CUTOVER_DB): the SQLite state file
  std::string log_level = "warn";  // --log-level
};

// What a command returns: its exit code (0 or 1), or a Status that maps to 2 or 3.
using CommandFn = std::function<Result<int>()>;

struct CommandContext {
  GlobalOptions global;
  CommandFn run;  // set by the selected subcommand's callback
};

// The exit-code table appended to every --help.
extern const char kExitCodesHelp[];

// The global options, listed in every subcommand's --help (they are accepted after the
// subcommand too).
extern const char kGlobalOptionsHelp[];

// When parsing `argv` failed on a word where `root` or one of its subcommands expected a
// subcommand: "unknown command 'psuh' (did you mean 'push'?)", the suggestion only when a
// command's name is within two edits of the word (or starts with it). Otherwise "".
std::string UnknownCommandMessage(const CLI::App& root, int argc, const char* const* argv);

// A check for an integer option in [lo, hi] whose error names the type expected: CLI11 prefixes
// the flag, so `--reps abc` reads "--reps: expected an integer in 1..1000, got 'abc'".
CLI::Validator IntRange(int64_t lo, int64_t hi);

// Gives every numeric option under `app` (type INT, UINT or FLOAT, and no check of its own) a
// check whose error names the flag and the type expected, so `--timeout-s abc` reads
// "--timeout-s: expected a number, got 'abc'" and not CLI11's conversion message. Its
// description is empty, so --help is unchanged. Call once, after every command is added.
void AddNumberChecks(CLI::App* app);

// The edit distance (insertions, deletions, substitutions) between `a` and `b`.
size_t EditDistance(std::string_view a, std::string_view b);

// The help group of commands not built yet.
extern const char kNotBuiltGroup[];

// When a parse failed inside a command that is not built yet, its name (so main() can say that
// instead of complaining about its arguments); otherwise empty.
std::string_view NotBuiltCommand(const CLI::App& root);

// The version string printed by --version.
std::string_view CutoverVersion();

// Makes `sub` run `fn` when selected, and gives it the exit-code footer.
void SetCommand(CLI::App* sub, CommandContext& ctx, CommandFn fn);

// Adds a subcommand that exists in the design but is not built yet: it says so and exits 2.
CLI::App* AddNotBuilt(CLI::App& parent, CommandContext& ctx, const std::string& name,
                      const std::string& description);

// Writes a command's final result: with --json the document on stdout, otherwise `table` (text
// for people); with --out the document also goes to that file (temp name, fsync, rename).
Status EmitResult(const GlobalOptions& g, const nlohmann::json& doc, std::string_view table);

// The SQLite state file: --db, else $CUTOVER_DB, else ~/.local/share/cutover/cutover.db.
std::string ResolveDbPath(const GlobalOptions& g);

}  // namespace cutover

#endif  // CUTOVER_CORE_CLI_H_
