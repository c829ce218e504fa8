#include "acquisition/aravis/arv_features.h"

#include <arv.h>

#include <type_traits>

namespace stripeline::aravis {

namespace {

// Runs an arv_device_* call; its GError becomes a FeatureError naming the feature.
template <class F>
auto checked(const std::string& name, F&& call) {
  GError* err = nullptr;
  auto fail = [&] {
    const std::string msg = err ? err->message : "refused";
    if (err) g_error_free(err);
    throw FeatureError(name + ": " + msg);
  };
  if constexpr (std::is_void_v<decltype(call(&err))>) {
    call(&err);
    if (err) fail();
  } else {
    auto v = call(&err);
    if (err) fail();
    return v;
  }
}

}  // namespace

bool DeviceFeatures::has(const std::string& name) {
  if (!device_ || !arv_device_get_feature(device_, name.c_str())) return false;
  GError* err = nullptr;
  const gboolean available = arv_device_is_feature_available(device_, name.c_str(), &err);
  if (err) g_error_free(err);
  return available;
}

std::int64_t DeviceFeatures::get_int(const std::string& name) {
  return checked(name, [&](GError** e) { return arv_device_get_integer_feature_value(device_, name.c_str(), e); });
}

void DeviceFeatures::set_int(const std::string& name, std::int64_t v) {
  checked(name, [&](GError** e) { arv_device_set_integer_feature_value(device_, name.c_str(), v, e); });
}

IntRange DeviceFeatures::int_range(const std::string& name) {
  if (!arv_device_get_feature(device_, name.c_str())) throw FeatureError(name + ": no such feature");
  IntRange r;
  gint64 lo = 0, hi = 0;
  checked(name, [&](GError** e) { arv_device_get_integer_feature_bounds(device_, name.c_str(), &lo, &hi, e); });
  r.min = lo;
  r.max = hi;
  r.inc = checked(name, [&](GError** e) { return arv_device_get_integer_feature_increment(device_, name.c_str(), e); });
  return r;
}

double DeviceFeatures::get_float(const std::string& name) {
  return checked(name, [&](GError** e) { return arv_device_get_float_feature_value(device_, name.c_str(), e); });
}

void DeviceFeatures::set_float(const std::string& name, double v) {
  checked(name, [&](GError** e) { arv_device_set_float_feature_value(device_, name.c_str(), v, e); });
}

std::pair<double, double> DeviceFeatures::float_range(const std::string& name) {
  double lo = 0, hi = 0;
  checked(name, [&](GError** e) { arv_device_get_float_feature_bounds(device_, name.c_str(), &lo, &hi, e); });
  return {lo, hi};
}

std::string DeviceFeatures::get_string(const std::string& name) {
  const char* s = checked(name, [&](GError** e) { return arv_device_get_string_feature_value(device_, name.c_str(), e); });
  return s ? s : "";
}

void DeviceFeatures::set_string(const std::string& name, const std::string& v) {
  if (!arv_device_get_feature(device_, name.c_str())) throw FeatureError(name + ": no such feature");
  checked(name, [&](GError** e) { arv_device_set_string_feature_value(device_, name.c_str(), v.c_str(), e); });
}

std::vector<std::string> DeviceFeatures::enum_entries(const std::string& name) {
  guint n = 0;
  const char** list =
      checked(name, [&](GError** e) { return arv_device_dup_available_enumeration_feature_values_as_strings(device_, name.c_str(), &n, e); });
  std::vector<std::string> v;
  for (guint i = 0; list && i < n; ++i) v.emplace_back(list[i] ? list[i] : "");
  g_free(list);
  return v;
}

void DeviceFeatures::set_bool(const std::string& name, bool v) {
  checked(name, [&](GError** e) { arv_device_set_boolean_feature_value(device_, name.c_str(), v ? TRUE : FALSE, e); });
}

void DeviceFeatures::execute(const std::string& name) {
  checked(name, [&](GError** e) { arv_device_execute_command(device_, name.c_str(), e); });
}

void DeviceFeatures::apply(const std::string& assignment) {
  const std::string name = assignment.substr(0, assignment.find('='));
  if (!arv_device_get_feature(device_, name.c_str())) throw FeatureError("no feature '" + name + "'");
  const gboolean ok = checked(assignment, [&](GError** e) { return arv_device_set_features_from_string(device_, assignment.c_str(), e); });
  if (!ok) throw FeatureError(assignment + ": refused");
}

}  // namespace stripeline::aravis
