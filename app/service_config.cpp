#include "app/service_config.h"

#include <toml++/toml.h>

#include <fstream>
#include <set>
#include <sstream>

#include "core/errors.h"

namespace stripeline {

namespace {
[[noreturn]] void fail(const std::string& key, const std::string& what) { throw ConfigError(key + ": " + what); }
}  // namespace

void DaemonConfig::validate() const {
  if (scan_rows < 1 || scan_rows > 10'000'000) fail("scan_rows", "must be 1..10000000 rows");
  if (!(pause >= 0)) fail("pause", "must be >= 0 seconds (0 = off)");
  if (!(idle_close >= 0)) fail("idle_close", "must be >= 0 seconds (0 = off)");
  if (!(rate >= 0)) fail("rate", "must be >= 0 frames per second (0 = as fast as the source delivers)");
  if (!(stop_timeout > 0 && stop_timeout <= 3600)) fail("stop_timeout", "must be > 0 and <= 3600 seconds");
  if (!(stall_timeout > 0)) fail("stall_timeout", "must be > 0 seconds");
  static const std::set<std::string> levels = {"trace", "debug", "info", "warn", "error"};
  if (!levels.count(log_level)) fail("log_level", "'" + log_level + "' is not known (expected trace, debug, info, warn or error)");
}

void HttpConfig::validate() const {
  if (port < 0 || port > 65535) fail("port", std::to_string(port) + " is out of range (expected 0 (ephemeral)..65535)");
  if (address.empty()) fail("address", "must not be empty (expected e.g. 127.0.0.1)");
  if (max_connections < 1 || max_connections > 65536) fail("max_connections", "must be 1..65536");
  if (!(request_timeout >= 0.05 && request_timeout <= 60)) fail("request_timeout", "must be 0.05..60 seconds");
  if (!(idle_timeout >= 0.1 && idle_timeout <= 3600)) fail("idle_timeout", "must be 0.1..3600 seconds");
  if (max_viewers < 1 || max_viewers > 1024) fail("max_viewers", std::to_string(max_viewers) + " is out of range (expected 1..1024)");
}

void MeasureConfig::validate() const {
  if (queue_parts < 1 || queue_parts > 1024) fail("queue_parts", std::to_string(queue_parts) + " is out of range (expected 1..1024)");
}

void ModbusConfig::validate() const {
  if (port < 0 || port > 65535) fail("port", std::to_string(port) + " is out of range (expected 0 (ephemeral)..65535)");
  if (address.empty()) fail("address", "must not be empty (expected e.g. 127.0.0.1)");
}

namespace {
bool sets_anything(const toml::node& n) {
  if (const auto* t = n.as_table()) {
    for (const auto& [k, v] : *t)
      if (sets_anything(v)) return true;
    return false;
  }
  if (const auto* a = n.as_array()) {
    for (const auto& v : *a)
      if (v.as_table() ? sets_anything(v) : true) return true;
    return false;
  }
  return true;  // a value
}
}  // namespace

void require_settings(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path.string() + ": cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  bool empty = false;
  try {
    empty = !sets_anything(toml::parse(text.str(), path.string()));
  } catch (const toml::parse_error&) {
    return;  // not empty; the configuration parser names the syntax error
  }
  if (empty)
    throw ConfigError(path.string() + ": the file sets nothing (" + (text.str().empty() ? "0 bytes" : "only whitespace, comments or empty tables") +
                      "): it would switch the outputs and the publisher to the built-in defaults; refused");
}

}  // namespace stripeline
