// The one GenICam feature sequence for every camera path
// (genicam_configurator.h): configure, read back, software trigger.
#include "acquisition/genicam_configurator.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>

#include "core/errors.h"

namespace stripeline {

namespace {

[[noreturn]] void refused(const std::string& key, const std::string& what) { throw ConfigError("camera." + key + ": " + what); }

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s.empty() ? "none" : s;
}

std::string offered(GenICamFeatures& f, const std::string& feature) {
  try {
    return joined(f.enum_entries(feature));
  } catch (const FeatureError&) {
    return "none";
  }
}

// The first of two SFNC names the camera has ("" = neither).
std::string first_of(GenICamFeatures& f, const char* a, const char* b) {
  if (f.has(a)) return a;
  if (f.has(b)) return b;
  return {};
}

// Best effort: an "auto" mode off before a manual value (cameras without it skip).
void switch_off(GenICamFeatures& f, const char* feature) {
  if (!f.has(feature)) return;
  try {
    f.set_string(feature, "Off");
  } catch (const FeatureError& e) {
    spdlog::warn("camera: cannot set {} Off: {}", feature, e.what());
  }
}

void set_float_feature(GenICamFeatures& f, const std::string& feature, double v, const std::string& key, const char* unit) {
  auto range = [&]() -> std::string {
    try {
      const auto [lo, hi] = f.float_range(feature);
      return fmt::format(" (it allows {}..{}{})", lo, hi, unit);
    } catch (const FeatureError&) {
      return {};
    }
  };
  try {
    f.set_float(feature, v);
  } catch (const FeatureError& e) {
    refused(key, fmt::format("the camera refused {}{} ({}): {}{}", v, unit, feature, e.what(), range()));
  }
}

void set_enum_feature(GenICamFeatures& f, const std::string& feature, const std::string& v, const std::string& key, const char* what) {
  try {
    f.set_string(feature, v);
  } catch (const FeatureError& e) {
    refused(key, fmt::format("the camera refused {} {}: {} (it offers {})", what, v, e.what(), offered(f, feature)));
  }
}

void configure_region(GenICamFeatures& f, const CameraConfig& c) {
  if (c.width <= 0 && c.height <= 0 && c.offset_x <= 0 && c.offset_y <= 0) return;
  // Offsets to 0 first so that a wider region is legal, then size, then offsets.
  const bool offsets = f.has("OffsetX") && f.has("OffsetY");
  if (offsets) {
    set_checked_int(f, "OffsetX", 0, "offset_x");
    set_checked_int(f, "OffsetY", 0, "offset_y");
  } else if (c.offset_x > 0 || c.offset_y > 0) {
    throw ConfigError("camera.offset_x/offset_y: this camera has no region offsets (OffsetX/OffsetY)");
  }
  if (c.width > 0) set_checked_int(f, "Width", c.width, "width");
  if (c.height > 0) set_checked_int(f, "Height", c.height, "height");
  if (offsets) {
    if (c.offset_x > 0) set_checked_int(f, "OffsetX", c.offset_x, "offset_x");
    if (c.offset_y > 0) set_checked_int(f, "OffsetY", c.offset_y, "offset_y");
  }
}

void configure_exposure_gain_rate(GenICamFeatures& f, const CameraConfig& c) {
  if (c.exposure_us > 0) {
    const std::string name = first_of(f, "ExposureTime", "ExposureTimeAbs");
    if (name.empty()) refused("exposure_us", "this camera has no ExposureTime");
    switch_off(f, "ExposureAuto");
    set_float_feature(f, name, c.exposure_us, "exposure_us", " us");
  }
  if (c.gain >= 0) {
    switch_off(f, "GainAuto");
    if (f.has("Gain"))
      set_float_feature(f, "Gain", c.gain, "gain", "");
    else if (f.has("GainRaw"))  // raw units on cameras without Gain (docs/cameras.md)
      set_checked_int(f, "GainRaw", std::llround(c.gain), "gain");
    else
      refused("gain", "this camera has no Gain or GainRaw");
  }
  if (c.trigger == TriggerMode::FreeRun && c.frame_rate > 0) {
    const std::string name = first_of(f, "AcquisitionFrameRate", "AcquisitionFrameRateAbs");
    if (name.empty()) refused("frame_rate", "this camera has no AcquisitionFrameRate");
    if (f.has("AcquisitionFrameRateEnable")) {
      try {
        f.set_bool("AcquisitionFrameRateEnable", true);
      } catch (const FeatureError& e) {
        spdlog::warn("camera: cannot enable AcquisitionFrameRate: {}", e.what());
      }
    }
    set_float_feature(f, name, c.frame_rate, "frame_rate", " frames/s");
  }
}

void configure_trigger(GenICamFeatures& f, const CameraConfig& c) {
  if (c.trigger == TriggerMode::FreeRun) return;  // reset_triggers() left every trigger off
  if (!f.has("TriggerMode")) refused("trigger", "this camera has no TriggerMode");
  const std::string source = c.trigger == TriggerMode::Software ? "Software" : c.trigger_source;
  set_enum_feature(f, "TriggerSource", source, "trigger_source", "trigger source");
  if (c.trigger == TriggerMode::External && f.has("TriggerActivation"))
    set_enum_feature(f, "TriggerActivation", c.trigger_activation, "trigger_activation", "trigger activation");
  set_enum_feature(f, "TriggerMode", "On", "trigger", "TriggerMode");
}

}  // namespace

