// The System module: the library (GCInitLib, GCCloseLib, GCGetLastError,
// GCGetInfo) and the transport layer (TL*), which holds one interface.
#include <dlfcn.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "acquisition/gentl/producer/sim_producer.h"

namespace stripeline::gentl_sim {
namespace {

// The full path of this .cti (TL_INFO_PATHNAME), found from one of its own symbols.
std::string library_path() {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&GCInitLib), &info) || !info.dli_fname) return "stripeline-sim.cti";
  char resolved[PATH_MAX];
  if (realpath(info.dli_fname, resolved)) return resolved;
  return info.dli_fname;
}

std::string base_name(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

GC_ERROR tl_info(TL_INFO_CMD cmd, INFO_DATATYPE* t, void* b, size_t* n) {
  switch (cmd) {
    case TL_INFO_ID: return put_string("stripeline-sim", t, b, n);
    case TL_INFO_VENDOR: return put_string(kVendor, t, b, n);
    case TL_INFO_MODEL: return put_string("stripeline simulated producer", t, b, n);
    case TL_INFO_VERSION: return put_string(STRIPELINE_VERSION, t, b, n);
    case TL_INFO_TLTYPE: return put_string(kTlType, t, b, n);
    case TL_INFO_NAME: return put_string(base_name(library_path()), t, b, n);
    case TL_INFO_PATHNAME: return put_string(library_path(), t, b, n);
    case TL_INFO_DISPLAYNAME: return put_string("stripeline simulated laser line grabber", t, b, n);
    case TL_INFO_CHAR_ENCODING: return put_i32(TL_CHAR_ENCODING_ASCII, t, b, n);
    case TL_INFO_GENTL_VER_MAJOR: return put_u32(GENTL_API_VERSION_MAJOR, t, b, n);
    case TL_INFO_GENTL_VER_MINOR: return put_u32(GENTL_API_VERSION_MINOR, t, b, n);
    default: return fail(GC_ERR_NOT_IMPLEMENTED, "TL info " + std::to_string(cmd));
  }
}

bool is_interface(const System* s, const char* id) { return id && s->iface->id == id; }

GC_ERROR no_interface(const char* id) { return fail(GC_ERR_INVALID_ID, "no interface '" + std::string(id ? id : "") + "'"); }

}  // namespace

std::unique_ptr<System> make_system() {
  auto sys = std::make_unique<System>();
  sys->id = "stripeline-sim";
  build_plain_map(sys.get(), "StripelineSimSystem",
                  {text_feature("TLVendorName", "SystemInformation", [] { return std::string(kVendor); }),
                   text_feature("TLModelName", "SystemInformation", [] { return std::string("stripeline simulated producer"); }),
                   text_feature("TLID", "SystemInformation", [] { return std::string("stripeline-sim"); }),
                   text_feature("TLType", "SystemInformation", [] { return std::string(kTlType); })});
  auto iface = std::make_unique<Interface>();
  iface->id = "SL-SIM-IF0";
  build_plain_map(iface.get(), "StripelineSimInterface",
                  {text_feature("InterfaceID", "InterfaceInformation", [] { return std::string("SL-SIM-IF0"); }),
                   text_feature("InterfaceType", "InterfaceInformation", [] { return std::string(kTlType); })});
  int count = 1;
  if (const char* e = std::getenv("STRIPELINE_GENTL_SIM_DEVICES")) count = std::clamp(std::atoi(e), 1, 8);
  for (int i = 0; i < count; ++i) {
    auto d = std::make_unique<Device>();
    d->parent = iface.get();
    d->index = i;
    d->id = "SL-SIM-" + std::to_string(i);
    iface->devices.push_back(std::move(d));
  }
  sys->iface = std::move(iface);
  return sys;
}

std::vector<std::string> child_ids(const System& s) { return {s.iface->id}; }

void close_system() {
  auto& l = lib();
  if (!l.system) return;
  if (l.system->iface->open) close_interface(l.system->iface.get());
  forget(l.system.get());
  l.system.reset();
}

}  // namespace stripeline::gentl_sim

