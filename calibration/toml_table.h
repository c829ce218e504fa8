#pragma once
// Reading and writing the keys of stripeline's TOML files (calibration files,
// head transforms): exact doubles, quoted strings, and a table reader that
// names every key it complains about ("<origin>: <table>.<key>: <problem>")
// and reports keys nobody read as unknown.
#include <toml++/toml.h>

#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/errors.h"

namespace stripeline::toml_table {

// A double as TOML text that reads back to the same bits ("1.0", never "1").
inline std::string exact(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  std::string s(buf);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

// A TOML basic string (quotes, backslashes and control characters escaped).
inline std::string quoted(const std::string& text) {
  std::string s = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      s += '\\';
      s += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      s += buf;
    } else {
      s += static_cast<char>(c);
    }
  }
  return s + "\"";
}

inline std::string shown(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// One TOML table's keys, read with their full name for messages; any key not
// read is reported as unknown by finish().
class Table {
 public:
  Table(const toml::table* t, std::string name, std::string origin) : t_(t), name_(std::move(name)), origin_(std::move(origin)) {}
  bool present() const { return t_ != nullptr; }
  bool has(const char* key) const { return t_ && t_->get(key); }

  [[noreturn]] void fail(const std::string& key, const std::string& problem) const {
    throw InputError(origin_ + ": " + name_ + "." + key + ": " + problem);
  }
  const toml::node* node(const char* key, bool required) {
    used_.insert(key);
    const toml::node* n = t_ ? t_->get(key) : nullptr;
    if (!n && required) fail(key, "missing");
    return n;
  }
  std::string string(const char* key, bool required, const std::string& fallback = "") {
    const toml::node* n = node(key, required);
    if (!n) return fallback;
    auto v = n->value<std::string>();
    if (!v) fail(key, "expected a string");
    return *v;
  }
  double number(const char* key, bool required, double fallback = 0.0) {
    const toml::node* n = node(key, required);
    if (!n) return fallback;
    auto v = n->value<double>();
    if (!v) fail(key, "expected a number");
    if (!std::isfinite(*v)) fail(key, shown(*v) + " (expected a finite number)");
    return *v;
  }
  std::int64_t integer(const char* key, bool required, std::int64_t fallback = 0) {
    const toml::node* n = node(key, required);
    if (!n) return fallback;
    if (!n->is_integer()) fail(key, "expected an integer");  // before value<>(): it casts any float, undefined beyond int64
    return n->as_integer()->get();
  }
  std::vector<double> numbers(const char* key, bool required, std::size_t count) {
    const toml::node* n = node(key, required);
    if (!n) return {};
    const toml::array* a = n->as_array();
    if (!a || a->size() != count) fail(key, "expected an array of " + std::to_string(count) + " numbers");
    std::vector<double> out;
    for (const auto& e : *a) {
      auto v = e.value<double>();
      if (!v || !std::isfinite(*v)) fail(key, "expected an array of " + std::to_string(count) + " finite numbers");
      out.push_back(*v);
    }
    return out;
  }
  void finish() const {
    if (!t_) return;
    for (const auto& [k, v] : *t_)
      if (!used_.count(std::string(k.str()))) fail(std::string(k.str()), "unknown key");
  }

 private:
  const toml::table* t_;
  std::string name_, origin_;
  std::set<std::string> used_;
};

}  // namespace stripeline::toml_table
