#pragma once
// Reading TOML text the way every stripeline file does (calibration and
// target files here, the configuration in app/): a parse error becomes one
// line "<origin>:<line>:<column>: <what>" as the caller's error type, and a
// file that cannot be read is named with what was expected.
#include <toml++/toml.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/errors.h"

namespace stripeline {

template <class Error>
toml::table parse_toml(const std::string& text, const std::string& origin) {
  try {
    return toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    std::ostringstream msg;
    msg << origin << ":" << e.source().begin.line << ":" << e.source().begin.column << ": " << e.description();
    throw Error(msg.str());
  }
}

// The whole file; InputError "<path>: cannot open the <what> (expected a readable TOML file)".
inline std::string read_toml_file(const std::filesystem::path& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path.string() + ": cannot open the " + what + " (expected a readable TOML file)");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace stripeline
