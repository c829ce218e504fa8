#pragma once
// One GenICam configurator for every camera path (Aravis' GigE Vision /
// USB3 Vision cameras, cameras behind a GenTL frame grabber): the standard
// feature sequence that applies a [camera] section, the trigger reset, the
// bounds check of integer features, the read-back, and the software trigger
// with its behaviour after a loss. Each transport implements the small
// feature-access interface below over its own node map and keeps only what
// it alone needs (GigE Vision packets and heartbeat, grabber features and
// frames per buffer, chunk parsing). docs/cameras.md, "Configuration".
//
// Needs no device library: the interface is plain C++.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "acquisition/camera_source.h"

namespace stripeline {

// A feature access the transport refused (its own message).
class FeatureError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct IntRange {
  std::int64_t min = 0, max = 0, inc = 1;
};

// GenICam features of one node map, by SFNC name. Every call but has()
// throws FeatureError when the device refuses or the feature is missing.
// Not thread-safe: callers serialise (the configurator runs before
// streaming; SoftwareTrigger takes the source's feature mutex).
class GenICamFeatures {
 public:
  virtual ~GenICamFeatures() = default;
  virtual bool has(const std::string& name) = 0;  // implemented and available
  virtual std::int64_t get_int(const std::string& name) = 0;
  virtual void set_int(const std::string& name, std::int64_t v) = 0;
  virtual IntRange int_range(const std::string& name) = 0;
  virtual double get_float(const std::string& name) = 0;
  virtual void set_float(const std::string& name, double v) = 0;
  virtual std::pair<double, double> float_range(const std::string& name) = 0;
  // Enumerations (by entry name) and strings.
  virtual std::string get_string(const std::string& name) = 0;
  virtual void set_string(const std::string& name, const std::string& v) = 0;
  virtual std::vector<std::string> enum_entries(const std::string& name) = 0;
  virtual void set_bool(const std::string& name, bool v) = 0;
  virtual void execute(const std::string& name) = 0;
  // "Name=Value", as in camera.features: the value converted to the
  // feature's type by the node map.
  virtual void apply(const std::string& assignment) = 0;
};

// Every trigger off: each TriggerSelector entry (FrameStart, LineStart,
// AcquisitionStart...) gets TriggerMode Off, then FrameStart is selected
// again. Cameras lock geometry while triggered, so this comes first.
void reset_triggers(GenICamFeatures& f);

// An integer feature set within its bounds: ConfigError naming camera.<key>
// with the feature's range when the value is outside it or off its step.
void set_checked_int(GenICamFeatures& f, const std::string& feature, std::int64_t v, const std::string& key);

// The [camera] settings, in the standard order: triggers off, pixel format,
// region (offsets to 0, size, offsets), exposure (auto off), gain (auto off),
// frame rate (free run), trigger (source, activation, mode on), then what
// the transport alone sets (`transport`: chunks, packets, heartbeat), then
// the camera.features assignments, last. ConfigError naming the key for a
// refusal.
void configure_camera(GenICamFeatures& f, const CameraConfig& c, const std::function<void()>& transport = {});

// What the camera accepted: region, pixel format, exposure, gain, frame rate,
// trigger, into `s` (identity fields untouched). ConfigError where it differs
// from what was asked (region, format, trigger), a warning where it was
// rounded (exposure, gain, rate); DeviceUnavailable when it cannot be read.
void read_back_camera(GenICamFeatures& f, const CameraConfig& c, CameraSettings& s);

// Fires TriggerSoftware at camera.frame_rate on a thread of its own (started
// for trigger = "software"). After a loss it stops firing for good: a lost
// camera is closed and a new source opened, with a new trigger (both camera
// paths). `lost` is the source's flag, `feature_mu` the mutex that guards its
// node map.
class SoftwareTrigger {
 public:
  SoftwareTrigger() = default;
  ~SoftwareTrigger() { stop(); }
  SoftwareTrigger(const SoftwareTrigger&) = delete;
  SoftwareTrigger& operator=(const SoftwareTrigger&) = delete;
  void start(GenICamFeatures& f, double rate, const std::atomic<bool>& lost, std::mutex& feature_mu);
  void stop() noexcept;  // idempotent; joins the thread
  bool running() const { return thread_.joinable(); }
  // False once the thread has ended (stopped, or the camera was lost).
  bool firing() const { return firing_.load(); }
  std::uint64_t fired() const { return fired_.load(); }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::atomic<std::uint64_t> fired_{0};
  std::atomic<bool> firing_{false};
  std::thread thread_;
};

}  // namespace stripeline
