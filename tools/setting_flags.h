#pragma once
// The flags of the settings schema (app/settings.h) on a command: each
// setting of the chosen sections that declares a flag becomes an option with
// the schema's help; given flags are read over the configuration by the same
// reader as the file's keys (same conversions, same checks, messages naming
// the flag and the key).
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "app/settings.h"

namespace stripeline::tools {

class SettingFlags {
 public:
  // Adds the flags of these sections' settings to `sub`.
  void add(CLI::App* sub, std::initializer_list<std::string_view> sections) {
    for (const SettingInfo& s : settings()) {
      bool wanted = false;
      for (auto section : sections) wanted = wanted || s.section == section;
      if (wanted) add_flag_of(sub, s);
    }
  }
  // Adds the flags of these keys of one section only (a command that takes
  // a few settings: `bench` and `calibrate` take --pixel-bits).
  void add(CLI::App* sub, std::string_view section, std::initializer_list<std::string_view> keys) {
    for (const SettingInfo& s : settings()) {
      bool wanted = false;
      for (auto key : keys) wanted = wanted || (s.section == section && s.key == key);
      if (wanted) add_flag_of(sub, s);
    }
  }
  // Was the flag of this [section] key given?
  bool given(std::string_view section, std::string_view key) const {
    for (const Entry& e : entries_)
      if (e.setting->section == section && e.setting->key == key) return e.option->count() > 0;
    return false;
  }
  // The given flags over `c`. ConfigError naming the flag and the key.
  void apply(Config& c, std::vector<GivenSetting> more = {}) const {
    std::vector<GivenSetting> given;
    for (const Entry& e : entries_)
      if (e.option->count() > 0) given.push_back(GivenSetting{e.setting, e.setting->is_bool() ? (e.on ? "true" : "false") : e.text});
    given.insert(given.end(), more.begin(), more.end());
    if (!given.empty()) apply_setting_flags(c, given);
  }

 private:
  void add_flag_of(CLI::App* sub, const SettingInfo& s) {
    if (s.flag.empty()) return;
    Entry& e = entries_.emplace_back(Entry{&s, {}, false, nullptr});
    const std::string help = s.help + (s.range.empty() ? "" : " (" + s.range + ")") + " [" + s.section + "] " + s.key;
    e.option = s.is_bool() ? sub->add_flag(s.flag, e.on, help) : sub->add_option(s.flag, e.text, help);
  }

  struct Entry {
    const SettingInfo* setting;
    std::string text;
    bool on;
    CLI::Option* option;
  };
  std::deque<Entry> entries_;  // stable addresses: CLI11 keeps pointers to text and on
};

// The schema's setting at [section] key (for a command's own flag that sets it).
inline const SettingInfo& setting_at(std::string_view section, std::string_view key) {
  for (const SettingInfo& s : settings())
    if (s.section == section && s.key == key) return s;
  throw std::logic_error("no setting [" + std::string(section) + "] " + std::string(key));
}

// The given flags of `flags` over an extraction chain (commands that time or
// fit with a chain of their own, not a configuration's).
inline ChainConfig chain_with_flags(const SettingFlags& flags, const ChainConfig& chain) {
  Config given;
  given.pipeline.chain = chain;
  flags.apply(given);
  return given.pipeline.chain;
}

}  // namespace stripeline::tools
