#pragma once
// GenICamFeatures over an ArvDevice: Aravis' GenICam engine evaluating a
// node map. Both camera paths use it: an Aravis camera's device, and a GenTL
// port's node map (gentl/port_node_map.h, Aravis' engine over GCReadPort /
// GCWritePort). A transport with another GenApi implements the interface
// itself. Only translation units that link Aravis include this.
#include <string>

#include "acquisition/genicam_configurator.h"

typedef struct _ArvDevice ArvDevice;

namespace stripeline::aravis {

class DeviceFeatures final : public GenICamFeatures {
 public:
  explicit DeviceFeatures(ArvDevice* device = nullptr) : device_(device) {}
  void reset(ArvDevice* device) { device_ = device; }
  ArvDevice* device() const { return device_; }

  bool has(const std::string& name) override;
  std::int64_t get_int(const std::string& name) override;
  void set_int(const std::string& name, std::int64_t v) override;
  IntRange int_range(const std::string& name) override;
  double get_float(const std::string& name) override;
  void set_float(const std::string& name, double v) override;
  std::pair<double, double> float_range(const std::string& name) override;
  std::string get_string(const std::string& name) override;
  void set_string(const std::string& name, const std::string& v) override;
  std::vector<std::string> enum_entries(const std::string& name) override;
  void set_bool(const std::string& name, bool v) override;
  void execute(const std::string& name) override;
  void apply(const std::string& assignment) override;

 private:
  ArvDevice* device_;
};

}  // namespace stripeline::aravis