void reset_triggers(GenICamFeatures& f) {
  if (!f.has("TriggerMode")) return;
  // A selector whose mode cannot be written (locked on some cameras) is
  // warned about, not fatal: a trigger that stays on shows in the read-back
  // (external) or as a camera that sends nothing.
  auto off = [&](const std::string& selector) {
    try {
      if (!selector.empty()) f.set_string("TriggerSelector", selector);
      f.set_string("TriggerMode", "Off");
    } catch (const FeatureError& e) {
      spdlog::warn("camera: cannot switch trigger {} off: {}", selector.empty() ? "TriggerMode" : selector, e.what());
    }
  };
  std::vector<std::string> selectors;
  if (f.has("TriggerSelector")) {
    try {
      selectors = f.enum_entries("TriggerSelector");
    } catch (const FeatureError& e) {
      spdlog::warn("camera: cannot list its trigger selectors: {}", e.what());
    }
  }
  if (selectors.empty()) off("");
  for (const auto& s : selectors) off(s);
  for (const auto& s : selectors)
    if (s == "FrameStart") off(s);  // the selector the trigger settings below address
}

void set_checked_int(GenICamFeatures& f, const std::string& feature, std::int64_t v, const std::string& key) {
  IntRange r;
  try {
    r = f.int_range(feature);
  } catch (const FeatureError& e) {
    refused(key, fmt::format("the camera has no {} to set to {}: {}", feature, v, e.what()));
  }
  const std::int64_t inc = r.inc > 0 ? r.inc : 1;
  if (v < r.min || v > r.max || (inc > 1 && (v - r.min) % inc != 0))
    refused(key, fmt::format("{} is not accepted by the camera ({} {}..{} in steps of {})", v, feature, r.min, r.max, inc));
  try {
    f.set_int(feature, v);
  } catch (const FeatureError& e) {
    refused(key, fmt::format("the camera refused {} = {}: {}", feature, v, e.what()));
  }
}

void configure_camera(GenICamFeatures& f, const CameraConfig& c, const std::function<void()>& transport) {
  // Trigger first: some cameras lock geometry features while triggered.
  reset_triggers(f);
  set_enum_feature(f, "PixelFormat", c.pixel_format, "pixel_format", "pixel format");
  configure_region(f, c);
  configure_exposure_gain_rate(f, c);
  configure_trigger(f, c);
  if (transport) transport();
  for (const auto& a : c.features) {
    try {
      f.apply(a);
    } catch (const FeatureError& e) {
      refused("features", fmt::format("the camera refused '{}': {}", a, e.what()));
    }
  }
}

namespace {

void read_back_trigger(GenICamFeatures& f, const CameraConfig& c, CameraSettings& s) {
  switch (c.trigger) {
    case TriggerMode::FreeRun: s.trigger = "free-run"; return;
    case TriggerMode::Software: s.trigger = fmt::format("software at {} frames/s", c.frame_rate); return;
    case TriggerMode::External: break;
  }
  std::string mode, source, edge = "(edge not settable)";
  try {
    mode = f.get_string("TriggerMode");
    source = f.get_string("TriggerSource");
    if (f.has("TriggerActivation")) edge = f.get_string("TriggerActivation");
  } catch (const FeatureError& e) {
    throw DeviceUnavailable(fmt::format("camera {}: cannot read its trigger back: {}", s.id, e.what()));
  }
  if (mode != "On" || source != c.trigger_source)
    refused("trigger_source", fmt::format("asked external trigger on {}, the camera has TriggerMode {} on {}", c.trigger_source, mode, source));
  s.trigger = fmt::format("external {} {}", source, edge);
}

}  // namespace

