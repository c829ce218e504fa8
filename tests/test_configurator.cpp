// The GenICam configurator (acquisition/genicam_configurator.h) against a
// node map in memory that records every write: the feature sequence, the
// trigger reset, the bounds check of every integer feature, the read-back
// and the software trigger after a loss. The same configurator against the
// two real camera paths: tests/camera/test_camera.cpp, CameraConfigurator.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <map>
#include <thread>

#include "acquisition/genicam_configurator.h"
#include "core/errors.h"

namespace stripeline {
namespace {

using namespace std::chrono_literals;

// A camera's node map: integers with ranges, floats, enumerations (the
// trigger's per selector), commands; every write logged as "Name=Value".
class MemoryFeatures final : public GenICamFeatures {
 public:
  MemoryFeatures() {
    ints_ = {{"Width", {640, {16, 2048, 16}}}, {"Height", {480, {1, 1024, 1}}}, {"OffsetX", {0, {0, 1024, 4}}}, {"OffsetY", {0, {0, 512, 2}}}};
    floats_ = {{"ExposureTime", 1000}, {"Gain", 0}, {"AcquisitionFrameRate", 100}};
    enums_ = {{"PixelFormat", {"Mono8", {"Mono8", "Mono16"}}},
              {"TriggerSelector", {"LineStart", {"FrameStart", "LineStart", "AcquisitionStart"}}},
              {"TriggerSource", {"Line1", {"Software", "Line1"}}},
              {"TriggerActivation", {"RisingEdge", {"RisingEdge", "FallingEdge"}}},
              {"ExposureAuto", {"Continuous", {"Off", "Continuous"}}}};
    for (const char* s : {"FrameStart", "LineStart", "AcquisitionStart"}) trigger_mode_[s] = "On";
  }
  std::vector<std::string> log;
  std::map<std::string, std::string> trigger_mode_;  // per selector
  std::atomic<int> triggers{0};

  bool has(const std::string& n) override {
    return ints_.count(n) || floats_.count(n) || enums_.count(n) || n == "TriggerMode" || n == "TriggerSoftware";
  }
  std::int64_t get_int(const std::string& n) override { return int_of(n).first; }
  void set_int(const std::string& n, std::int64_t v) override {
    int_of(n).first = v;
    log.push_back(n + "=" + std::to_string(v));
  }
  IntRange int_range(const std::string& n) override { return int_of(n).second; }
  double get_float(const std::string& n) override { return float_of(n); }
  void set_float(const std::string& n, double v) override {
    float_of(n) = v;
    log.push_back(n + "=" + std::to_string(static_cast<long long>(v)));
  }
  std::pair<double, double> float_range(const std::string&) override { return {1, 1e6}; }
  std::string get_string(const std::string& n) override {
    if (n == "TriggerMode") return trigger_mode_[enums_.at("TriggerSelector").first];
    return enum_of(n).first;
  }
  void set_string(const std::string& n, const std::string& v) override {
    if (n == "TriggerMode") {
      if (v != "On" && v != "Off") throw FeatureError("TriggerMode: no entry " + v);
      trigger_mode_[enums_.at("TriggerSelector").first] = v;
    } else {
      auto& e = enum_of(n);
      if (std::find(e.second.begin(), e.second.end(), v) == e.second.end()) throw FeatureError(n + ": no entry " + v);
      e.first = v;
    }
    log.push_back(n + "=" + v);
  }
  std::vector<std::string> enum_entries(const std::string& n) override {
    if (n == "TriggerMode") return {"Off", "On"};
    return enum_of(n).second;
  }
  void set_bool(const std::string& n, bool v) override { log.push_back(n + "=" + (v ? "true" : "false")); }
  void execute(const std::string& n) override {
    if (n != "TriggerSoftware") throw FeatureError(n + ": no such command");
    ++triggers;
  }
  void apply(const std::string& a) override {
    const std::string n = a.substr(0, a.find('='));
    if (!has(n)) throw FeatureError("no feature '" + n + "'");
    log.push_back(a);
  }

