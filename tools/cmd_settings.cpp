// `stripeline settings [--markdown]`: every setting of a configuration, its
// flag, type, range, default and owner, from the schema (app/settings.h).
// docs/settings.md is `stripeline settings --markdown`.
#include <cstdio>
#include <memory>

#include "app/settings.h"
#include "tools/commands.h"

namespace stripeline::tools {

Subcommand add_settings(CLI::App& app) {
  auto* sub = app.add_subcommand("settings", "List every configuration key and its flag, type, range and default (docs/settings.md)");
  auto markdown = std::make_shared<bool>(false);
  sub->add_flag("--markdown", *markdown, "The reference table of docs/settings.md");
  return {sub, [markdown] {
            const std::string text = *markdown ? settings_markdown() : settings_text();
            std::fwrite(text.data(), 1, text.size(), stdout);
            return 0;
          }};
}

}  // namespace stripeline::tools