void read_back_camera(GenICamFeatures& f, const CameraConfig& c, CameraSettings& s) {
  auto get_int = [&](const char* name) {
    try {
      return static_cast<int>(f.get_int(name));
    } catch (const FeatureError& e) {
      throw DeviceUnavailable(fmt::format("camera {}: cannot read {} back: {}", s.id, name, e.what()));
    }
  };
  s.width = get_int("Width");
  s.height = get_int("Height");
  s.offset_x = f.has("OffsetX") ? get_int("OffsetX") : 0;
  s.offset_y = f.has("OffsetY") ? get_int("OffsetY") : 0;
  auto mismatch = [](const char* key, int asked, int got) {
    if (asked > 0 && asked != got) refused(key, fmt::format("asked {}, the camera set {}", asked, got));
  };
  mismatch("width", c.width, s.width);
  mismatch("height", c.height, s.height);
  mismatch("offset_x", c.offset_x, s.offset_x);
  mismatch("offset_y", c.offset_y, s.offset_y);
  if (s.width < 1 || s.height < 1 || s.width > kMaxWidth || s.height > kMaxFrameHeight)
    throw ConfigError(fmt::format("camera: its frame is {}x{}, beyond what stripeline takes (width 1..{}, height 1..{}): set camera.width and camera.height",
                                  s.width, s.height, kMaxWidth, kMaxFrameHeight));
  try {
    s.pixel_format = f.get_string("PixelFormat");
  } catch (const FeatureError& e) {
    throw DeviceUnavailable(fmt::format("camera {}: cannot read PixelFormat back: {}", s.id, e.what()));
  }
  if (s.pixel_format != c.pixel_format) refused("pixel_format", fmt::format("asked {}, the camera set {}", c.pixel_format, s.pixel_format));
  auto get_float = [&](const std::string& name) {
    try {
      return name.empty() ? 0.0 : f.get_float(name);
    } catch (const FeatureError&) {
      return 0.0;
    }
  };
  s.exposure_us = get_float(first_of(f, "ExposureTime", "ExposureTimeAbs"));
  s.gain = f.has("Gain") ? get_float("Gain") : f.has("GainRaw") ? static_cast<double>(get_int("GainRaw")) : 0.0;
  s.frame_rate = get_float(first_of(f, "AcquisitionFrameRate", "AcquisitionFrameRateAbs"));
  auto near = [](double asked, double got) { return std::fabs(asked - got) <= 0.01 * std::fabs(asked) + 1e-9; };
  if (c.exposure_us > 0 && !near(c.exposure_us, s.exposure_us))
    spdlog::warn("camera: exposure {} us asked, the camera set {} us", c.exposure_us, s.exposure_us);
  if (c.gain >= 0 && !near(c.gain, s.gain)) spdlog::warn("camera: gain {} asked, the camera set {}", c.gain, s.gain);
  if (c.trigger == TriggerMode::FreeRun && c.frame_rate > 0 && !near(c.frame_rate, s.frame_rate))
    spdlog::warn("camera: {} frames/s asked, the camera set {} frames/s", c.frame_rate, s.frame_rate);
  read_back_trigger(f, c, s);
}

void SoftwareTrigger::start(GenICamFeatures& f, double rate, const std::atomic<bool>& lost, std::mutex& feature_mu) {
  stop();
  stop_ = false;
  firing_ = true;
  using clock = std::chrono::steady_clock;
  const auto period = std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(1.0 / rate));
  thread_ = std::thread([this, &f, &lost, &feature_mu, period] {
    auto next = clock::now();
    std::unique_lock lock(mu_);
    while (!stop_) {
      cv_.wait_until(lock, next, [this] { return stop_; });
      if (stop_) break;
      if (lost.load()) {  // the source is closed and reopened: its successor triggers
        spdlog::debug("camera: software trigger stopped: the camera is lost");
        break;
      }
      lock.unlock();
      {
        std::lock_guard features(feature_mu);
        try {
          f.execute("TriggerSoftware");
          fired_.fetch_add(1);
        } catch (const FeatureError& e) {
          spdlog::debug("camera: TriggerSoftware: {}", e.what());
        }
      }
      lock.lock();
      next += period;
      if (clock::now() - next > period * 4) next = clock::now();  // fell behind: do not burst
    }
    firing_ = false;
  });
}

void SoftwareTrigger::stop() noexcept {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace stripeline
