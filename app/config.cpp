#include "app/config.h"

#include <fstream>
#include <sstream>

#include "app/settings.h"
#include "core/errors.h"

namespace stripeline {

Config default_config() { return Config{}; }

// Every key is declared once in the settings schema (app/settings.cpp),
// which reads it, converts it and runs each section's validation.
Config parse_config(const std::string& text, const std::string& origin) {
  Config c = default_config();
  c.origin = origin;
  read_settings(c, text, origin);
  return c;
}

Config load_config(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw ConfigError(path.string() + ": config file not found (expected a TOML file)");
  std::ifstream in(path);
  if (!in) throw ConfigError(path.string() + ": cannot be read");
  std::stringstream buffer;
  buffer << in.rdbuf();
  Config c = parse_config(buffer.str(), path.string());
  // A relative source path in a config is relative to the working directory,
  // as on the command line; documented in configs/replay.toml.
  return c;
}

}  // namespace stripeline
