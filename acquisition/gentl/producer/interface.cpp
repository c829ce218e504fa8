// The Interface module: one simulated grabber board with 1..8 devices.
#include "acquisition/gentl/producer/sim_producer.h"

namespace stripeline::gentl_sim {
namespace {

Device* find_device(Interface* i, const char* id) {
  if (!id) return nullptr;
  for (auto& d : i->devices)
    if (d->id == id) return d.get();
  return nullptr;
}

GC_ERROR no_device(const char* id) { return fail(GC_ERR_INVALID_ID, "no device '" + std::string(id ? id : "") + "'"); }

}  // namespace

std::vector<std::string> child_ids(const Interface& i) {
  std::vector<std::string> ids;
  for (const auto& d : i.devices) ids.push_back(d->id);
  return ids;
}

void close_interface(Interface* i) {
  for (auto& d : i->devices)
    if (d->open) close_device(d.get());
  forget(i);
  i->open = false;
}

GC_ERROR interface_info(const Interface* i, INTERFACE_INFO_CMD cmd, INFO_DATATYPE* t, void* b, std::size_t* n) {
  switch (cmd) {
    case INTERFACE_INFO_ID: return put_string(i->id, t, b, n);
    case INTERFACE_INFO_DISPLAYNAME: return put_string("stripeline simulated grabber board", t, b, n);
    case INTERFACE_INFO_TLTYPE: return put_string(kTlType, t, b, n);
    default: return fail(GC_ERR_NOT_IMPLEMENTED, "interface info " + std::to_string(cmd));
  }
}

}  // namespace stripeline::gentl_sim

using namespace stripeline::gentl_sim;

extern "C" {

GC_ERROR IFGetParentTL(IF_HANDLE hIface, TL_HANDLE* phSystem) {
  SIM_HANDLE(Interface, i, hIface);
  return put_out(phSystem, lib().system.get(), "handle");
}

GC_ERROR IFClose(IF_HANDLE hIface) {
  SIM_HANDLE(Interface, i, hIface);
  close_interface(i);
  return ok();
}

GC_ERROR IFGetInfo(IF_HANDLE hIface, INTERFACE_INFO_CMD iInfoCmd, INFO_DATATYPE* piType, void* pBuffer, size_t* piSize) {
  SIM_HANDLE(Interface, i, hIface);
  return interface_info(i, iInfoCmd, piType, pBuffer, piSize);
}

GC_ERROR IFGetNumDevices(IF_HANDLE hIface, uint32_t* piNumDevices) { return num_children<Interface>(hIface, piNumDevices); }

GC_ERROR IFGetDeviceID(IF_HANDLE hIface, uint32_t iIndex, char* sIDeviceID, size_t* piSize) {
  return child_id<Interface>(hIface, iIndex, sIDeviceID, piSize);
}

GC_ERROR IFUpdateDeviceList(IF_HANDLE hIface, bool8_t* pbChanged, uint64_t) {
  SIM_HANDLE(Interface, i, hIface);
  if (pbChanged) *pbChanged = 0;
  return ok();
}

GC_ERROR IFGetDeviceInfo(IF_HANDLE hIface, const char* sDeviceID, DEVICE_INFO_CMD iInfoCmd, INFO_DATATYPE* piType, void* pBuffer,
                         size_t* piSize) {
  SIM_HANDLE(Interface, i, hIface);
  Device* d = find_device(i, sDeviceID);
  if (!d) return no_device(sDeviceID);
  return device_info(d, iInfoCmd, piType, pBuffer, piSize);
}

GC_ERROR IFOpenDevice(IF_HANDLE hIface, const char* sDeviceID, DEVICE_ACCESS_FLAGS iOpenFlag, DEV_HANDLE* phDevice) {
  SIM_HANDLE(Interface, i, hIface);
  if (!phDevice) return fail(GC_ERR_INVALID_PARAMETER, "null handle");
  Device* d = find_device(i, sDeviceID);
  if (!d) return no_device(sDeviceID);
  if (const GC_ERROR rc = open_device(d, iOpenFlag); rc != GC_ERR_SUCCESS) return rc;
  *phDevice = d;
  return ok();
}

}  // extern "C"