using namespace stripeline::gentl_sim;

extern "C" {

GC_ERROR GCInitLib(void) {
  std::lock_guard guard(lib().mu);
  if (lib().initialized) return fail(GC_ERR_RESOURCE_IN_USE, "GCInitLib was already called");
  lib().initialized = true;
  return ok();
}

GC_ERROR GCCloseLib(void) {
  SIM_LOCKED;
  close_system();
  lib().initialized = false;
  return ok();
}

GC_ERROR GCGetLastError(GC_ERROR* piErrorCode, char* sErrorText, size_t* piSize) {
  if (!piErrorCode || !piSize) return GC_ERR_INVALID_PARAMETER;
  const LastError e = last_error();
  *piErrorCode = e.code;
  const std::size_t need = e.text.size() + 1;
  if (!sErrorText) {
    *piSize = need;
    return ok();
  }
  if (*piSize < need) {
    *piSize = need;
    return GC_ERR_BUFFER_TOO_SMALL;
  }
  std::memcpy(sErrorText, e.text.c_str(), need);
  *piSize = need;
  return ok();
}

GC_ERROR GCGetInfo(TL_INFO_CMD iInfoCmd, INFO_DATATYPE* piType, void* pBuffer, size_t* piSize) {
  return tl_info(iInfoCmd, piType, pBuffer, piSize);  // allowed before GCInitLib
}

GC_ERROR TLOpen(TL_HANDLE* phTL) {
  SIM_LOCKED;
  if (!phTL) return fail(GC_ERR_INVALID_PARAMETER, "null handle");
  if (lib().system) return fail(GC_ERR_RESOURCE_IN_USE, "the system module is already open");
  lib().system = make_system();
  lib().live.insert(lib().system.get());
  *phTL = lib().system.get();
  return ok();
}

GC_ERROR TLClose(TL_HANDLE hTL) {
  SIM_HANDLE(System, s, hTL);
  close_system();
  return ok();
}

GC_ERROR TLGetInfo(TL_HANDLE hTL, TL_INFO_CMD iInfoCmd, INFO_DATATYPE* piType, void* pBuffer, size_t* piSize) {
  SIM_HANDLE(System, s, hTL);
  return tl_info(iInfoCmd, piType, pBuffer, piSize);
}

GC_ERROR TLGetNumInterfaces(TL_HANDLE hTL, uint32_t* piNumIfaces) { return num_children<System>(hTL, piNumIfaces); }

GC_ERROR TLGetInterfaceID(TL_HANDLE hTL, uint32_t iIndex, char* sID, size_t* piSize) { return child_id<System>(hTL, iIndex, sID, piSize); }

GC_ERROR TLGetInterfaceInfo(TL_HANDLE hTL, const char* sIfaceID, INTERFACE_INFO_CMD iInfoCmd, INFO_DATATYPE* piType, void* pBuffer,
                            size_t* piSize) {
  SIM_HANDLE(System, s, hTL);
  if (!is_interface(s, sIfaceID)) return no_interface(sIfaceID);
  return interface_info(s->iface.get(), iInfoCmd, piType, pBuffer, piSize);
}

GC_ERROR TLOpenInterface(TL_HANDLE hTL, const char* sIfaceID, IF_HANDLE* phIface) {
  SIM_HANDLE(System, s, hTL);
  if (!phIface) return fail(GC_ERR_INVALID_PARAMETER, "null handle");
  if (!is_interface(s, sIfaceID)) return no_interface(sIfaceID);
  if (s->iface->open) return fail(GC_ERR_RESOURCE_IN_USE, "the interface is already open");
  s->iface->open = true;
  lib().live.insert(s->iface.get());
  *phIface = s->iface.get();
  return ok();
}

GC_ERROR TLUpdateInterfaceList(TL_HANDLE hTL, bool8_t* pbChanged, uint64_t) {
  SIM_HANDLE(System, s, hTL);
  if (pbChanged) *pbChanged = 0;
  return ok();
}

}  // extern "C"
