#include "acquisition/gentl/gentl_loader.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>

#include "core/errors.h"

namespace stripeline::gentl {

namespace fs = std::filesystem;

const char* error_name(GC_ERROR rc) {
  switch (rc) {
    case GC_ERR_SUCCESS: return "GC_ERR_SUCCESS";
    case GC_ERR_ERROR: return "GC_ERR_ERROR";
    case GC_ERR_NOT_INITIALIZED: return "GC_ERR_NOT_INITIALIZED";
    case GC_ERR_NOT_IMPLEMENTED: return "GC_ERR_NOT_IMPLEMENTED";
    case GC_ERR_RESOURCE_IN_USE: return "GC_ERR_RESOURCE_IN_USE";
    case GC_ERR_ACCESS_DENIED: return "GC_ERR_ACCESS_DENIED";
    case GC_ERR_INVALID_HANDLE: return "GC_ERR_INVALID_HANDLE";
    case GC_ERR_INVALID_ID: return "GC_ERR_INVALID_ID";
    case GC_ERR_NO_DATA: return "GC_ERR_NO_DATA";
    case GC_ERR_INVALID_PARAMETER: return "GC_ERR_INVALID_PARAMETER";
    case GC_ERR_IO: return "GC_ERR_IO";
    case GC_ERR_TIMEOUT: return "GC_ERR_TIMEOUT";
    case GC_ERR_ABORT: return "GC_ERR_ABORT";
    case GC_ERR_INVALID_BUFFER: return "GC_ERR_INVALID_BUFFER";
    case GC_ERR_NOT_AVAILABLE: return "GC_ERR_NOT_AVAILABLE";
    case GC_ERR_INVALID_ADDRESS: return "GC_ERR_INVALID_ADDRESS";
    case GC_ERR_BUFFER_TOO_SMALL: return "GC_ERR_BUFFER_TOO_SMALL";
    case GC_ERR_INVALID_INDEX: return "GC_ERR_INVALID_INDEX";
    case GC_ERR_PARSING_CHUNK_DATA: return "GC_ERR_PARSING_CHUNK_DATA";
    case GC_ERR_INVALID_VALUE: return "GC_ERR_INVALID_VALUE";
    case GC_ERR_RESOURCE_EXHAUSTED: return "GC_ERR_RESOURCE_EXHAUSTED";
    case GC_ERR_OUT_OF_MEMORY: return "GC_ERR_OUT_OF_MEMORY";
    case GC_ERR_BUSY: return "GC_ERR_BUSY";
    default: return "GC_ERR (unknown code)";
  }
}

std::mutex& setup_mutex() {
  static std::mutex mu;
  return mu;
}

Producer::Producer(std::string path) : path_(std::move(path)) {}

Producer::~Producer() {
  if (library_ == nullptr) return;
  for (auto& [id, h] : interfaces_)
    if (api_.IFClose) api_.IFClose(h);
  if (tl_ && api_.TLClose) api_.TLClose(tl_);
  if (api_.GCCloseLib) api_.GCCloseLib();
  dlclose(library_);
}

std::string Producer::last_error_text() const {
  if (!api_.GCGetLastError) return {};
  GC_ERROR code = GC_ERR_SUCCESS;
  char text[1024] = {};
  std::size_t size = sizeof text;
  if (api_.GCGetLastError(&code, text, &size) != GC_ERR_SUCCESS) return {};
  text[sizeof text - 1] = '\0';
  return text;
}

void Producer::check(GC_ERROR rc, const std::string& call) const {
  if (rc == GC_ERR_SUCCESS) return;
  const std::string text = last_error_text();
  throw DeviceUnavailable(fmt::format("GenTL producer {}: {} failed: {} ({}){}", fs::path(path_).filename().string(), call, error_name(rc), rc,
                                      text.empty() ? "" : ": " + text));
}

std::vector<std::string> Producer::interface_ids() {
  std::lock_guard lock(mu_);
  bool8_t changed = 0;
  check(api_.TLUpdateInterfaceList(tl_, &changed, 1000), "TLUpdateInterfaceList");
  std::uint32_t n = 0;
  check(api_.TLGetNumInterfaces(tl_, &n), "TLGetNumInterfaces");
  std::vector<std::string> ids;
  for (std::uint32_t i = 0; i < n; ++i)
    ids.push_back(info_string(*this, "TLGetInterfaceID", [&](INFO_DATATYPE*, void* b, std::size_t* s) {
      return api_.TLGetInterfaceID(tl_, i, static_cast<char*>(b), s);
    }));
  return ids;
}

std::string Producer::interface_tltype(const std::string& id) {
  std::lock_guard lock(mu_);
  return info_string(*this, "TLGetInterfaceInfo(TLTYPE)", [&](INFO_DATATYPE* t, void* b, std::size_t* s) {
    return api_.TLGetInterfaceInfo(tl_, id.c_str(), INTERFACE_INFO_TLTYPE, t, b, s);
  });
}

IF_HANDLE Producer::open_interface(const std::string& id) {
  std::lock_guard lock(mu_);
  for (auto& [known, h] : interfaces_)
    if (known == id) return h;
  IF_HANDLE h = nullptr;
  check(api_.TLOpenInterface(tl_, id.c_str(), &h), "TLOpenInterface(" + id + ")");
  interfaces_.emplace_back(id, h);
  return h;
}

std::shared_ptr<Producer> load_producer(const std::string& path) {
  static std::mutex registry_mu;
  static std::map<std::string, std::weak_ptr<Producer>> registry;
  std::error_code ec;
  const std::string key = fs::weakly_canonical(path, ec).string();
  std::lock_guard lock(registry_mu);
  if (auto p = registry[key].lock()) return p;

  std::shared_ptr<Producer> p(new Producer(key));
  dlerror();
  p->library_ = dlopen(key.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!p->library_) {
    const char* why = dlerror();
    throw DeviceUnavailable(fmt::format("GenTL producer {}: cannot load it: {}", path, why ? why : "dlopen failed"));
  }
  Api& a = p->api_;
#define GENTL_LOAD(name, params) a.name = reinterpret_cast<P##name>(dlsym(p->library_, #name));
  GENTL_CALLS(GENTL_LOAD)
#undef GENTL_LOAD
  // The calls every consumer needs (GenTL 1.0); the later ones are optional.
  std::string missing;
  for (auto [name, fn] : {std::pair<const char*, void*>{"GCInitLib", reinterpret_cast<void*>(a.GCInitLib)},
                          {"TLOpen", reinterpret_cast<void*>(a.TLOpen)},
                          {"TLUpdateInterfaceList", reinterpret_cast<void*>(a.TLUpdateInterfaceList)},
                          {"TLGetNumInterfaces", reinterpret_cast<void*>(a.TLGetNumInterfaces)},
                          {"TLGetInterfaceID", reinterpret_cast<void*>(a.TLGetInterfaceID)},
                          {"TLGetInterfaceInfo", reinterpret_cast<void*>(a.TLGetInterfaceInfo)},
                          {"TLOpenInterface", reinterpret_cast<void*>(a.TLOpenInterface)},
                          {"IFUpdateDeviceList", reinterpret_cast<void*>(a.IFUpdateDeviceList)},
                          {"IFGetNumDevices", reinterpret_cast<void*>(a.IFGetNumDevices)},
                          {"IFGetDeviceID", reinterpret_cast<void*>(a.IFGetDeviceID)},
                          {"IFGetDeviceInfo", reinterpret_cast<void*>(a.IFGetDeviceInfo)},
                          {"IFOpenDevice", reinterpret_cast<void*>(a.IFOpenDevice)},
                          {"DevGetPort", reinterpret_cast<void*>(a.DevGetPort)},
                          {"DevOpenDataStream", reinterpret_cast<void*>(a.DevOpenDataStream)},
                          {"DevGetDataStreamID", reinterpret_cast<void*>(a.DevGetDataStreamID)},
                          {"DSAnnounceBuffer", reinterpret_cast<void*>(a.DSAnnounceBuffer)},
                          {"DSQueueBuffer", reinterpret_cast<void*>(a.DSQueueBuffer)},
                          {"DSStartAcquisition", reinterpret_cast<void*>(a.DSStartAcquisition)},
                          {"DSStopAcquisition", reinterpret_cast<void*>(a.DSStopAcquisition)},
                          {"DSGetBufferInfo", reinterpret_cast<void*>(a.DSGetBufferInfo)},
                          {"DSRevokeBuffer", reinterpret_cast<void*>(a.DSRevokeBuffer)},
                          {"DSFlushQueue", reinterpret_cast<void*>(a.DSFlushQueue)},
                          {"DSGetInfo", reinterpret_cast<void*>(a.DSGetInfo)},
                          {"GCRegisterEvent", reinterpret_cast<void*>(a.GCRegisterEvent)},
                          {"EventGetData", reinterpret_cast<void*>(a.EventGetData)},
                          {"GCReadPort", reinterpret_cast<void*>(a.GCReadPort)},
                          {"GCWritePort", reinterpret_cast<void*>(a.GCWritePort)}})
    if (!fn) missing += (missing.empty() ? "" : ", ") + std::string(name);
  if (!missing.empty()) {
    dlclose(p->library_);
    p->library_ = nullptr;
    throw DeviceUnavailable(fmt::format("GenTL producer {}: not a GenTL producer (it lacks {})", path, missing));
  }
  const GC_ERROR init = a.GCInitLib();
  if (init != GC_ERR_SUCCESS) {
    const std::string text = p->last_error_text();
    dlclose(p->library_);
    p->library_ = nullptr;
    throw DeviceUnavailable(fmt::format("GenTL producer {}: GCInitLib failed: {}{}", path, error_name(init), text.empty() ? "" : ": " + text));
  }
  const GC_ERROR open = a.TLOpen(&p->tl_);
  if (open != GC_ERR_SUCCESS) {
    const std::string text = p->last_error_text();
    a.GCCloseLib();
    dlclose(p->library_);
    p->library_ = nullptr;
    throw DeviceUnavailable(fmt::format("GenTL producer {}: TLOpen failed: {}{}", path, error_name(open), text.empty() ? "" : ": " + text));
  }
  if (a.TLGetInfo) {
    try {
      p->vendor_ = info_string(*p, "TLGetInfo(VENDOR)", [&](INFO_DATATYPE* t, void* b, std::size_t* s) { return a.TLGetInfo(p->tl_, TL_INFO_VENDOR, t, b, s); });
      p->model_ = info_string(*p, "TLGetInfo(MODEL)", [&](INFO_DATATYPE* t, void* b, std::size_t* s) { return a.TLGetInfo(p->tl_, TL_INFO_MODEL, t, b, s); });
    } catch (const DeviceUnavailable& e) {
      spdlog::debug("{}", e.what());
    }
  }
  spdlog::debug("gentl: loaded {} ({} {})", key, p->vendor_, p->model_);
  registry[key] = p;
  return p;
}

std::vector<std::string> producer_paths(const std::string& configured) {
  std::vector<std::string> found;
  auto scan = [&](const fs::path& where) {
    std::error_code ec;
    if (fs::is_regular_file(where, ec)) {
      found.push_back(where.string());
      return;
    }
    if (!fs::is_directory(where, ec)) return;
    for (const auto& e : fs::directory_iterator(where, ec))
      if (e.path().extension() == ".cti" && e.is_regular_file(ec)) found.push_back(e.path().string());
  };
  if (!configured.empty()) {
    scan(configured);
  } else if (const char* env = std::getenv("GENICAM_GENTL64_PATH")) {
    std::stringstream dirs(env);
    std::string dir;
    while (std::getline(dirs, dir, ':'))
      if (!dir.empty()) scan(dir);
  }
  std::sort(found.begin(), found.end());
  found.erase(std::unique(found.begin(), found.end()), found.end());
  return found;
}

std::string no_producer_message(const std::string& configured) {
  if (!configured.empty())
    return fmt::format("no GenTL producer at '{}' (camera.gentl.cti: expected a .cti file or a folder holding some)", configured);
  const char* env = std::getenv("GENICAM_GENTL64_PATH");
  return fmt::format(
      "no GenTL producer found ({}). A frame grabber is reached through its vendor's GenTL producer (a .cti file installed "
      "with the grabber's driver, e.g. Euresys eGrabber for Coaxlink): install it and set GENICAM_GENTL64_PATH to the folder "
      "holding its .cti, or set camera.gentl.cti. stripeline's simulated grabber is one too: build the target "
      "stripeline_gentl_sim (build/gentl/stripeline-sim.cti) or install it (lib/stripeline/gentl/stripeline-sim.cti)",
      env ? fmt::format("GENICAM_GENTL64_PATH={} holds no .cti file", env) : "GENICAM_GENTL64_PATH is not set");
}

}  // namespace stripeline::gentl
