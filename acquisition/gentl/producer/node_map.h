#pragma once
// The register space of one module of the simulated producer and the GenICam
// XML that describes it, generated from the same table so that they can
// never disagree. Every feature is one little-endian register: 8 bytes for
// integers, enumerations, booleans, commands and floats, a fixed length for
// strings. A consumer's GenApi reads and writes them through GCReadPort /
// GCWritePort; getters and setters run the simulation.
//
// Thread-safety: none; the producer calls it under its module lock.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "acquisition/gentl/gentl_api.h"

namespace stripeline::gentl_sim {

struct Feature {
  enum class Kind { Integer, Float, Enumeration, Boolean, Command, String };
  std::string name;
  Kind kind = Kind::Integer;
  std::string category;      // pFeature of this category (created on first use)
  std::string tooltip;
  bool writable = true;
  bool readable = true;
  // Integer bounds: fixed, or the name of another Integer feature (pMin/pMax).
  std::int64_t min = 0, max = 0, inc = 1;
  std::string p_max;
  std::string p_is_locked;  // an Integer feature that, when non-zero, locks this one (GenApi pIsLocked)
  double fmin = 0, fmax = 0;
  std::string unit;
  std::vector<std::pair<std::string, std::int64_t>> entries;  // Enumeration
  std::size_t string_length = 64;                             // String
  // Chunk features are read from the buffer's chunk data, not registers.
  std::uint64_t chunk_id = 0;
  std::uint64_t chunk_offset = 0;

  // The simulation behind the register. A setter returns GC_ERR_SUCCESS or
  // the error the write fails with (GC_ERR_INVALID_VALUE, GC_ERR_BUSY...).
  std::function<std::int64_t()> get_int;
  std::function<GC_ERROR(std::int64_t)> set_int;
  std::function<double()> get_float;
  std::function<GC_ERROR(double)> set_float;
  std::function<std::string()> get_string;

  std::uint64_t address = 0;  // assigned by NodeMap::add
};

class NodeMap {
 public:
  // model_name: the XML's ModelName; file_name: the name in the local URL
  // (".zip" serves the XML zipped, as many cameras do).
  NodeMap(std::string vendor, std::string model_name, std::string file_name);
  void add(Feature f);
  // Builds the XML and the file region (call once, after every add()).
  void finish();

  const std::string& xml() const { return xml_; }
  // "local:<file>;<address>;<length>?SchemaVersion=1.1.0" (hex address/length).
  std::string url() const;
  const std::string& file_name() const { return file_name_; }

  GC_ERROR read(std::uint64_t address, void* buffer, std::size_t size) const;
  GC_ERROR write(std::uint64_t address, const void* buffer, std::size_t size);
  // The text of the last failed read or write (for GCGetLastError).
  const std::string& last_error() const { return last_error_; }

  static constexpr std::uint64_t kFirstRegister = 0x1000;
  static constexpr std::uint64_t kFileAddress = 0x100000;

 private:
  const Feature* find(std::uint64_t address, std::size_t size) const;
  std::string vendor_, model_, file_name_;
  std::vector<Feature> features_;
  std::uint64_t next_address_ = kFirstRegister;
  std::string xml_;
  std::vector<std::uint8_t> file_;  // what the URL points at: the XML, or the zip holding it
  mutable std::string last_error_;
};

}  // namespace stripeline::gentl_sim