 private:
  std::pair<std::int64_t, IntRange>& int_of(const std::string& n) {
    const auto it = ints_.find(n);
    if (it == ints_.end()) throw FeatureError(n + ": no such integer");
    return it->second;
  }
  double& float_of(const std::string& n) {
    const auto it = floats_.find(n);
    if (it == floats_.end()) throw FeatureError(n + ": no such float");
    return it->second;
  }
  std::pair<std::string, std::vector<std::string>>& enum_of(const std::string& n) {
    const auto it = enums_.find(n);
    if (it == enums_.end()) throw FeatureError(n + ": no such enumeration");
    return it->second;
  }
  std::map<std::string, std::pair<std::int64_t, IntRange>> ints_;
  std::map<std::string, double> floats_;
  std::map<std::string, std::pair<std::string, std::vector<std::string>>> enums_;
};

std::string expect_config_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no ConfigError";
  return {};
}

TEST(GenICamConfigurator, ResetsEveryTriggerSelectorThenSelectsFrameStart) {
  MemoryFeatures f;
  reset_triggers(f);
  for (const auto& [selector, mode] : f.trigger_mode_) EXPECT_EQ(mode, "Off") << selector;
  EXPECT_EQ(f.get_string("TriggerSelector"), "FrameStart");
}

TEST(GenICamConfigurator, AppliesTheStandardSequenceInOrderWithTransportAndFeaturesLast) {
  MemoryFeatures f;
  CameraConfig c;
  c.width = 512;
  c.height = 40;
  c.offset_x = 32;
  c.offset_y = 8;
  c.pixel_format = "Mono16";
  c.exposure_us = 2000;
  c.trigger = TriggerMode::External;
  c.trigger_source = "Line1";
  c.trigger_activation = "FallingEdge";
  c.features = {"Gain=3"};
  bool transport_ran = false;
  configure_camera(f, c, [&] {
    transport_ran = true;
    f.log.push_back("<transport>");
  });
  EXPECT_TRUE(transport_ran);
  const auto at = [&](const std::string& entry) {
    const auto it = std::find(f.log.begin(), f.log.end(), entry);
    EXPECT_NE(it, f.log.end()) << entry;
    return it - f.log.begin();
  };
  // Triggers off before anything else; the last write is camera.features.
  EXPECT_EQ(f.log.front(), "TriggerSelector=FrameStart");
  EXPECT_EQ(f.log[1], "TriggerMode=Off");
  EXPECT_LT(at("TriggerMode=Off"), at("PixelFormat=Mono16"));
  EXPECT_LT(at("PixelFormat=Mono16"), at("OffsetX=0"));
  EXPECT_LT(at("OffsetX=0"), at("Width=512"));
  EXPECT_LT(at("Height=40"), at("OffsetX=32"));
  EXPECT_LT(at("ExposureAuto=Off"), at("ExposureTime=2000"));
  EXPECT_LT(at("TriggerSource=Line1"), at("TriggerMode=On"));
  EXPECT_LT(at("TriggerActivation=FallingEdge"), at("TriggerMode=On"));
  EXPECT_LT(at("TriggerMode=On"), at("<transport>"));
  EXPECT_EQ(f.log.back(), "Gain=3");

  CameraSettings s;
  read_back_camera(f, c, s);
  EXPECT_EQ(s.width, 512);
  EXPECT_EQ(s.offset_y, 8);
  EXPECT_EQ(s.pixel_format, "Mono16");
  EXPECT_EQ(s.exposure_us, 2000);
  EXPECT_EQ(s.trigger, "external Line1 FallingEdge");
}

// A setting the camera refuses: the key, how the setting is made, and the
// detail the error must give (the range or the entries accepted).
struct Refused {
  const char* key;
  std::function<void(CameraConfig&)> set;
  const char* detail;
};

// Each setting alone: configure_camera fails with a ConfigError naming the key and the detail.
void expect_refused(const std::vector<Refused>& cases) {
  for (const auto& k : cases) {
    MemoryFeatures f;
    CameraConfig c;
    k.set(c);
    const std::string m = expect_config_error([&] { configure_camera(f, c); });
    EXPECT_NE(m.find(k.key), std::string::npos) << m;
    EXPECT_NE(m.find(k.detail), std::string::npos) << m;
  }
}

TEST(GenICamConfigurator, EveryIntegerFeatureIsBoundsCheckedNamingTheKey) {
  expect_refused({
      {"camera.width", [](CameraConfig& c) { c.width = 4096; }, "Width 16..2048 in steps of 16"},
      {"camera.width", [](CameraConfig& c) { c.width = 520; }, "in steps of 16"},
      {"camera.height", [](CameraConfig& c) { c.height = 2000; }, "Height 1..1024"},
      {"camera.offset_x", [](CameraConfig& c) { c.offset_x = 6; }, "OffsetX 0..1024 in steps of 4"},
      {"camera.offset_y", [](CameraConfig& c) { c.offset_y = 513; }, "OffsetY"},
  });
}

TEST(GenICamConfigurator, RefusalsAndReadBackMismatchesNameTheKey) {
  expect_refused({
      {"camera.pixel_format", [](CameraConfig& c) { c.pixel_format = "Mono12"; }, "Mono8, Mono16"},
      {"camera.trigger_source",
       [](CameraConfig& c) {
         c.trigger = TriggerMode::External;
         c.trigger_source = "Line7";
       },
       "Software, Line1"},
      {"camera.features", [](CameraConfig& c) { c.features = {"NoSuchFeature=1"}; }, "NoSuchFeature"},
  });
  {  // the camera kept another width than the one asked
    MemoryFeatures f;
    CameraConfig c;
    c.width = 512;
    CameraSettings s;
    const std::string m = expect_config_error([&] { read_back_camera(f, c, s); });
    EXPECT_NE(m.find("camera.width: asked 512, the camera set 640"), std::string::npos) << m;
  }
}

// One behaviour after a loss for both camera paths: the trigger stops firing.
TEST(GenICamConfigurator, SoftwareTriggerFiresUntilTheCameraIsLost) {
  MemoryFeatures f;
  std::atomic<bool> lost{false};
  std::mutex mu;
  SoftwareTrigger t;
  t.start(f, 1000, lost, mu);
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (f.triggers.load() < 5 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
  ASSERT_GE(f.triggers.load(), 5) << "the trigger did not fire within 10 s";
  lost = true;
  // The thread ends by itself once it sees the loss, and fires no more.
  while (t.firing() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
  ASSERT_FALSE(t.firing()) << "the trigger kept firing at a lost camera for 10 s";
  EXPECT_EQ(t.fired(), static_cast<std::uint64_t>(f.triggers.load()));
  t.stop();
  EXPECT_FALSE(t.running());
}

}  // namespace
}  // namespace stripeline
