#include "core/cli.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <vector>

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

const char kGlobalOptionsHelp[] =
    "\nGlobal options (accepted before or after the command):\n"
    "  --json             print the result document as JSON instead of a table\n"
    "  --out FILE         also write the result document to FILE\n"
    "  -q,--quiet         no progress output\n"
    "  --progress MODE    auto, bar, plain, json or none\n"
    "  --db FILE          SQLite state file (default $CUTOVER_DB or\n"
    "                     ~/.local/share/cutover/cutover.db)\n"
    "  --log-level LEVEL  error, warn, info or debug\n"
    "A file argument of - reads standard input.\n";

const char kNotBuiltGroup[] = "Not built yet";

CLI::Validator IntRange(int64_t lo, int64_t hi) {
  const std::string range = std::to_string(lo) + ".." + std::to_string(hi);
  return CLI::Validator(
      [lo, hi, range](std::string& value) -> std::string {
        int64_t v = 0;
        size_t used = 0;
        bool parsed = false;
        try {
          v = std::stoll(value, &used, 10);
          parsed = used == value.size() && !value.empty();
        } catch (const std::exception&) {
          parsed = false;
        }
        if (!parsed) return "expected an integer in " + range + ", got '" + value + "'";
        if (v < lo || v > hi) return "must be in " + range + ", got " + value;
        return "";
      },
      "INT in " + range);
}

namespace {

// Empty when `value` is all of an integer (signed when `allow_negative`), else the error.
std::string CheckInteger(const std::string& value, bool allow_negative) {
  const char* kind = allow_negative ? "an integer" : "a non-negative integer";
  size_t used = 0;
  try {
    const long long v = std::stoll(value, &used, 10);
    if (used == value.size() && (allow_negative || v >= 0)) return "";
  } catch (const std::exception&) {
  }
  return std::string("expected ") + kind + ", got '" + value + "'";
}

std::string CheckNumber(const std::string& value) {
  size_t used = 0;
  try {
    const double v = std::stod(value, &used);
    if (used == value.size() && std::isfinite(v)) return "";
  } catch (const std::exception&) {
  }
  return "expected a number, got '" + value + "'";
}

}  // namespace

void AddNumberChecks(CLI::App* app) {
  for (CLI::Option* opt : app->get_options()) {
    const std::string type = opt->get_type_name();
    if (type == "INT") {
      opt->check(CLI::Validator([](std::string& v) { return CheckInteger(v, true); }, ""));
    } else if (type == "UINT") {
      opt->check(CLI::Validator([](std::string& v) { return CheckInteger(v, false); }, ""));
    } else if (type == "FLOAT") {
      opt->check(CLI::Validator([](std::string& v) { return CheckNumber(v); }, ""));
    }
  }
  for (CLI::App* sub : app->get_subcommands([](CLI::App*) { return true; })) {
    AddNumberChecks(sub);
  }
}

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string UnknownCommandMessage(const CLI::App& root, int argc, const char* const* argv) {
  const CLI::App* app = &root;
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word == "--") return "";
    if (word.size() > 1 && word[0] == '-') {
      // An option: skip its value when it takes one and was not given as --name=value.
      if (word.find('=') != std::string::npos) continue;
      for (const CLI::App* a = app; a != nullptr; a = a->get_parent()) {
        const CLI::Option* opt = a->get_option_no_throw(word);
        if (opt != nullptr) {
          if (opt->get_expected_min() > 0) ++i;
          break;
        }
      }
      continue;
    }
    std::vector<const CLI::App*> subs = app->get_subcommands([](const CLI::App*) { return true; });
    const CLI::App* next = nullptr;
    for (const CLI::App* s : subs) {
      if (s->check_name(word)) next = s;
    }
    if (next != nullptr) {
      app = next;
      continue;
    }
    // A word where a command was expected.
    if (subs.empty() || app->get_require_subcommand_min() == 0) return "";
    std::string best;
    size_t best_distance = 3;
    for (const CLI::App* s : subs) {
      const std::string& name = s->get_name();
      size_t d = name.rfind(word, 0) == 0 ? 1 : EditDistance(word, name);
      if (d < best_distance) {
        best_distance = d;
        best = name;
      }
    }
    return "unknown command '" + word + "'" +
           (best.empty() ? std::string(" (") + (app == &root ? "cutover" : app->get_name()) +
                               " --help lists the commands)"
                         : " (did you mean '" + best + "'?)");
  }
  return "";
}

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
  sub->footer(std::string(kGlobalOptionsHelp) + kExitCodesHelp);
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
  // Bytes that are not UTF-8 (a file name can hold any) print as U+FFFD rather than throw.
  std::string text;
  if (!g.out.empty() || g.json) {
    text = doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  if (!g.out.empty()) CUTOVER_RETURN_IF_ERROR(WriteFileAtomic(g.out, text));
  if (g.json) {
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
