#pragma once
// GenApi for GenTL: a GenTL port's GenICam XML, parsed and evaluated by
// Aravis' GenICam engine (ArvGc) on a small ArvDevice whose register reads
// and writes go to GCReadPort / GCWritePort. Debian ships no GenApi
// implementation (the EMVA reference one is binary-only and not packaged);
// Aravis' is maintained, packaged (libaravis-dev), already a dependency of
// the camera source, and evaluates any GenICam XML on any port: docs/cameras.md.
//
// Thread-safety: none (ArvGc is not thread-safe): one thread at a time.
#include <cstdint>
#include <memory>
#include <string>

#include "acquisition/gentl/gentl_loader.h"

typedef struct _ArvDevice ArvDevice;

namespace stripeline::gentl {

// Where a port's XML lives: "local:[///]name.xml;ADDRESS;LENGTH[?...]"
// (hexadecimal, in the port's register space), "file:///path/name.xml" or
// "http://host/name.xml"; a name ending in ".zip" holds the XML zipped.
struct GenICamUrl {
  enum class Scheme { Local, File, Http } scheme = Scheme::Local;
  std::string file_name;  // local: the name; file: the path
  std::uint64_t address = 0, length = 0;
  bool zipped = false;
};
// Throws InputError naming what is wrong.
GenICamUrl parse_genicam_url(const std::string& url);

// The XML of `port` (first URL), unzipped. Throws DeviceUnavailable.
std::string read_port_xml(const Producer& producer, PORT_HANDLE port, const std::string& what);

class PortNodeMap {
 public:
  // Reads the port's XML and builds its node map. `what` names the port in
  // messages ("camera", "grabber").
  PortNodeMap(std::shared_ptr<Producer> producer, PORT_HANDLE port, std::string what);
  ~PortNodeMap();
  PortNodeMap(const PortNodeMap&) = delete;
  PortNodeMap& operator=(const PortNodeMap&) = delete;

  // For the arv_device_*_feature_* calls.
  ArvDevice* device() const { return device_; }
  const std::string& what() const { return what_; }
  bool has(const std::string& feature) const;
  // "Name=Value" (an enumeration entry, a number, true/false; a command
  // takes no value). Throws ConfigError naming `key` when refused.
  void apply(const std::string& assignment, const std::string& key);

 private:
  std::shared_ptr<Producer> producer_;
  std::string what_;
  ArvDevice* device_ = nullptr;
};

}  // namespace stripeline::gentl
