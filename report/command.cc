#include "report/command.h"

namespace cutover {

void AddAssessCommand(CLI::App& root, CommandContext& ctx) {
  CLI::App* cmd = AddNotBuilt(root, ctx, "assess",
                              "Write the assessment report (HTML, Markdown, JSON, JUnit) of a "
                              "source and a target");
  cmd->footer(kExitCodesHelp);
}

}  // namespace cutover
