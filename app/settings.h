#pragma once
// Every setting of a configuration, declared once (app/settings.cpp): its
// TOML key, its command-line flag where it has one, its type, range, default
// (the built-in one), a one-line help and the header that owns (holds and
// validates) it. The TOML reader (parse_config), the flags of the commands
// that process (tools/setting_flags.h), `--help`, `stripeline settings` and
// the reference table docs/settings.md all come from that one table.
//
// Adding a setting: one line in app/settings.cpp's table of its section
// (plus its field in the owner's struct and that struct's validate()); then
// regenerate the reference: `stripeline settings --markdown > docs/settings.md`
// (Config.SettingsReferenceIsUpToDate fails until then).
#include <string>
#include <utility>
#include <vector>

#include "app/config.h"

namespace stripeline {

// One setting, as the reference shows it.
struct SettingInfo {
  std::string section;  // "processing", "camera.gentl"
  std::string key;      // "threshold"
  std::string flag;     // CLI11 option names, "-t,--threshold"; "" = none
  std::string type;     // "integer", "number", "boolean", "string", "array of strings", "array of integers"
  std::string range;    // what is accepted ("1..65535", "auto, cpu or cuda"); "" = any value of the type
  std::string default_text;  // the built-in default as TOML ("40", "\"auto\"")
  std::string help;
  std::string owner;    // the header whose struct holds it and whose validate() checks it
  // With its flag: also sets this key of the section to `implies.second`,
  // unless that key's own flag is given (--dark-frame implies ambient = "dark-frame").
  std::pair<std::string, std::string> implies;
  bool is_bool() const { return type == "boolean"; }
  std::string toml_name() const { return section + "." + key; }
};

// The schema, sections in file order, keys in section order.
const std::vector<SettingInfo>& settings();

// Reads a TOML text over `config` (parse_config): the same reader as for
// flags. Unknown sections, unknown keys and bad values are ConfigErrors
// naming `origin` and the key.
void read_settings(Config& config, const std::string& toml_text, const std::string& origin);

// Flags given on a command line, each with its text as typed (booleans:
// "true"/"false"): converted to the setting's type and read like a file's
// keys. ConfigError naming the flag and the key.
struct GivenSetting {
  const SettingInfo* setting;
  std::string text;
};
void apply_setting_flags(Config& config, const std::vector<GivenSetting>& given);

// 16 hex digits (FNV-1a 64) of every [source], [processing], [output] and
// [calibration] value of `config` but the output file names: two runs with
// the same digest process frames alike. The parts of a replay record it
// (`replay --frames`, core/metadata.h "frame_range"); `stripeline join`
// refuses parts whose digests differ.
std::string settings_digest(const Config& config);

// Every setting of `config` as "section.key = value" lines, [[head]]'s own
// keys included: two configurations with the same text configure alike (the
// daemon of several heads restarts on SIGHUP only the heads whose text changed).
std::string settings_values(const Config& config);

// The reference: docs/settings.md (Markdown) and `stripeline settings` (text).
std::string settings_markdown();
std::string settings_text();

}  // namespace stripeline
