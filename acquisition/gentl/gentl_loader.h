#pragma once
// Loading GenTL producers (".cti" libraries) and walking what they see:
// the consumer side of the GenTL C interface (gentl_api.h).
//
// A producer is loaded once per process (dlopen, GCInitLib, TLOpen) and kept
// while anything uses it; the standard allows one GCInitLib and one TLOpen
// per process. Interfaces are opened once and kept with their producer.
//
// Thread-safety: load_producer() and Producer's methods may be called from
// any thread (one lock per producer); what a device or stream handle is used
// for is the caller's business (GenTLCamera uses its own from one thread).
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "acquisition/gentl/gentl_api.h"

namespace stripeline::gentl {

// Every call of the standard, loaded from one producer (null when the
// producer lacks it: only the v1.0 calls are required).
struct Api {
#define GENTL_MEMBER(name, params) P##name name = nullptr;
  GENTL_CALLS(GENTL_MEMBER)
#undef GENTL_MEMBER
};

class Producer {
 public:
  ~Producer();
  Producer(const Producer&) = delete;
  Producer& operator=(const Producer&) = delete;

  const std::string& path() const { return path_; }
  const Api& api() const { return api_; }
  TL_HANDLE system() const { return tl_; }
  std::string vendor() const { return vendor_; }
  std::string model() const { return model_; }

  // Throws DeviceUnavailable naming the call, the producer and its message
  // (GCGetLastError) when rc is not GC_ERR_SUCCESS.
  void check(GC_ERROR rc, const std::string& call) const;
  std::string last_error_text() const;

  // Interfaces, updated on every call (TLUpdateInterfaceList).
  std::vector<std::string> interface_ids();
  std::string interface_tltype(const std::string& id);
  // Opened on first use, kept open.
  IF_HANDLE open_interface(const std::string& id);

  std::mutex& mutex() const { return mu_; }

 private:
  friend std::shared_ptr<Producer> load_producer(const std::string& path);
  explicit Producer(std::string path);
  std::string path_;
  void* library_ = nullptr;
  Api api_;
  TL_HANDLE tl_ = nullptr;
  std::string vendor_, model_;
  std::vector<std::pair<std::string, IF_HANDLE>> interfaces_;
  mutable std::mutex mu_;
};

// The producer at `path`, loaded once per process (a second call returns the
// same one while it is held). Throws DeviceUnavailable when it cannot be
// loaded or initialised.
std::shared_ptr<Producer> load_producer(const std::string& path);

// The .cti files to use: `configured` (a .cti file or a folder of them) when
// not empty, else every .cti in the folders of GENICAM_GENTL64_PATH
// (colon-separated). Sorted, without duplicates. Missing folders are skipped.
std::vector<std::string> producer_paths(const std::string& configured);

// What to tell a user when producer_paths() found nothing.
std::string no_producer_message(const std::string& configured);

// String and scalar answers of the *GetInfo calls. `get` is called as
// get(&type, buffer, &size); throws DeviceUnavailable on failure.
template <class Get>
std::string info_string(const Producer& p, const std::string& what, Get get) {
  INFO_DATATYPE type = INFO_DATATYPE_UNKNOWN;
  std::size_t size = 0;
  p.check(get(&type, nullptr, &size), what);
  std::string s(size, '\0');
  if (size > 0) p.check(get(&type, s.data(), &size), what);
  s.resize(s.find('\0') == std::string::npos ? s.size() : s.find('\0'));
  return s;
}
template <class T, class Get>
T info_value(const Producer& p, const std::string& what, Get get) {
  INFO_DATATYPE type = INFO_DATATYPE_UNKNOWN;
  T v{};
  std::size_t size = sizeof v;
  p.check(get(&type, &v, &size), what);
  return v;
}

const char* error_name(GC_ERROR rc);

// Held while a camera of this process is opened, configured or closed (its
// GenApi node maps made, written, freed): one at a time.
std::mutex& setup_mutex();

}  // namespace stripeline::gentl
